"""Rigorous brackets of the hockey-stick divergence by characteristic-function inversion.

:func:`cf_delta_bounds` brackets ``H_ε(P_a‖P_b)`` for a canonical pair whose privacy loss is not
covered by a closed form: tail probabilities of the loss by trapezoidal Gil-Pelaez inversion
with half-offset nodes (Davies 1973; :func:`tails`), every error term bounded (aliasing by
Chernoff tails, truncation in closed form, rounding), and, when the characteristic function
decays too slowly for ``MAX_NODES`` nodes, a smoothing of the loss by τZ with its error bounded.
The error budget is stated in the docstring of :mod:`~bayespriv.privacy.privacy_loss`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from bayespriv.errors import ValidationError
from .loss_reduction import Canonical, Quadratic, loss_quadratic

#: Most nodes of the characteristic-function sum.
MAX_NODES = 2**18
#: Target of each error term of the inversion (absolute, in probability).
_TOL = 1e-13
#: x-values per chunk of the inversion sum (memory: MAX_NODES × chunk complex).
_CHUNK = 16


def _truncation_bound(q: Quadratic, u: float) -> float:
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


def _span(q: Quadratic, x_lo: float, x_hi: float, tol: float) -> float:
    """T with P(L ≥ x_lo + T) ≤ tol and P(L ≤ x_hi − T) ≤ tol (Chernoff)."""
    t = max(abs(q.mean - x_lo), abs(q.mean - x_hi)) + 8.0 * q.sd + 1.0
    for _ in range(200):
        if q.chernoff(x_lo + t, True) <= tol and q.chernoff(x_hi - t, False) <= tol:
            return t
        t *= 1.5
    raise ValidationError(f"privacy loss tails must be bounded; got no span up to {t:.3g}")  # pragma: no cover


def _grid(q: Quadratic, x_lo: float, x_hi: float, tol: float, nodes: int | None = None) -> tuple[float, int] | None:
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


def _needed_tau(q: Quadratic, x_lo: float, x_hi: float, tol: float, nodes: int | None = None) -> float:
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


def tails(q: Quadratic, xs: np.ndarray, tol: float, max_nodes: int | None = None,
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


def _abs_cf_integral(q: Quadratic) -> float:
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


def _global_smoothing_error(q: Quadratic, tau: float) -> float:
    """A second bound of |E g(L + τZ) − E g(L)|, uniform in ε (the smaller one is used).

    As in :func:`cf_delta_bounds`, the error is at most (e^{τ²/2} − 1) + E[τ|Z| P(|L − ε| < τ|Z|)],
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


def cf_delta_bounds(c: Canonical, eps: np.ndarray, nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
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

    Stage 3: each tail is bracketed by :func:`tails` (P_b's tolerance scaled by e^{−ε}).
    """
    qa, qb = loss_quadratic(c, True), loss_quadratic(c, False)
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
    a_lo, a_hi = tails(qa, pts, _TOL, nodes, grid_range=a_range)
    b_lo, b_hi = tails(qb, eps + tau * tau, tol_b, nodes, grid_range=(lo_x + tau * tau, hi_x + tau * tau))
    ee = np.exp(eps + 0.5 * tau * tau)
    smooth = np.zeros(n)
    if tau > 0:
        tail = float(ndtr(-_ZETA))
        near = np.clip(a_hi[2 * n : 3 * n] - a_lo[3 * n :], 0.0, 1.0)
        smooth = (math.expm1(0.5 * tau * tau) * (a_hi[n : 2 * n] + tail)
                  + tau * math.sqrt(2.0 / math.pi) * (near + 2.0 * tail)
                  + 2.0 * tau * math.exp(-0.5 * _ZETA**2) / math.sqrt(2.0 * math.pi))
        smooth = np.minimum(smooth, _global_smoothing_error(loss_quadratic(c, True), tau))
    upper = np.clip(a_hi[:n] - ee * b_lo + smooth, 0.0, 1.0)
    lower = np.clip(a_lo[:n] - ee * b_hi - smooth, 0.0, 1.0)
    return lower, upper
