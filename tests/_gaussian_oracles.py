"""Independent privacy curves of Gaussian mechanisms in mpmath, shared by the tests (nothing here imports bayespriv).

* :func:`analytic_delta` / :func:`analytic_epsilon`: two Gaussians of equal covariance whose means are ``r``
  apart in Mahalanobis distance, δ(ε) = Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r) (Balle & Wang 2018, Theorem 8);
* :func:`hockey_stick` / :func:`two_sided_delta`: one dimension, unequal variances, by mpmath quadrature of
  (p_a − e^ε p_b)₊ between the roots of the quadratic log-likelihood ratio (found by mpmath itself).
"""

from __future__ import annotations

import mpmath


def analytic_delta(epsilon: float, r: float, dps: int = 60) -> mpmath.mpf:
    """δ(ε) of N(0, I) vs N(r e₁, I) with ``dps`` decimal digits."""
    with mpmath.workdps(dps):
        e, r = mpmath.mpf(epsilon), mpmath.mpf(r)
        return mpmath.ncdf(r / 2 - e / r) - mpmath.exp(e) * mpmath.ncdf(-r / 2 - e / r)


def analytic_epsilon(r: float, delta: float, dps: int = 40) -> float:
    """The smallest ε with :func:`analytic_delta` (ε, r) ≤ δ (bisection to 1e-30)."""
    with mpmath.workdps(dps):
        f = lambda e: analytic_delta(e, r, dps) - delta  # noqa: E731
        if f(0) <= 0:
            return 0.0
        return float(mpmath.findroot(f, (mpmath.mpf(0), mpmath.mpf(60)), solver="bisect", tol=1e-30))


def hockey_stick(eps: float, mu: float, va: float, vb: float, dps: int = 25) -> mpmath.mpf:
    """H_ε(N(mu, va) ‖ N(0, vb)) = ∫ (p_a − e^ε p_b)₊ by mpmath quadrature between mpmath roots."""
    with mpmath.workdps(dps):
        e, m, a, b = (mpmath.mpf(x) for x in (eps, mu, va, vb))
        f = lambda x: mpmath.npdf(x, m, mpmath.sqrt(a)) - mpmath.exp(e) * mpmath.npdf(x, 0, mpmath.sqrt(b))  # noqa: E731
        qa = 1 / (2 * b) - 1 / (2 * a)  # log p_a − log p_b − ε = qa x² + qb x + qc
        qb = m / a
        qc = -m * m / (2 * a) - mpmath.log(mpmath.sqrt(a / b)) - e
        if qa == 0:
            if qb == 0:
                return mpmath.mpf(0)
            root = -qc / qb
            return mpmath.quad(f, [root, mpmath.inf]) if qb > 0 else mpmath.quad(f, [-mpmath.inf, root])
        disc = qb * qb - 4 * qa * qc
        if disc <= 0:
            return mpmath.mpf(0)  # qa < 0: the integrand is nowhere positive (qa > 0 always has two roots here)
        r = sorted([(-qb - mpmath.sqrt(disc)) / (2 * qa), (-qb + mpmath.sqrt(disc)) / (2 * qa)])
        if qa > 0:
            return mpmath.quad(f, [-mpmath.inf, r[0]]) + mpmath.quad(f, [r[1], mpmath.inf])
        return mpmath.quad(f, [r[0], r[1]])


def two_sided_delta(eps: float, mu: float, va: float, vb: float) -> float:
    """δ(ε) of N(mu, va) vs N(0, vb) in both directions (the larger), by :func:`hockey_stick`."""
    return float(max(hockey_stick(eps, mu, va, vb), hockey_stick(eps, -mu, vb, va)))
