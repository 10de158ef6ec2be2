"""The hockey-stick divergence of two released mixtures in one dimension, by quadrature.

For a one-dimensional query known through draws x_1 … x_n (or any finite set of atoms with weights),
the released law with noise of density φ (Gaussian of standard deviation σ, or Laplace of scale b)
is the mixture ``p(y) = Σ_u w_u φ(y − z_u)`` over the distinct values z_u. Its divergence

    H_ε(P_a‖P_b) = ∫ (p_a(y) − e^ε p_b(y))₊ dy

is computed here on a grid — no sampling, so no region of the line can be missed, however rare its
atoms: every distinct value of both laws enters every density evaluated.

* Grid: spacing s/16 (s = σ or b) from 12σ (Gaussian; e^{-72} of the kernel) or 40b (Laplace) below
  the smallest atom to as far above the largest; the trapezoid rule on the positive part. Its error
  (kinks at the roots only) is estimated by the difference with the rule on every other point,
  reported as ``se_mc`` (conservative: the coarser rule's error is about four times the finer one's).
* Draws standing for the law: as in :mod:`~bayespriv.mechanisms.mixture_mc`, the estimate is of the
  divergence between the *empirical* mixtures (biased upward in expectation); its fluctuation over the
  draws by the delta method, with the per-draw masses P(x_i + Z ∈ A*) of the optimal set
  A* = {p_a > e^ε p_b} computed on the same grid; the split halves are the same computation on each
  half of the draws.

Returns None (the caller samples instead) when the grid would exceed :data:`MAX_GRID` points.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .mixture_mc import MixtureEstimate, draw_terms, draws_variance

__all__ = ["grid_hockey", "MAX_GRID"]

#: Most grid points (beyond, the Monte-Carlo estimator is used).
MAX_GRID = 400_000
#: Grid points per noise scale.
_PER_SCALE = 16
#: Kernel values computed at once (grid points × atoms), to bound memory.
_BLOCK = 8_000_000


def _scale(noise: Any) -> tuple[float, bool]:
    """(σ or b, laplace?) of a one-dimensional noise."""
    if noise.kind == "gaussian":
        return math.sqrt(float(np.asarray(noise.cov, float).reshape(-1)[0])), False
    return float(abs(np.asarray(noise.basis, float).reshape(-1)[0]) * np.asarray(noise.scale, float).reshape(-1)[0]), True


def _kernel(d: np.ndarray, s: float, laplace: bool) -> np.ndarray:
    if laplace:
        return np.exp(-np.abs(d) / s) / (2.0 * s)
    return np.exp(-0.5 * (d / s) ** 2) / (s * math.sqrt(2.0 * math.pi))


def _unique(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z, inv = np.unique(x, return_inverse=True)
    return z, np.bincount(inv, weights=w, minlength=z.size)


def _density(y: np.ndarray, z: np.ndarray, w: np.ndarray, s: float, laplace: bool) -> np.ndarray:
    """Σ_u w_u φ(y − z_u) at every grid point, in blocks."""
    out = np.empty(y.size)
    step = max(1, _BLOCK // max(z.size, 1))
    for i in range(0, y.size, step):
        out[i:i + step] = _kernel(y[i:i + step, None] - z[None, :], s, laplace) @ w
    return out


def _masses(y: np.ndarray, inside: np.ndarray, x: np.ndarray, s: float, laplace: bool, h: float) -> np.ndarray:
    """P(x_i + Z ∈ A*) for every atom x_i, by the trapezoid rule on the grid points of A*."""
    pts = y[inside]
    out = np.zeros(x.size)
    if pts.size == 0:
        return out
    step = max(1, _BLOCK // max(pts.size, 1))
    for i in range(0, x.size, step):
        out[i:i + step] = _kernel(pts[None, :] - x[i:i + step, None], s, laplace).sum(axis=1) * h
    return out


def _hockey(pa: np.ndarray, pb: np.ndarray, epsilon: float, h: float) -> tuple[float, float]:
    """(trapezoid value, estimate of its error) of ∫ (p_a − e^ε p_b)₊."""
    f = np.clip(pa - math.exp(epsilon) * pb, 0.0, None)
    fine = float(np.trapezoid(f, dx=h))
    coarse = float(np.trapezoid(f[::2], dx=2 * h))
    return fine, abs(fine - coarse)


def grid_hockey(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, epsilon: float, *,
                sampled: bool = True, halves: bool = True) -> MixtureEstimate | None:
    """H_ε(P_a‖P_b) of two one-dimensional released mixtures, by quadrature (module docstring).

    Parameters as :func:`~bayespriv.mechanisms.mixture_mc.mixture_hockey` (atoms of shape (n, 1) or (n,)).
    Returns None when the grid would be too fine for the spread of the atoms.
    """
    xa, xb = np.asarray(atoms_a, float).reshape(-1), np.asarray(atoms_b, float).reshape(-1)
    wa, wb = np.asarray(weights_a, float), np.asarray(weights_b, float)
    s, laplace = _scale(noise)
    if not s > 0:
        return None
    reach = (40.0 if laplace else 12.0) * s
    lo, hi = min(xa.min(), xb.min()) - reach, max(xa.max(), xb.max()) + reach
    h = s / _PER_SCALE
    n_grid = int(math.ceil((hi - lo) / h)) + 1
    if n_grid > MAX_GRID:
        return None
    n_grid += n_grid % 2 == 0  # odd: the coarse rule uses every other point of the same span
    y = lo + h * np.arange(n_grid)
    (za, ua), (zb, ub) = _unique(xa, wa), _unique(xb, wb)
    pa, pb = _density(y, za, ua, s, laplace), _density(y, zb, ub, s, laplace)
    value, err = _hockey(pa, pb, epsilon, h)
    se_draws, split, terms = 0.0, None, None
    if sampled:
        inside = pa > math.exp(epsilon) * pb
        ma = _masses(y, inside, za, s, laplace, h)
        mb = _masses(y, inside, zb, s, laplace, h)
        se_draws = math.sqrt(draws_variance(ma, ua, xa.size) + math.exp(2.0 * epsilon) * draws_variance(mb, ub, xb.size))
        terms = (draw_terms(ma, ua, xa.size), draw_terms(mb, ub, xb.size))
        if halves and min(xa.size, xb.size) >= 4:
            split = tuple(_half(y, xa, wa, xb, wb, part, s, laplace, epsilon, h) for part in (0, 1))
    return MixtureEstimate(value, err, se_draws, split, math.nan, n_grid, terms)


def _half(y: np.ndarray, xa: np.ndarray, wa: np.ndarray, xb: np.ndarray, wb: np.ndarray, part: int, s: float,
          laplace: bool, epsilon: float, h: float) -> float:
    sa = slice(0, xa.size // 2) if part == 0 else slice(xa.size // 2, xa.size)
    sb = slice(0, xb.size // 2) if part == 0 else slice(xb.size // 2, xb.size)
    (za, ua), (zb, ub) = _unique(xa[sa], wa[sa] / wa[sa].sum()), _unique(xb[sb], wb[sb] / wb[sb].sum())
    return _hockey(_density(y, za, ua, s, laplace), _density(y, zb, ub, s, laplace), epsilon, h)[0]
