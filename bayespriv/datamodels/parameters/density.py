"""The joint density of a PyMC model's scalar continuous parameters φ, for max-influence.

The Θ side of the parameter-network pipeline for continuous parameters: :func:`parameter_density`
reads a PyMC model (never mutating it) into a :class:`ParameterDensity` — parameter names, the graph
between them, their supports and a vectorised joint log density — which the max-influence
computation (:mod:`bayespriv.networks.influence`, Definition 7 of the attribute-privacy paper)
reads as arrays and callables only.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._validation import described, fail
from ...errors import ParameterTypeError, ValidationError
from ..pymc import PyMCDataModel, _ancestors, _pm

# ---------------------------------------------------------------------------------------
# the joint density of the parameters φ (for max-influence, Definition 7 of the
# attribute-privacy paper)
# ---------------------------------------------------------------------------------------
#: Points per call of a compiled per-variable log density (bounds the temporaries).
_DENSITY_CHUNK = 1 << 21
#: Prior draws used to place the grid of an unbounded parameter (``ParameterDensity.typical``).
_TYPICAL_DRAWS = 1000


@dataclass(frozen=True, eq=False)
class ParameterDensity:
    """The joint density of scalar continuous parameters φ of a PyMC model.

    Built by :func:`parameter_density`; read by
    :func:`~bayespriv.networks.influence.max_influence` (which only needs
    ``names``, ``graph``, ``supports`` and ``log_density``: any object with
    them can stand in for this class).

    Attributes
    ----------
    names : tuple of str
        The parameters φ (scalar continuous free random variables), in a
        topological order of ``graph``.
    graph : networkx.DiGraph
        u → v when φ_u is a parent of φ_v in the model (directly or through
        deterministics). Every free random variable upstream of a parameter is
        a parameter, so the density factorises along this graph.
    supports : mapping
        name -> ``(lo, hi)``: where φ can have positive density (±inf allowed),
        from the distribution's support and the model's value transform. When
        a bound depends on the parents (e.g. ``Uniform(0, φ_i)``), it is the
        range of that bound over the parents' supports (evaluated on a grid of
        the parents, exact for bounds monotone in each parent). Supports are
        read from the distribution's default value transform and the model's
        own (log: (0, ∞), log-odds: (0, 1), interval, circular: (−π, π));
        any other transform, or none, gives (−∞, ∞) — a superset, which only
        costs grid resolution.

    Notes
    -----
    :meth:`log_density` evaluates, per parameter, PyMC's log density of the
    parameter given its parents (``model.logp(jacobian=False)`` on the model
    without value transforms, i.e. on the parameters' own scale), compiled once
    per parameter as a function of 1-d arrays (the scalar graph vectorised with
    :func:`pytensor.graph.replace.vectorize_graph`). Invalid parent values give
    ``-inf`` (PyMC's ``check_bounds`` switch), never an exception.
    """

    names: tuple[str, ...]
    graph: Any = field(repr=False)
    supports: Mapping[str, tuple[float, float]]
    parents: Mapping[str, tuple[str, ...]] = field(repr=False, default_factory=dict)
    _model: Any = field(repr=False, default=None)  # the model without value transforms
    _source: Any = field(repr=False, default=None)  # the user's model (prior draws for ``typical``)
    _functions: dict = field(repr=False, default_factory=dict)
    _memo: dict = field(repr=False, default_factory=dict)
    _lock: Any = field(repr=False, default_factory=threading.RLock)

    def _function(self, name: str):
        with self._lock:
            fn = self._functions.get(name)
            if fn is None:
                fn = self._compile(name)
                self._functions[name] = fn
            return fn

    def _compile(self, name: str):
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph
        from pytensor.graph.traversal import explicit_graph_inputs

        pm = _pm()
        model = self._model
        rv = model[name]
        (term,) = model.logp(vars=[rv], sum=False, jacobian=False)
        inputs = [name, *self.parents[name]]
        values = [model.rvs_to_values[model[v]] for v in inputs]
        stray = [v for v in explicit_graph_inputs([term]) if v in set(model.value_vars) and v not in values]
        if stray:  # pragma: no cover - the parents are read from the same graph
            raise ValidationError(f"internal: log density of {name!r} depends on {stray!r} beyond its parents {inputs!r}")
        vectors = {v: pt.vector(f"{v.name}__points", dtype=v.dtype) for v in values}
        out = vectorize_graph(term, replace=vectors)
        fn = pm.compile([vectors[v] for v in values], out, on_unused_input="ignore")
        dtypes = [v.dtype for v in values]
        return fn, inputs, dtypes

    def log_density(self, points: Mapping[str, Any]) -> np.ndarray:
        """log p(φ_S) at the given points, vectorised; S = the keys of ``points``.

        Parameters
        ----------
        points : mapping
            name -> array; the arrays broadcast against each other (e.g. one
            axis per parameter for a tensor grid). The names must form an
            *ancestral* set (every parent of a named parameter is named): then
            log p(φ_S) is exactly the sum of the named parameters' conditional
            log densities — the parameters outside S integrate to 1.

        Returns
        -------
        ndarray
            The broadcast shape of the arrays; ``-inf`` where the density is 0.
        """
        if not isinstance(points, Mapping):
            raise ParameterTypeError(f"points must be a mapping parameter name -> array; got {type(points).__name__}")
        unknown = [k for k in points if k not in self.parents]
        if unknown:
            raise fail("points", f"keyed by parameters {list(self.names)!r}", unknown)
        missing = sorted({p for k in points for p in self.parents[k] if p not in points})
        if missing:
            raise fail("points", "an ancestral set of parameters (every parent of a named parameter named too)",
                       described(f"missing parents {missing!r}"))
        arrays = {k: np.asarray(v, dtype=float) for k, v in points.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values())) if arrays else ()
        total = np.zeros(shape)
        for name in self.names:
            if name not in arrays:
                continue
            fn, inputs, dtypes = self._function(name)
            parts = np.broadcast_arrays(*(arrays[v] for v in inputs))
            sub = parts[0].shape
            flat = [np.ascontiguousarray(p, dtype=d).reshape(-1) for p, d in zip(parts, dtypes)]
            size = flat[0].size
            out = np.empty(size)
            with self._lock:
                for start in range(0, size, _DENSITY_CHUNK):
                    stop = min(size, start + _DENSITY_CHUNK)
                    out[start:stop] = fn(*(f[start:stop] for f in flat))
            total = total + out.reshape(sub)
        return np.where(np.isnan(total), -np.inf, total)

    @property
    def typical(self) -> Mapping[str, tuple[float, float]]:
        """name -> (median, scale) of the prior (1000 seeded draws), to place grids on unbounded supports.

        The scale is the interquartile range / 1.349 (the standard deviation
        for a Gaussian); computed once, on first use.
        """
        with self._lock:
            hit = self._memo.get("typical")
            if hit is None:
                pm = _pm()
                model = self._source
                draws = pm.draw([model[v] for v in self.names], draws=_TYPICAL_DRAWS, random_seed=0)
                hit = {}
                for v, d in zip(self.names, draws):
                    d = np.asarray(d, dtype=float).reshape(-1)
                    d = d[np.isfinite(d)]
                    if d.size == 0:
                        hit[v] = (0.0, 1.0)
                        continue
                    q1, med, q3 = np.quantile(d, [0.25, 0.5, 0.75])
                    scale = float(q3 - q1) / 1.349
                    if not (math.isfinite(scale) and scale > 0):
                        scale = max(abs(float(med)), 1.0)
                    hit[v] = (float(med), scale)
                self._memo["typical"] = hit
            return hit

    def __repr__(self) -> str:
        shown = ", ".join(f"{v}∈({lo:g}, {hi:g})" for v, (lo, hi) in self.supports.items())
        return f"ParameterDensity({shown}; edges={sorted(self.graph.edges())})"


def _resolve_model(model_or_builder: Any):
    pm = _pm()
    if isinstance(model_or_builder, pm.Model):
        return model_or_builder
    if isinstance(model_or_builder, PyMCDataModel):
        return model_or_builder.pymc_model
    if callable(model_or_builder):
        try:
            model = model_or_builder()
        except Exception as exc:  # noqa: BLE001 - re-raised with context
            raise ValidationError(f"model must be a pymc.Model, a PyMCDataModel or a zero-argument builder; "
                                  f"builder() raised {exc!r}") from exc
        if not isinstance(model, pm.Model):
            raise ParameterTypeError(f"builder() must return a pymc.Model; got {type(model).__name__}")
        return model
    raise ParameterTypeError(
        f"model must be a pymc.Model, a PyMCDataModel or a zero-argument builder; got {type(model_or_builder).__name__}"
    )


def _transform_support(transform, rv) -> tuple[Any, Any] | None:
    """(lower, upper) of a value transform's image, symbolic or float; None when unknown or absent."""
    from pymc.distributions.transforms import LogExpM1
    from pymc.logprob.transforms import CircularTransform, IntervalTransform, LogOddsTransform, LogTransform

    if transform is None:
        return None
    if isinstance(transform, (LogTransform, LogExpM1)):
        return 0.0, math.inf
    if isinstance(transform, LogOddsTransform):
        return 0.0, 1.0
    if isinstance(transform, CircularTransform):
        return -math.pi, math.pi
    if isinstance(transform, IntervalTransform):
        lo, hi = transform.args_fn(*rv.owner.inputs)
        return (-math.inf if lo is None else lo), (math.inf if hi is None else hi)
    return None


def _bound_range(model, expr, side: str, supports: Mapping[str, tuple[float, float]],
                 value_names: Mapping[Any, str]) -> float:
    """The smallest (side "lo") or largest ("hi") value of a bound expression over the parents' supports."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph
    from pytensor.graph.traversal import explicit_graph_inputs

    if isinstance(expr, (int, float, np.number, np.ndarray)):
        return float(np.asarray(expr, dtype=float))
    (expr,) = model.replace_rvs_by_values([pt.as_tensor_variable(expr)])
    inputs = [v for v in explicit_graph_inputs([expr]) if v in value_names]
    if not inputs:
        return float(np.asarray(expr.eval(), dtype=float))
    names = [value_names[v] for v in inputs]
    ranges = [supports[n] for n in names]
    if not all(math.isfinite(lo) and math.isfinite(hi) for lo, hi in ranges):
        return -math.inf if side == "lo" else math.inf
    per = max(3, int(round(1e5 ** (1.0 / len(inputs)))))
    per = min(per, 257)
    grids = np.meshgrid(*(np.linspace(lo, hi, per) for lo, hi in ranges), indexing="ij")
    vectors = {v: pt.vector(dtype=v.dtype) for v in inputs}
    out = vectorize_graph(expr, replace=vectors)
    fn = _pm().compile([vectors[v] for v in inputs], out, on_unused_input="ignore")
    vals = np.asarray(fn(*(g.reshape(-1).astype(v.dtype) for g, v in zip(grids, inputs))), dtype=float)
    vals = vals[~np.isnan(vals)]
    if vals.size == 0:
        return -math.inf if side == "lo" else math.inf
    return float(vals.min() if side == "lo" else vals.max())


def parameter_density(model_or_builder: Any, parameters: Sequence[str] | None = None) -> ParameterDensity:
    """The joint density of a PyMC model's scalar continuous parameters, for max-influence.

    Parameters
    ----------
    model_or_builder : pymc.Model, PyMCDataModel or callable
        The model; a :class:`PyMCDataModel` gives its built model; a callable
        is called with no argument and must return a :class:`pymc.Model`. The
        model is not mutated.
    parameters : sequence of str, optional
        The parameters φ (nodes of the network over the attributes'
        parameters). Default: every scalar continuous free random variable.
        They must be closed under taking ancestors among the free random
        variables (a parameter's parents are parameters): then the joint
        density of the parameters is the product of their conditionals, and
        free random variables downstream (e.g. the records) integrate out.

    Returns
    -------
    ParameterDensity

    Raises
    ------
    ValidationError
        An unknown, non-scalar or discrete parameter; a parameter with a free
        random variable upstream that is not a parameter; observed variables or
        ``pm.Potential`` terms depending on the parameters (the parameters' law
        would be a posterior, which the prior's graph does not factorise).

    Examples
    --------
    >>> import pymc as pm
    >>> with pm.Model() as m:
    ...     i = pm.Uniform("i", 0, 1)
    ...     q = pm.TruncatedNormal("q", mu=i, sigma=0.5, lower=0, upper=1)
    >>> d = parameter_density(m)
    >>> d.names, sorted(d.graph.edges()), d.supports["q"]
    (('i', 'q'), [('i', 'q')], (0.0, 1.0))
    >>> float(d.log_density({"i": 0.5}))
    0.0
    """
    import networkx as nx
    from pymc.model.transform.conditioning import remove_value_transforms

    model = _resolve_model(model_or_builder)
    chosen = _choose_parameters(model, parameters)
    parents = _parameter_parents(model, chosen)
    _check_unconditioned(model, chosen)
    graph = nx.DiGraph()
    graph.add_nodes_from(chosen)
    graph.add_edges_from((a, p) for p in chosen for a in parents[p])
    order = tuple(nx.lexicographical_topological_sort(graph, key=chosen.index))
    untransformed = remove_value_transforms(model)
    supports = _parameter_supports(model, untransformed, order)
    return ParameterDensity(order, graph, dict(supports), dict(parents), untransformed, model)


def _scalar_continuous(v) -> bool:
    """Whether a random variable is a scalar of float dtype."""
    return v.type.ndim == 0 and str(v.dtype).startswith("float")


def _choose_parameters(model, parameters: Sequence[str] | None) -> list[str]:
    """The parameters asked for (checked: free, scalar, continuous), or every scalar continuous free variable."""
    free = list(model.free_RVs)
    by_name = {v.name: v for v in free}
    if parameters is None:
        chosen = [v.name for v in free if _scalar_continuous(v)]
        if not chosen:
            raise fail("model", "a PyMC model with at least one scalar continuous free random variable",
                       described(f"free variables {sorted(by_name)!r}"))
        return chosen
    if isinstance(parameters, str) or not isinstance(parameters, Sequence):
        raise ParameterTypeError(f"parameters must be a sequence of variable names; got {parameters!r}")
    chosen = list(dict.fromkeys(parameters))
    for p in chosen:
        if p not in by_name:
            raise fail("parameters", f"free random variables of the model {sorted(by_name)!r}", p)
        v = by_name[p]
        if v.type.ndim != 0:
            raise fail("parameters", "scalar parameters (max-influence runs on scalar φ's)",
                       described(f"{p!r} with {v.type.ndim} dimension(s)"))
        if not _scalar_continuous(v):
            raise fail("parameters", "continuous parameters (use a pgmpy DiscreteBayesianNetwork for discrete ones)",
                       described(f"{p!r} of dtype {v.dtype}"))
    return chosen


def _parameter_parents(model, chosen: list[str]) -> dict[str, tuple[str, ...]]:
    """Each parameter's parents through deterministics; they must all be parameters themselves."""
    free = list(model.free_RVs)
    by_name = {v.name: v for v in free}
    chosen_set = set(chosen)
    # parents through deterministics: free variables reached without crossing another free variable
    parents: dict[str, tuple[str, ...]] = {}
    for p in chosen:
        rv = by_name[p]
        anc = _ancestors(rv.owner.inputs, blockers=free)
        pas = [v.name for v in free if v in anc and v is not rv]
        outside = [a for a in pas if a not in chosen_set]
        if outside:
            kind = ", ".join(
                f"{a!r} ({'non-scalar' if by_name[a].type.ndim else 'discrete' if not _scalar_continuous(by_name[a]) else 'not listed'})"
                for a in outside
            )
            raise fail("parameters", "closed under parents (every free random variable upstream of a parameter is "
                       "a scalar continuous parameter, so that their density factorises)",
                       described(f"{p!r} has parent(s) {kind}"))
        parents[p] = tuple(pas)
    return parents


def _check_unconditioned(model, chosen: list[str]) -> None:
    """No observed variable and no ``pm.Potential`` may depend on the parameters."""
    by_name = {v.name: v for v in model.free_RVs}
    for obs in model.observed_RVs:
        anc = _ancestors([obs])
        hit = sorted(p for p in chosen if by_name[p] in anc)
        if hit:
            raise ValidationError(
                f"the model must not observe data depending on the parameters for max-influence; {obs.name!r} depends "
                f"on {hit!r}: the parameters' law would be a posterior, which their prior graph does not factorise. "
                "Drop the observed variable (e.g. build the model without public data), or discretise the posterior "
                "into a pgmpy DiscreteBayesianNetwork"
            )
    for pot in model.potentials:
        anc = _ancestors([pot])
        hit = sorted(p for p in chosen if by_name[p] in anc)
        if hit:
            raise ValidationError(
                f"the model must not contain pm.Potential terms on the parameters for max-influence; "
                f"{pot.name!r} depends on {hit!r}"
            )


def _parameter_supports(model, untransformed, order: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """Support (lo, hi) of each parameter, in topological order, from its own and its value transform's bounds."""
    from pymc.distributions.transforms import _default_transform

    by_name = {v.name: v for v in model.free_RVs}
    value_names = {untransformed.rvs_to_values[untransformed[p]]: p for p in order}
    supports: dict[str, tuple[float, float]] = {}
    for p in order:
        rv2 = untransformed[p]
        lo, hi = -math.inf, math.inf
        for tr in (_default_transform(rv2.owner.op, rv2), model.rvs_to_transforms.get(by_name[p])):
            sup = _transform_support(tr, rv2)
            if sup is None:
                continue
            lo = max(lo, _bound_range(untransformed, sup[0], "lo", supports, value_names))
            hi = min(hi, _bound_range(untransformed, sup[1], "hi", supports, value_names))
        if not lo < hi:
            raise ValidationError(f"parameter {p!r} must have a non-empty support; got ({lo:g}, {hi:g})")
        supports[p] = (float(lo), float(hi))
    return supports
