"""Exact-up-to-a-bound draws from a one-dimensional log-concave posterior, by tabulation.

Where a secret's posterior involves a single scalar latent variable θ (the
only free random variable upstream of the evidence), its density on PyMC's
unconstrained scale u (θ = T⁻¹(u), log-Jacobian included) is known up to a
constant: ℓ(u) = log p(u | evidence) + C, evaluated by the model's compiled log
density. This module tabulates ℓ on a uniform grid x_0 < … < x_M of step h and
draws from the *chord density* g: exp of the piecewise-linear interpolation of
ℓ on the grid (zero outside [x_0, x_M]), by inverse CDF (a cell chosen by its
mass, then the exact inverse of the exponential density within it).

**Error bound.** If ℓ is concave (the posterior is log-concave on the u scale),
the chord interpolation lies below ℓ (g ≤ f = exp ℓ), and ℓ lies below the
extension of every chord outside its own cell, so
h = min(exp L_{i-1}, exp L_{i+1}) on cell i, exp L_0 left of x_0 and exp L_{M-1}
right of x_M (L_j the line through the chord of cell j) is an upper envelope
(f ≤ h), as in derivative-free adaptive rejection sampling (Gilks 1992). With
Z_g ≤ Z_f ≤ Z_h their integrals (closed forms: exponentials of lines), the law
f/Z_f is the mixture (Z_g/Z_f)·g/Z_g + (1 − Z_g/Z_f)·r with r = (f − g)/(Z_f − Z_g)
a density, hence

    TV(g/Z_g, f/Z_f) <= 1 − Z_g/Z_f <= 1 − Z_g/Z_h  =: ``tv_bound``,

which covers the truncated tails too. The grid is refined (×4 points) until
``tv_bound <= TV_TOLERANCE``; otherwise the table is refused.

**What is checked, not proven.** Concavity is checked on the grid (every second
difference of ℓ at most 1e-10·(1 + max|ℓ|), i.e. zero up to floating-point
rounding of the log density); a feature narrower than a grid cell could escape
the check, so the bound is a theorem for log-concave posteriors and an
a-posteriori check otherwise. A table is refused (the caller falls back to
MCMC) when ℓ is not concave on the grid, not finite where the mass is, or the
bound stays above the tolerance at the finest grid.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Backward", "QuadratureTable", "TV_TOLERANCE", "build_table"]

#: Largest total-variation distance allowed between the tabulated and the exact posterior.
TV_TOLERANCE = 1e-6
#: The grid spans the points whose log density is within this many nats of the maximum.
_SPAN_NATS = 45.0
#: Grid sizes tried: 2^12 up to 2^18 points (×4 each time).
_FIRST_POINTS, _MAX_POINTS = 4097, 262_145
#: Second differences up to this times (1 + max|ℓ|) read as zero (rounding of the log density).
_CONCAVITY_SLACK = 1e-10


@dataclass(frozen=True)
class Backward:
    """θ = T⁻¹(u) for PyMC's value transforms in NumPy: ``kind`` in {"identity", "log", "logodds",
    "interval"}; for "interval", ``lower`` / ``upper`` (None when that side is unbounded)."""

    kind: str
    lower: float | None = None
    upper: float | None = None

    def __call__(self, u: np.ndarray) -> np.ndarray:
        if self.kind == "identity":
            return u
        if self.kind == "log":
            return np.exp(u)
        if self.kind == "logodds":
            return _expit(u)
        lo, hi = self.lower, self.upper
        if lo is not None and hi is not None:
            s = _expit(u)
            return s * hi + (1.0 - s) * lo
        if lo is not None:
            return np.exp(u) + lo
        return hi - np.exp(u)


def _expit(u: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(u)


@dataclass(frozen=True, eq=False)
class QuadratureTable:
    """The chord density g of one posterior (see the module notes), ready to draw from.

    Attributes
    ----------
    name : str
        The latent variable θ.
    x0, step : float
        Grid start and step on the unconstrained scale u.
    cumulative : ndarray (M,)
        Cumulative masses of the M cells, normalised to end at 1.
    rise : ndarray (M,)
        ℓ(x_{i+1}) − ℓ(x_i) per cell (the slope of the log chord, in cell units).
    backward : Backward
        u -> θ.
    tv_bound : float
        Total-variation distance bound to the exact posterior (module notes).
    """

    name: str
    x0: float
    step: float
    cumulative: np.ndarray
    rise: np.ndarray
    backward: Backward
    tv_bound: float

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` independent draws of θ from the chord density (inverse CDF, vectorised)."""
        cell = np.searchsorted(self.cumulative, rng.random(n), side="right")
        cell = np.minimum(cell, self.cumulative.size - 1)
        w = rng.random(n)
        d = self.rise[cell]
        flat = np.abs(d) < 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(flat, w, np.log1p(w * np.expm1(d)) / np.where(flat, 1.0, d))
        return self.backward(self.x0 + self.step * (cell + np.clip(t, 0.0, 1.0)))


