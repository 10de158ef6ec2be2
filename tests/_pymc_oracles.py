"""Independent references for PyMC data-model tests (shared by the MCMC and quadrature tests).

Computed with SciPy's adaptive quadrature, never with the library's code paths.
"""

from __future__ import annotations

from scipy import integrate, special, stats


def logit_posterior_moments(k: int, n: int, sd_z: float) -> tuple[float, float]:
    """E[p | k], Var[p | k] for z ~ N(0, sd_z), p = sigmoid(z) and k ones among n Bernoulli(p) records."""
    def post(z):
        return stats.norm.pdf(z, 0, sd_z) * special.expit(z) ** k * special.expit(-z) ** (n - k)

    norm = integrate.quad(post, -30, 30)[0]
    e1 = integrate.quad(lambda z: post(z) * special.expit(z), -30, 30)[0] / norm
    e2 = integrate.quad(lambda z: post(z) * special.expit(z) ** 2, -30, 30)[0] / norm
    return e1, e2 - e1**2
