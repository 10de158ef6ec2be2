"""The geometry of DirM's noise: the span of the mean differences and the candidate noise shapes.

:func:`span_basis` (orthonormal basis of a span, SVD), :class:`DirGeometry` (directions, corner
coordinates, extents), :func:`best_scales` (the per-direction scales of least total variance over
the shapes w_j = a_j^p, p in :data:`SHAPE_EXPONENTS`) and :func:`dirm_theorem` (the theorem DirM's
guarantee rests on). The proofs are in the docstring of
:class:`~bayespriv.mechanisms.expected_value.DirM`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def span_basis(points: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``(k, d)`` of the span of the rows of ``points`` (SVD).

    Rank tolerance: numpy's ``matrix_rank`` default, ``s_max · max(N, k) · eps``;
    a dropped direction carries at most that much of any difference, i.e.
    floating-point rounding of the inputs (re-checked by the caller).
    """
    k = points.shape[1]
    if points.size == 0 or not np.any(points):
        return np.zeros((k, 0))
    _, s, vt = np.linalg.svd(points, full_matrices=False)
    tol = s.max() * max(points.shape) * np.finfo(float).eps
    return vt[s > tol].T.copy()


#: Exponents p of the candidate shapes w_j = a_j^p of the per-direction noise (see DirM).
SHAPE_EXPONENTS = (0.0, 1.0 / 3.0, 0.5, 2.0 / 3.0, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class DirGeometry:
    """DirM's orthonormal noise directions (k, D), the corners' coordinates along them (m, c, D) and their extents (D,)."""

    basis: np.ndarray
    coords: np.ndarray
    extent: np.ndarray


def best_scales(mags: np.ndarray, a: np.ndarray, target: float, *, laplace: bool) -> np.ndarray:
    """Per-direction Laplace scales (``laplace``) or Gaussian variances with least total variance.

    ``mags`` ``(m, c, D)``: |β_j| (Laplace) or β_j² (Gaussian); ``a`` ``(D,)``
    their maxima over corners. For a shape w > 0, ``x = w·ρ/target`` with
    ``ρ = max_corners Σ_j mags_j / w_j`` gives ``Σ_j mags_j / x_j ≤ target``
    at every corner. Total variance: ``2 Σ x²`` (Laplace) or ``Σ x``.
    """
    if a.size == 0:
        return np.zeros(0)
    flat = mags.reshape(-1, a.size)
    best, best_cost = np.zeros(0), np.inf
    for p in SHAPE_EXPONENTS:
        w = (a / a.max()) ** p
        rho = float((flat / w).sum(axis=1).max())
        x = w * (rho / target)
        cost = float((x**2).sum()) if laplace else float(x.sum())
        if cost < best_cost:
            best, best_cost = x, cost
    return best


def dirm_theorem(noise_kind: str, n_directions: int) -> str:
    """The theorem DirM's guarantee rests on, for its noise and number of directions."""
    return (
        f"DirM({'L' if noise_kind == 'laplace' else 'G'}): Chen & Ohrimenko 2023, Theorem 4.3"
        + (" (no mean difference: no noise)" if n_directions == 0 else " (one direction)" if n_directions == 1
           else f" extended to {n_directions} orthogonal directions (§4.2; proof in DirM docstring)")
        + ("" if noise_kind == "laplace" else ", Gaussian noise (appendix B.3 remark)")
    )
