"""A check without power never reads passed: the share of women under a PyMC model, measured.

PyMC model p ~ Beta(2, 2), gender ~ Bernoulli(p), height | gender ~ N(μ_g, σ)
(the model of tests/datamodels/test_pymc.py), secrets p = 0.2 against p = 0.5,
query the share of women (a scaled Binomial: not Gaussian, variances 0.16/50
against 0.25/50, ratio 1.56). Without a power rule, 10, 30 and 100 draws give
"no failed check" and 300, 1000 and 8000 "FAILED check: gaussian_query,
equal_covariance": fewer draws look cleaner. So a check never reads passed
below its n_min, and calibrate refuses draws its own bounds cannot use.

Measured with rng=1 (α = 1e-3 per named check; n_min = 103 for gaussian_query,
114 for equal_covariance), share of women, p = 0.2 against 0.5:

=====  =========================  ==========================
draws  gaussian_query             equal_covariance
=====  =========================  ==========================
10     unchecked (refused at 0.95) unchecked (refused at 0.95)
30     unchecked (refused at 0.95) unchecked (refused at 0.95)
100    unchecked                  unchecked
300    passed (p = 0.028)         FAILED (p < 1e-4)
1000   FAILED (p < 1e-4)          FAILED (p < 1e-4)
=====  =========================  ==========================

The average height with the pair of tests/datamodels/test_pymc.py (p = 0.3
against 0.7, equal variances) reads unchecked at 10, 30, 100 and passed at 300, 1000.

The assertions that matter hold for any seed: no check passes below its n_min
(deterministic); the failures at 1000 draws rest on p-values below 1e-4 for this
seed (the departures are far beyond the checks' detection sizes at that n).
"""

from __future__ import annotations

import pymc as pm
import pytensor.tensor as pt
import pytest

import bayespriv as bp
from bayespriv.calibration.assumptions import check_assumptions
from bayespriv.datamodels.pymc import PyMCDataModel

MU0, MU1, SIGMA, N = 64.0, 70.0, 3.0, 50
NAMES = ("gaussian_query", "equal_covariance")


def build_hier(n):
    """p ~ Beta(2, 2); gender ~ Bernoulli(p); height | gender ~ N(μ_gender, σ)."""
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        g = pm.Bernoulli("gender", p, shape=n)
        pm.Normal("height", pt.switch(pt.eq(g, 1), MU1, MU0), SIGMA, shape=n)
    return m


@pytest.fixture(scope="module")
def model():
    return PyMCDataModel(build_hier, n_records=N, columns=["gender", "height"], parameters=["p"])


def _states(model, pair, query):
    """holds(gaussian_query), holds(equal_covariance) at 10, 30, 100, 300, 1000 draws,
    asserting on the way that no check passes below its n_min."""
    states = {}
    for n in (10, 30, 100, 300, 1000):
        if n < 63:  # below calibrate's minimum for one pair, k = 1, confidence 0.95
            with pytest.raises(bp.ValidationError, match=rf"n_draws must be at least 63 draws per secret .*; got {n}"):
                bp.calibrate(model, pair, query, n_draws=n, rng=1)
        cal = bp.calibrate(model, pair, query, n_draws=n, rng=1, confidence=None if n < 63 else 0.95)
        report = check_assumptions(cal, NAMES)
        for c in report:
            assert c.holds is not True or n >= c.n_min, (n, c)  # never passed below n_min
        states[n] = tuple(report.holds(name) for name in NAMES)
    return states


def test_fewer_draws_never_look_cleaner(model):
    """p = 0.2 against 0.5, share of women: unchecked up to 100 draws, failures only from 300 on."""
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.5))
    states = _states(model, pair, bp.mean("gender"))
    assert states[10] == states[30] == states[100] == (None, None)
    assert states[300][1] is False
    assert states[1000] == (False, False)


def test_the_pair_of_test_pymc_reads_unchecked_then_passes(model):
    """p = 0.3 against 0.7, average height (tests/datamodels/test_pymc.py): a Binomial
    mixture close to Gaussian, equal variances (0.3312 both). Unchecked at 10, 30 and
    100 draws; checked and passed at 300 and 1000 (false failure ≤ 1e-3 per check)."""
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    states = _states(model, pair, bp.mean("height"))
    assert states[10] == states[30] == states[100] == (None, None)
    assert states[300] == states[1000] == (True, True)


def test_report_names_the_unchecked_assumptions(model):
    """100 draws: nothing failed, both Gaussian assumptions unchecked (not passed)."""
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.5))
    cal = bp.calibrate(model, pair, bp.mean("gender"), n_draws=100, rng=1)
    report = check_assumptions(cal, NAMES)
    assert report.failed == () and report.unchecked == NAMES
    assert "gaussian_query=unchecked, equal_covariance=unchecked" in repr(report)
