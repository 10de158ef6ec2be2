"""The :class:`Query` (a statistic F of a dataset, evaluated on whole batches of datasets) and its
fingerprint: a stable hash of what it computes (:func:`query_fingerprint`)."""

from __future__ import annotations

import os
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
    _numeric_output,
    batch_from_frame,
)
from .components import Batch, Component, Indicator, _AdditiveFn, _Equals, _Indicator

__all__ = ["Query", "query_fingerprint", "complete_fingerprint"]


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
        # Mapping proxies do not pickle; calibrations (and their query) go to process pools.
        state = dict(self.__dict__)
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
        out = _numeric_output(self.fn(batch), self.name)
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

    text = _Canon(scheme).encode(query)
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

    canon = _Canon(FINGERPRINT_SCHEME)
    text = canon.encode(query)
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if canon.complete else None


class _Canon:
    """A canonical text of a callable and the data it closes over: no ids, no addresses, no
    hash-order (sets and mappings are sorted), no source positions."""

    def __init__(self, scheme: int = FINGERPRINT_SCHEME) -> None:
        self.scheme = scheme
        self._stack: set[int] = set()
        self._count = 0
        #: False once anything was cut off or covered by its type only (:func:`complete_fingerprint`).
        self.complete = True

    def _partial(self, text: str) -> str:
        self.complete = False
        return text

    def encode(self, obj: Any, depth: int = 0) -> str:
        if isinstance(obj, _SIMPLE):
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
            return self._partial(f"opaque:{_qualname(type(obj))}")
        finally:
            self._stack.discard(id(obj))

    def _many(self, items: Any, depth: int) -> str:
        return ",".join(self.encode(v, depth) for v in items)

    def _encode(self, obj: Any, depth: int) -> str:
        import dataclasses
        import functools
        import types

        if isinstance(obj, Query):
            return (f"Query(fn={self.encode(obj.fn, depth)};columns={self.encode(obj.columns, depth)};"
                    f"name={obj.name!r};outputs={self.encode(obj.output_names, depth)};"
                    f"components={self.encode(obj.components, depth)};"
                    f"column_sensitivities={self.encode(obj.column_sensitivities, depth)})")
        if isinstance(obj, np.generic):
            return f"np.{obj.dtype.str}:{obj.tobytes().hex()}"
        if isinstance(obj, np.ndarray):
            return self._array(obj)
        if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
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
            return (f"partial({self.encode(obj.func, depth)};{self._many(obj.args, depth)};"
                    f"{self.encode(obj.keywords, depth)})")
        if isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
            return f"builtin:{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', obj.__name__)}"
        if isinstance(obj, types.ModuleType):
            return self._partial(f"module:{obj.__name__}")
        if isinstance(obj, type):
            return self._partial(f"type:{_qualname(obj)}")
        if isinstance(obj, Mapping):
            items = sorted(f"{self.encode(k, depth)}=>{self.encode(v, depth)}" for k, v in obj.items())
            return "map{" + ",".join(items) + "}"
        if isinstance(obj, (set, frozenset)):
            return "set{" + ",".join(sorted(self.encode(v, depth) for v in obj)) + "}"
        if isinstance(obj, (tuple, list)):
            if self.scheme != 1 and len(obj) > 64 and all(isinstance(v, _SIMPLE) for v in obj):
                return f"{type(obj).__name__}#{_digest(obj)}"  # one node: a long list is never cut off
            return f"{type(obj).__name__}[{self._many(obj, depth)}]"
        if dataclasses.is_dataclass(obj):
            fields = ";".join(f"{f.name}={self.encode(getattr(obj, f.name), depth)}" for f in dataclasses.fields(obj))
            return f"dataclass:{_qualname(type(obj))}({fields}){self._call_code(obj, depth)}"
        state = getattr(obj, "__dict__", None)
        if _installed_library(type(obj)):  # e.g. a PyMC model: its graph carries per-build ids; its type only
            return self._partial(f"object:{_qualname(type(obj))}")
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
            import sys

            from .source_code import canonical_source

            source = canonical_source(code)
            if source is not None:
                return f"source({source})"
            return f"bytecode-{sys.version_info[0]}.{sys.version_info[1]}:{self._bytecode(code, depth)}"
        return self._bytecode(code, depth)

    def _bytecode(self, code: Any, depth: int) -> str:
        return (f"code(co_code={code.co_code.hex()};consts=[{self._many(code.co_consts, depth)}];"
                f"names={code.co_names!r};freevars={code.co_freevars!r})")

    def _function(self, fn: Any, depth: int) -> str:
        closure = [self.encode(c.cell_contents, depth) if _cell_filled(c) else "empty-cell" for c in fn.__closure__ or ()]
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
        import types

        if isinstance(value, types.ModuleType):
            return self._partial(f"{name}=module:{value.__name__}")
        library_code = isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType, np.ufunc))
        if library_code and _installed_library(value):
            return self._partial(f"{name}=library:{getattr(value, '__module__', None)}."
                                 f"{getattr(value, '__qualname__', getattr(value, '__name__', '?'))}")
        return f"{name}={self.encode(value, depth)}"

    def _call_code(self, obj: Any, depth: int) -> str:
        """The code of a callable object's ``__call__`` unless it is the library's own (whose
        version is recorded apart): a user's callable class is code like a function."""
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


def _cell_filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _code_names(code: Any) -> set[str]:
    """Global names read by a code object and the code objects nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _code_names(const)
    return names
