"""The hockey-stick divergence ``H_ε(P_a‖P_b)`` of a pair of Gaussians in canonical form.

:func:`canonical_hockey` returns lower and upper bounds for every ε: in closed form when the
covariances are equal (the analytic Gaussian formula of Balle & Wang 2018) or differ along one
coordinate only (normal CDFs in log space), else by characteristic-function inversion
(:func:`~bayespriv.privacy.loss_inversion.cf_delta_bounds`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from .loss_inversion import cf_delta_bounds
from .loss_reduction import EQUAL_RTOL, Canonical

#: Relative rounding allowance of one ``log_ndtr``/``ndtr`` value (64 ulp).
_ROUND = 64 * 2.0**-52


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


def canonical_hockey(c: Canonical, eps: np.ndarray, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
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
    return cf_delta_bounds(c, eps, nodes)


#: Shares of ε given to the covariance change in :func:`split_hockey` (the rest goes to the mean shift).
SPLIT_SHARES = np.geomspace(1e-4, 0.5, 24)
#: Relative allowance for the rounding of the exponentials and logarithms of :func:`split_hockey` (their error
#: is below 1e-13 relative for exponents up to the float range; the bound is widened by this much).
SPLIT_ROUNDING = 1e-10
#: Chernoff orders s tried in :func:`split_hockey`, as fractions of the end of their domain.
_SPLIT_ORDERS = np.concatenate([np.geomspace(1e-6, 0.9, 48), 1.0 - np.geomspace(0.1, 1e-6, 12)])


def split_hockey(c: Canonical, epsilon: float) -> float:
    """A closed-form upper bound of H_ε(P_a‖P_b) for a canonical pair, P_a = N(μ, D), P_b = N(0, I).

    Through R = N(0, D): P_a and R differ by a mean shift only, R and P_b by the covariance only.
    For any event E, P_a(E) ≤ e^{ε₁} R(E) + H_{ε₁}(P_a‖R) and R(E) ≤ e^{ε₂} P_b(E) + H_{ε₂}(R‖P_b), so
    with ε₁ + ε₂ = ε

        H_ε(P_a‖P_b) ≤ H_{ε₁}(P_a‖R) + e^{ε₁} H_{ε₂}(R‖P_b);

    through R' = N(μ, I) (covariance first), H_ε(P_a‖P_b) ≤ H_{ε₂}(P_a‖R') + e^{ε₂} H_{ε₁}(R'‖P_b), where
    H_{ε₂}(P_a‖R') = H_{ε₂}(R‖P_b) (a common translation). The smaller of the two is returned.
    The mean-shift terms are the analytic Gaussian formula at the Mahalanobis distances ‖μ/√D‖ and ‖μ‖
    (Balle & Wang 2018, Theorem 8). In the covariance term, the privacy loss under R is
    L = Σ_j ½(D_j − 1) z_j² − ½ log D_j (z standard normal), and for every s > 0
    (1 − e^{ε₂ − L})₊ ≤ κ(s) e^{s(L − ε₂)} with κ(s) = s^s/(1 + s)^{1+s} (the maximum over
    x of (1 − e^{−x}) e^{−sx}), so H_{ε₂}(R‖P_b) ≤ κ(s) E e^{s(L − ε₂)}, whose expectation is
    Π_j (1 − s(D_j − 1))^{−½} D_j^{−s/2}. The minimum over a grid of ε₂ (:data:`SPLIT_SHARES`)
    and of s is a valid bound (any point of either grid gives one), widened by :data:`SPLIT_ROUNDING`
    for rounding. It is looser than the exact
    value of :func:`canonical_hockey` and costs microseconds: a screen that lets a search skip the
    exact evaluation wherever the bound already passes.
    """
    if c.disjoint:
        return 1.0
    d = np.asarray(c.d, dtype=float)
    if d.size == 0:
        return 0.0
    r = float(np.linalg.norm(c.mu / np.sqrt(d)))
    grow = d - 1.0
    end = 1.0 / float(grow.max()) if np.any(grow > 0) else 1e6
    s = end * _SPLIT_ORDERS
    with np.errstate(divide="ignore", invalid="ignore"):
        log_m = -0.5 * np.log1p(-np.outer(s, grow)).sum(axis=1) - 0.5 * s * float(np.log(d).sum())
        log_kappa = s * np.log(s) - (1.0 + s) * np.log1p(s)
        eps2 = epsilon * SPLIT_SHARES
        log_cov = np.min(log_m[None, :] + log_kappa[None, :] - np.outer(eps2, s), axis=1)
    cov_term = np.exp(np.minimum(np.nan_to_num(log_cov, nan=0.0), 0.0))
    r_after = float(np.linalg.norm(c.mu))
    shift_first = np.array([_analytic_delta(epsilon - e2, r) for e2 in eps2]) + np.exp(epsilon - eps2) * cov_term
    cov_first = cov_term + np.exp(eps2) * np.array([_analytic_delta(epsilon - e2, r_after) for e2 in eps2])
    return float(min(1.0, min(shift_first.min(), cov_first.min()) * (1.0 + SPLIT_ROUNDING)))
