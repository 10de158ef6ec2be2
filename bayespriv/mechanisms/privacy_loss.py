"""Exact privacy curves of two Gaussians with unequal covariances.

For a Gaussian query the two output laws of a secret pair are
``P_a = N(μ_a, Σ_a + S)`` and ``P_b = N(μ_b, Σ_b + S)``. When ``Σ_a ≠ Σ_b``
the Mahalanobis-radius argument of :mod:`bayespriv.mechanisms.noise` does not
apply. This module computes, for such a pair, the privacy profile

    δ(ε) = max(H_ε(P_a‖P_b), H_ε(P_b‖P_a)),   H_ε(P‖Q) = sup_E P(E) − e^ε Q(E),

and the smallest scale of a given noise shape that meets a target (ε, δ).

Reduction (exact)
-----------------
Translate so that ``P_b`` is centred, restrict both laws to their common
support, whiten by ``Σ_b`` (Cholesky) and rotate to the eigenbasis of the
whitened ``Σ_a``. Then ``P_b = N(0, I)`` and ``P_a = N(μ, diag(D))``; the
hockey-stick divergence is invariant under these bijections. The privacy loss
``L(y) = log p_a(y) − log p_b(y)`` is a sum of independent one-dimensional
quadratics, one per coordinate; coordinates with ``D_j = 1`` merge into one
(rotation) with mean ``r = ‖μ_{D=1}‖``. Then

    H_ε(P_a‖P_b) = P_a(L > ε) − e^ε P_b(L > ε)

(the optimal event is ``{L > ε}``). Under either law, L is a quadratic form of
a standard normal vector (a generalized chi-square).

* Equal covariances (no ``D_j ≠ 1``): the analytic Gaussian formula
  ``Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r)`` (Balle & Wang 2018, Theorem 8).
* One coordinate (``k = 1`` after reduction): ``{L > ε}`` is an interval or the
  complement of one; both probabilities are normal CDFs, evaluated in log space.
* Otherwise: numerical inversion of the characteristic function (Davies 1973,
  trapezoidal Gil-Pelaez with half-offset nodes), with rigorous bounds on every
  error term (:func:`_tails`, :func:`_cf_delta_bounds`). Both ends are kept: an upper bound of
  ``P_a(L > ε)`` and a lower bound of ``P_b(L > ε)`` give an upper bound of δ.

Supports
--------
If the two laws have different supports (different ranges of the
covariances, or a mean difference leaving their common range), one of them
puts all its mass where the other puts none, so δ(ε) = 1 for every ε.
Eigenvalues below ``RANK_RTOL`` times the largest are taken as exact zeros;
inputs are assumed accurate to that level.

Numerical error
---------------
``gaussian_delta`` returns an upper bound of the exact δ(ε) for the inputs as
given (and :func:`gaussian_delta_bounds` a lower bound too):

* closed forms: rounding of ``log_ndtr`` allowed for (64 ulp, as in
  :mod:`~bayespriv.mechanisms.noise`); agreement with 25-digit mpmath
  quadrature is ~1e-13 relative (tests);
* inversion: aliasing (Chernoff tails) and truncation (closed-form bound of
  ∫|φ|/u) are each below 1e-13 for P_a and 1e-13·e^{−ε} for P_b, rounding is
  allowed for. When the characteristic function decays too slowly for
  ``MAX_NODES`` nodes (no normal part of L: every direction has unequal
  variances), L is smoothed by τZ and the smoothing error is bounded
  (:func:`_cf_delta_bounds`) by terms proportional to τ² times the mass of L
  near ε, or a uniform bound, whichever is smaller. Measured brackets
  (upper − lower): ≈ 2.6e-7 at δ ≈ 0.1–0.3 and 5e-9 at δ ≈ 4e-6 in three
  dimensions; up to ≈ 4e-6 in two dimensions without mean difference (two
  chi-square terms, the slowest case).

Cost: closed forms take microseconds; one inversion (k ≥ 2) 2^18 nodes, about
0.05–0.1 s. :func:`scale_for_delta` screens with 2^13 nodes
(``CHEAP_NODES``, a looser but valid bound) and evaluates fully only where
that screen fails.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, ndtr

from .._validation import check_covariance, check_delta, check_epsilon, check_finite_array, check_real, described, fail, sealed
from ..errors import ValidationError

__all__ = [
    "gaussian_delta",
    "gaussian_delta_bounds",
    "gaussian_privacy_curve",
    "worst_delta",
    "scale_for_delta",
    "PairBox",
    "box_delta",
    "privacy_curve",
    "one_direction_delta",
]

#: Eigenvalues below this fraction of the largest are exact zeros (support decisions).
RANK_RTOL = 1e-10
#: |D − 1| below this is treated as D = 1 (a chi-square weight below ~5e-13).
EQUAL_RTOL = 1e-12
#: Relative rounding allowance of one ``log_ndtr``/``ndtr`` value (64 ulp).
_ROUND = 64 * 2.0**-52
#: Most nodes of the characteristic-function sum.
MAX_NODES = 2**18
#: Target of each error term of the inversion (absolute, in probability).
_TOL = 1e-13
#: Largest noise scale tried, relative to the pairs' own scale (beyond it the
#: covariances' condition number leaves float64's reach: RANK_RTOL).
MAX_SCALE = 1e8
#: Corners of the mean box searched by :meth:`PairBox.candidates` when k > 2.
MAX_SEARCHED_CORNERS = 4
#: Nodes of the cheap first evaluation in :func:`scale_for_delta` (its upper bound is valid,
#: only looser; the full evaluation is made only when the cheap one fails).
CHEAP_NODES = 2**13
#: x-values per chunk of the inversion sum (memory: MAX_NODES × chunk complex).
_CHUNK = 16


# ----------------------------------------------------------------------------------- reduction
@dataclass(frozen=True)
class _Canonical:
    """``P_b = N(0, I)``, ``P_a = N(mu, diag(d))``; or a support mismatch / identity."""

    mu: np.ndarray
    d: np.ndarray
    disjoint: bool = False

    def reverse(self) -> "_Canonical":
        """Canonical form of (P_b, P_a): shift by −μ, scale coordinate j by 1/√d_j."""
        if self.disjoint:
            return self
        return _Canonical(-self.mu / np.sqrt(self.d), 1.0 / self.d)


def _check_pair(diff, cov_a, cov_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = np.atleast_1d(check_finite_array(diff, "diff"))
    if d.ndim != 1:
        raise fail("diff", "a vector (k,)", described(f"shape {d.shape}"))
    k = d.shape[0]
    a = check_covariance(np.reshape(cov_a, (k, k)) if np.size(cov_a) == k * k else cov_a, "cov_a", k)
    b = check_covariance(np.reshape(cov_b, (k, k)) if np.size(cov_b) == k * k else cov_b, "cov_b", k)
    return d, a, b


def _canonical(d: np.ndarray, a: np.ndarray, b: np.ndarray) -> _Canonical:
    """Stage 1: common support, whitening by Σ_b, rotation (module docstring)."""
    w, v = np.linalg.eigh(a + b)
    scale = max(float(w.max(initial=0.0)), 0.0)
    keep = w > RANK_RTOL * scale if scale > 0 else np.zeros_like(w, dtype=bool)
    q = v[:, keep]
    outside = d - q @ (q.T @ d)
    if np.linalg.norm(outside) > RANK_RTOL * max(np.linalg.norm(d), math.sqrt(scale), 1e-300):
        return _Canonical(np.zeros(0), np.zeros(0), disjoint=True)
    if q.shape[1] == 0:
        return _Canonical(np.zeros(0), np.zeros(0))
    a_r, b_r, d_r = q.T @ a @ q, q.T @ b @ q, q.T @ d
    for m in (a_r, b_r):
        if np.linalg.eigvalsh(m)[0] <= RANK_RTOL * scale:
            return _Canonical(np.zeros(0), np.zeros(0), disjoint=True)
    chol = np.linalg.cholesky((b_r + b_r.T) / 2)
    white_a = np.linalg.solve(chol, np.linalg.solve(chol, a_r).T)
    dd, u = np.linalg.eigh((white_a + white_a.T) / 2)
    mu = u.T @ np.linalg.solve(chol, d_r)
    return _Canonical(mu, dd)


# ------------------------------------------------------------------------- loss as a quadratic
@dataclass(frozen=True)
class _Quadratic:
    """L = const + Σ_j (alpha_j z_j² + beta_j z_j), z ~ N(0, I) (plus τ·z_0 when smoothed)."""

    alpha: np.ndarray
    beta: np.ndarray
    const: float
    tau: float = 0.0

    def smoothed(self, tau: float) -> "_Quadratic":
        return _Quadratic(self.alpha, self.beta, self.const, tau)

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

    def log_mgf(self, s: float) -> float:
        """log E exp(sL) (inf outside the domain 1 − 2 alpha s > 0)."""
        one = 1.0 - 2.0 * self.alpha * s
        if np.any(one <= 0):
            return math.inf
        return float(s * self.const + np.sum(-0.5 * np.log(one) + self.beta**2 * s**2 / (2.0 * one)) + 0.5 * self.tau**2 * s**2)

    def chernoff(self, x: float, upper: bool) -> float:
        """Chernoff bound of P(L ≥ x) (``upper``) or P(L ≤ x): inf_s exp(logM(s) − s x)."""
        pos, neg = self.alpha[self.alpha > 0], self.alpha[self.alpha < 0]
        if upper:
            hi = 1.0 / (2.0 * pos.max()) if pos.size else 1e6
            bounds = (0.0, hi * (1.0 - 1e-12))
        else:
            lo = 1.0 / (2.0 * neg.min()) if neg.size else -1e6
            bounds = (lo * (1.0 - 1e-12), 0.0)
        res = minimize_scalar(lambda s: self.log_mgf(s) - s * x, bounds=bounds, method="bounded",
                              options={"xatol": 1e-10 * max(1.0, abs(bounds[0]) + abs(bounds[1]))})
        return float(min(1.0, math.exp(min(0.0, float(res.fun)))))

    @property
    def mean(self) -> float:
        return self.const + float(self.alpha.sum())

    @property
    def sd(self) -> float:
        return math.sqrt(float(np.sum(2 * self.alpha**2 + self.beta**2)) + self.tau**2)


def _loss(c: _Canonical, under_a: bool) -> _Quadratic:
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
    return _Quadratic(np.asarray(alpha, float), np.asarray(beta, float), const)


# --------------------------------------------------------------------------- closed forms
def _log_diff_upper(la: float, ra: float, lb: float, rb: float, epsilon: float) -> float:
    """Upper bound of log(e^{la} − e^{ε + lb}) given relative errors ra, rb of e^{la}, e^{lb}."""
    if la == -math.inf:
        return -math.inf
    la_up = la + math.log1p(ra)
    lb_lo = lb + math.log1p(-min(rb, 0.5)) if lb > -math.inf else -math.inf
    err_t = _ROUND * (abs(la) + abs(lb if lb > -math.inf else 0.0) + epsilon + 2.0)
    t = epsilon + lb_lo - la_up - err_t
    if t >= 0:
        return -math.inf if t > 4 * err_t + 1e-300 else math.log(max(math.exp(la_up) * 4 * err_t, 1e-300))
    return la_up + math.log(-math.expm1(t))


def _log_normal_mass(lo: float, hi: float) -> tuple[float, float]:
    """log P(lo < Z < hi) for Z ~ N(0,1) and its relative rounding error."""
    if hi <= lo:
        return -math.inf, 0.0
    if lo == -math.inf:
        return float(log_ndtr(hi)), _ROUND
    if hi == math.inf:
        return float(log_ndtr(-lo)), _ROUND
    if lo > 0:  # both upper tails: Φ(−lo) − Φ(−hi)
        lo, hi = -hi, -lo
    l_hi, l_lo = float(log_ndtr(hi)), float(log_ndtr(lo))
    t = l_lo - l_hi
    if t >= 0:
        return -math.inf, 0.0
    val = l_hi + math.log(-math.expm1(t))
    return val, _ROUND * (1.0 + 2.0 * math.exp(l_hi - val))


def _analytic_delta(epsilon: float, r: float) -> float:
    """Upper bound of Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r)."""
    if r <= 0:
        return 0.0
    a, b = r / 2.0 - epsilon / r, -r / 2.0 - epsilon / r
    return math.exp(_log_diff_upper(float(log_ndtr(a)), _ROUND, float(log_ndtr(b)), _ROUND, epsilon))


def _one_dim_delta(epsilon: float, mu: float, d: float) -> float:
    """Upper bound of H_ε(N(μ, d)‖N(0, 1)) by normal CDFs.

    ``{ℓ > ε}`` ⇔ ``(d − 1) y² + 2μ y − μ² − d(log d + 2ε) > 0``: the complement
    of [r1, r2] when d > 1, the interval (r1, r2) when d < 1. Each piece is
    evaluated as log(P_a − e^ε P_b); a root error changes δ only to second
    order (the integrand p_a − e^ε p_b vanishes at the roots).
    """
    qa, qb, qc = d - 1.0, 2.0 * mu, -(mu**2) - d * (math.log(d) + 2.0 * epsilon)
    disc = qb * qb - 4.0 * qa * qc
    if disc <= 0:
        return 1.0 if qa > 0 else 0.0  # whole line (P_a − e^ε P_b with P = 1 both: clipped at 1) / empty
    sq = math.sqrt(disc)
    q = -0.5 * (qb + math.copysign(sq, qb))
    roots = sorted([q / qa, qc / q] if q != 0 else [-sq / (2 * qa), sq / (2 * qa)])
    sd = math.sqrt(d)
    pieces = [(-math.inf, roots[0]), (roots[1], math.inf)] if qa > 0 else [(roots[0], roots[1])]
    total = 0.0
    for lo, hi in pieces:
        la, ra = _log_normal_mass((lo - mu) / sd, (hi - mu) / sd)
        lb, rb = _log_normal_mass(lo, hi)
        total += math.exp(_log_diff_upper(la, ra, lb, rb, epsilon))
    return min(total, 1.0)


# ------------------------------------------------------------------ characteristic function
def _truncation_bound(q: _Quadratic, u: float) -> float:
    """(1/π) ∫_u^∞ |φ(v)|/v dv, bounded in closed form.

    |φ(v)| = Π (1 + 4α²v²)^{-1/4} exp(−β²v²/(2(1 + 4α²v²))) exp(−τ²v²/2). For
    α ≠ 0 the exponential factor increases to its limit and is bounded by its
    value at u; (1 + 4α²v²)^{-1/4} ≤ (2|α|v)^{-1/2}; for α = 0 (and τ) the
    factor exp(−s²v²/2) gives ∫_u^∞ e^{−s²v²/2}/v dv ≤ e^{−s²u²/2}/(s²u²).
    """
    nz = q.alpha != 0
    s2 = float(np.sum(q.beta[~nz] ** 2)) + q.tau**2
    fac = float(np.sum(q.beta[nz] ** 2 * u * u / (2.0 * (1.0 + 4.0 * q.alpha[nz] ** 2 * u * u))))
    m = int(nz.sum())
    log_c = float(np.sum(-0.5 * np.log(2.0 * np.abs(q.alpha[nz]) * u)))  # Π (2|α|u)^{-1/2}
    cands = []
    if m > 0:
        cands.append(log_c + math.log(2.0 / m) - fac - 0.5 * s2 * u * u)
    if s2 > 0:
        cands.append(min(log_c, 0.0) - fac - 0.5 * s2 * u * u - math.log(s2 * u * u))
    if not cands:
        return math.inf
    return math.exp(min(cands)) / math.pi


def _span(q: _Quadratic, x_lo: float, x_hi: float, tol: float) -> float:
    """T with P(L ≥ x_lo + T) ≤ tol and P(L ≤ x_hi − T) ≤ tol (Chernoff)."""
    t = max(abs(q.mean - x_lo), abs(q.mean - x_hi)) + 8.0 * q.sd + 1.0
    for _ in range(200):
        if q.chernoff(x_lo + t, True) <= tol and q.chernoff(x_hi - t, False) <= tol:
            return t
        t *= 1.5
    raise ValidationError(f"privacy loss tails must be bounded; got no span up to {t:.3g}")  # pragma: no cover


def _grid(q: _Quadratic, x_lo: float, x_hi: float, tol: float, nodes: int | None = None) -> tuple[float, int] | None:
    """Step Δ = 2π/T and number of nodes for the inversion of q on [x_lo, x_hi];
    None when more than ``nodes`` (default MAX_NODES) would be needed."""
    nodes = MAX_NODES if nodes is None else nodes
    step = 2.0 * math.pi / _span(q, x_lo, x_hi, tol)
    u = step * 64
    while _truncation_bound(q, u) > tol:
        if u > step * nodes:
            return None
        u *= 1.25
    return step, int(math.ceil(u / step))


def _needed_tau(q: _Quadratic, x_lo: float, x_hi: float, tol: float, nodes: int | None = None) -> float:
    """Smallest smoothing (on a 1.5× ladder) that lets the inversion of q fit ``nodes``."""
    nodes = MAX_NODES if nodes is None else nodes
    tau = 0.0
    for _ in range(60):
        if _grid(q.smoothed(tau), x_lo, x_hi, tol, nodes) is not None:
            return tau
        step = 2.0 * math.pi / _span(q.smoothed(tau), x_lo, x_hi, tol)
        need = math.sqrt(2.0 * math.log(1.0 / tol) + 4.0) / (0.9 * step * nodes)
        tau = max(need, 1.5 * tau)
    raise ValidationError("characteristic-function inversion must converge; it did not (report this)")  # pragma: no cover


def _tails(q: _Quadratic, xs: np.ndarray, tol: float, max_nodes: int | None = None,
           grid_range: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of P(L > x) for each x (Davies 1973).

    With nodes u_k = (k + ½)Δ and T = 2π/Δ, the full series
    ``S(x) = ½ − (1/π) Σ_k Im[φ(u_k) e^{−iu_k x}]/(k + ½)`` equals
    ``½ − ½ E sq(L − x)`` with sq the square wave of half-period T, hence
    ``−P(L < x − T) ≤ S(x) − F(x) ≤ P(L > x + T)`` (tails ≤ tol by
    :func:`_span`, through Chernoff). Truncation after the last node costs at
    most :func:`_truncation_bound` ≤ tol; rounding is allowed for generously
    (16 ulp of every term times its phase and the depth
    of numpy's pairwise summation).

    ``grid_range``: the interval whose grid the caller checked with :func:`_grid` (it must
    contain ``xs``; default ``[min xs, max xs]``). A span valid for an interval is valid for
    every point inside it, but :func:`_span` rounds up on a ladder, so a narrower interval
    can get a longer span and need more nodes than the check allowed.
    """
    if q.alpha.size == 0 and q.tau == 0:
        above = (q.const > xs).astype(float)
        return above, above
    lo_x, hi_x = float(xs.min()), float(xs.max())
    if grid_range is not None:
        lo_x, hi_x = min(lo_x, grid_range[0]), max(hi_x, grid_range[1])
    step, nodes = _grid(q, lo_x, hi_x, tol, max_nodes)
    k = np.arange(nodes) + 0.5
    u = k * step
    logabs, arg = q.log_cf(u)
    weight = np.exp(logabs) / (math.pi * k)
    trunc = _truncation_bound(q, u[-1] + 0.5 * step)
    lo, hi = np.empty(xs.shape), np.empty(xs.shape)
    for start in range(0, xs.size, _CHUNK):
        x = xs[start : start + _CHUNK]
        terms = weight[:, None] * np.sin(arg[:, None] - u[:, None] * x[None, :])  # Im[φ e^{−iux}]/(π k)
        tail = 0.5 + terms.sum(axis=0)  # 1 − S(x)
        phase = u[:, None] * np.abs(x)[None, :] + np.abs(arg)[:, None] + 1.0
        err = 16 * 2.0**-52 * ((weight[:, None] * (phase + math.log2(nodes) + 1.0)).sum(axis=0) + 1.0) + trunc + tol
        lo[start : start + _CHUNK] = tail - err
        hi[start : start + _CHUNK] = tail + err
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


