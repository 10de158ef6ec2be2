"""Bernoulli and Normal forward draws without SciPy's per-call overhead.

PyTensor draws ``Bernoulli(p)`` through ``scipy.stats.bernoulli.rvs`` (a
Binomial(1, p) draw behind SciPy's argument handling) and ``Normal(μ, σ)``
through ``Generator.normal(μ, σ)`` with broadcast array parameters, which is
slower than a standard normal scaled in place. The batched samplers of
:class:`~bayespriv.datamodels.PyMCDataModel` swap these two operations for
subclasses drawing the same distributions with plain NumPy:

* ``Bernoulli(p)``: ``U < p`` with ``U ~ Uniform[0, 1)`` (``Generator.random``):
  P(U < p) = p for every p in [0, 1] (exactly, up to the 2⁻⁵³ grid of U).
* ``Normal(μ, σ)``: ``μ + σ Z`` with ``Z ~ N(0, 1)`` (``Generator.standard_normal``).

Both are exact transformations, so the law of every draw is unchanged (the
random stream differs from PyTensor's own). Invalid parameters raise as the
originals do (p outside [0, 1], σ < 0 or NaN). Only the forward samplers use
them: log densities (MCMC, quadrature) never see these operations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pytensor.tensor.random.basic import BernoulliRV, NormalRV

__all__ = ["swap_samplers"]


def _shape(size: Any, *params: np.ndarray) -> tuple[int, ...]:
    return tuple(size) if size is not None else np.broadcast_shapes(*(np.shape(p) for p in params))


class FastBernoulliRV(BernoulliRV):
    """``Bernoulli(p)`` drawn as ``Generator.random(size) < p`` (see the module notes)."""

    def rng_fn(self, rng, p, size):  # noqa: D102 - see the class
        p = np.asarray(p)
        if not np.all((p >= 0.0) & (p <= 1.0)):
            raise ValueError(f"Bernoulli p must lie in [0, 1]; got values outside (min {np.min(p)!r}, max {np.max(p)!r})")
        return rng.random(_shape(size, p)) < p


class FastNormalRV(NormalRV):
    """``Normal(μ, σ)`` drawn as ``μ + σ · Generator.standard_normal(size)`` (see the module notes)."""

    def rng_fn(self, rng, loc, scale, size):  # noqa: D102 - see the class
        scale = np.asarray(scale)
        if not np.all(scale >= 0.0):
            raise ValueError(f"Normal scale must be >= 0; got values below 0 or NaN (min {np.min(scale)!r})")
        z = rng.standard_normal(_shape(size, loc, scale))
        z *= scale
        z += loc
        return z


_FAST = {BernoulliRV: FastBernoulliRV, NormalRV: FastNormalRV}


def swap_samplers(outputs: list) -> list:
    """``outputs`` with every Bernoulli / Normal draw upstream replaced by its NumPy twin.

    The graph is rebuilt in topological order (the original is not touched):
    an applied operation is cloned with its rebuilt inputs, and a
    ``BernoulliRV`` / ``NormalRV`` (exact class, not a subclass) becomes the
    corresponding fast operation with the same properties (dtype, signature).
    Under a linker that compiles random variables itself (Numba, PyTensor 3's
    default) ``rng_fn`` is never called, so ``outputs`` are returned unchanged.
    """
    from pytensor.graph.traversal import toposort

    from .compat import random_draws_call_rng_fn

    if not random_draws_call_rng_fn():
        return list(outputs)

    memo: dict[Any, Any] = {}
    for node in toposort(outputs):
        inputs = [memo.get(i, i) for i in node.inputs]
        fast = _FAST.get(type(node.op))
        if fast is None and all(a is b for a, b in zip(inputs, node.inputs)):
            continue
        if fast is not None:
            new = fast(**node.op._props_dict()).make_node(*inputs)
        else:
            new = node.clone_with_new_inputs(inputs, strict=False)
        memo.update(zip(node.outputs, new.outputs))
    return [memo.get(o, o) for o in outputs]
