"""Exact max-influence of a linear Gaussian network over parameters: 0 when φ_Q ⊥ φ_i, else unbounded."""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np

from bayespriv.datamodels.parameters.network import linear_gaussian_covariance
from .influence_result import MaxInfluence

#: Relative tolerance below which a Gaussian cross-covariance counts as zero.
_GAUSSIAN_ZERO = 1e-12


def _gaussian_influence(network: Any, node: Hashable, quilt: tuple) -> MaxInfluence:
    """e(Q | i) of a linear Gaussian network: 0 if φ_Q ⊥ φ_i, else unbounded.

    Given φ_i = a, φ_Q ~ N(μ_Q + Σ_Qi (a − μ_i)/Σ_ii, Σ_Q|i), so
    log p(x | a) − log p(x | b) = (a − b) cᵀ Σ_Q|i⁻¹ (x − ·) with c = Σ_Qi/Σ_ii:
    linear in x, hence unbounded over ℝ^|Q| unless c = 0.
    """
    order, cov = linear_gaussian_covariance(network)
    qi = [order.index(v) for v in quilt]
    ii = order.index(node)
    c = np.asarray(cov, dtype=float)[qi, ii]
    scale = math.sqrt(float(cov[ii, ii]) * float(np.max(np.diag(cov)[qi]))) if cov[ii, ii] > 0 else 0.0
    frozen_q = frozenset(quilt)
    if cov[ii, ii] <= 0:
        return MaxInfluence(0.0, node, frozen_q, None, None, f"φ_{node} is deterministic: no pair of secrets")
    if np.all(np.abs(c) <= _GAUSSIAN_ZERO * max(scale, 1e-300)):
        return MaxInfluence(0.0, node, frozen_q, None, None, "φ_Q is independent of φ_i (zero cross-covariance)")
    return MaxInfluence(math.inf, node, frozen_q, None, None,
                        "linear Gaussian: the conditional mean of φ_Q moves with φ_i over an unbounded support, "
                        "so the log density ratio is unbounded")

