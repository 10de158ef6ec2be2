"""Compiled batched samplers of a PyMC data model: one PyTensor function per set of given variables.

The model is intervened on (``pm.do``) at the given variables, every random
variable without random parents gets a leading batch dimension and the rest of
the graph is vectorised, so that one call draws ``(n_draws, n_records)``. A
variable declared with ``shape=``/``dims=`` whose parameters get a batch
dimension has its size dropped and its parameters broadcast to it (the same
law). A graph with an operation PyTensor cannot vectorise (a ``NormalMixture``
with batched weights) is compiled once unbatched and called once per dataset.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...errors import ValidationError
from .graph import _ancestors, _pm, _random_op_types, _static_shape
from .plans import Plan
from .runtime import RuntimeSource


class BatchedSampler:
    """The compiled samplers of a :class:`~bayespriv.datamodels.PyMCDataModel`, cached per process.

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): the
        built model, its lock and the per-process cache of compiled functions.
    n_records : int
        Records per dataset.
    """

    def __init__(self, runtime: RuntimeSource, n_records: int) -> None:
        self._runtime = runtime
        self.n_records = n_records

    def function(self, givens: tuple[str, ...], mean_column: str | None, outputs: tuple[str, ...],
                 element: tuple[str, tuple[int, ...], float] | None = None) -> tuple[Any, list]:
        """Compiled ``f(n_draws, *given batches[, mean values]) -> outputs``, cached per process.

        Returns (function, its RNG shared variables).
        """
        rt = self._runtime()
        key = (givens, mean_column, outputs, element)
        with rt.lock:
            hit = rt.functions.get(key)
            if hit is None:
                hit = self.compile(givens, mean_column, outputs, element)
                rt.functions[key] = hit
            return hit

    def compile(self, givens: tuple[str, ...], mean_column: str | None, outputs: tuple[str, ...],
                element: tuple[str, tuple[int, ...], float] | None = None) -> tuple[Any, list]:
        """:meth:`function` without the cache: the model intervened on at ``givens`` (and the public data), batched
        and compiled."""
        import pytensor.tensor as pt

        pm = _pm()
        model = self._runtime().model
        n = self.n_records
        placeholders = {name: model[name].type(name=f"{name}__given") for name in givens}
        interventions: dict[str, Any] = dict(placeholders)
        for obs in model.observed_RVs:  # public data stays fixed (a copy: pm.do renames what it is given)
            data = model.rvs_to_values[obs]
            interventions[obs.name] = np.array(data.get_value() if hasattr(data, "get_value") else data.data)
        extra = []
        if mean_column is not None:
            x = model[mean_column]
            loc, scale = (pt.cast(v, x.dtype) for v in x.owner.op.dist_params(x.owner))  # constants may be float32
            loc_n = pt.broadcast_to(loc, (n,))
            s2 = pt.broadcast_to(scale, (n,)) ** 2
            y = pt.random.normal(loc_n, pt.sqrt(s2))
            a = pt.scalar(f"{mean_column}__mean", dtype=x.dtype)
            x_cond = y + s2 / pt.sum(s2, axis=-1) * (n * a - pt.sum(y, axis=-1))
            interventions[mean_column] = pt.cast(x_cond, x.dtype)
            extra.append(a)
        if element is not None:  # a fresh draw of the parameter (same parents), one element set to the value
            interventions[element[0]] = _element_draw(model[element[0]], element[1], element[2])
        do_model = pm.do(model, interventions) if interventions else model
        outs = [do_model[name] for name in outputs]
        batched_inputs = list(placeholders.values()) + extra
        try:
            return _vectorized(pm, outs, batched_inputs)
        except NotImplementedError as exc:  # an operation PyTensor cannot vectorise (e.g. a NormalMixture's)
            return _looped(pm, outs, batched_inputs, exc)

    def draw(self, givens: Mapping[str, np.ndarray], mean: tuple[str, float] | None, outputs: tuple[str, ...],
             n_draws: int, rng: np.random.Generator,
             element: tuple[str, tuple[int, ...], float] | None = None) -> dict[str, np.ndarray]:
        """Outputs ``(n_draws, ...)`` from the compiled sampler given batched ``givens``."""
        from pymc.pytensorf import reseed_rngs

        rt = self._runtime()
        model = rt.model
        to_compute = tuple(o for o in outputs if o not in givens)
        out = {o: givens[o] for o in outputs if o in givens}
        if not to_compute:
            return out
        names = tuple(sorted(givens))
        fn, rngs = self.function(names, mean[0] if mean else None, to_compute, element)
        args = [np.asarray(givens[g], dtype=model[g].dtype) for g in names]
        if mean is not None:
            args.append(np.full(n_draws, mean[1], dtype=model[mean[0]].dtype))
        seed = int(rng.integers(0, 2**63 - 1))
        with rt.lock:
            if rngs:
                reseed_rngs(rngs, seed)
            values = fn(n_draws, *args)
        if not isinstance(values, list):
            values = [values]
        for o, v in zip(to_compute, values):
            v = np.asarray(v)
            if v.ndim == model[o].type.ndim:  # an output with no randomness in it
                v = np.broadcast_to(v, (n_draws,) + v.shape)
            out[o] = v
        return out

    def fixed(self, plan: Plan, n_draws: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The batches of the variables ``plan`` fixes (its pool aside): each value repeated ``n_draws`` times, the
        permuted configuration shuffled per draw."""
        givens: dict[str, np.ndarray] = {}
        for name, value in plan.fixed.items():
            if name == plan.permute:  # a 0/1 configuration: shuffle it as booleans (2.5x faster than int64)
                flags = np.broadcast_to(value.astype(bool), (n_draws,) + value.shape)
                givens[name] = rng.permuted(flags, axis=1).astype(value.dtype)
            elif name not in plan.pool:
                givens[name] = np.broadcast_to(value, (n_draws,) + value.shape)
        return givens

    def rejection(self, plan: Plan, n_draws: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Prior draws of ``plan.pool`` with the parameter in its interval, in vectorised rounds."""
        name, lo, hi = plan.interval
        kept: dict[str, list[np.ndarray]] = {v: [] for v in plan.pool}
        need, tried, accepted = n_draws, 0, 0
        while need > 0:
            rate = accepted / tried if accepted else None
            size = max(2 * need, 256) if rate is None else int(math.ceil(1.2 * need / rate)) + 16
            draws = self.draw({}, None, plan.pool, size, rng)
            ok = (draws[name] >= lo) & (draws[name] <= hi)
            tried += size
            accepted += int(ok.sum())
            for v in plan.pool:
                kept[v].append(draws[v][ok])
            need -= int(ok.sum())
            if tried >= 100_000 and accepted < 1e-3 * tried:
                raise ValidationError(
                    f"intervals[{name}] must have prior probability >= 1e-3 for rejection sampling; "
                    f"got about {accepted / tried:.2g} for [{lo:g}, {hi:g}]"
                )
        return {v: np.concatenate(kept[v])[:n_draws] for v in plan.pool}


def _random_nodes(outs: list, batched: set) -> tuple[list, list]:
    """The random nodes ``outs`` depend on, split into those without random or batched parents (they get a
    leading batch dimension by a new size) and the others (vectorised through their parameters)."""
    from pytensor.tensor.random.type import RandomGeneratorType

    rv_types = _random_op_types()
    nodes = []
    for var in _ancestors(outs):
        if var.owner is not None and isinstance(var.owner.op, rv_types) and var.owner not in nodes:
            nodes.append(var.owner)
    random_outputs = {v for node in nodes for v in node.outputs}
    roots, dependent = [], []
    for node in nodes:
        params = [i for i in node.inputs if not isinstance(i.type, RandomGeneratorType)]
        upstream = _ancestors(params) if params else set()
        is_root = not any(v in random_outputs or v in batched for v in upstream)
        (roots if is_root else dependent).append(node)
    return roots, dependent


def _explicit_size(node) -> bool:
    """Whether a plain random variable was given a size (``shape=``/``dims=``), which fixes its batch shape."""
    from pytensor.tensor.random.op import RandomVariable

    if not isinstance(node.op, RandomVariable):
        return False
    size = node.op.size_param(node)
    return size is not None and not _is_none_const(size) and size.type.shape != (0,)


def _is_none_const(var) -> bool:
    from pytensor.tensor.type_other import NoneTypeT

    return isinstance(var.type, NoneTypeT)


def _without_sizes(outs: list, sized: set) -> list:
    """``outs`` rebuilt in topological order with every node of ``sized`` replaced by the same random variable
    without its size (:func:`_size_free`), each node reading the rebuilt inputs: a variable downstream of a
    replaced one reads the replacement's draw, never a second draw of the original."""
    from pytensor.graph.traversal import toposort

    memo: dict = {}
    for node in toposort(outs):
        inputs = [memo.get(i, i) for i in node.inputs]
        if node in sized:
            new = _size_free(node, inputs)
        elif any(a is not b for a, b in zip(inputs, node.inputs)):
            new = node.clone_with_new_inputs(inputs)
        else:
            continue
        memo.update(zip(node.outputs, new.outputs))
    return [memo.get(o, o) for o in outs]


def _size_free(node, inputs: list):
    """``node`` (a random variable given a size) on ``inputs`` with the size dropped and the parameters broadcast
    to it (the batch shape it had), so that a batch dimension added to a parameter broadcasts instead of
    clashing with it; an Apply node with the same outputs (next generator, draw)."""
    import pytensor.tensor as pt

    op = node.op
    rebuilt = node.clone_with_new_inputs(inputs)
    size = op.size_param(rebuilt)
    batch = tuple(size[i] for i in range(int(size.type.shape[0])))
    params = []
    for p, core in zip(op.dist_params(rebuilt), op.ndims_params):
        params.append(pt.broadcast_to(p, batch + tuple(p.shape[p.ndim - core:]) if core else batch))
    return op.make_node(op.rng_param(rebuilt), None, *params)


def _element_draw(var, index: tuple[int, ...], value: float):
    """A fresh draw of ``var`` given its parents with element ``index`` set to ``value``.

    Independent elements: the draw with that element replaced. A Dirichlet vector w ~ Dir(α) (constant α):
    given w_i = v the others are (1 − v)·Dir(α without α_i), by the aggregation property (the vector with
    w_i removed and renormalised is Dir(α_{−i}) and independent of w_i: Dirichlet neutrality).
    """
    import pytensor
    import pytensor.tensor as pt

    from .model_checks import is_dirichlet

    if is_dirichlet(var.owner.op):
        (alpha,) = var.owner.op.dist_params(var.owner)
        i = index[0]
        rest = pt.concatenate([alpha[..., :i], alpha[..., i + 1:]], axis=-1)
        rng = pytensor.shared(np.random.default_rng(0))  # replaced by the sampler's own generators (_own_rngs)
        others = (1.0 - value) * pt.random.dirichlet(rest, rng=rng)
        v = pt.as_tensor_variable(np.asarray([value], dtype=var.dtype))
        return pt.cast(pt.concatenate([others[..., :i], v, others[..., i:]], axis=-1), var.dtype)
    fresh = var.owner.clone().default_output()
    mask = np.zeros(_static_shape(var), dtype=bool)
    mask[index] = True
    return pt.switch(mask, np.asarray(value, dtype=var.dtype), fresh)


def _own_rngs(outs: list) -> tuple[list, list]:
    """``outs`` with their random generators replaced by the sampler's own shared ones (in graph order, so that
    reseeding gives the same draws in every process); never the model's generators."""
    import pytensor
    from pytensor.graph.replace import graph_replace
    from pytensor.tensor.random.type import RandomGeneratorType

    rngs_old = [v for v in _ancestors(outs) if isinstance(v.type, RandomGeneratorType) and v.owner is None]
    own = {r: pytensor.shared(np.random.default_rng(0), name=f"rng{i}") for i, r in enumerate(rngs_old)}
    if own:
        outs = graph_replace(outs, own, strict=False)
    return outs, list(own.values())


def _vectorized(pm: Any, outs: list, batched_inputs: list) -> tuple[Any, list]:
    """``f(n_draws, *batched inputs) -> outputs (n_draws, ...)``: every random variable without random or
    batched parents gets a leading batch dimension and the rest of the graph is vectorised."""
    import pytensor.tensor as pt
    from pymc.distributions.shape_utils import change_dist_size
    from pytensor.graph.replace import vectorize_graph

    from .._fast_rv import swap_samplers

    roots, dependent = _random_nodes(outs, set(batched_inputs))
    sized = {node for node in dependent if _explicit_size(node)}
    if sized:  # `dims=`/`shape=` on a variable whose parameters get a batch dimension: let the batch broadcast
        outs = _without_sizes(outs, sized)
        roots, dependent = _random_nodes(outs, set(batched_inputs))
    n_draws = pt.lscalar("n_draws")
    replace = {node.default_output(): change_dist_size(node.default_output(), new_size=(n_draws,), expand=True)
               for node in roots}
    batched = {v: pt.tensor(dtype=v.dtype, shape=(None,) + v.type.shape, name=v.name) for v in batched_inputs}
    replace.update(batched)
    vouts = swap_samplers(vectorize_graph(outs, replace=replace))  # Bernoulli / Normal by plain NumPy (_fast_rv)
    vouts, rngs = _own_rngs(vouts)
    fn = pm.compile([n_draws] + [batched[v] for v in batched_inputs], vouts, on_unused_input="ignore")
    return fn, rngs


class _Looped:
    """The sampler of a graph PyTensor cannot vectorise: one compiled call per dataset, stacked (a Python loop
    over draws, the price of such an operation; ``reason`` says which)."""

    def __init__(self, fn: Any, n_outputs: int, reason: str) -> None:
        self.fn, self.n_outputs, self.reason = fn, n_outputs, reason

    def __call__(self, n_draws: int, *args: np.ndarray) -> list[np.ndarray]:
        rows = [self.fn(*(a[i] for a in args)) for i in range(int(n_draws))]
        rows = [r if isinstance(r, list) else [r] for r in rows]
        return [np.stack([np.asarray(r[j]) for r in rows]) for j in range(self.n_outputs)]


def _looped(pm: Any, outs: list, batched_inputs: list, exc: Exception) -> tuple[Any, list]:
    louts, rngs = _own_rngs(outs)
    fn = pm.compile(list(batched_inputs), louts, on_unused_input="ignore")
    return _Looped(fn, len(outs), f"{type(exc).__name__}: {exc}"), rngs
