"""Compiled batched samplers of a PyMC data model: one PyTensor function per set of given variables.

The model is intervened on (``pm.do``) at the given variables, every random
variable without random parents gets a leading batch dimension and the rest of
the graph is vectorised, so that one call draws ``(n_draws, n_records)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .graph import _ancestors, _pm, _random_op_types, _static_shape


class BatchedSamplers:
    """The compiled samplers of :class:`~bayespriv.datamodels.PyMCDataModel`, cached per process."""

    def _function(self, givens: tuple[str, ...], mean_column: str | None, outputs: tuple[str, ...],
                  element: tuple[str, tuple[int, ...], float] | None = None):
        """Compiled ``f(n_draws, *given batches[, mean values]) -> outputs``, cached per process.

        Returns (function, its RNG shared variables, input names).
        """
        rt = self._runtime()
        key = (givens, mean_column, outputs, element)
        with rt.lock:
            hit = rt.functions.get(key)
            if hit is None:
                hit = self._compile(givens, mean_column, outputs, element)
                rt.functions[key] = hit
            return hit

    def _compile(self, givens, mean_column, outputs, element=None):
        import pytensor
        import pytensor.tensor as pt
        from pymc.distributions.shape_utils import change_dist_size
        from pytensor.graph.replace import graph_replace, vectorize_graph
        from pytensor.tensor.random.type import RandomGeneratorType

        from .._fast_rv import swap_samplers

        pm = _pm()
        model = self.pymc_model
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
            name, index, value = element
            var = model[name]
            fresh = var.owner.clone().default_output()
            mask = np.zeros(_static_shape(var), dtype=bool)
            mask[index] = True
            interventions[name] = pt.switch(mask, np.asarray(value, dtype=var.dtype), fresh)
        do_model = pm.do(model, interventions) if interventions else model
        outs = [do_model[name] for name in outputs]
        batched_inputs = list(placeholders.values()) + extra
        rv_types = _random_op_types()
        nodes = []
        for var in _ancestors(outs):
            if var.owner is not None and isinstance(var.owner.op, rv_types) and var.owner not in nodes:
                nodes.append(var.owner)
        random_outputs = {v for node in nodes for v in node.outputs}
        n_draws = pt.lscalar("n_draws")
        replace = {}
        for node in nodes:
            params = [i for i in node.inputs if not isinstance(i.type, RandomGeneratorType)]
            upstream = _ancestors(params) if params else set()
            if not any(v in random_outputs or v in placeholders.values() or v in extra for v in upstream):
                out = node.default_output()
                replace[out] = change_dist_size(out, new_size=(n_draws,), expand=True)
        batched = {v: pt.tensor(dtype=v.dtype, shape=(None,) + v.type.shape, name=v.name) for v in batched_inputs}
        replace.update(batched)
        vouts = vectorize_graph(outs, replace=replace)
        vouts = swap_samplers(vouts)  # Bernoulli / Normal drawn by plain NumPy (same laws, see _fast_rv)
        # own RNGs: never touch the model's shared generators
        # (in graph order, so that reseeding is the same in every process)
        rngs_old = [v for v in _ancestors(vouts) if isinstance(v.type, RandomGeneratorType) and v.owner is None]
        own = {r: pytensor.shared(np.random.default_rng(0), name=f"rng{i}") for i, r in enumerate(rngs_old)}
        if own:
            vouts = graph_replace(vouts, own, strict=False)
        fn = pm.compile([n_draws] + [batched[v] for v in batched_inputs], vouts, on_unused_input="ignore")
        return fn, list(own.values())

    def _draw(self, givens: Mapping[str, np.ndarray], mean: tuple[str, float] | None, outputs: tuple[str, ...],
              n_draws: int, rng: np.random.Generator,
              element: tuple[str, tuple[int, ...], float] | None = None) -> dict[str, np.ndarray]:
        """Outputs ``(n_draws, ...)`` from the compiled sampler given batched ``givens``."""
        from pymc.pytensorf import reseed_rngs

        model = self.pymc_model
        to_compute = tuple(o for o in outputs if o not in givens)
        out = {o: givens[o] for o in outputs if o in givens}
        if not to_compute:
            return out
        names = tuple(sorted(givens))
        fn, rngs = self._function(names, mean[0] if mean else None, to_compute, element)
        args = [np.asarray(givens[g], dtype=model[g].dtype) for g in names]
        if mean is not None:
            args.append(np.full(n_draws, mean[1], dtype=model[mean[0]].dtype))
        seed = int(rng.integers(0, 2**63 - 1))
        rt = self._runtime()
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
