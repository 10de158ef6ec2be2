"""The tabulated route of a PyMC data model: exact posteriors of a single scalar latent variable.

When a secret's posterior involves one free random variable, scalar and
continuous, its log density on the unconstrained scale is tabulated
(:mod:`bayespriv.datamodels._quadrature`) and drawn by exact inverse CDF instead
of MCMC (route ``"quadrature"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...secrets import Secret
from .graph import _pm, _scalar_constant, _static_shape
from .plans import Plan
from .runtime import RuntimeSource


class TabulatedPosteriors:
    """The quadrature tables of a :class:`~bayespriv.datamodels.PyMCDataModel`, memoised per process.

    Parameters
    ----------
    runtime : callable
        The data model's runtime lookup (:data:`~bayespriv.datamodels.pymc_model.runtime.RuntimeSource`): its lock
        and the per-process memo of tables.
    conjugate : bool
        Whether exact posteriors may be used (``False``: never a table).
    runs : PosteriorRunner
        The posterior runs (:mod:`~bayespriv.datamodels.pymc_model.posterior`), whose keys name the tables in the
        posterior cache.
    conditioned : ConditionedModelBuilder
        The models MCMC would sample (:mod:`~bayespriv.datamodels.pymc_model.conditioned`): a table tabulates one.
    """

    def __init__(self, runtime: RuntimeSource, *, conjugate: bool, runs: Any, conditioned: Any) -> None:
        self._runtime = runtime
        self.conjugate, self.runs, self.conditioned = conjugate, runs, conditioned

    def table(self, secret: Secret | None, plan: Plan, seed: int | None = None):
        """The quadrature table of ``secret``'s posterior (:mod:`bayespriv.datamodels._quadrature`), or the reason
        there is none.

        Memoised per process, per secret and seed (``None`` outside
        :meth:`~bayespriv.datamodels.PyMCDataModel.prepare`). Only for an
        ``"mcmc"`` plan whose MCMC model has a single free random variable, scalar and continuous,
        with a value transform inverted in NumPy, no interval, and ``conjugate=True``.
        """
        rt = self._runtime()
        with rt.lock:
            hit = rt.tables.get((secret, seed))
            if hit is None:
                hit = self.cached(secret, plan, seed)
                rt.tables[(secret, seed)] = hit
            return hit

    def cached(self, secret: Secret | None, plan: Plan, seed: int | None = None):
        """:meth:`build` through the process's posterior cache (other instances of the same model)."""
        from ..posterior_cache import get as cache_get, put as cache_put
        from .._quadrature import QuadratureTable

        if not self.conjugate:
            return "exact posteriors disabled (conjugate=False)"
        key = self.runs.key(secret, plan, seed, route="quadrature")
        hit = cache_get(key, (QuadratureTable, str))
        if hit is None:
            hit = self.build(plan)
            size = 256 if isinstance(hit, str) else hit.cumulative.nbytes + hit.rise.nbytes
            cache_put(key, hit, size)
        return hit

    def build(self, plan: Plan):
        """The quadrature table of ``plan``'s posterior, or the reason there is none (no memo, no cache)."""
        from .._quadrature import build_table

        if not self.conjugate:
            return "exact posteriors disabled (conjugate=False)"
        if plan.interval is not None:
            return "interval secrets restrict the posterior (MCMC then rejection)"
        if plan.pivot is not None:
            return "a secret on a deterministic is drawn through its pivot"
        m = self.conditioned.mcmc_model(plan)
        if len(m.free_RVs) != 1:
            return f"the posterior has {len(m.free_RVs)} free variables (quadrature is for one)"
        rv = m.free_RVs[0]
        if rv.type.ndim != 0 or not str(rv.dtype).startswith("float") or plan.pool != (rv.name,):
            return f"{rv.name!r} is not a scalar continuous latent variable"
        backward = _backward_of(m, rv)
        if backward is None:
            return f"the value transform of {rv.name!r} has no NumPy inverse here"
        logp = _vectorised_logp(m, rv)
        u0 = float(m.initial_point()[m.rvs_to_values[rv].name])
        return build_table(rv.name, logp, u0, backward)

    def exact(self, secret: Secret | None, plan: Plan, tables: Mapping[Any, Any], pools: Mapping[Any, Any]):
        """The quadrature table to draw ``secret``'s latent variable from, or None (MCMC).

        ``tables`` and ``pools`` are what :meth:`~bayespriv.datamodels.PyMCDataModel.prepare` kept: a prepared
        table, or else none when a prepared MCMC pool exists; otherwise the table tabulated in this process.
        """
        table = tables.get(secret)
        if table is not None or secret in pools:
            return table
        table = self.table(secret, plan)
        return None if isinstance(table, str) else table


def table_diagnostics(table: Any) -> dict[str, Any]:
    """The :attr:`~bayespriv.datamodels.PyMCDataModel.diagnostics` entry of a secret drawn from ``table``."""
    return {
        "route": "quadrature", "variables": [table.name], "tv_bound": float(table.tv_bound),
        "grid_points": int(table.cumulative.size + 1),
        "note": f"exact posterior of {table.name!r} tabulated on {table.cumulative.size + 1} points "
                f"(log-concave; total-variation distance <= {table.tv_bound:.2g}), no MCMC",
    }


def _backward_of(model, rv):
    """The NumPy inverse of ``rv``'s value transform in ``model`` (:class:`bayespriv.datamodels._quadrature.Backward`),
    or None."""
    from pymc.distributions.transforms import LogExpM1
    from pymc.logprob.transforms import IntervalTransform, LogOddsTransform, LogTransform

    from .._quadrature import Backward

    transform = model.rvs_to_transforms.get(rv)
    if transform is None:
        return Backward("identity")
    if isinstance(transform, LogExpM1):
        return None
    if isinstance(transform, LogTransform):
        return Backward("log")
    if isinstance(transform, LogOddsTransform):
        return Backward("logodds")
    if isinstance(transform, IntervalTransform):
        bounds = []
        for b in transform.args_fn(*rv.owner.inputs):
            value = None if b is None else _scalar_constant(b)
            if b is not None and value is None:
                return None  # a bound that depends on something else
            bounds.append(None if value is None or not math.isfinite(value) else value)
        if bounds[0] is None and bounds[1] is None:
            return Backward("identity")
        return Backward("interval", bounds[0], bounds[1])
    return None


def _vectorised_logp(model, rv) -> Callable[[np.ndarray], np.ndarray]:
    """u -> the model's joint log density (value transform's Jacobian included) at ``rv``'s value u, vectorised.

    Evaluated in chunks so that the per-point terms (one per record of the
    evidence) stay below about 2^22 numbers.
    """
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph

    value = model.rvs_to_values[rv]
    points = pt.vector(f"{value.name}__points", dtype=value.dtype)
    out = vectorize_graph(model.logp(jacobian=True), replace={value: points})
    fn = _pm().compile([points], out, on_unused_input="ignore")
    width = max(1, sum(int(np.prod(_static_shape(v) or (1,))) for v in model.observed_RVs))
    chunk = max(256, (1 << 22) // width)

    def logp(u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=value.dtype)
        return np.concatenate([np.asarray(fn(u[i:i + chunk]), dtype=float).reshape(-1)
                               for i in range(0, u.size, chunk)])

    return logp
