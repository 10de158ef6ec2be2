"""The distribution-free route: δ(ε) of a law known through draws, bounded for every law at any n.

Theorem (joint convexity; rigorous, no assumption on the law of F). Let X_1 … X_m be independent
draws of F under secret a and Y_1 … Y_m under secret b, U_a and U_b their empirical laws, and Z the
mechanism's additive noise. H_ε(P‖Q) = sup_E P(E) − e^ε Q(E) is a supremum of linear functionals of
(P, Q), hence jointly convex, and E[U_s] = μ_s (the law of F under s), so by Jensen's inequality

    H_ε(μ_a ∗ Z ‖ μ_b ∗ Z) ≤ E[ H_ε(U_a ∗ Z ‖ U_b ∗ Z) ].

Pair the atoms of the two blocks by any permutation π chosen from the block itself (here the
assignment of least total squared distance in the noise's metric); U_a and U_b are then the two
marginals of the coupling (1/m) Σ_i δ_(X_i, Y_π(i)), and convexity once more gives

    H_ε(U_a ∗ Z ‖ U_b ∗ Z) ≤ T := (1/m) Σ_i H_ε((X_i + Z) ‖ (Y_π(i) + Z)),

each term a closed form (the Gaussian mechanism's δ at the Mahalanobis distance ‖X_i − Y_π(i)‖ in
the noise's covariance, Balle & Wang 2018, Theorem 8; the Laplace mechanism's 1 − e^{(ε − d/b)/2}
in one dimension). The n draws per secret make B = n/m disjoint blocks, whose T_1 … T_B are
independent, in [0, 1], with mean at least the δ(ε) of the released laws; the upper confidence bound
of :func:`~bayespriv.privacy.draw_bounds.mean_upper` (betting, valid at any n and any stopping
time) bounds that δ(ε). Both directions are bounded at once (the pair terms are symmetric).

Block sizes are tried from :data:`BLOCK_SIZES` with a Bonferroni share each. Each T_j is
non-increasing in the noise scale (more noise is a post-processing) and the bound is monotone in
the T_j, so the bound is monotone in the scale: a scale chosen from the same draws — by this
route's own search or by another route's — keeps the coverage (the smallest scale whose true δ
meets the request is a fixed point; the bound can only pass below it when it fails there).

What it costs: the coupling cannot use F's own spread as noise, and the B = n/m blocks set a floor
of about ln(1/α)/B. It is within a small factor of the estimated route only when F's spread under
each secret is small against the noise (docs/design.rst, "the confidence statement").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import log_ndtr

from bayespriv.calibration.laws import Condition, SampledLaw
from .draw_bounds import mean_upper, upper_floor

__all__ = ["BLOCK_SIZES", "CertifiedBound", "CouplingPlan", "coupling_plan", "certified_bound", "pair_delta",
           "noise_transform", "usable_block_sizes"]

#: Block sizes tried (each with a Bonferroni share of the level).
BLOCK_SIZES = (1, 4, 16)
#: Largest block size matched by the assignment solver in k > 1 dimensions (cost m³ per block).
MAX_MATCHED = 64


def usable_block_sizes(n: int, alpha: float, target: float, sizes: tuple[int, ...] = BLOCK_SIZES) -> tuple[int, ...]:
    """The block sizes whose n // m blocks could certify ``target`` at all: the betting bound of blocks whose terms
    are all 0 (its floor) is below it, at the size's share of ``alpha``."""
    share = alpha / len(sizes)
    return tuple(m for m in sizes if n // m >= 2 and upper_floor(n // m, share) < target)


def pair_delta(distance: np.ndarray, epsilon: float, laplace: bool = False) -> np.ndarray:
    """H_ε(x + Z ‖ y + Z) for the noise's distance ‖x − y‖ (Gaussian: Mahalanobis in its covariance; Laplace,
    one dimension: |x − y|/b), vectorised, rounded up."""
    d = np.asarray(distance, float)
    out = np.zeros_like(d)
    pos = d > 0
    if laplace:
        out[pos] = -np.expm1(np.minimum(0.0, (epsilon - d[pos]) / 2.0))
        return np.minimum(1.0, out * (1 + 1e-12))
    r = d[pos]
    la, lb = log_ndtr(r / 2 - epsilon / r), log_ndtr(-r / 2 - epsilon / r)
    t = np.minimum(epsilon + lb - la, 0.0)
    out[pos] = np.exp(la) * -np.expm1(t)
    return np.minimum(1.0, out * (1 + 1e-9) + 1e-300 * pos)


@dataclass(frozen=True)
class CouplingPlan:
    """For one condition: per block size, the matched pairs' distances in the noise shape's metric.

    ``distances[m]`` has shape (B, m): block j's m pair distances (a distance d at noise scale t
    becomes d/t)."""

    label: str
    draws: int
    distances: dict[int, np.ndarray]


def _whitened(law: SampledLaw, transform: np.ndarray) -> np.ndarray:
    return law.draws @ transform.T


#: Largest block size whose least-squares assignment is found by trying every permutation (m! of them, all
#: blocks at once) instead of the assignment solver block by block.
MAX_ENUMERATED = 4


def _match(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """Distances of the least-squares assignment of two blocks (rows of (B, m, k) arrays)."""
    if xa.shape[2] == 1:  # one dimension: sorted order is optimal for every convex cost
        return np.abs(np.sort(xa[:, :, 0], axis=1) - np.sort(xb[:, :, 0], axis=1))
    if xa.shape[1] <= MAX_ENUMERATED:
        return _match_enumerated(xa, xb)
    out = np.empty(xa.shape[:2])
    for j in range(xa.shape[0]):
        cost = ((xa[j][:, None, :] - xb[j][None, :, :]) ** 2).sum(axis=2)
        rows, cols = linear_sum_assignment(cost)
        out[j, rows] = np.sqrt(cost[rows, cols])
    return out


def _match_enumerated(xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """:func:`_match` for small blocks: the permutation of least total squared distance among all m! of them
    (the first in lexicographic order where several tie), every block at once."""
    m = xa.shape[1]
    cost = ((xa[:, :, None, :] - xb[:, None, :, :]) ** 2).sum(axis=3)  # (B, m, m)
    perms = np.array(list(itertools.permutations(range(m))), dtype=np.intp)  # (m!, m)
    chosen = cost[:, np.arange(m)[None, :], perms]  # (B, m!, m): row i's cost under each permutation
    best = np.argmin(chosen.sum(axis=2), axis=1)
    return np.sqrt(chosen[np.arange(len(best)), best])


def coupling_plan(cond: Condition, transform: np.ndarray, block_sizes: tuple[int, ...] = BLOCK_SIZES
                  ) -> CouplingPlan | None:
    """The matched pair distances of a condition both of whose laws are known through draws (None otherwise).

    ``transform`` maps F to coordinates where the noise shape is standard (its inverse square root)."""
    if not (isinstance(cond.law_a, SampledLaw) and isinstance(cond.law_b, SampledLaw)):
        return None
    xa, xb = _whitened(cond.law_a, transform), _whitened(cond.law_b, transform)
    n = min(len(xa), len(xb))
    out = {}
    for m in block_sizes:
        if m > n or (xa.shape[1] > 1 and m > MAX_MATCHED):
            continue
        b = n // m
        out[m] = _match(xa[: b * m].reshape(b, m, -1), xb[: b * m].reshape(b, m, -1))
    return CouplingPlan(cond.label, n, out)


@dataclass(frozen=True)
class CertifiedBound:
    """The certified upper bound on δ(ε) of one condition at one noise scale (both directions).

    Attributes
    ----------
    label : str
    upper : float
        The bound (level 1 − alpha, over the calibration's draws; nothing assumed of F's law).
    mean : float
        Mean of the block terms at the best block size.
    block : int
        The block size giving the smallest bound.
    blocks : int
        How many blocks of that size.
    """

    label: str
    upper: float
    mean: float
    block: int
    blocks: int


def certified_bound(plan: CouplingPlan, scale: float, epsilon: float, alpha: float, *,
                    laplace: bool = False) -> CertifiedBound:
    """The smallest over block sizes of the betting upper bound on E[T] (module docstring), each at level
    ``alpha / len(plan.distances)``; ``scale`` multiplies the noise shape's standard deviations."""
    share = alpha / max(len(plan.distances), 1)
    best = CertifiedBound(plan.label, 1.0, 1.0, 0, 0)
    for m, dist in plan.distances.items():
        terms = pair_delta(dist / scale, epsilon, laplace).mean(axis=1)
        upper = mean_upper(terms, alpha=share)
        if upper < best.upper:
            best = CertifiedBound(plan.label, upper, float(terms.mean()), m, len(terms))
    return best


def noise_transform(noise: Any) -> tuple[np.ndarray, bool] | None:
    """(the map to standard-noise coordinates, Laplace?) of a noise the closed forms cover: any full-rank
    Gaussian, or Laplace in one dimension; None otherwise."""
    if noise.kind == "gaussian":
        w, v = np.linalg.eigh((noise.cov + noise.cov.T) / 2.0)
        if float(w.min()) <= 1e-12 * max(float(w.max()), 1e-300):
            return None
        return (v / np.sqrt(w)).T, False
    basis, scale = np.asarray(noise.basis, float), np.asarray(noise.scale, float)
    if basis.shape != (1, 1) or not scale[0] > 0:
        return None
    return np.array([[1.0 / (abs(basis[0, 0]) * scale[0])]]), True

