"""The same hierarchical model as PyMC and as a pgmpy network gives the same numbers.

Model: gender ~ Bernoulli(p), height | gender with mean μ_g and variance σ²;
secret p = 0.3 vs p = 0.7; query mean(height) over n records. Closed form:
sensitivity 0.4·|μ₁ − μ₀|, Var = (σ² + p(1 − p)(μ₁ − μ₀)²)/n. In PyMC height is
Normal; in the network it is μ_g ± σ with probability 1/2 (same two moments, so
the same sensitivity and variance of the average).

Tolerance: each calibration's estimates are asymptotically normal with the
standard errors it reports (mean_se, cov_se); the difference of two independent
estimates is compared at z = Φ⁻¹(1 − α/6), α = 1e-3 over 3 comparisons.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import stats

import bayespriv as bp

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

MU0, MU1, SIGMA, N, DRAWS = 160.0, 175.0, 6.0, 30, 4000
Z = stats.norm.isf(1e-3 / 6)


def build(n):
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        g = pm.Bernoulli("gender", p, shape=n)
        pm.Normal("height", pt.switch(pt.eq(g, 1), MU1, MU0), SIGMA, shape=n)
    return m


def network(mu1: float = MU1) -> DiscreteBayesianNetwork:
    net = DiscreteBayesianNetwork([("gender", "height")])
    heights = [MU0 - SIGMA, MU0 + SIGMA, mu1 - SIGMA, mu1 + SIGMA]
    net.add_cpds(
        TabularCPD("gender", 2, [[0.5], [0.5]], state_names={"gender": [0, 1]}),
        TabularCPD("height", 4, [[0.5, 0.0], [0.5, 0.0], [0.0, 0.5], [0.0, 0.5]], evidence=["gender"],
                   evidence_card=[2], state_names={"height": heights, "gender": [0, 1]}),
    )
    return net


def _calibrations(net):
    pymc = bp.PyMCDataModel(build, n_records=N, columns=["gender", "height"], parameters=["p"])
    pair_pymc = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    pair_net = bp.SecretPair(bp.DistributionSecret("P(gender=1)", 0.3), bp.DistributionSecret("P(gender=1)", 0.7))
    a = bp.calibrate(pymc, pair_pymc, bp.mean("height"), n_draws=DRAWS, rng=1)
    b = bp.calibrate(bp.BayesNetDataModel(net, n_records=N), pair_net, bp.mean("height"), n_draws=DRAWS, rng=2)
    return a, b


def _disagreements(a: bp.Calibration, b: bp.Calibration) -> list[str]:
    out = []
    da, db = (c.mean_array[0, 0] - c.mean_array[1, 0] for c in (a, b))
    se = np.sqrt(a.mean_se[0, 0] ** 2 + a.mean_se[1, 0] ** 2 + b.mean_se[0, 0] ** 2 + b.mean_se[1, 0] ** 2)
    if abs(da - db) > Z * se:
        out.append(f"sensitivity {da:.4f} vs {db:.4f}")
    for i in range(2):
        va, vb = a.cov_array[i, 0, 0], b.cov_array[i, 0, 0]
        if abs(va - vb) > Z * np.hypot(a.cov_se[i, 0, 0], b.cov_se[i, 0, 0]):
            out.append(f"variance {i} {va:.5f} vs {vb:.5f}")
    return out


def test_pymc_and_pgmpy_give_the_same_calibration_and_the_closed_form():
    a, b = _calibrations(network())
    assert _disagreements(a, b) == []
    for cal in (a, b):
        assert abs(cal.sensitivity(1) - 0.4 * (MU1 - MU0)) <= Z * np.hypot(*cal.mean_se[:, 0])
        for i, p in enumerate((0.3, 0.7)):
            exact = (SIGMA**2 + p * (1 - p) * (MU1 - MU0) ** 2) / N
            assert abs(cal.cov_array[i, 0, 0] - exact) <= Z * cal.cov_se[i, 0, 0]


def test_twin_network_with_a_shifted_mean_is_caught():
    """μ₁ + 2 in the network moves its sensitivity by 0.8, far beyond the tolerance (≈ 0.06)."""
    a, b = _calibrations(network(MU1 + 2.0))
    assert any(d.startswith("sensitivity") for d in _disagreements(a, b))
