"""The :class:`Query` (a statistic F of a dataset, evaluated on whole batches of datasets) and its
fingerprint: a stable hash of what it computes (:func:`query_fingerprint`)."""

from __future__ import annotations

import os
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_column_names, check_positive_int, fail, freeze, thaw
from ..errors import ParameterTypeError, ValidationError
from .checks import (
    _check_output_names,
    _check_output_range,
    _declared_column_sensitivities,
    _declared_value,
    numeric_output,
    batch_from_frame,
)
from .components import Batch, Component, Indicator, _AdditiveFn, _Equals, _Indicator

__all__ = ["Query", "query_fingerprint", "complete_fingerprint", "CanonicalEncoder"]


@dataclass(frozen=True, eq=False)
class Query:
    """A statistic F of a dataset, evaluated on whole batches of datasets.

    Parameters
    ----------
    fn : callable
        Maps a batch (column -> array ``(draws, n_records)``) to ``(draws, k)``.
    columns : sequence of str
        The columns ``fn`` reads; data models draw only these.
    name : str
        Shown in reports, plots and the ledger.
    output_names : sequence of str, optional
        One non-empty name per component (defaults to ``name[0]``, ``name[1]``, ...); a single
        string is one name.
    components : tuple of Component, optional
        Set by the ready-made additive queries; user queries leave it empty.
    column_sensitivities : mapping, optional
        Declared column sensitivities Δ_A F for :meth:`column_sensitivity`
        (needed by the Markov quilt mechanisms when F is a user function):
        keys are a column name or a collection of column names A, values the
        largest L1 change of F when the columns in A change arbitrarily (other
        columns fixed), as a number ≥ 0 or a callable ``n_records -> number``.
        A declaration for a superset of A also covers A (Δ is monotone in A).
    output_range : sequence of (low, high), optional
        The range each component's true value lies in (``-inf`` / ``inf`` where unbounded), one
        pair per component: what :meth:`valid_range` reports for a user query, and what a release's
        opt-in ``clipped()`` projects into. It does not change what F computes (nor its
        fingerprint). The ready-made queries know their range without it.

    Examples
    --------
    >>> import bayespriv as bp, numpy as np
    >>> q = bp.Query(lambda b: np.stack([b["w"].mean(1), b["w"].max(1)], axis=1), ["w"], "w-stats")
    """

    fn: Callable[[Batch], np.ndarray]
    columns: tuple[str, ...]
    name: str
    output_names: tuple[str, ...] | None = None
    components: tuple[Component, ...] = field(default=(), repr=False)
    column_sensitivities: Mapping[str | frozenset[str] | tuple[str, ...], float | Callable[[int], float]] | None = field(
        default=None, repr=False
    )
    output_range: tuple[tuple[float, float], ...] | None = field(default=None, repr=False)

    def __getstate__(self) -> dict:
        # Mapping proxies do not pickle; calibrations (and their query) go to process pools. The
        # fingerprint's text is not sent: it checks bindings of this process (_canonical_text).
        state = dict(self.__dict__)
        state.pop(_TEXT_KEY, None)
        state["column_sensitivities"] = thaw(state.get("column_sensitivities"))
        return state

    def __setstate__(self, state: dict) -> None:
        cs = state.get("column_sensitivities")
        self.__dict__.update(state, column_sensitivities=None if cs is None else freeze(cs))

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise ParameterTypeError(f"fn must be callable; got {type(self.fn).__name__}")
        # A str is one column name (never split into characters); see check_column_names.
        cols = self.columns
        if not isinstance(cols, str) and isinstance(cols, (list, tuple)):
            cols = tuple(dict.fromkeys(cols))  # a query may list a column twice (stack of queries)
        object.__setattr__(self, "columns", check_column_names(cols, "columns"))
        if not isinstance(self.name, str) or not self.name:
            raise fail("name", "a non-empty string", self.name)
        if self.output_names is not None:
            object.__setattr__(self, "output_names", _check_output_names(self.output_names))
        if self.column_sensitivities is not None:
            object.__setattr__(self, "column_sensitivities", _declared_column_sensitivities(self.column_sensitivities))
        if self.output_range is not None:
            object.__setattr__(self, "output_range", _check_output_range(self.output_range, self.k))

    # -- shape -----------------------------------------------------------------
    @property
    def k(self) -> int | None:
        """Number of components, when known without evaluating."""
        if self.components:
            return len(self.components)
        return None if self.output_names is None else len(self.output_names)

    def component_names(self, k: int) -> tuple[str, ...]:
        """Names of the ``k`` output components: ``output_names``, the name, or ``name[i]``."""
        if self.output_names is not None:
            if len(self.output_names) != k:
                raise ValidationError(
                    f"query {self.name!r} must return as many components as output_names ({len(self.output_names)}); got {k}"
                )
            return self.output_names
        return (self.name,) if k == 1 else tuple(f"{self.name}[{i}]" for i in range(k))

    @property
    def fingerprint(self) -> str:
        """A hash of what the query computes, stable across processes (hex sha256).

        Covers the code of ``fn`` (the syntax tree of its definition, read
        from its source file and verified to be what the interpreter compiled
        — :mod:`bayespriv.queries.source_code` —, or its bytecode when no
        such source exists, e.g. code built by ``exec``), recursively through
        nested functions, closures,
        default arguments, :func:`functools.partial` and callable objects'
        fields; arrays and pandas objects by their values; objects of
        installed libraries, such as a PyMC model, by their type only), the
        values of the module-level names it reads (dicts, lists, objects and
        functions by their contents; modules and installed libraries'
        functions by name), and the query's ``columns``, ``name``,
        ``output_names``, ready-made components (with their bounds) and
        declared column sensitivities. Lambdas are covered like any function.
        Source positions (file name, line numbers) are not: moving a script
        keeps the fingerprint, editing what it computes changes it. The same
        source gives the same fingerprint on every supported Python version
        (a calibration file survives an upgrade); a function known only by
        its bytecode gives one valid on this Python minor version alone.
        Files written before this scheme hold :func:`legacy_fingerprint`,
        which :func:`fingerprint_matches` still accepts.

        A saved calibration stores it (:meth:`Calibration.to_netcdf`) so that
        :func:`~bayespriv.load_calibration` can refuse a different query.

        It is encoded once per query object and reused while every binding the
        encoding read still holds the same object (fields, a function's code,
        defaults and closure cells, the module-level names its code reads, the
        contents of dicts, lists and sets, the source lines); a query that
        reads an array, a table or an object's attributes is encoded on every
        call. Either way the value is what encoding the query now gives.

        Examples
        --------
        >>> import bayespriv as bp
        >>> bp.mean("x").fingerprint == bp.mean("x").fingerprint
        True
        >>> bp.mean("x").fingerprint == bp.mean("x", bounds=(0, 1)).fingerprint
        False
        """
        return query_fingerprint(self)

    def valid_range(self, n_records: int | None = None, *, k: int | None = None) -> np.ndarray:
        """The range of each component's true value: an array ``(k, 2)`` of (low, high), ±inf where unbounded.

        Ready-made queries know theirs: a count lies in [0, n] (n = ``n_records``; [0, inf) when it
        is not given), a proportion in [0, 1], a mean with ``bounds=(low, high)`` in [low, high]
        (its values are clipped into them), a mean without bounds anywhere. A stack concatenates
        the ranges of its parts. A user query states its range with ``output_range=``; without it
        every component is unbounded.

        Parameters
        ----------
        n_records : int, optional
            Rows of the dataset (bounds counts and other sums).
        k : int, optional
            Number of components, needed for a user query that does not declare it (no
            ``output_names`` nor ``output_range``).

        Examples
        --------
        >>> import bayespriv as bp
        >>> q = bp.stack(bp.count(lambda b: b["x"] > 0, "x"), bp.proportion(lambda b: b["x"] > 0, "x"),
        ...              bp.mean("x", bounds=(-1.0, 2.0)), bp.mean("x"))
        >>> q.valid_range(50).tolist()
        [[0.0, 50.0], [0.0, 1.0], [-1.0, 2.0], [-inf, inf]]
        """
        n = None if n_records is None else check_positive_int(n_records, "n_records")
        if self.output_range is not None:
            out = np.array(self.output_range, dtype=float)
        elif self.components:
            out = np.array([_component_range(c, n) for c in self.components], dtype=float)
        elif isinstance(self.fn, _Concatenated) and all(_knows_k(q) for q in self.fn.queries):
            out = np.concatenate([q.valid_range(n) for q in self.fn.queries], axis=0)
        else:
            size = self.k if self.k is not None else k
            if size is None:
                raise fail("k", f"the number of components of query {self.name!r} (it declares neither "
                           "output_names nor output_range)", k)
            out = np.tile([-np.inf, np.inf], (check_positive_int(size, "k"), 1))
        if k is not None and out.shape[0] != k:
            raise ValidationError(f"query {self.name!r} must have k={k} components to give their range; "
                                  f"it has {out.shape[0]}")
        return out

    @property
    def additive(self) -> bool:
        """True when F is a sum of per-record terms (``components`` known), as for ``mean`` and ``count``."""
        return bool(self.components)

    @property
    def indicator(self) -> "Indicator | None":
        """What the query counts, when it says so: an :class:`Indicator` ``(column, category, statistic)``.

        Set for ``count(column, category)`` and ``proportion(column, category)``
        (and a :func:`stack` of just one of them); None for every other query,
        including the predicate forms, whose predicate is opaque. Derived from
        the query's components, which :attr:`fingerprint` covers.

        Examples
        --------
        >>> import bayespriv as bp
        >>> bp.proportion("sex", "Female").indicator
        Indicator(column='sex', category='Female', statistic='proportion')
        >>> bp.mean("age").indicator is None
        True
        """
        if len(self.components) != 1:
            return None
        comp = self.components[0]
        h = comp.h
        if not (isinstance(h, _Indicator) and isinstance(h.predicate, _Equals) and comp.columns == (h.predicate.column,)):
            return None
        return Indicator(h.predicate.column, h.predicate.category, "proportion" if comp.per_mean else "count")

    # -- evaluation --------------------------------------------------------------
    def evaluate(self, batch: Batch) -> np.ndarray:
        """F on a batch: returns a finite float array ``(draws, k)``."""
        missing = [c for c in self.columns if c not in batch]
        if missing:
            raise ValidationError(f"the batch must hold the query's columns {list(self.columns)!r}; missing {missing!r}")
        draws = int(np.shape(batch[self.columns[0]])[0])
        out = numeric_output(self.fn(batch), self.name)
        if out.ndim != 2 or out.shape[0] != draws:
            raise ValidationError(
                f"query {self.name!r} must return an array of shape (draws, k) = ({draws}, k); got shape {out.shape}"
            )
        if self.k is not None and out.shape[1] != self.k:
            raise ValidationError(f"query {self.name!r} must return {self.k} components; got {out.shape[1]}")
        if not np.all(np.isfinite(out)):
            raise ValidationError(f"query {self.name!r} must return finite values; got NaN or infinity")
        return out

    def __call__(self, data: pd.DataFrame | Batch) -> np.ndarray:
        """F on one dataset (DataFrame -> ``(k,)``) or on a batch (-> ``(draws, k)``)."""
        if isinstance(data, pd.DataFrame):
            return self.evaluate(batch_from_frame(data, self.columns))[0]
        if isinstance(data, Mapping):
            return self.evaluate(data)
        raise ParameterTypeError(f"data must be a pandas DataFrame or a batch mapping; got {type(data).__name__}")

    # -- what other stages need -----------------------------------------------------
    def record_sensitivity(self, n_records: int) -> np.ndarray:
        """Largest change of each component when one record is replaced.

        Available for additive queries whose per-record contribution is bounded
        (counts, shares, means with ``bounds``).
        """
        if not self.components or any(c.record_range is None for c in self.components):
            raise ValidationError(
                f"query {self.name!r} must declare per-record bounds for a per-record sensitivity "
                "(use count/proportion, or mean(column, bounds=(low, high))); got a query without them"
            )
        return np.array([c.record_range / (n_records if c.per_mean else 1) for c in self.components], dtype=float)

    def column_sensitivity(self, columns: str | Sequence[str], n_records: int, ord: int | float | str = 1) -> float:
        """Δ_A F: largest change of F when the columns in A change arbitrarily.

        Two datasets of ``n_records`` rows are *A-column neighbours* when they
        agree on every column outside A (Zhang et al., Attribute Privacy, FAccT
        2022, §5: Δ_A F = max |F(X) − F(X')| over A-column neighbours). Used by
        the Markov quilt mechanisms with A the queried attributes that lie in
        a quilt's nearby set.

        Parameters
        ----------
        columns : str or sequence of str
            The set A (columns the query does not read contribute nothing).
        n_records : int
            Rows of the dataset.
        ord : 1, 2 or inf
            Norm of the change of the vector F (default L1, as the Laplace
            mechanism needs).

        Returns
        -------
        float
            For additive ready-made queries, the ``ord``-norm of the vector of
            per-component bounds: a component whose columns do not meet A
            cannot change (0); a count whose predicate reads a column in A can
            change by up to ``n_records`` (every record may flip), a share by
            1, a mean with ``bounds=(low, high)`` by ``high − low``. The
            bound of each component is attained; the norm of the vector of
            bounds is an upper bound of the joint change. A declared value
            (``column_sensitivities``, read as an L1 bound) takes precedence;
            for ``ord`` 2 or inf it is still an upper bound (‖v‖_p ≤ ‖v‖_1).

        Raises
        ------
        ValidationError
            When the query cannot bound the change: a user query without a
            declaration covering A, or a mean of a column in A without bounds.
        """
        cols = (columns,) if isinstance(columns, str) else tuple(columns)
        if not all(isinstance(c, str) for c in cols):
            raise fail("columns", "a column name or a sequence of column names", columns)
        n = check_positive_int(n_records, "n_records")
        norm = {1: 1.0, 2: 2.0, "inf": np.inf, np.inf: np.inf}.get(ord)
        if norm is None:
            raise fail("ord", "1, 2 or inf", ord)
        touched = frozenset(cols) & frozenset(self.columns)
        if not touched:
            return 0.0
        declared = self.column_sensitivities or {}
        covering = [value for key, value in declared.items() if touched <= key]
        if covering:
            return float(min(_declared_value(v, n, self.name) for v in covering))
        if not self.components:
            keys = [sorted(k) for k in declared]
            raise ValidationError(
                f"query {self.name!r} must declare a column sensitivity for columns {sorted(touched)!r} (or a superset) "
                f"in column_sensitivities=...; got {'declarations for ' + repr(keys) if keys else 'none'} "
                "(ready-made count/proportion/mean(bounds=...) queries derive it)"
            )
        bounds = np.zeros(len(self.components))
        for i, comp in enumerate(self.components):
            if not touched & frozenset(comp.columns):
                continue
            if comp.record_range is None:
                raise ValidationError(
                    f"query {self.name!r} must bound component {comp.name!r} to give a column sensitivity for "
                    f"{sorted(touched)!r} (use mean(column, bounds=(low, high)) or column_sensitivities=...); "
                    "got an unbounded mean"
                )
            bounds[i] = comp.record_range * (1 if comp.per_mean else n)
        return float(np.linalg.norm(bounds, ord=norm))

    def linear_form(self, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
        """``(W, per_mean)`` with ``h_c(x) = W[c] @ x`` over ``columns``; None if not linear."""
        if not self.components or any(c.linear is None for c in self.components):
            return None
        cols = list(columns)
        W = np.zeros((len(self.components), len(cols)))
        for i, comp in enumerate(self.components):
            for col, w in comp.linear.items():
                if col not in cols:
                    return None
                W[i, cols.index(col)] = w
        return W, np.array([c.per_mean for c in self.components])


def _knows_k(query: Query) -> bool:
    """Whether ``query`` can state its range without being told its number of components."""
    if query.k is not None or query.output_range is not None:
        return True
    return isinstance(query.fn, _Concatenated) and all(_knows_k(q) for q in query.fn.queries)


def verified_range(query: Query, n_records: int | None, k: int | None = None) -> np.ndarray | None:
    """:meth:`Query.valid_range` when it follows from what the query computes, else None.

    A range is a fact, not a claim, only for the library's own additive queries (the library's evaluator of
    exactly those components, each a per-record function of the library's with its own bounds: counts,
    proportions, clipped means) and for stacks of such queries. A declared ``output_range``, components
    beside a function of the user's, or a per-record function of the user's declaring ``bounds`` are
    claims: the range is not used where it would weaken a guarantee (the whole-dataset condition of
    :mod:`bayespriv.mechanisms.whole_dataset`).
    """
    if query.output_range is not None:
        return None
    if isinstance(query.fn, _Concatenated):
        parts = [verified_range(q, n_records) for q in query.fn.queries]
        if any(part is None for part in parts):
            return None
        out = np.concatenate(parts, axis=0)
        return out if k is None or out.shape[0] == k else None
    own = isinstance(query.fn, _AdditiveFn) and tuple(query.fn.components) == tuple(query.components or ())
    if not own or not all(_library_object(c.h) for c in query.fn.components):
        return None
    return query.valid_range(n_records, k=k)


def _library_object(obj: Any) -> bool:
    return (getattr(type(obj), "__module__", "") or "").split(".")[0] == "bayespriv"


def _component_range(component: Component, n: int | None) -> tuple[float, float]:
    """[low, high] of ``scale * sum_r h(x_r)`` from the per-record range of ``h`` (its ``bounds``)."""
    lo, hi = getattr(component.h, "bounds", (-np.inf, np.inf))
    if component.per_mean:
        return lo, hi
    if n is not None:
        return lo * n if np.isfinite(lo) else lo, hi * n if np.isfinite(hi) else hi
    return (0.0 if lo >= 0 else -np.inf), (0.0 if hi <= 0 else np.inf)


@dataclass(frozen=True)
class _Concatenated:
    """Outputs of several queries side by side."""

    queries: tuple[Query, ...]

    def __call__(self, batch: Batch) -> np.ndarray:
        return np.concatenate([q.evaluate(batch) for q in self.queries], axis=1)


# -- fingerprint: what a query computes, as a stable hash -----------------------------------------
_FINGERPRINT_DEPTH = 40
#: Objects visited at most (a closure over a large object graph, e.g. a PyMC model, is cut off
#: deterministically: what lies beyond counts by its type only).
_FINGERPRINT_NODES = 20_000
_SIMPLE = (type(None), bool, int, float, complex, str, bytes)


#: The fingerprint scheme: 2 reads a function's verified source (the same on every Python version);
#: 1, the scheme of files written before it, read bytecode (valid on one Python minor version).
FINGERPRINT_SCHEME = 2

#: Where a query keeps the canonical text of its fingerprint and what it read (:func:`_canonical_text`).
_TEXT_KEY = "_fingerprint_text"


def query_fingerprint(query: Query) -> str:
    """Hex sha256 of what ``query`` computes (see :attr:`Query.fingerprint`).

    Parameters
    ----------
    query : Query

    Returns
    -------
    str
        64 hexadecimal digits, equal in every process and on every supported Python version for the
        same source and settings.
    """
    return _fingerprint(query, FINGERPRINT_SCHEME)


def legacy_fingerprint(query: Query) -> str:
    """The fingerprint of scheme 1 (bytecode), which calibration files and ledgers written before scheme 2 hold.

    Equal to what those files recorded only on the Python minor version that wrote them.
    """
    return _fingerprint(query, 1)


def fingerprint_matches(query: Query, fingerprint: str) -> bool:
    """Whether ``fingerprint`` is ``query``'s, in the current scheme or in the legacy one (same Python only)."""
    return fingerprint == query_fingerprint(query) or fingerprint == legacy_fingerprint(query)


def _fingerprint(query: Query, scheme: int) -> str:
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    import hashlib

    text = _Canon(scheme).encode(query) if scheme != FINGERPRINT_SCHEME else _canonical_text(query)[0]
    if scheme != 1:  # scheme 1 hashed the text alone; later schemes name themselves
        text = f"bayespriv-fingerprint/{scheme};{text}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def complete_fingerprint(query: Query) -> str | None:
    """:func:`query_fingerprint` when it determines everything the query reads, else None.

    A fingerprint is *complete* when nothing was cut off (depth, node count),
    found opaque, or covered by its type only (objects of installed libraries,
    classes, modules — a module's attributes can change — and module-level
    values other than simple values, arrays and same-module functions). Two
    queries with the same complete fingerprint run the same code on the same
    values, so results computed for one (e.g. a data model's per-record
    features of an additive query) can be reused for the other. Used as a cache
    key only; the release check uses :func:`query_fingerprint`.
    """
    import hashlib

    text, complete = _canonical_text(query)
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if complete else None


_ABSENT = object()


def _canonical_text(query: Query) -> tuple[str, bool]:
    """The canonical text of ``query`` in the current scheme and whether it is complete, computed
    once per query object while it cannot have changed.

    The text is kept only when every value it encodes is immutable (simple values, tuples, frozen
    dataclasses, code) or read through a binding that is checked again, by identity, before the
    text is reused: a field of the query or of a frozen dataclass, a function's code, defaults and
    closure cells, each module-level name its code reads (present or not), a class's names, the
    cached lines of a source file. A text that read the contents of a mutable value (a list, dict,
    array, table or an object's attributes) is computed afresh on every call. So the result is
    always what encoding the query now gives; the fingerprint of a query object used again (by a
    data model's feature cache, then by its calibration, then by each release) costs the check.
    """
    hit = query.__dict__.get(_TEXT_KEY)
    if hit is not None and all(_same(_read(holder, name), value) for holder, name, value in hit[2]):
        return hit[0], hit[1]
    canon = _Canon(FINGERPRINT_SCHEME)
    text = canon.encode(query)
    if canon.guards is None:
        query.__dict__.pop(_TEXT_KEY, None)
    else:  # kept by the query itself (a private entry next to its fields; never pickled)
        query.__dict__[_TEXT_KEY] = (text, canon.complete, tuple(canon.guards))
    return text, canon.complete


#: Bound methods: a new object at each attribute read, equal (same function, same ``self`` by
#: identity) when the binding has not changed.
_BOUND = (types.MethodType, types.MethodWrapperType, types.BuiltinMethodType)


def _same(now: Any, then: Any) -> bool:
    """Whether a binding still holds the value it had: the same object, the same bound method, or a
    tuple of the same objects (what a container held)."""
    if now is then:
        return True
    if type(now) is not type(then):
        return False
    if type(now) is tuple:
        return len(now) == len(then) and all(_same(a, b) for a, b in zip(now, then))
    return type(now) in _BOUND and now == then


#: Containers whose contents are read as a snapshot (``"<contents>"``): a dict's items, a list's or a
#: set's elements, in their order. Other mutable values (arrays, tables, objects) cannot be kept.
_SNAPSHOT = {dict: dict.items, types.MappingProxyType: types.MappingProxyType.items, list: iter, set: iter}


def _read(holder: Any, name: str) -> Any:
    """``holder.name``; ``"[key]"`` reads ``holder.get(key)``, ``"<contents>"`` a container's contents
    as a tuple (:data:`_SNAPSHOT`); ``_ABSENT`` when there is none."""
    if name.startswith("["):
        return holder.get(name[1:-1], _ABSENT)
    if name == "<contents>":
        return tuple(_SNAPSHOT[type(holder)](holder))
    try:
        return getattr(holder, name)
    except (AttributeError, ValueError):  # an empty closure cell raises ValueError
        return _ABSENT


class _Canon:
    """A canonical text of a callable and the data it closes over: no ids, no addresses, no
    hash-order (sets and mappings are sorted), no source positions."""

    def __init__(self, scheme: int = FINGERPRINT_SCHEME) -> None:
        self.scheme = scheme
        self._stack: set[int] = set()
        self._count = 0
        #: False once anything was cut off or covered by its type only (:func:`complete_fingerprint`).
        self.complete = True
        #: The bindings the text read, ``(holder, name, value)``, or None once it read the contents of a
        #: mutable value (:func:`_canonical_text`); a class's are read once (``_classes``).
        self.guards: list[tuple[Any, str, Any]] | None = []
        self._classes: set[int] = set()

    def _partial(self, text: str) -> str:
        self.complete = False
        return text

    def _get(self, holder: Any, name: str) -> Any:
        """:func:`_read`, recorded as a binding the text depends on."""
        value = _read(holder, name)
        if self.guards is not None:
            self.guards.append((holder, name, value))
        return value

    def _mutable(self) -> None:
        """The text depends on the contents of a mutable value: it cannot be kept."""
        self.guards = None

    def _contents(self, obj: Any) -> None:
        """The text depends on a container's contents: a snapshot of them for :data:`_SNAPSHOT`'s
        types, else it cannot be kept."""
        if type(obj) in _SNAPSHOT:
            self._get(obj, "<contents>")
        else:
            self._mutable()

    def _name(self, cls: type) -> str:
        """:func:`_qualname` of ``cls``, its names (and ``__call__``, :meth:`_call_code`) recorded as bindings."""
        if id(cls) not in self._classes:
            self._classes.add(id(cls))  # the class is held by the guards: its id stays unique
            for name in ("__module__", "__qualname__", "__call__"):
                self._get(cls, name)
        return _qualname(cls)

    def encode(self, obj: Any, depth: int = 0) -> str:
        if isinstance(obj, _SIMPLE):
            if type(obj) not in _SIMPLE and not isinstance(obj, np.generic):
                self._mutable()  # a subclass's repr may read its attributes
            return f"{type(obj).__name__}:{obj!r}"
        self._count += 1
        if depth > _FINGERPRINT_DEPTH or self._count > _FINGERPRINT_NODES:
            return self._partial(f"cut:{_qualname(type(obj))}")
        if id(obj) in self._stack:
            return self._partial(f"cycle:{_qualname(type(obj))}")
        self._stack.add(id(obj))
        try:
            return self._encode(obj, depth + 1)
        except Exception:  # an object that cannot be inspected counts by its type (never break a query)
            self._mutable()
            return self._partial(f"opaque:{_qualname(type(obj))}")
        finally:
            self._stack.discard(id(obj))

    def _many(self, items: Any, depth: int) -> str:
        return ",".join(self.encode(v, depth) for v in items)

    def _encode(self, obj: Any, depth: int) -> str:
        import functools

        if isinstance(obj, Query):
            self._get(obj, "__class__")
            get = lambda name: self._get(obj, name)  # noqa: E731
            return (f"Query(fn={self.encode(get('fn'), depth)};columns={self.encode(get('columns'), depth)};"
                    f"name={get('name')!r};outputs={self.encode(get('output_names'), depth)};"
                    f"components={self.encode(get('components'), depth)};"
                    f"column_sensitivities={self.encode(get('column_sensitivities'), depth)})")
        if isinstance(obj, np.generic):
            return f"np.{obj.dtype.str}:{obj.tobytes().hex()}"
        if isinstance(obj, np.ndarray):
            self._mutable()
            return self._array(obj)
        if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
            self._mutable()
            values = pd.util.hash_pandas_object(obj, index=not isinstance(obj, pd.Index)).to_numpy()
            labels = self.encode(list(obj.columns) if isinstance(obj, pd.DataFrame) else getattr(obj, "name", None), depth)
            return f"pandas:{type(obj).__name__}:{obj.shape}:{labels}:{self._array(values)}"
        if isinstance(obj, types.CodeType):
            return self._code(obj, depth)
        if isinstance(obj, types.FunctionType):
            return self._function(obj, depth)
        if isinstance(obj, types.MethodType):
            return f"method({self.encode(obj.__func__, depth)};self={self.encode(obj.__self__, depth)})"
        if isinstance(obj, functools.partial):
            self._mutable()  # its keywords are a dict, and __setstate__ replaces the rest
            return (f"partial({self.encode(obj.func, depth)};{self._many(obj.args, depth)};"
                    f"{self.encode(obj.keywords, depth)})")
        if isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
            return f"builtin:{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', obj.__name__)}"
        if isinstance(obj, types.ModuleType):
            return self._partial(f"module:{self._get(obj, '__name__')}")
        if isinstance(obj, type):
            return self._partial(f"type:{self._name(obj)}")
        return self._encode_value(obj, depth)

    def _encode_value(self, obj: Any, depth: int) -> str:
        """:meth:`_encode` of what is not code: containers, dataclasses and other objects."""
        import dataclasses

        if isinstance(obj, Mapping):
            self._contents(obj)
            items = sorted(f"{self.encode(k, depth)}=>{self.encode(v, depth)}" for k, v in obj.items())
            return "map{" + ",".join(items) + "}"
        if isinstance(obj, (set, frozenset)):
            if type(obj) is not frozenset:
                self._contents(obj)
            return "set{" + ",".join(sorted(self.encode(v, depth) for v in obj)) + "}"
        if isinstance(obj, (tuple, list)):
            if not isinstance(obj, tuple):
                self._contents(obj)
            elif type(obj) is not tuple:  # a named tuple: its class name is part of the text
                self._get(type(obj), "__name__")
            if self.scheme != 1 and len(obj) > 64 and all(isinstance(v, _SIMPLE) for v in obj):
                if any(type(v) not in _SIMPLE for v in obj):
                    self._mutable()
                return f"{type(obj).__name__}#{_digest(obj)}"  # one node: a long list is never cut off
            return f"{type(obj).__name__}[{self._many(obj, depth)}]"
        if dataclasses.is_dataclass(obj):
            if not type(obj).__dataclass_params__.frozen:
                self._mutable()
            self._get(obj, "__class__")
            fields = ";".join(f"{f.name}={self.encode(self._get(obj, f.name), depth)}" for f in dataclasses.fields(obj))
            return f"dataclass:{self._name(type(obj))}({fields}){self._call_code(obj, depth)}"
        state = getattr(obj, "__dict__", None)
        if _installed_library(type(obj)):  # e.g. a PyMC model: its graph carries per-build ids; its type only
            self._get(obj, "__class__")
            return self._partial(f"object:{self._name(type(obj))}")
        self._mutable()
        body = self.encode(dict(state), depth) if isinstance(state, dict) else ""
        return f"object:{_qualname(type(obj))}({body}){self._call_code(obj, depth)}"

    def _array(self, arr: np.ndarray) -> str:
        import hashlib

        if arr.dtype == object:
            return f"ndarray:object:{arr.shape}[{self._many(arr.ravel().tolist(), 0)}]"
        data = np.ascontiguousarray(arr)
        return f"ndarray:{arr.dtype.str}:{arr.shape}:{hashlib.sha256(data.tobytes()).hexdigest()}"

    def _code(self, code: Any, depth: int) -> str:
        """Scheme 2: the verified source's syntax tree, else the bytecode tagged with this Python's version."""
        if self.scheme != 1:
            import linecache
            import sys

            from .source_code import canonical_source

            source = canonical_source(code)
            if self._get(linecache.cache, f"[{code.co_filename}]") is _ABSENT:  # the source lines it read, or
                self._mutable()  # none in the cache: read from the file at each call
            if source is not None:
                return f"source({source})"
            return f"bytecode-{sys.version_info[0]}.{sys.version_info[1]}:{self._bytecode(code, depth)}"
        return self._bytecode(code, depth)

    def _bytecode(self, code: Any, depth: int) -> str:
        return (f"code(co_code={code.co_code.hex()};consts=[{self._many(code.co_consts, depth)}];"
                f"names={code.co_names!r};freevars={code.co_freevars!r})")

    def _function(self, fn: Any, depth: int) -> str:
        for name in ("__code__", "__defaults__", "__kwdefaults__"):
            self._get(fn, name)
        closure = []
        for cell in fn.__closure__ or ():
            value = self._get(cell, "cell_contents")  # _ABSENT: an empty cell
            closure.append("empty-cell" if value is _ABSENT else self.encode(value, depth))
        return (f"function({self._code(fn.__code__, depth)};defaults={self.encode(fn.__defaults__, depth)};"
                f"kwdefaults={self.encode(fn.__kwdefaults__, depth)};closure=[{','.join(closure)}];"
                f"globals={self._globals(fn, depth)})")

    def _globals(self, fn: Any, depth: int) -> str:
        """Module-level names the code reads.

        Scheme 2: every value by its contents (dicts, lists, a user's objects and functions from any
        module, recursively — weights loaded from a file and changed later change the fingerprint);
        modules, and functions and classes of installed libraries, by their name (their code belongs
        to the library's version, not to the query). Scheme 1 (files written before it): simple
        values, arrays, modules, and the functions and classes of the same module; other objects by
        their type only.
        """
        names = sorted(_code_names(fn.__code__))
        scope = getattr(fn, "__globals__", {})
        if self.scheme != 1:
            for name in names:  # bound or not: binding one later changes the text
                self._get(scope, f"[{name}]")
            return "{" + ",".join(self._global_value(name, scope[name], depth) for name in names if name in scope) + "}"
        out = []
        for name in names:
            if name not in scope:
                continue
            value = scope[name]
            same_module = getattr(value, "__module__", None) == fn.__module__
            if isinstance(value, (_SIMPLE, np.generic, np.ndarray, type(np))) or (
                    isinstance(value, (tuple, frozenset)) and all(isinstance(v, _SIMPLE) for v in value)):
                out.append(f"{name}={self.encode(value, depth)}")
            elif callable(value) and same_module:
                out.append(f"{name}={self.encode(value, depth)}")
            else:
                out.append(self._partial(f"{name}:{_qualname(type(value))}"))
        return "{" + ",".join(out) + "}"

    def _global_value(self, name: str, value: Any, depth: int) -> str:
        if isinstance(value, types.ModuleType):
            return self._partial(f"{name}=module:{self._get(value, '__name__')}")
        library_code = isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType, np.ufunc))
        if library_code and _installed_library(value):
            for attr in ("__module__", "__qualname__", "__name__"):
                self._get(value, attr)
            return self._partial(f"{name}=library:{getattr(value, '__module__', None)}."
                                 f"{getattr(value, '__qualname__', getattr(value, '__name__', '?'))}")
        return f"{name}={self.encode(value, depth)}"

    def _call_code(self, obj: Any, depth: int) -> str:
        """The code of a callable object's ``__call__`` unless it is the library's own (whose
        version is recorded apart): a user's callable class is code like a function."""
        self._name(type(obj))  # records its __call__ and __module__
        call = getattr(type(obj), "__call__", None)
        module = getattr(type(obj), "__module__", "") or ""
        if call is None or module.split(".")[0] == "bayespriv" or not hasattr(call, "__code__"):
            return ""
        return f"call={self.encode(call, depth)}"


def _digest(values: Sequence[Any]) -> str:
    """sha256 of simple values' types and reprs, in order."""
    import hashlib

    h = hashlib.sha256()
    for v in values:
        h.update(f"{type(v).__name__}:{v!r}\x00".encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _qualname(cls: type) -> str:
    return f"{getattr(cls, '__module__', None)}.{getattr(cls, '__qualname__', getattr(cls, '__name__', '?'))}"


def _installed_library(cls: type) -> bool:
    """Whether ``cls`` comes from the standard library or an installed package (not the user's code)."""
    import sys
    import sysconfig

    module = sys.modules.get(getattr(cls, "__module__", "") or "")
    path = getattr(module, "__file__", None)
    if module is None or path is None:  # interactive code and exec'd scripts are the user's; C built-ins are not
        return module is not None and module.__name__ in sys.builtin_module_names
    path = os.path.abspath(path)
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return "site-packages" in path or "dist-packages" in path or any(path.startswith(os.path.abspath(r)) for r in roots)


def _code_names(code: Any) -> set[str]:
    """Global names read by a code object and the code objects nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names


#: The fingerprint encoder, for the data models' signatures (same encoding, same guarantees).
CanonicalEncoder = _Canon
