"""The tabulated route of a PyMC data model: exact posteriors of a single scalar latent variable.

When a secret's posterior involves one free random variable, scalar and
continuous, its log density on the unconstrained scale is tabulated
(:mod:`bayespriv.datamodels._quadrature`) and drawn by exact inverse CDF instead
of MCMC (route ``"quadrature"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...secrets import Secret
from .graph import _pm, _scalar_constant, _static_shape
from .plans import _Plan


class TabulatedPosteriors:
    """The quadrature tables of :class:`~bayespriv.datamodels.PyMCDataModel`, memoised per process."""

    def _quadrature(self, secret: Secret | None, plan: _Plan, seed: int | None = None):
        """The quadrature table of ``secret``'s posterior (:mod:`bayespriv.datamodels._quadrature`), or the reason
        there is none.

        Memoised per process, per secret and seed (``None`` outside :meth:`prepare`). Only for an
        ``"mcmc"`` plan whose MCMC model has a single free random variable, scalar and continuous,
        with a value transform inverted in NumPy, no interval, and ``conjugate=True``.
        """
        rt = self._runtime()
        with rt.lock:
            hit = rt.tables.get((secret, seed))
            if hit is None:
                hit = self._cached_quadrature(secret, plan, seed)
                rt.tables[(secret, seed)] = hit
            return hit

    def _cached_quadrature(self, secret: Secret | None, plan: _Plan, seed: int | None = None):
        """:meth:`_build_quadrature` through the process's posterior cache (other instances of the same model)."""
        from .._posterior_cache import get as cache_get, put as cache_put
        from .._quadrature import QuadratureTable

        if not self.conjugate:
            return "exact posteriors disabled (conjugate=False)"
        key = self._posterior_key(secret, plan, seed, route="quadrature")
        hit = cache_get(key, (QuadratureTable, str))
        if hit is None:
            hit = self._build_quadrature(plan)
            size = 256 if isinstance(hit, str) else hit.cumulative.nbytes + hit.rise.nbytes
            cache_put(key, hit, size)
        return hit

    def _build_quadrature(self, plan: _Plan):
        from .._quadrature import build_table

        if not self.conjugate:
            return "exact posteriors disabled (conjugate=False)"
        if plan.interval is not None:
            return "interval secrets restrict the posterior (MCMC then rejection)"
        if plan.pivot is not None:
            return "a secret on a deterministic is drawn through its pivot"
        m = self._mcmc_model(plan)
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

    def _exact_table(self, secret: Secret | None, plan: _Plan):
        """The quadrature table to draw ``secret``'s latent variable from, or None (MCMC)."""
        table = self._tables.get(secret)
        if table is not None or secret in self._pools:
            return table
        table = self._quadrature(secret, plan)
        return None if isinstance(table, str) else table


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
