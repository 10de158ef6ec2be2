"""Exact reduction of a pair of Gaussians, and its privacy loss as a quadratic form.

Stage 1 (:func:`canonical`): translate so that ``P_b`` is centred, restrict both laws to their
common support, whiten by ``Σ_b`` and rotate to the eigenbasis of the whitened ``Σ_a``, giving
``P_b = N(0, I)`` and ``P_a = N(μ, diag(D))`` (:class:`Canonical`), or a support mismatch.
Stage 2 (:func:`loss_quadratic`): the privacy loss ``L = log p_a − log p_b`` under either law as
a quadratic form of a standard normal vector (:class:`Quadratic`, with its characteristic
function, moment generating function and Chernoff bounds). The reduction is described in the
docstring of :mod:`~bayespriv.privacy.privacy_loss`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bayespriv._validation import check_covariance, check_finite_array, described, fail

#: Eigenvalues below this fraction of the largest are exact zeros (support decisions).
RANK_RTOL = 1e-10
#: |D − 1| below this is treated as D = 1 (a chi-square weight below ~5e-13).
EQUAL_RTOL = 1e-12
#: Points of each of the two grids of a Chernoff bound (:meth:`Quadratic.chernoff`).
CHERNOFF_GRID = 64
#: The coarse grid of a Chernoff bound as fractions of the end of its domain, and the fine one between two
#: neighbours of the coarse grid's best point.
_CHERNOFF_COARSE = np.concatenate([np.geomspace(1e-9, 1.0 - 1e-3, CHERNOFF_GRID), 1.0 - np.geomspace(1e-3, 1e-12, 10)])
_CHERNOFF_FINE = np.linspace(0.0, 1.0, CHERNOFF_GRID)


@dataclass(frozen=True)
class Canonical:
    """``P_b = N(0, I)``, ``P_a = N(mu, diag(d))``; or a support mismatch / identity."""

    mu: np.ndarray
    d: np.ndarray
    disjoint: bool = False

    def reverse(self) -> "Canonical":
        """Canonical form of (P_b, P_a): shift by −μ, scale coordinate j by 1/√d_j."""
        if self.disjoint:
            return self
        return Canonical(-self.mu / np.sqrt(self.d), 1.0 / self.d)


def check_pair(diff, cov_a, cov_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = np.atleast_1d(check_finite_array(diff, "diff"))
    if d.ndim != 1:
        raise fail("diff", "a vector (k,)", described(f"shape {d.shape}"))
    k = d.shape[0]
    a = check_covariance(np.reshape(cov_a, (k, k)) if np.size(cov_a) == k * k else cov_a, "cov_a", k)
    b = check_covariance(np.reshape(cov_b, (k, k)) if np.size(cov_b) == k * k else cov_b, "cov_b", k)
    return d, a, b


def canonical(d: np.ndarray, a: np.ndarray, b: np.ndarray) -> Canonical:
    """Stage 1: common support, whitening by Σ_b, rotation (docstring of :mod:`~bayespriv.privacy.privacy_loss`)."""
    w, v = np.linalg.eigh(a + b)
    scale = max(float(w.max(initial=0.0)), 0.0)
    keep = w > RANK_RTOL * scale if scale > 0 else np.zeros_like(w, dtype=bool)
    q = v[:, keep]
    outside = d - q @ (q.T @ d)
    if np.linalg.norm(outside) > RANK_RTOL * max(np.linalg.norm(d), math.sqrt(scale), 1e-300):
        return Canonical(np.zeros(0), np.zeros(0), disjoint=True)
    if q.shape[1] == 0:
        return Canonical(np.zeros(0), np.zeros(0))
    a_r, b_r, d_r = q.T @ a @ q, q.T @ b @ q, q.T @ d
    for m in (a_r, b_r):
        if np.linalg.eigvalsh(m)[0] <= RANK_RTOL * scale:
            return Canonical(np.zeros(0), np.zeros(0), disjoint=True)
    chol = np.linalg.cholesky((b_r + b_r.T) / 2)
    white_a = np.linalg.solve(chol, np.linalg.solve(chol, a_r).T)
    dd, u = np.linalg.eigh((white_a + white_a.T) / 2)
    mu = u.T @ np.linalg.solve(chol, d_r)
    return Canonical(mu, dd)


# ------------------------------------------------------------------------- loss as a quadratic
@dataclass(frozen=True)
class Quadratic:
    """L = const + Σ_j (alpha_j z_j² + beta_j z_j), z ~ N(0, I) (plus τ·z_0 when smoothed)."""

    alpha: np.ndarray
    beta: np.ndarray
    const: float
    tau: float = 0.0

    def smoothed(self, tau: float) -> "Quadratic":
        return Quadratic(self.alpha, self.beta, self.const, tau)

    def log_cf(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """log|φ(u)| and arg φ(u), φ(u) = E exp(iuL), for real u ≥ 0, in real arithmetic.

        Per term: −½ log(1 − 2iαu) − β²u²/(2(1 − 2iαu)) with
        log(1 − 2iαu) = ½ log(1 + 4α²u²) − i atan(2αu) and
        1/(1 − 2iαu) = (1 + 2iαu)/(1 + 4α²u²); stable as α → 0.
        """
        logabs = -0.5 * self.tau**2 * u**2
        arg = self.const * u
        for al, be in zip(self.alpha, self.beta):
            au = 2.0 * al * u
            den = 1.0 + au * au
            q = (be * u) ** 2 / (2.0 * den)
            logabs = logabs - 0.25 * np.log1p(au * au) - q
            arg = arg + 0.5 * np.arctan(au) - q * au
        return logabs, arg

    def log_mgf_many(self, s: np.ndarray) -> np.ndarray:
        """log E exp(sL) at every point of a 1-D array (inf outside the domain 1 − 2 alpha s > 0)."""
        s = np.asarray(s, dtype=float)
        one = 1.0 - 2.0 * np.outer(s, self.alpha)
        ok = np.all(one > 0, axis=1)
        safe = np.where(one > 0, one, 1.0)
        terms = -0.5 * np.log(safe) + np.outer(s * s, self.beta**2) / (2.0 * safe)
        out = s * self.const + terms.sum(axis=1) + 0.5 * self.tau**2 * s * s
        return np.where(ok, out, np.inf)

    def chernoff(self, x: float, upper: bool) -> float:
        """Chernoff bound of P(L ≥ x) (``upper``) or P(L ≤ x): min_s exp(logM(s) − s x) over a grid of s.

        Any s of the domain gives a valid bound, so the minimum over a finite grid is one: a geometric
        grid over (0, s_max) (and points ever closer to s_max), refined linearly around its best point
        (:data:`CHERNOFF_GRID` points each)."""
        pos, neg = self.alpha[self.alpha > 0], self.alpha[self.alpha < 0]
        if upper:
            end = 1.0 / (2.0 * pos.max()) if pos.size else 1e6
        else:
            end = -(1.0 / (2.0 * -neg.min()) if neg.size else 1e6)
        grid = _CHERNOFF_COARSE
        best = self._grid_min(end * grid, x)
        i = int(np.argmin(best))
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
        best = min(float(best[i]), float(self._grid_min(end * (lo + (hi - lo) * _CHERNOFF_FINE), x).min()))
        return float(min(1.0, math.exp(min(0.0, best))))

    def _grid_min(self, s: np.ndarray, x: float) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            values = self.log_mgf_many(s) - s * x
        return np.where(np.isnan(values), np.inf, values)

    @property
    def mean(self) -> float:
        return self.const + float(self.alpha.sum())

    @property
    def sd(self) -> float:
        return math.sqrt(float(np.sum(2 * self.alpha**2 + self.beta**2)) + self.tau**2)


def loss_quadratic(c: Canonical, under_a: bool) -> Quadratic:
    """Stage 2: the privacy loss L = log p_a − log p_b as a quadratic in z ~ N(0, I).

    Per coordinate ``ℓ(y) = ½y² − (y − μ)²/(2D) − ½ log D``; under P_b,
    ``y = z``; under P_a, ``y = μ + √D z``.
    """
    mu, d = c.mu, c.d
    eq = np.abs(d - 1.0) <= EQUAL_RTOL
    r = float(np.linalg.norm(mu[eq]))
    mu_c, d_c = mu[~eq], d[~eq]
    a2 = 0.5 * (1.0 - 1.0 / d_c)  # coefficient of y²
    a1 = mu_c / d_c  # of y
    a0 = -(mu_c**2) / (2.0 * d_c) - 0.5 * np.log(d_c)
    if under_a:
        sq = np.sqrt(d_c)
        alpha, beta = a2 * d_c, (2.0 * a2 * mu_c + a1) * sq
        const = float(np.sum(a2 * mu_c**2 + a1 * mu_c + a0)) + 0.5 * r * r
    else:
        alpha, beta = a2, a1
        const = float(np.sum(a0)) - 0.5 * r * r
    if r > 0:
        alpha, beta = np.append(alpha, 0.0), np.append(beta, r)
    return Quadratic(np.asarray(alpha, float), np.asarray(beta, float), const)
