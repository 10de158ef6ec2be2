"""The ready-made queries: :func:`mean`, :func:`count`, :func:`proportion` (additive), and
:func:`stack`, which puts queries side by side."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import check_column_names, check_name_or_none, check_real, fail
from ..errors import ParameterTypeError, ValidationError
from .components import Batch, Component, _AdditiveFn, _Clipped, _Column, _Equals, _Indicator
from .query import Query, _Concatenated

__all__ = ["mean", "count", "proportion", "stack"]

#: Marks an argument the caller did not give (``None`` may be a category).
_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<not given>"})()


def _additive(components: Sequence[Component], name: str) -> Query:
    comps = tuple(components)
    columns = [col for c in comps for col in c.columns]
    return Query(_AdditiveFn(comps), tuple(columns), name, tuple(c.name for c in comps), comps)


def mean(column: str, *, bounds: tuple[float, float] | None = None, name: str | None = None) -> Query:
    """The mean of a numeric column.

    Parameters
    ----------
    column : str
    bounds : (low, high), optional
        Declared range of the column. Values are clipped into it, so the
        per-record sensitivity ``(high - low) / n`` holds for any data (needed by
        :class:`~bayespriv.mechanisms.GroupDP`). Without bounds the mean is
        exactly linear, which Gaussian data models use for closed-form moments.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> bp.mean("weight")(pd.DataFrame({"weight": [150.0, 160.0, 170.0]}))  # one dataset
    array([160.])
    >>> bp.mean("weight")({"weight": np.array([[150.0, 160.0], [170.0, 180.0]])})  # 2 datasets of 2 records
    array([[155.],
           [175.]])
    >>> bp.mean("weight", bounds=(100, 200))(pd.DataFrame({"weight": [50.0, 250.0, 150.0]}))  # clipped: 100, 200, 150
    array([150.])
    """
    if not isinstance(column, str) or not column:
        raise ParameterTypeError(f"column must be a non-empty string; got {column!r} of type {type(column).__name__}")
    label = check_name_or_none(name, "name") or f"mean({column})"
    if bounds is None:
        return _additive([Component(_Column(column), True, None, {column: 1.0}, label, (column,))], label)
    if isinstance(bounds, (str, bytes)) or not isinstance(bounds, (tuple, list, np.ndarray)) or len(bounds) != 2:
        raise ParameterTypeError(f"bounds must be a pair (low, high) of numbers; got {bounds!r}")
    lo, hi = (check_real("bounds", v) for v in bounds)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise fail("bounds", "finite with low < high", bounds)
    return _additive([Component(_Clipped(column, lo, hi), True, hi - lo, None, label, (column,))], label)


_FORMS = ("{f}(column, category) — the records whose column equals category, e.g. bp.{f}(\"xray\", \"pos\") — or "
          "{f}(predicate, columns) with predicate(batch) a boolean array (draws, n_records), e.g. "
          "bp.{f}(lambda b: b[\"age\"] > 65, \"age\")")


def _indicator_component(what: Any, of: Any, per_mean: bool, name: str | None, func: str) -> tuple[Component, str]:
    """The component of ``count``/``proportion`` in either form, and the query's name."""
    forms = _FORMS.format(f=func)
    if isinstance(what, str):
        from ..secrets import check_category

        if not what:
            raise fail("column", f"a non-empty column name ({forms})", what)
        if of is _UNSET:
            raise ParameterTypeError(f"category must be given with a column name: {forms}; got {func}({what!r}) alone")
        try:
            check_category(of)
        except ValidationError as exc:
            raise fail("category", f"one value of column {what!r} (a string, number or bool); {forms}", of) from exc
        label = check_name_or_none(name, "name") or f"{func}({what}={of})"
        h = _Indicator(_Equals(what, of), what, label)
        return Component(h, per_mean, 1.0, None, label, (what,)), label
    if not callable(what):
        raise ParameterTypeError(f"predicate must be a column name (str) or a callable; {forms}; got {what!r} of type "
                                 f"{type(what).__name__}")
    if of is _UNSET:
        raise ParameterTypeError(f"columns must be given with a predicate (the columns it reads): {forms}")
    label = check_name_or_none(name, "name") or func
    cols = check_column_names(of, "columns")
    return Component(_Indicator(what, cols[0], label), per_mean, 1.0, None, label, cols), label


