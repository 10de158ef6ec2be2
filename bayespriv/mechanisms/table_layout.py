"""How a table of counts is read and laid out, as one checked value: :class:`TableLayout`.

A count table (:class:`~bayespriv.mechanisms.SubsetCountMechanism`,
:func:`~bayespriv.ledger.subset_count_table`) is read from a frame of records, or of groups of identical
records with a multiplicity column, and laid out with one row per public value and one column per
possible protected value. Which values are possible is part of the guarantee: it must be decided
without looking at the data.
"""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from bayespriv._deprecation import option_value
from bayespriv._validation import check_sequence, described, fail
from bayespriv.errors import ParameterTypeError

__all__ = ["TableLayout", "LAYOUT_FIELDS", "table_layout", "split_layout_keywords", "column_name"]

#: The fields of :class:`TableLayout`, once keywords of their own (a deprecated spelling, kept for one release).
LAYOUT_FIELDS = ("protected_values", "public_values", "count")


def column_name(value: Any, name: str) -> str:
    """A column name: a non-empty string."""
    if not isinstance(value, str) or not value:
        raise ParameterTypeError(f"{name} must be a column name (non-empty string); got {value!r}")
    return value


def _hashable(values: tuple, name: str, given: Any) -> tuple:
    """``values``, each of which must be hashable (categories are looked up by hash)."""
    for v in values:
        try:
            hash(v)
        except TypeError:
            raise fail(name, "hashable values (categories such as strings or numbers)",
                       described(f"{type(v).__name__} {v!r:.40} in {given!r:.60}")) from None
    return values


def _categories(given: Any, name: str) -> tuple | None:
    """None, or the distinct hashable values of a non-empty sequence, as a tuple (in the given order)."""
    if given is None:
        return None
    values = _hashable(check_sequence(given, name), name, given)
    if len(set(values)) != len(values):
        raise fail(name, "distinct values", given)
    if not values:
        raise fail(name, "non-empty", given)
    return values


def _protected_values(given: Any) -> tuple | Mapping[Any, tuple] | None:
    """The protected values: as :func:`_categories`, or a read-only mapping public value → tuple of values."""
    if not isinstance(given, Mapping):
        return _categories(given, "protected_values")
    per_row = {}
    for key, values in given.items():
        name = f"protected_values[{key!r}]"
        per_row[key] = _hashable(check_sequence(values, name), name, values)
    return types.MappingProxyType(per_row)


@dataclass(frozen=True, kw_only=True, repr=False)
class TableLayout:
    """How a table of counts is read and laid out (``SubsetCountMechanism.release(..., layout=...)``,
    ``subset_count_table(..., layout=...)``), checked once.

    Keyword-only and frozen; the default, ``TableLayout()``, counts one record per row, with the rows
    and columns of the table taken from the data (a ``Categorical`` column's categories, else the values
    present). A wrong type is a :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field; what needs the data (every value
    of the data among the given ones, the ``count`` column present and holding whole numbers) is checked
    by the release.

    Attributes
    ----------
    protected_values : sequence, or mapping public value → sequence, optional
        The possible protected values (the paper's U_{1,i}, possibly per public value): distinct,
        hashable and at least one; kept as a tuple (a mapping as a read-only mapping of tuples). Must
        not be read off the data: if a category is absent from the data its column (or its absence)
        would reveal it. Default: the categories of a ``Categorical`` column; otherwise the values in the
        data, with a :class:`~bayespriv.PrivacyAssumptionWarning` and the assumption
        ``"domain_from_data"`` in the guarantee (which
        :meth:`SubsetCountMechanism.release <bayespriv.mechanisms.SubsetCountMechanism.release>` refuses
        unless the mechanism was built with that assumption).
    public_values : sequence, optional
        The rows of the table, in order: distinct, hashable and at least one. Default: the categories of a
        ``Categorical`` column, else the values present, sorted (public anyway).
    count : str, optional
        Column of non-negative whole record multiplicities, to pass a table of counts. Default: one
        record per row.

    Examples
    --------
    >>> from bayespriv.ledger import TableLayout
    >>> TableLayout(protected_values=["F", "M"], count="n")
    TableLayout(protected_values=('F', 'M'), public_values=None, count='n')
    >>> TableLayout(protected_values={"young": ["F", "M"], "old": ["F"]})
    TableLayout(protected_values={'young': ('F', 'M'), 'old': ('F',)}, public_values=None, count=None)
    >>> TableLayout(public_values=["a", "a"])
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: public_values must be distinct values; got ['a', 'a']
    """

    protected_values: Sequence[Any] | Mapping[Any, Sequence[Any]] | None = None
    public_values: Sequence[Any] | None = None
    count: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "protected_values", _protected_values(self.protected_values))
        object.__setattr__(self, "public_values", _categories(self.public_values, "public_values"))
        if self.count is not None:
            column_name(self.count, "count")

    def __repr__(self) -> str:
        values = self.protected_values
        shown = dict(values) if isinstance(values, Mapping) else values
        return f"TableLayout(protected_values={shown!r}, public_values={self.public_values!r}, count={self.count!r})"

    def __getstate__(self) -> dict[str, Any]:
        """The fields, a per-row mapping as a plain dict (a read-only mapping does not pickle)."""
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        if isinstance(self.protected_values, Mapping):
            state["protected_values"] = dict(self.protected_values)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuilt, and checked again, from :meth:`__getstate__`'s fields."""
        self.__init__(**state)  # type: ignore[misc]


#: The default layout (nothing given): shared, it is frozen.
DEFAULT_LAYOUT = TableLayout()


def split_layout_keywords(deprecated: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``deprecated`` split into the layout's fields (:data:`LAYOUT_FIELDS`, once keywords of their own) and
    the other keywords."""
    old = {name: value for name, value in deprecated.items() if name in LAYOUT_FIELDS}
    rest = {name: value for name, value in deprecated.items() if name not in LAYOUT_FIELDS}
    return old, rest


def table_layout(owner: str, layout: Any, old: Mapping[str, Any]) -> TableLayout:
    """The ``layout=`` of a count table called as ``owner``: checked (None: :data:`DEFAULT_LAYOUT`), with the
    deprecated keywords of ``old`` (the layout's fields) folded in, warning. An old keyword given with
    ``layout=`` is a :class:`~bayespriv.errors.ValidationError`."""
    return option_value(owner, "layout", TableLayout, layout, old, DEFAULT_LAYOUT)