def _abs_cf_integral(q: _Quadratic) -> float:
    """An upper bound of ∫_0^∞ |φ(u)| du (inf when not finite by our bounds).

    |φ| decreases in u, so the upper Riemann sum on [0, U] plus the closed-form
    tail (as in :func:`_truncation_bound`) bounds the integral.
    """
    nz = q.alpha != 0
    m = int(nz.sum())
    s2 = float(np.sum(q.beta[~nz] ** 2)) + q.tau**2
    if m <= 2 and s2 == 0:
        return math.inf
    scale = 1.0 / max(float(np.abs(q.alpha).max(initial=0.0)), math.sqrt(s2), 1e-300)
    u_top, n = 200.0 * scale, 4000
    grid = np.linspace(0.0, u_top, n + 1)
    h = grid[1] - grid[0]
    head = float(np.exp(q.log_cf(grid[:-1])[0]).sum() * h)
    fac = float(np.sum(q.beta[nz] ** 2 * u_top**2 / (2.0 * (1.0 + 4.0 * q.alpha[nz] ** 2 * u_top**2))))
    log_c = float(np.sum(-0.5 * np.log(2.0 * np.abs(q.alpha[nz]) * u_top)))
    tails = []
    if m >= 3:
        tails.append(math.exp(log_c - fac - 0.5 * s2 * u_top**2) * u_top / (0.5 * m - 1.0))
    if s2 > 0:
        tails.append(math.exp(min(log_c, 0.0) - fac - 0.5 * s2 * u_top**2) / (s2 * u_top))
    return head + min(tails)


