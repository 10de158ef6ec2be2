"""PyMC models shared by the data-model tests, with independent references for their answers.

The references use SciPy's adaptive quadrature, never the library's code paths.
"""

from __future__ import annotations

import pymc as pm
from scipy import integrate, special, stats

#: The logit model's prior scale of z and the score's slope in p.
SD_Z, C_SCORE = 1.5, 10.0


def build_logit(n: int) -> pm.Model:
    """z ~ N(0, 1.5); p = sigmoid(z); gender ~ Bernoulli(p); score ~ N(10 p, 1) — the share of
    women informs p, which moves the scores (non-conjugate: MCMC, or tabulated as one latent)."""
    with pm.Model() as m:
        z = pm.Normal("z", 0.0, SD_Z)
        p = pm.Deterministic("p", pm.math.sigmoid(z))
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", C_SCORE * p, 1.0, shape=n)
    return m


def build_normal_normal(n: int) -> pm.Model:
    """μ ~ N(0, 1); x_r, y_r ~ N(μ, 1): a mean secret on x informs μ, which moves y."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("x", mu, 1.0, shape=n)
        pm.Normal("y", mu, 1.0, shape=n)
    return m


def logit_posterior_moments(k: int, n: int, sd_z: float = SD_Z) -> tuple[float, float]:
    """E[p | k], Var[p | k] for z ~ N(0, sd_z), p = sigmoid(z) and k ones among n Bernoulli(p) records."""
    def post(z):
        return stats.norm.pdf(z, 0, sd_z) * special.expit(z) ** k * special.expit(-z) ** (n - k)

    norm = integrate.quad(post, -30, 30)[0]
    e1 = integrate.quad(lambda z: post(z) * special.expit(z), -30, 30)[0] / norm
    e2 = integrate.quad(lambda z: post(z) * special.expit(z) ** 2, -30, 30)[0] / norm
    return e1, e2 - e1**2