def count(predicate: Callable[[Batch], np.ndarray] | str, columns: str | Sequence[str] | Any = _UNSET, *,
          name: str | None = None) -> Query:
    """The number of records in a category, or satisfying a predicate.

    Two forms:

    * ``count(column, category)`` — records with ``column == category`` (a
      text column is compared as ``str(category)``, a boolean column with a
      bool, a numeric column with a number). The query records what it counts
      (:attr:`Query.indicator`), so data models that can tabulate the law of
      the count exactly do so (:func:`~bayespriv.calibrate` with
      ``exact_laws="auto"``).
    * ``count(predicate, columns)`` — records for which ``predicate(batch)``
      (a boolean array ``(draws, n_records)``) is true; ``columns`` are the
      columns it reads. Opaque to the data models (``indicator`` is None).

    Parameters
    ----------
    predicate : str or callable
        The column (first form) or the predicate (second form).
    columns : object or str or sequence of str
        The category (first form) or the columns the predicate reads (second form).
    name : str, optional
        Default ``"count(column=category)"`` (first form) or ``"count"``.

    Returns
    -------
    Query
        Additive, one component; per-record sensitivity 1.

    Examples
    --------
    >>> import bayespriv as bp, pandas as pd
    >>> data = pd.DataFrame({"xray": ["pos", "neg", "pos"], "age": [70, 40, 66]})
    >>> q = bp.count("xray", "pos")
    >>> q(data), q.name, q.indicator
    (array([2.]), 'count(xray=pos)', Indicator(column='xray', category='pos', statistic='count'))
    >>> old = bp.count(lambda b: b["age"] > 65, "age", name="over 65")
    >>> old(data), old.indicator is None
    (array([2.]), True)
    """
    comp, label = _indicator_component(predicate, columns, False, name, "count")
    return _additive([comp], label)


def proportion(predicate: Callable[[Batch], np.ndarray] | str, columns: str | Sequence[str] | Any = _UNSET, *,
               name: str | None = None) -> Query:
    """The share of records in a category, or satisfying a predicate.

    The same two forms as :func:`count` — ``proportion(column, category)``
    (recorded in :attr:`Query.indicator`) and ``proportion(predicate,
    columns)`` — divided by the number of records.

    Parameters
    ----------
    predicate : str or callable
        The column (first form) or the predicate (second form).
    columns : object or str or sequence of str
        The category (first form) or the columns the predicate reads (second form).
    name : str, optional
        Default ``"proportion(column=category)"`` (first form) or ``"proportion"``.

    Returns
    -------
    Query
        Additive, one component; per-record sensitivity 1/n.

    Examples
    --------
    >>> import bayespriv as bp, pandas as pd
    >>> data = pd.DataFrame({"xray": ["pos", "neg", "pos", "neg"], "age": [70, 40, 66, 12]})
    >>> bp.proportion("xray", "pos")(data), bp.proportion("xray", "pos").indicator.statistic
    (array([0.5]), 'proportion')
    >>> bp.proportion(lambda b: b["age"] > 65, "age")(data)
    array([0.5])
    """
    comp, label = _indicator_component(predicate, columns, True, name, "proportion")
    return _additive([comp], label)


def stack(*queries: Query, name: str | None = None) -> Query:
    """Concatenate queries into one vector-valued query.

    Examples
    --------
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> both = bp.stack(bp.mean("weight"), bp.mean("height"))
    >>> both.name, both.columns
    ('stack(mean(weight), mean(height))', ('weight', 'height'))
    >>> both(pd.DataFrame({"weight": [150.0, 170.0], "height": [60.0, 70.0]}))
    array([160.,  65.])
    """
    if not queries:
        raise fail("queries", "at least one Query", queries)
    for q in queries:
        if not isinstance(q, Query):
            raise ParameterTypeError(f"stack takes Query objects; got {type(q).__name__}")
    label = check_name_or_none(name, "name") or "stack(" + ", ".join(q.name for q in queries) + ")"
    if all(q.additive for q in queries):
        return _additive([c for q in queries for c in q.components], label)
    columns = tuple(dict.fromkeys(c for q in queries for c in q.columns))
    names = None
    if all(q.output_names is not None for q in queries):
        names = tuple(n for q in queries for n in q.output_names)
    return Query(_Concatenated(tuple(queries)), columns, label, names)
