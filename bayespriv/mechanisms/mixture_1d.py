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
  Each density sums, per grid point, the atoms within 12σ (Gaussian) or 70b (Laplace) of it: a kernel
  value beyond is below e^{-69} of its peak, far below any δ asked for.
* Both directions share one evaluation of the two densities (:func:`grid_hockey_both`), and a law's
  density is the weighted sum of its two halves' densities, so the split-half diagnostic is free.
* Draws standing for the law: as in :mod:`~bayespriv.mechanisms.mixture_mc`, the estimate is of the
  divergence between the *empirical* mixtures (biased upward in expectation); its fluctuation over the
  draws by the delta method, with the per-draw masses P(x_i + Z ∈ A*) of the optimal set
  A* = {p_a > e^ε p_b} computed on the same grid; the split halves are the same computation on each
  half of the draws.

Returns None (the caller samples instead) when the grid would exceed :data:`MAX_GRID` points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .mixture_mc import MixtureEstimate, draw_terms, draws_variance

__all__ = ["grid_hockey", "grid_hockey_both", "MAX_GRID"]

#: Most grid points (beyond, the Monte-Carlo estimator is used).
MAX_GRID = 400_000
#: Grid points per noise scale.
_PER_SCALE = 16
#: Kernel values computed at once (grid points × atoms), to bound memory.
_BLOCK = 8_000_000
#: Noise scales beyond which a kernel value is not summed (Gaussian: e^{-72}; Laplace: e^{-70} of the peak).
_WINDOW = {False: 12.0, True: 70.0}


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
    """Σ_u w_u φ(y − z_u) at every grid point, in blocks of grid points; each block sums the atoms (sorted)
    within :data:`_WINDOW` noise scales of it (a kernel value beyond is below e^{-69} of its peak)."""
    out = np.zeros(y.size)
    if z.size == 0:
        return out
    reach = _WINDOW[laplace] * s
    spacing = float(y[1] - y[0]) if y.size > 1 else reach
    rows = max(1, min(_BLOCK // z.size, int(2.0 * reach / spacing) + 1))  # a block spans about two windows of atoms
    for i in range(0, y.size, rows):
        block = y[i:i + rows]
        lo, hi = np.searchsorted(z, [block[0] - reach, block[-1] + reach], side="left")
        if hi > lo:
            out[i:i + rows] = _kernel(block[:, None] - z[None, lo:hi], s, laplace) @ w[lo:hi]
    return out


@dataclass(frozen=True)
class _Law:
    """One law's atoms on the grid: distinct atoms and weights, its density, and each half's density."""

    x: np.ndarray
    w: np.ndarray
    z: np.ndarray
    u: np.ndarray
    density: np.ndarray
    halves: tuple[np.ndarray, np.ndarray] | None


@dataclass(frozen=True)
class _Grid:
    """The common grid of two laws (spacing h, noise scale s) and both laws' densities on it."""

    y: np.ndarray
    h: float
    s: float
    laplace: bool
    a: _Law
    b: _Law

    def swapped(self) -> "_Grid":
        return _Grid(self.y, self.h, self.s, self.laplace, self.b, self.a)


def _law(y: np.ndarray, x: np.ndarray, w: np.ndarray, s: float, laplace: bool, halves: bool) -> _Law:
    """A law's densities. With halves, each half's (normalised) density is computed and the law's density is
    their weighted sum — the same sum Σ_u w_u φ(y − z_u) regrouped, so the halves cost nothing extra."""
    z, u = _unique(x, w)
    if not halves:
        return _Law(x, w, z, u, _density(y, z, u, s, laplace), None)
    parts = (slice(0, x.size // 2), slice(x.size // 2, x.size))
    mass = [float(w[p].sum()) for p in parts]
    dens = tuple(_density(y, *_unique(x[p], w[p] / m), s, laplace) for p, m in zip(parts, mass))
    return _Law(x, w, z, u, (mass[0] * dens[0] + mass[1] * dens[1]) / (mass[0] + mass[1]), dens)


def _grid(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, halves: bool) -> _Grid | None:
    """Grid and densities of two one-dimensional released mixtures (None when too fine or no noise)."""
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
    halves = halves and min(xa.size, xb.size) >= 4
    return _Grid(y, h, s, laplace, _law(y, xa, wa, s, laplace, halves), _law(y, xb, wb, s, laplace, halves))


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


def _estimate(g: _Grid, epsilon: float, sampled: bool) -> MixtureEstimate:
    """H_ε(P_a‖P_b) on a grid, with the draws' standard error and the split halves when sampled."""
    a, b = g.a, g.b
    value, err = _hockey(a.density, b.density, epsilon, g.h)
    se_draws, split, terms = 0.0, None, None
    if sampled:
        inside = a.density > math.exp(epsilon) * b.density
        ma = _masses(g.y, inside, a.z, g.s, g.laplace, g.h)
        mb = _masses(g.y, inside, b.z, g.s, g.laplace, g.h)
        se_draws = math.sqrt(draws_variance(ma, a.u, a.x.size)
                             + math.exp(2.0 * epsilon) * draws_variance(mb, b.u, b.x.size))
        terms = (draw_terms(ma, a.u, a.x.size), draw_terms(mb, b.u, b.x.size))
        if a.halves is not None and b.halves is not None:
            split = tuple(_hockey(a.halves[k], b.halves[k], epsilon, g.h)[0] for k in (0, 1))
    return MixtureEstimate(value, err, se_draws, split, math.nan, g.y.size, terms)


def grid_hockey(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, epsilon: float, *,
                sampled: bool = True, halves: bool = True) -> MixtureEstimate | None:
    """H_ε(P_a‖P_b) of two one-dimensional released mixtures, by quadrature (module docstring).

    Parameters as :func:`~bayespriv.mechanisms.mixture_mc.mixture_hockey` (atoms of shape (n, 1) or (n,)).
    Returns None when the grid would be too fine for the spread of the atoms.
    """
    g = _grid(atoms_a, weights_a, atoms_b, weights_b, noise, halves and sampled)
    return None if g is None else _estimate(g, epsilon, sampled)


def grid_hockey_both(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, epsilon: float, *,
                     sampled: bool = True, halves: bool = True) -> tuple[MixtureEstimate, MixtureEstimate] | None:
    """(H_ε(P_a‖P_b), H_ε(P_b‖P_a)) from one evaluation of both densities (they are the same in both
    directions); each equal to :func:`grid_hockey` of its direction."""
    g = _grid(atoms_a, weights_a, atoms_b, weights_b, noise, halves and sampled)
    return None if g is None else (_estimate(g, epsilon, sampled), _estimate(g.swapped(), epsilon, sampled))
