"""PyMCDataModel's quadrature route: one scalar latent variable, log-concave posterior, tabulated.

Checked against independent computations (scipy quadrature, conjugate closed forms) with a
fixed seed and tolerances z·SE for a stated false-failure probability α; a twin built for the
wrong evidence is caught by the same checks.
"""

from __future__ import annotations


import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import bayespriv as bp
from bayespriv.datamodels._quadrature import TV_TOLERANCE
from bayespriv.datamodels.pymc import PyMCDataModel

from tests._pymc_oracles import C_SCORE as C, build_logit, build_normal_normal, logit_posterior_moments

N = 20  # records (the logit model and its constants: tests/_pymc_oracles.py)
ALPHA = 1e-3
Z = stats.norm.isf(ALPHA / 2)
SECRET = bp.DatasetSecret.proportion("gender", 1, 0.3)  # k = 6 of 20


def logit_model(**kw):
    return PyMCDataModel(build_logit, n_records=N, columns=["gender", "score"], parameters=["z"], **kw)


def _moment_failures(p, k):
    """|mean − E| <= Z·sqrt(V/D) and the sample variance within Z·sqrt(2V²/D) (p | k is near
    Gaussian; the TV bound, <= 1e-6, moves these moments by far less than the SE); α = 1e-3 per check."""
    e, v = logit_posterior_moments(k, N)
    d = p.size
    failures = []
    if abs(p.mean() - e) > Z * np.sqrt(v / d):
        failures.append("mean")
    if abs(p.var(ddof=1) - v) > Z * np.sqrt(2 * v**2 / d):
        failures.append("variance")
    return failures


@pytest.fixture(scope="module")
def prepared():
    return logit_model().prepare([SECRET], np.random.default_rng(0))


def test_logit_posterior_is_tabulated_and_matches_quadrature(prepared):
    assert logit_model().route(SECRET) == "quadrature"
    assert logit_model(conjugate=False).route(SECRET) == "mcmc"
    entry = prepared.diagnostics["mcmc"][SECRET.label]
    assert entry["route"] == "quadrature" and list(entry["variables"]) == ["z"]
    assert 0 <= entry["tv_bound"] <= TV_TOLERANCE and "log-concave" in entry["note"]
    z = prepared._tables[SECRET].draw(100_000, np.random.default_rng(1))
    assert _moment_failures(special.expit(z), 6) == []
    # and through the data model: exactly 6 women, the score's mean given p
    batch = prepared.sample(SECRET, 2000, rng=2)
    assert np.all(batch["gender"].sum(axis=1) == 6)


def test_twin_a_table_for_the_wrong_evidence_is_caught():
    """Twin: the posterior for k = 7 instead of 6 fails the mean check."""
    wrong = logit_model().prepare([bp.DatasetSecret.proportion("gender", 1, 0.35)], np.random.default_rng(0))
    table = wrong._tables[bp.DatasetSecret.proportion("gender", 1, 0.35)]
    z = table.draw(100_000, np.random.default_rng(1))
    assert "mean" in _moment_failures(special.expit(z), 6)


def build_public(n):
    """p ~ Beta(2, 2) informed by 30 public ones of 100; gender ~ Bernoulli(p); score ~ N(10 p, 1)."""
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        pm.Bernoulli("public", p, observed=np.r_[np.ones(30), np.zeros(70)])
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", C * p, 1.0, shape=n)
    return m


@pytest.mark.parametrize("a, caught", [(38.0, False), (37.0, True)])
def test_beta_posterior_with_public_data_is_the_conjugate_law(a, caught):
    """p | 30 of 100 public, 6 of 20 secret ~ Beta(2 + 36, 2 + 84) exactly: a Kolmogorov–Smirnov
    test of 50,000 tabulated draws against that CDF, α = 1e-3; twin: against Beta(37, 86) it fails."""
    model = PyMCDataModel(build_public, n_records=N, columns=["gender", "score"], parameters=["p"])
    assert model.route(SECRET) == "quadrature"
    table = model.prepare([SECRET], np.random.default_rng(0))._tables[SECRET]
    p = table.draw(50_000, np.random.default_rng(4))
    pvalue = stats.kstest(p, stats.beta(a, 86.0).cdf).pvalue
    assert (pvalue < ALPHA) == caught


def test_mean_secret_calibration_matches_the_normal_normal_closed_form():
    """x̄ = a: μ | a ~ N(n a/(n+1), 1/(n+1)), so ȳ ~ N(n a/(n+1), 1/(n+1) + 1/n) exactly; the
    calibration's mean and variance of ȳ within z·SE (exact Gaussian SEs), α = 1e-3 per check."""
    n, a, d = 20, 0.5, 4000
    model = PyMCDataModel(build_normal_normal, n_records=n, columns=["x", "y"], parameters=["mu"])
    secret = bp.DatasetSecret.mean("x", a)
    assert model.route(secret) == "quadrature"
    batch = model.prepare([secret], np.random.default_rng(0)).sample(secret, d, rng=13)
    np.testing.assert_allclose(batch["x"].mean(axis=1), a, atol=1e-12)
    ybar = batch["y"].mean(axis=1)
    v = 1 / (n + 1) + 1 / n
    assert abs(ybar.mean() - n * a / (n + 1)) <= Z * np.sqrt(v / d)
    lo, hi = stats.chi2.ppf([ALPHA / 2, 1 - ALPHA / 2], d - 1) / (d - 1) * v
    assert lo <= ybar.var(ddof=1) <= hi


def build_bimodal(n):
    """z from a two-component normal mixture prior: the posterior is not log-concave."""
    with pm.Model() as m:
        z = pm.NormalMixture("z", w=[0.5, 0.5], mu=[-3.0, 3.0], sigma=[0.5, 0.5])
        p = pm.Deterministic("p", pm.math.sigmoid(z))
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", C * p, 1.0, shape=n)
    return m


def test_a_posterior_that_is_not_log_concave_stays_on_mcmc():
    model = PyMCDataModel(build_bimodal, n_records=4, columns=["gender", "score"], parameters=["z"])
    secret = bp.DatasetSecret.proportion("gender", 1, 0.5)
    assert model.route(secret) == "mcmc"
    reason = model._tabulated.table(secret, model._plans.plan(secret))
    assert isinstance(reason, str) and "not log-concave" in reason


def test_a_tabulated_posterior_is_named_in_the_calibrations_assumptions():
    cal = bp.calibrate(logit_model(), bp.SecretPair(SECRET, bp.DatasetSecret.proportion("gender", 1, 0.7)),
                       bp.mean("score"), n_draws=200, rng=3)
    assert "tabulated_posterior" in cal.assumptions and "mcmc_posterior" not in cal.assumptions