def _global_smoothing_error(q: _Quadratic, tau: float) -> float:
    """A second bound of |E g(L + τZ) − E g(L)|, uniform in ε (the smaller one is used).

    As in :func:`_cf_delta_bounds`, the error is at most (e^{τ²/2} − 1) + E[τ|Z| P(|L − ε| < τ|Z|)],
    and P(|L − ε| < h) ≤ min(2h·sup f, 2√(2h/|α_j|)/√(2π)): the density of L is bounded by
    (1/π)∫|φ|; or, conditioning on all but chi-square coordinate j, the mass of an interval
    of length 2h under α_j(z + b)² is at most that.
    """
    if tau == 0:
        return 0.0
    opts = [2.0 * tau * tau * _abs_cf_integral(q) / math.pi]
    amax = float(np.abs(q.alpha).max(initial=0.0))
    if amax > 0:
        opts.append(0.8617 * tau**1.5 * 2.0 * math.sqrt(2.0 / amax) / math.sqrt(2.0 * math.pi))  # E|Z|^1.5 ≤ 0.8617
    return math.expm1(0.5 * tau * tau) + min(opts)


#: Standard-normal multiple used by the smoothing bounds (Φ(−8) ≈ 6e-16).
_ZETA = 8.0


def _cf_delta_bounds(c: _Canonical, eps: np.ndarray, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """H_ε(P_a‖P_b) = E_a[g(L)], g(x) = (1 − e^{ε−x})₊, bracketed by characteristic-function inversion.

    Stage 1 (smoothing, only when the inversion needs it): with L' = L + τZ
    and the change of measure e^{−L} dP_a = dP_b,
    ``E_a g(L') = P(L_a' > ε) − e^{ε + τ²/2} P(L_b' > ε + τ²)``.

    Stage 2 (its error): by symmetry of Z, E g(L') − E g(L) = E ψ_{τ|Z|}(L) with
    ψ_h(l) = ½(g(l + h) + g(l − h)) − g(l), which is 0 for l ≤ ε − h, in
    [−(cosh h − 1)·1{l > ε}, 0] for l ≥ ε + h, and at most h in between
    (g is 1-Lipschitz). With z₀ = ζ = 8:

        |E g(L') − E g(L)| ≤ (e^{τ²/2} − 1)(P(L' > ε − 8τ) + Φ(−8))
                             + τ√(2/π)(P(|L' − ε| < 16τ) + 2Φ(−8)) + 2τφ(8),

    using P(|L − ε| < 8τ) ≤ P(|L' − ε| < 16τ) + 2Φ(−8). The probabilities on
    the right are bounded by the same inversion, so the error is relative to
    the local mass of L near ε (small where δ is small). The smaller of this
    and the uniform bound :func:`_global_smoothing_error` is used.

    Stage 3: each tail is bracketed by :func:`_tails` (P_b's tolerance scaled by e^{−ε}).
    """
    qa, qb = _loss(c, True), _loss(c, False)
    lo_x, hi_x = float(eps.min()), float(eps.max()) + 1.0
    tol_b = _TOL * math.exp(-hi_x)
    tau = max(_needed_tau(qa, lo_x - 1.0, hi_x, _TOL, nodes), _needed_tau(qb, lo_x, hi_x, tol_b, nodes))
    # P_b's tail is evaluated at ε + τ² (and P_a's at ε ± 16ζτ): widen τ until both grids fit
    while tau > 0 and (_grid(qb.smoothed(tau), lo_x + tau * tau, hi_x + tau * tau, tol_b, nodes) is None
                       or _grid(qa.smoothed(tau), lo_x - 2 * _ZETA * tau, hi_x + 2 * _ZETA * tau, _TOL, nodes) is None):
        tau *= 1.5
    qa, qb = qa.smoothed(tau), qb.smoothed(tau)
    n = eps.size
    pts = np.concatenate([eps, eps - _ZETA * tau, eps - 2 * _ZETA * tau, eps + 2 * _ZETA * tau])
    # the grids of the intervals checked above (by _needed_tau when τ = 0, by the loop otherwise)
    a_range = (lo_x - 2 * _ZETA * tau, hi_x + 2 * _ZETA * tau) if tau > 0 else (lo_x - 1.0, hi_x)
    a_lo, a_hi = _tails(qa, pts, _TOL, nodes, grid_range=a_range)
    b_lo, b_hi = _tails(qb, eps + tau * tau, tol_b, nodes, grid_range=(lo_x + tau * tau, hi_x + tau * tau))
    ee = np.exp(eps + 0.5 * tau * tau)
    smooth = np.zeros(n)
    if tau > 0:
        tail = float(ndtr(-_ZETA))
        near = np.clip(a_hi[2 * n : 3 * n] - a_lo[3 * n :], 0.0, 1.0)
        smooth = (math.expm1(0.5 * tau * tau) * (a_hi[n : 2 * n] + tail)
                  + tau * math.sqrt(2.0 / math.pi) * (near + 2.0 * tail)
                  + 2.0 * tau * math.exp(-0.5 * _ZETA**2) / math.sqrt(2.0 * math.pi))
        smooth = np.minimum(smooth, _global_smoothing_error(_loss(c, True), tau))
    upper = np.clip(a_hi[:n] - ee * b_lo + smooth, 0.0, 1.0)
    lower = np.clip(a_lo[:n] - ee * b_hi - smooth, 0.0, 1.0)
    return lower, upper


# ------------------------------------------------------------------------------ one direction
def _hockey(c: _Canonical, eps: np.ndarray, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of H_ε(P_a‖P_b) in canonical form, for every ε."""
    if c.disjoint:
        one = np.ones_like(eps)
        return one, one
    eq = np.abs(c.d - 1.0) <= EQUAL_RTOL
    n_chi = int((~eq).sum())
    r = float(np.linalg.norm(c.mu[eq]))
    if n_chi == 0:
        up = np.array([_analytic_delta(float(e), r) for e in eps])
        return np.maximum(up * (1.0 - 1e-12) - 1e-300, 0.0), up
    if n_chi == 1 and r == 0.0:
        j = int(np.flatnonzero(~eq)[0])
        up = np.array([_one_dim_delta(float(e), float(c.mu[j]), float(c.d[j])) for e in eps])
        return np.maximum(up * (1.0 - 1e-12) - 1e-300, 0.0), up
    return _cf_delta_bounds(c, eps, nodes)


def _check_epsilons(epsilons) -> np.ndarray:
    eps = np.atleast_1d(check_finite_array(epsilons, "epsilons"))
    if eps.ndim != 1 or eps.size == 0 or np.any(eps <= 0):
        raise fail("epsilons", "a non-empty 1-D array of finite numbers > 0", epsilons)
    return eps


# ----------------------------------------------------------------------------------- public
def gaussian_delta_bounds(epsilons, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of δ(ε) for every ε (see :func:`gaussian_delta`).

    ``max_nodes`` (default :data:`MAX_NODES`) caps the nodes of the inversion:
    fewer is faster and still a valid bracket, only a wider one.

    Returns
    -------
    lower, upper : ndarray
        ``lower ≤ δ(ε) ≤ upper`` for the exact δ of the inputs as given. The
        upper bound is what :func:`gaussian_delta` returns; the gap is the
        numerical error (module docstring).
    """
    eps = _check_epsilons(epsilons)
    d, a, b = _check_pair(diff, cov_a, cov_b)
    c = _canonical(d, a, b)
    lo_f, up_f = _hockey(c, eps, max_nodes)
    lo_r, up_r = _hockey(c.reverse(), eps, max_nodes)
    return np.maximum(lo_f, lo_r), np.maximum(up_f, up_r)


def one_direction_delta(epsilon: float, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> float:
    """H_ε(P_a‖P_b) for P_a = N(diff, cov_a), P_b = N(0, cov_b): one direction of :func:`gaussian_delta`.

    An upper bound of the exact value, with the numerical error of the module docstring.
    """
    eps = check_epsilon(epsilon)
    d, a, b = _check_pair(diff, cov_a, cov_b)
    return float(_hockey(_canonical(d, a, b), np.array([eps]), max_nodes)[1][0])


def gaussian_privacy_curve(epsilons, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> np.ndarray:
    """δ(ε) for each ε of a 1-D array: the upper bounds of :func:`gaussian_delta`.

    The closed forms are evaluated per ε; the inversion shares the
    characteristic function over all ε (one plan covering the whole grid).
    """
    return gaussian_delta_bounds(epsilons, diff, cov_a, cov_b, max_nodes=max_nodes)[1]


def gaussian_delta(epsilon: float, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> float:
    """δ(ε) = max(H_ε(P_a‖P_b), H_ε(P_b‖P_a)) for P_a = N(diff, cov_a), P_b = N(0, cov_b).

    Parameters
    ----------
    epsilon : float > 0
    diff : array (k,)
        Mean difference μ_a − μ_b.
    cov_a, cov_b : array (k, k)
        Covariances of the two laws (positive semi-definite; a scalar for k = 1).

    Returns
    -------
    float
        An upper bound of the exact δ(ε) (equal to it up to rounding in the
        closed-form cases; within ~1e-12·(1 + e^ε) plus the documented
        smoothing term with the characteristic-function inversion, see the
        module docstring). 1.0 when the supports differ.

    Notes
    -----
    H_ε(P‖Q) = P(L > ε) − e^ε Q(L > ε) with L the privacy loss log(dP/dQ).
    The bound keeps the conservative end of each term: an upper bound of
    P_a(L > ε) and a lower bound of P_b(L > ε) (and symmetrically for the
    reverse direction).
    """
    eps = check_epsilon(epsilon)
    return float(gaussian_privacy_curve(np.array([eps]), diff, cov_a, cov_b, max_nodes=max_nodes)[0])


def worst_delta(epsilon: float, pairs: Sequence[tuple]) -> tuple[float, int]:
    """The largest :func:`gaussian_delta` over ``(diff, cov_a, cov_b)`` triples, and its index."""
    eps = check_epsilon(epsilon)
    pairs = list(pairs)
    if not pairs:
        raise fail("pairs", "a non-empty sequence of (diff, cov_a, cov_b)", pairs)
    values = [gaussian_delta(eps, *p) for p in pairs]
    i = int(np.argmax(values))
    return float(values[i]), i


# ----------------------------------------------------------------------------- boxes of pairs
@dataclass(frozen=True)
class PairBox:
    """What a sampled calibration knows about one pair, on its confidence event.

    The true mean difference lies in ``diff ± half_width`` (componentwise) and
    the true covariances in the multiplicative Loewner intervals

        Σ̂_a/(1 + η_a) ⪯ Σ_a ⪯ Σ̂_a/(1 − η_a),   Σ̂_b/(1 + η_b) ⪯ Σ_b ⪯ Σ̂_b/(1 − η_b).

    The lower ends are :func:`bayespriv.calibration.moments.loewner_lower`
    (η = z·ρ(s), the Perron root of the whitened standard errors). The upper
    ends mirror them: on the event that the true-whitened error
    ``E = Σ^{-1/2}(Σ̂ − Σ)Σ^{-1/2}`` has ``‖E‖₂ ≤ η``,
    ``(1 − η)Σ ⪯ Σ̂ ⪯ (1 + η)Σ``. An upper end needs η < 1 (else: more draws).
    Exact calibrations have ``half_width = 0`` and ``η = 0``.
    """

    diff: np.ndarray
    half_width: np.ndarray
    cov_a: np.ndarray
    cov_b: np.ndarray
    eta_a: float = 0.0
    eta_b: float = 0.0

    def __post_init__(self) -> None:
        d, a, b = _check_pair(self.diff, self.cov_a, self.cov_b)
        k = d.shape[0]
        hw = np.atleast_1d(check_finite_array(self.half_width, "half_width"))
        if hw.shape != (k,) or np.any(hw < 0):
            raise fail("half_width", f"a vector ({k},) of numbers >= 0", self.half_width)
        for name in ("eta_a", "eta_b"):
            eta = check_real(name, getattr(self, name))
            if not (0.0 <= eta < 1.0):
                raise fail(name, "in [0, 1) (a covariance upper bound needs z·rho < 1; use more draws)", eta)
            object.__setattr__(self, name, eta)
        for name, arr in (("diff", d), ("half_width", hw), ("cov_a", a), ("cov_b", b)):
            object.__setattr__(self, name, sealed(arr, float))

    @property
    def k(self) -> int:
        return int(self.diff.shape[0])

    @property
    def exact(self) -> bool:
        return self.eta_a == 0 and self.eta_b == 0 and not np.any(self.half_width)

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(lower_a, upper_a, lower_b, upper_b)`` Loewner bounds."""
        return (self.cov_a / (1 + self.eta_a), self.cov_a / (1 - self.eta_a),
                self.cov_b / (1 + self.eta_b), self.cov_b / (1 - self.eta_b))

    def contains(self, diff, cov_a, cov_b, rtol: float = 1e-9) -> bool:
        """Whether a (diff, cov_a, cov_b) triple lies in the box (up to ``rtol``)."""
        d, a, b = _check_pair(diff, cov_a, cov_b)
        la, ua, lb, ub = self.bounds()
        scale = max(1.0, float(np.abs(ua).max()), float(np.abs(ub).max()))
        ok = bool(np.all(np.abs(d - self.diff) <= self.half_width + rtol * (1.0 + np.abs(self.diff))))
        for m, lo, hi in ((a, la, ua), (b, lb, ub)):
            ok &= float(np.linalg.eigvalsh(m - lo)[0]) >= -rtol * scale
            ok &= float(np.linalg.eigvalsh(hi - m)[0]) >= -rtol * scale
        return ok

    def corners(self) -> np.ndarray:
        """Mean differences at the corners of the box, ``(c, k)`` (one when exact)."""
        unc = np.flatnonzero(self.half_width > 0)
        if unc.size > 12:
            raise ValidationError(
                f"covariance='unequal' (or 'auto' after a failed equal_covariance check) with sampled bounds "
                f"evaluates δ(ε) at every corner of the mean-difference box: at most 12 uncertain components "
                f"(2^12 corners); got {unc.size}. Use exact moments (Calibration.from_moments), "
                f"covariance='equal' (its check is recorded and the release refused if it fails; then relaxed() "
                f"or APGMnG), or a query with fewer components")
        if unc.size == 0:
            return self.diff[None, :].copy()
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=unc.size)))
        out = np.repeat(self.diff[None, :], signs.shape[0], axis=0)
        out[:, unc] += signs * self.half_width[unc]
        return out

    def candidates(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The (diff, Σ_a, Σ_b) triples over which :func:`box_delta` maximizes.

        Let W whiten the estimates jointly (``WΣ̂_bWᵀ = I``, ``WΣ̂_aWᵀ = diag(D)``,
        generalized eigenvectors). In that frame the box contains every pair
        ``Σ_a = W⁻¹ diag(D_j t_j) W⁻ᵀ``, ``Σ_b = W⁻¹ diag(s_j) W⁻ᵀ`` with
        ``t_j ∈ {1/(1 + η_a), 1/(1 − η_a)}`` and ``s_j`` likewise. Candidates:
        for each sign pattern over the k axes, one covariance at its upper end
        and the other at its lower end on each axis (the most unequal
        choices, 2^k), plus both lower ends and both upper ends; times the
        corners of the mean box. To bound the cost, for k > 3 only the
        patterns with one axis flipped from all-up / all-down are used, and
        for k > 2 only the ``MAX_SEARCHED_CORNERS`` corners of largest
        Mahalanobis norm (average covariance). The brute-force checks cover
        k ≤ 2, where the full set is used.
        """
        corners = self._searched_corners()
        if self.eta_a == 0 and self.eta_b == 0:
            return [(d, self.cov_a, self.cov_b) for d in corners]
        return [(d, a, b) for d in corners for a, b in self._covariance_pairs()]

    def _searched_corners(self) -> np.ndarray:
        """Every corner for k ≤ 2; beyond, the ``MAX_SEARCHED_CORNERS`` corners of largest
        Mahalanobis norm under the average covariance (a search heuristic, to bound the cost)."""
        corners = self.corners()
        if self.k <= 2 or corners.shape[0] <= MAX_SEARCHED_CORNERS:
            return corners
        avg = np.linalg.pinv((self.cov_a + self.cov_b) / 2.0)
        norms = np.einsum("ci,ij,cj->c", corners, avg, corners)
        return corners[np.argsort(norms)[::-1][:MAX_SEARCHED_CORNERS]]

    def _covariance_pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        la, ua, lb, ub = self.bounds()
        c = _canonical(np.zeros(self.k), self.cov_a, self.cov_b)
        pairs = [(la, lb), (ua, ub), (la, ub), (ua, lb)]
        if c.disjoint or c.d.size != self.k or self.k == 1:
            return pairs
        w, v = np.linalg.eigh(self.cov_b)
        chol = np.linalg.cholesky(self.cov_b)
        white_a = np.linalg.solve(chol, np.linalg.solve(chol, self.cov_a).T)
        dd, u = np.linalg.eigh((white_a + white_a.T) / 2)
        back = chol @ u  # W⁻¹: columns are the generalized eigenvectors' duals
        lo_a, hi_a = 1 / (1 + self.eta_a), 1 / (1 - self.eta_a)
        lo_b, hi_b = 1 / (1 + self.eta_b), 1 / (1 - self.eta_b)
        if self.k <= 3:
            patterns = list(itertools.product((False, True), repeat=self.k))
        else:  # single-axis flips of the all-up / all-down patterns (cost bound)
            patterns = [tuple(i == j for i in range(self.k)) for j in range(self.k)]
            patterns += [tuple(i != j for i in range(self.k)) for j in range(self.k)]
        for pat in patterns:
            up = np.array(pat)
            if up.all() or not up.any():
                continue  # already in the list
            ta = np.where(up, hi_a, lo_a) * dd
            sb = np.where(up, lo_b, hi_b)
            pairs.append((back @ np.diag(ta) @ back.T, back @ np.diag(sb) @ back.T))
        return pairs


def box_delta(epsilon: float, box: PairBox, noise_cov=None) -> float:
    """δ(ε) maximized over the candidates of a :class:`PairBox`, with noise ``noise_cov`` added.

    What is proved and what is searched:

    * adding common independent noise never increases δ (post-processing), so
      for every true pair, moving any common part of ``Σ_a − L_a`` and
      ``Σ_b − L_b`` into the noise gives a larger δ: the supremum over the box
      is attained where the two excesses share no common part, i.e. where the
      two covariances are as unequal as the box allows;
    * the candidates (:meth:`PairBox.candidates`) are the most unequal extreme
      points aligned with the generalized eigenvectors of the estimates, and
      the corners of the mean box. That the maximum over the box lies among
      them is checked by brute-force search of the box in one and two
      dimensions (``tests/mechanisms/test_privacy_loss.py``), not proved.
    """
    eps = check_epsilon(epsilon)
    k = box.k
    s = np.zeros((k, k)) if noise_cov is None else check_covariance(noise_cov, "noise_cov", k)
    return max(gaussian_delta(eps, d, a + s, b + s) for d, a, b in box.candidates())


def privacy_curve(epsilons, boxes: Sequence[PairBox], noise_cov) -> np.ndarray:
    """δ(ε) of a Gaussian mechanism, worst over pairs (and θ members) and their boxes.

    The shared implementation behind ``Mechanism.privacy_curve``: for every
    :class:`PairBox` (one per (θ, pair) condition of a calibration) and every
    candidate of it (:meth:`PairBox.candidates`), the output laws are
    ``N(d, Σ_a + S)`` and ``N(0, Σ_b + S)`` with ``S = noise_cov``; the
    curve is the largest :func:`gaussian_privacy_curve` (an upper bound per ε).
    Exact boxes (from exact or plug-in moments) have a single candidate.

    Parameters
    ----------
    epsilons : array (n,) of floats > 0
    boxes : sequence of PairBox
    noise_cov : array (k, k)
        The mechanism's noise covariance.

    Returns
    -------
    ndarray (n,)
    """
    eps = _check_epsilons(epsilons)
    boxes = list(boxes)
    if not boxes or not all(isinstance(b, PairBox) for b in boxes):
        raise fail("boxes", "a non-empty sequence of PairBox", boxes)
    s = check_covariance(noise_cov, "noise_cov", boxes[0].k)
    out = np.zeros(eps.shape)
    for bx in boxes:
        for d, a, b in bx.candidates():
            out = np.maximum(out, gaussian_privacy_curve(eps, d, a + s, b + s))
    return out


# ------------------------------------------------------------------------------- calibration
def _triples(pairs: list, box: list | None) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Every (pair index, diff, Σ_a, Σ_b) that must meet δ: the pair itself or its box's candidates."""
    out = []
    for i, p in enumerate(pairs):
        bx = None if box is None else box[i]
        out += [(i, *t) for t in bx.candidates()] if bx is not None else [(i, *p)]
    return out


def scale_for_delta(epsilon: float, delta: float, noise_shape, pairs: Sequence, *, box: Sequence | None = None,
                    max_scale: float | None = None) -> float:
    """The smallest c ≥ 0 such that every pair meets δ(ε) ≤ δ with noise S = c·noise_shape.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    noise_shape : array (k, k)
        Positive semi-definite shape N of the added Gaussian noise.
    pairs : sequence of (diff, cov_a, cov_b)
        Mean difference and covariances of F(X) under each secret of a pair.
    box : sequence of PairBox or None, optional
        One per pair (None entries allowed): the pair must then hold for every
        mean difference and covariance pair in the box (:func:`box_delta`);
        each triple of ``pairs`` must lie in its box.
    max_scale : float, optional
        Give up (ValidationError) once the search passes this c.

    Returns
    -------
    float
        The upper end of the final bracket [lo, hi] with
        ``hi − lo ≤ 1e-9·hi``: δ(ε) ≤ δ was evaluated (upper bound) at hi for
        every pair and every candidate of every box, and failed at lo for one.

    Notes
    -----
    δ is non-increasing in c: S' = S + (c' − c)N adds common independent noise
    to both laws, a post-processing, and the hockey-stick divergence obeys the
    data-processing inequality. So the supremum over pairs (and boxes) is
    monotone in c and a bracketing search finds the threshold; no scan for
    non-monotone pieces is needed. Because the computed δ is an upper bound
    carrying numerical error, every decision is a direct evaluation, and the
    returned end is checked against every triple rather than inferred.

    Stages: c = 0 (every triple); doubling of the worst triple's bracket;
    a bracketing search on it (false position on log δ vs log c, Illinois,
    falling back to bisection), first to relative width 1e-4; every triple
    checked at the upper end (resuming with the worst failing one); then the
    same at relative width 1e-9.

    Raises
    ------
    ValidationError
        If no scale up to ``MAX_SCALE`` times the pairs' own scale meets δ (the
        noise shape misses a direction where a pair differs, so δ stays above
        the target).
    """
    eps, target = check_epsilon(epsilon), check_delta(delta)
    items = list(pairs)
    if not items:
        raise fail("pairs", "a non-empty sequence of (diff, cov_a, cov_b)", items)
    items = [_check_pair(*p) for p in items]
    k = items[0][0].shape[0]
    shape = check_covariance(noise_shape, "noise_shape", k)
    if box is not None:
        box = list(box)
        if len(box) != len(items):
            raise fail("box", f"a sequence of {len(items)} PairBox (one per pair) or None", described(f"length {len(box)}"))
        for i, bx in enumerate(box):
            if bx is not None and not isinstance(bx, PairBox):
                raise fail(f"box[{i}]", "a PairBox or None", bx)
            if bx is not None and not bx.contains(*items[i]):
                raise fail(f"pairs[{i}]", f"inside box[{i}]", described("a triple outside its box"))
    limit = math.inf if max_scale is None else check_real("max_scale", max_scale)
    return _bisect_scale(eps, target, shape, _triples(items, box), limit)


def _bisect_scale(eps: float, target: float, shape: np.ndarray, triples: list, limit: float = math.inf) -> float:
    """Stages of :func:`scale_for_delta` (see its Notes) over flattened (pair, candidate) triples."""
    log_t = math.log(target)

    def delta_at(j: int, c: float, cheap: bool = False) -> float:
        """Upper bound of δ; with ``cheap``, first a looser one (fewer nodes), kept when it passes."""
        _, d, a, b = triples[j]
        if cheap:
            value = gaussian_delta(eps, d, a + c * shape, b + c * shape, max_nodes=CHEAP_NODES)
            if value <= target:
                return value
        return gaussian_delta(eps, d, a + c * shape, b + c * shape)

    every = list(range(len(triples)))
    vals = {j: delta_at(j, 0.0, cheap=True) for j in every}  # stage 1: c = 0
    if max(vals.values()) <= target:
        return 0.0
    size = max(float(np.trace(a) + np.trace(b) + d @ d) for _, d, a, b in triples)
    unit = max(size, 1e-300) / max(float(np.trace(shape)), 1e-300)
    worst = max(every, key=lambda j: vals[j])
    lo, d_lo, hi = 0.0, vals[worst], unit
    width = 1e-4  # coarse rounds until the worst triple is found, then 1e-9
    while True:
        d_hi = delta_at(worst, hi)
        while d_hi > target:  # stage 2: the gap doubles until the worst triple passes
            if hi > limit:
                raise fail("max_scale", "large enough for the noise shape to meet delta", limit)
            if hi > MAX_SCALE * unit:
                raise fail("noise_shape", "able to meet the target delta at some scale (it misses a direction in which "
                           "a pair differs)", described(f"delta still above {target:g} at c = {hi:.3g}"))
            lo, d_lo, hi = hi, d_hi, (hi + 2.0 * (hi - lo) if hi > lo else 2.0 * hi)
            d_hi = delta_at(worst, hi)
        lo, hi, d_lo, d_hi = _bracket_search(lambda c: delta_at(worst, c), lo, hi, d_lo, d_hi, log_t, width)  # stage 3
        vals = {j: delta_at(j, hi, cheap=True) for j in every}  # stage 4: every triple at hi
        bad = [j for j in every if vals[j] > target]
        if bad:  # resume just above hi with the worst failing triple
            worst = max(bad, key=lambda j: vals[j])
            lo, d_lo, hi = hi, vals[worst], hi * (1.0 + 1e-6)
        elif width > 1e-9:
            width = 1e-9  # refine the bracket of the worst triple, then check every triple again
        else:
            return hi


def _bracket_search(delta_of, lo: float, hi: float, d_lo: float, d_hi: float, log_t: float,
                    width: float) -> tuple[float, float, float, float]:
    """Shrink [lo, hi] (δ(lo) > target ≥ δ(hi)) to ``hi − lo ≤ width·hi``.

    Illinois false position on f = log δ − log target against log c (the end
    kept twice in a row has its f halved), clamped 0.1 % inside the bracket,
    plain bisection after 60 steps. Every step is a direct evaluation, so the
    bracket's meaning never depends on the interpolation. Returns
    ``(lo, hi, δ(lo), δ(hi))``.
    """
    f_lo, f_hi = math.log(max(d_lo, 1e-300)) - log_t, math.log(max(d_hi, 1e-300)) - log_t
    last, steps = 0, 0
    while hi - lo > width * hi:
        steps += 1
        if lo > 0 and steps <= 60 and f_lo > f_hi:
            x_lo, x_hi = math.log(lo), math.log(hi)
            mid = math.exp(x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo))
            gap = hi - lo
            mid = min(max(mid, lo + 1e-3 * gap), hi - 1e-3 * gap)
        else:
            mid = 0.5 * (lo + hi)
        d_mid = delta_of(mid)
        f_mid = math.log(max(d_mid, 1e-300)) - log_t
        if f_mid > 0:
            lo, f_lo, d_lo = mid, f_mid, d_mid
            if last == -1:
                f_hi *= 0.5
            last = -1
        else:
            hi, f_hi, d_hi = mid, f_mid, d_mid
            if last == 1:
                f_lo *= 0.5
            last = 1
    return lo, hi, d_lo, d_hi


#: Assumption named by a guarantee whose covariance box is searched rather than proven (k > 2).
BOX_SEARCH_ASSUMPTION = "covariance_box_search"


def box_assumptions(boxes: Any) -> tuple[str, ...]:
    """``("covariance_box_search",)`` when some box is a real box (sampled bounds) in k > 2 dimensions.

    The worst case over a box of covariances is found by a search over extreme points aligned
    with the generalized eigenvectors and the mean box's corners; that it is the maximum is
    verified by brute force for k ≤ 2 only, so beyond that the guarantee names the assumption.
    Exact calibrations (a single point) need none.
    """
    for b in boxes:
        k = int(np.asarray(b.diff).shape[-1])
        real_box = bool(np.any(np.asarray(b.half_width) > 0)) or b.eta_a > 0 or b.eta_b > 0
        if k > 2 and real_box:
            return (BOX_SEARCH_ASSUMPTION,)
    return ()

