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
  The densities and the per-atom sums are computed in O(G log G + n) by cell moments and FFT
  (:mod:`~bayespriv.privacy.kernel_sums`; Gaussian kernels within 12σ, e^{-72} of their peak beyond,
  with a Taylor remainder below 1e-13; Laplace kernels exactly).
* Both directions share one evaluation of the two densities, and a law's density is the weighted sum of
  its two halves' densities, so the split-half diagnostic is free. The densities do not depend on ε:
  :func:`grid_densities` makes them once, :func:`hockey_on_grid` reads both directions at any ε.
* Draws standing for the law: as in :mod:`~bayespriv.privacy.mixture_mc`, the estimate is of the
  divergence between the *empirical* mixtures; the per-atom probabilities P(z_u + Z ∈ A*) of its optimal
  set A* = {p_a > e^ε p_b} are computed on the same grid, with the atoms' draw counts and, for P_a, their
  peak ratios n·e^ε p̂_b(z)/φ(0) (:class:`~bayespriv.privacy.mixture_mc.DrawContributions`): the
  accountant's margins come from them. The split halves are the same computation on each half of the draws.

Returns None (the caller samples instead) when the grid would exceed :data:`MAX_GRID` points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .kernel_sums import Placed, place, sums_at
from .mixture_mc import DrawContributions, MixtureEstimate, atom_counts, sampled_pair

__all__ = ["grid_hockey", "grid_densities", "hockey_on_grid", "MAX_GRID", "Atoms", "atoms_of"]

#: Most grid points (beyond, the Monte-Carlo estimator is used).
MAX_GRID = 400_000
#: Grid points per noise scale.
_PER_SCALE = 16
def _scale(noise: Any) -> tuple[float, bool]:
    """(σ or b, laplace?) of a one-dimensional noise."""
    if noise.kind == "gaussian":
        return math.sqrt(float(np.asarray(noise.cov, float).reshape(-1)[0])), False
    return float(abs(np.asarray(noise.basis, float).reshape(-1)[0]) * np.asarray(noise.scale, float).reshape(-1)[0]), True


def _placed(y: np.ndarray, h: float, z: np.ndarray, s: float, laplace: bool) -> Placed:
    """The atoms ``z`` placed on the grid ``y = y[0] + h·g`` (:func:`~bayespriv.privacy.kernel_sums.place`)."""
    return place(float(y[0]), h, y.size, z, s, laplace)


@dataclass(frozen=True, eq=False)
class Atoms:
    """A one-dimensional law as the grid needs it: its distinct atoms ``z`` with weights ``u``, the number
    ``n`` of draws (or atoms) they summarise, and each half's distinct atoms, normalised weights and mass
    (the split-half diagnostic; None below 4 atoms). Build once per law with :func:`atoms_of` and reuse
    across noise scales."""

    n: int
    z: np.ndarray
    u: np.ndarray
    halves: tuple[tuple[np.ndarray, np.ndarray, float], tuple[np.ndarray, np.ndarray, float]] | None