def _line_mass(c0: np.ndarray, rise: np.ndarray) -> np.ndarray:
    """∫_0^1 exp(c0 + rise·t) dt, stable for rise near 0."""
    small = np.abs(rise) < 1e-12
    safe = np.where(small, 1.0, rise)
    return np.exp(c0) * np.where(small, 1.0 + rise / 2, np.expm1(safe) / safe)


def _bound(ell: np.ndarray, h: float) -> tuple[float, np.ndarray]:
    """(1 − Z_g/Z_h, masses of the chord cells) for log densities ``ell`` (max 0) on a grid of step ``h``."""
    rise = np.diff(ell)  # per cell, in cell units; slope = rise / h
    chord = h * _line_mass(ell[:-1], rise)
    z_g = float(chord.sum())
    if rise[0] <= 0 or rise[-1] >= 0:
        return math.inf, chord  # the tails' envelopes would not be integrable
    m = rise.size
    upper = np.empty(m)
    # cell i: below the extension of chord i-1 (from x_i) and of chord i+1 (back from x_{i+1})
    left = np.full(m, np.inf)
    left[1:] = h * _line_mass(ell[1:-1], rise[:-1])
    right = np.full(m, np.inf)
    right[:-1] = h * _line_mass(ell[1:-1] - rise[1:], rise[1:])
    upper[:] = np.minimum(left, right)
    tails = math.exp(ell[0]) * h / rise[0] + math.exp(ell[-1]) * h / -rise[-1]
    z_h = float(upper.sum()) + tails
    return max(0.0, 1.0 - z_g / z_h), chord


def _bracket(logp: Callable[[np.ndarray], np.ndarray], u0: float) -> tuple[float, float] | str:
    """An interval holding every u with ℓ(u) > max ℓ − 45 nats, resolved by >= 200 points; or why not."""
    lo, hi = u0 - 10.0, u0 + 10.0
    for _ in range(40):
        x = np.linspace(lo, hi, 2001)
        ell = logp(x)
        if np.isnan(ell).any() or not np.isfinite(ell).any():
            return "the log density is NaN or nowhere finite on the bracket"
        top = float(np.max(ell))
        inside = np.flatnonzero(ell > top - _SPAN_NATS)
        width = hi - lo
        if inside[0] == 0 or inside[-1] == x.size - 1:  # mass at an end: widen that side
            lo, hi = (lo - width if inside[0] == 0 else lo), (hi + width if inside[-1] == x.size - 1 else hi)
            continue
        if inside.size < 200:  # mass resolved by too few points: zoom in
            lo, hi = x[inside[0] - 1], x[inside[-1] + 1]
            continue
        return float(x[inside[0] - 1]), float(x[inside[-1] + 1])
    return "no bracket of the posterior's mass was found (40 widenings / zooms)"


def build_table(name: str, logp: Callable[[np.ndarray], np.ndarray], u0: float,
                backward: Backward) -> QuadratureTable | str:
    """The chord table of the density exp(logp) on the u scale, or the reason it is refused.

    Parameters
    ----------
    name : str
        The latent variable.
    logp : callable
        Vectorised log density (up to a constant) on the unconstrained scale.
    u0 : float
        A point where the density is positive (PyMC's initial point), to start the bracket.
    backward : Backward
        u -> θ.
    """
    span = _bracket(logp, u0)
    if isinstance(span, str):
        return span
    lo, hi = span
    points = _FIRST_POINTS
    while True:
        x, h = np.linspace(lo, hi, points, retstep=True)
        raw = logp(x)
        if not np.all(np.isfinite(raw)):
            return "the log density is not finite everywhere on the posterior's bracket"
        ell = raw - raw.max()
        slack = _CONCAVITY_SLACK * (1.0 + float(np.max(np.abs(raw))))
        if np.any(np.diff(ell, 2) > slack):
            return "the posterior is not log-concave on the unconstrained scale (checked on the grid)"
        tv, chord = _bound(ell, h)
        if tv <= TV_TOLERANCE:
            cumulative = np.cumsum(chord)
            cumulative /= cumulative[-1]
            return QuadratureTable(name, float(lo), float(h), cumulative, np.diff(ell), backward, tv)
        if points >= _MAX_POINTS:
            return f"the total-variation bound {tv:.3g} stays above {TV_TOLERANCE:g} at {points} grid points"
        points = 4 * (points - 1) + 1