def atoms_of(points: Any, weights: Any) -> Atoms:
    """:class:`Atoms` of a one-dimensional law given by its points (draws) and weights. Each half's distinct
    values are read off the whole law's (one sort): the atoms a half's draws reach, in order, and their
    weights summed draw by draw, as the half's own distinct values and weights would be."""
    x, w = np.asarray(points, float).reshape(-1), np.asarray(weights, float).reshape(-1)
    z, inv = np.unique(x, return_inverse=True)
    u = np.bincount(inv, weights=w, minlength=z.size)
    if x.size < 4:
        return Atoms(x.size, z, u, None)
    parts = (slice(0, x.size // 2), slice(x.size // 2, x.size))
    halves = []
    for p in parts:
        mass = float(w[p].sum())
        reached = np.bincount(inv[p], minlength=z.size) > 0
        halves.append((z[reached], np.bincount(inv[p], weights=w[p] / mass, minlength=z.size)[reached], mass))
    return Atoms(x.size, z, u, (halves[0], halves[1]))


@dataclass(frozen=True)
class _Law:
    """One law on the grid: its atoms (and their placement on it), its density, and each half's density."""

    atoms: Atoms
    placed: Placed
    density: np.ndarray
    halves: tuple[np.ndarray, np.ndarray] | None

    @property
    def z(self) -> np.ndarray:
        return self.atoms.z

    @property
    def u(self) -> np.ndarray:
        return self.atoms.u


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


def _law(y: np.ndarray, h: float, at: Atoms, s: float, laplace: bool, halves: bool) -> _Law:
    """A law's density on the grid, and with ``halves`` each half's (normalised) density (the split-half
    diagnostic)."""
    placed = _placed(y, h, at.z, s, laplace)
    density = placed.density(at.u)  # the same arithmetic whether or not the halves are asked
    if not halves or at.halves is None:
        return _Law(at, placed, density, None)
    return _Law(at, placed, density, tuple(_placed(y, h, z, s, laplace).density(u) for z, u, _ in at.halves))


def _as_atoms(points: Any, weights: Any) -> Atoms:
    return points if isinstance(points, Atoms) else atoms_of(points, weights)


def _grid(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, halves: bool) -> _Grid | None:
    """Grid and densities of two one-dimensional released mixtures (None when too fine or no noise)."""
    at_a, at_b = _as_atoms(atoms_a, weights_a), _as_atoms(atoms_b, weights_b)
    s, laplace = _scale(noise)
    if not s > 0:
        return None
    reach = (40.0 if laplace else 12.0) * s
    lo, hi = min(at_a.z[0], at_b.z[0]) - reach, max(at_a.z[-1], at_b.z[-1]) + reach
    h = s / _PER_SCALE
    n_grid = int(math.ceil((hi - lo) / h)) + 1
    if n_grid > MAX_GRID:
        return None
    n_grid += n_grid % 2 == 0  # odd: the coarse rule uses every other point of the same span
    y = lo + h * np.arange(n_grid)
    halves = halves and at_a.halves is not None and at_b.halves is not None
    return _Grid(y, h, s, laplace, _law(y, h, at_a, s, laplace, halves), _law(y, h, at_b, s, laplace, halves))


def _masses(inside: np.ndarray, h: float, *laws: _Law) -> tuple[np.ndarray, ...]:
    """P(z_u + Z ∈ A*) for every atom of each law, by the rectangle rule on the grid points of A* (one
    correlation of A* with the kernels for all the laws)."""
    if not inside.any():
        return tuple(np.zeros(law.z.size) for law in laws)
    return tuple(np.clip(m, 0.0, 1.0) for m in sums_at(inside * h, *(law.placed for law in laws)))


def _hockey(pa: np.ndarray, pb: np.ndarray, epsilon: float, h: float) -> tuple[float, float]:
    """(trapezoid value, estimate of its error) of ∫ (p_a − e^ε p_b)₊."""
    f = np.clip(pa - math.exp(epsilon) * pb, 0.0, None)
    fine = float(np.trapezoid(f, dx=h))
    coarse = float(np.trapezoid(f[::2], dx=2 * h))
    return fine, abs(fine - coarse)


def _peak(s: float, laplace: bool) -> float:
    """φ(0): the kernel's density at its centre."""
    return 1.0 / (2.0 * s) if laplace else 1.0 / (s * math.sqrt(2.0 * math.pi))


def _contributions(g: _Grid, inside: np.ndarray, epsilon: float, sampled: tuple[bool, bool]) -> DrawContributions:
    """Per distinct atom: P(z + Z ∈ A*) on the grid and the draws at it; for P_a also the peak ratio
    n_a·e^ε p̂_b(z)/φ(0) (:class:`~bayespriv.privacy.mixture_mc.DrawContributions`)."""
    a, b = g.a, g.b
    va = ca = ra = vb = cb = None
    masses = iter(_masses(inside, g.h, *(law for law, drawn in zip((a, b), sampled) if drawn)))
    if sampled[0]:
        va = next(masses)
        ca = atom_counts(a.u, a.atoms.n)
        ra = a.atoms.n * math.exp(epsilon) * np.interp(a.z, g.y, b.density) / _peak(g.s, g.laplace)
    if sampled[1]:
        vb = next(masses)
        cb = atom_counts(b.u, b.atoms.n)
    return DrawContributions(va, ca, a.atoms.n, ra, vb, cb, b.atoms.n)


def _estimate(g: _Grid, epsilon: float, sampled: tuple[bool, bool]) -> MixtureEstimate:
    """H_ε(P_a‖P_b) on a grid, with the per-draw probabilities of the optimal set and the split halves when
    some law is known through draws."""
    a, b = g.a, g.b
    value, err = _hockey(a.density, b.density, epsilon, g.h)
    split, contributions = None, None
    if sampled[0] or sampled[1]:
        inside = a.density > math.exp(epsilon) * b.density
        contributions = _contributions(g, inside, epsilon, sampled)
        if a.halves is not None and b.halves is not None:
            split = tuple(_hockey(a.halves[k], b.halves[k], epsilon, g.h)[0] for k in (0, 1))
    return MixtureEstimate(value, err, split, math.nan, g.y.size, contributions)


def grid_hockey(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, epsilon: float, *,
                sampled: bool = True, halves: bool = True) -> MixtureEstimate | None:
    """H_ε(P_a‖P_b) of two one-dimensional released mixtures, by quadrature (module docstring).

    Parameters
    ----------
    atoms_a, atoms_b : array (n, 1) or (n,), or Atoms
        The atoms of each law (draws or support points), or the law's :class:`Atoms` from :func:`atoms_of`
        (built once and reused across noise scales; its weights argument is then ignored).
    weights_a, weights_b : array (n,) or None
        Their weights (1/n for draws), summing to 1: the arrays of a
        :class:`~bayespriv.privacy.mixture_mc.WeightedAtoms`.
    noise, epsilon, sampled, halves :
        As :func:`~bayespriv.privacy.mixture_mc.mixture_hockey`.

    Returns
    -------
    MixtureEstimate or None
        None when the grid would be too fine for the spread of the atoms.
    """
    drawn = sampled_pair(sampled)
    g = _grid(atoms_a, weights_a, atoms_b, weights_b, noise, halves and any(drawn))
    return None if g is None else _estimate(g, epsilon, drawn)


def grid_densities(atoms_a: Any, weights_a: Any, atoms_b: Any, weights_b: Any, noise: Any, *, sampled: bool = True,
                   halves: bool = True) -> _Grid | None:
    """The common grid of two one-dimensional released mixtures and both densities on it, which do not
    depend on ε: :func:`hockey_on_grid` reads them at any ε. Arguments as :func:`grid_hockey`; None when
    the grid would be too fine. Its arrays are read-only."""
    g = _grid(atoms_a, weights_a, atoms_b, weights_b, noise, halves and any(sampled_pair(sampled)))
    if g is not None:
        for array in (g.y, g.a.density, g.b.density, *(g.a.halves or ()), *(g.b.halves or ())):
            array.setflags(write=False)
    return g


def hockey_on_grid(grid: _Grid, epsilon: float, *, sampled: bool = True) -> tuple[MixtureEstimate, MixtureEstimate]:
    """(H_ε(P_a‖P_b), H_ε(P_b‖P_a)) on densities made by :func:`grid_densities` (the same in both
    directions); each equal to :func:`grid_hockey` of its direction with the arguments that made them."""
    drawn = sampled_pair(sampled)
    return _estimate(grid, epsilon, drawn), _estimate(grid.swapped(), epsilon, drawn[::-1])
