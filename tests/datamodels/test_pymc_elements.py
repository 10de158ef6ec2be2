"""Distribution secrets on one element of a vector parameter of a PyMC model: ``DistributionSecret("theta[2]", a)``.

Statistical checks use a fixed seed and a tolerance z·SE for a stated false-failure probability α per check:
α = 1e-3 (z = 3.29) where F | secret is drawn exactly (CLT on i.i.d. draws), and z = 4 (nominal α ≈ 6e-5,
as in test_pymc.py) where a resampled MCMC posterior adds its error through its bulk ESS under a Gaussian
approximation. Each route has a twin (a wrong conditioning) that the same check catches.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.datamodels.pymc import PyMCDataModel
from bayespriv.errors import UnsupportedSecretError, ValidationError
from bayespriv.mechanisms import APGM

ALPHA = 1e-3
Z = stats.norm.isf(ALPHA / 2)
N, GROUPS, D = 40, 4, 3000
M = N // GROUPS  # records per group


def build_beta(n):
    """θ ~ Beta(2, 2) i.i.d. (4 hospitals); y_r ~ Bernoulli(θ[r mod 4])."""
    with pm.Model() as m:
        theta = pm.Beta("theta", 2.0, 2.0, shape=GROUPS)
        pm.Bernoulli("y", theta[np.arange(n) % GROUPS], shape=n)
    return m


def build_hier(n):
    """μ ~ N(0, 1); θ_g ~ N(μ, 1); y_r ~ N(θ[r mod 4], 1): θ[2] informs μ, which moves the other θ's."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        theta = pm.Normal("theta", mu, 1.0, shape=GROUPS)
        pm.Normal("y", theta[np.arange(n) % GROUPS], 1.0, shape=n)
    return m


def beta_model():
    return PyMCDataModel(build_beta, n_records=N, columns=["y"], parameters=["theta"])


def hier_model(cls=PyMCDataModel):
    """MCMC forced (conjugate=False): μ's 1-D posterior would otherwise be tabulated (quadrature route)."""
    return cls(build_hier, n_records=N, columns=["y"], parameters=["mu", "theta"],
               mcmc=bp.McmcSettings(draws=1000, tune=500), conjugate=False)


BETA_PAIR = bp.SecretPair(bp.DistributionSecret("theta[2]", 0.1), bp.DistributionSecret("theta[2]", 0.9))
HIER_PAIR = bp.SecretPair(bp.DistributionSecret("theta[2]", -1.0), bp.DistributionSecret("theta[2]", 2.0))


def _beta_moments(a):
    """Mean of y given θ[2] = a: K_2 ~ Binomial(M, a); the other counts are Beta-Binomial(M, 2, 2):
    mean M/2, variance M·¼·(4 + M)/5. E = (a + 3/2)/4, Var = (3 M (4 + M)/20 + M a (1 − a)) / N²."""
    return (a + 1.5) / GROUPS, (3 * M * (4 + M) / 20 + M * a * (1 - a)) / N**2


def _hier_moments(a):
    """μ | θ[2] = a ~ N(a/2, 1/2); the other θ's | a ~ N(a/2, 3/2) with covariance 1/2: mean(y) has
    E = (a + 3a/2)/4 = 5a/8 and Var = (3·3/2 + 6·1/2)/16 + 1/N; the part through μ is (3/4)²·½."""
    return 5 * a / 8, 7.5 / 16 + 1 / N


def _beta_failures(cal):
    failures = []
    for s in BETA_PAIR.secrets:
        mean, var = _beta_moments(s.value)
        i = cal.index(s)
        if abs(cal.mean_array[i, 0] - mean) > Z * np.sqrt(var / D):
            failures.append(f"mean {s.label}: {cal.mean_array[i, 0]:.4f} vs {mean:.4f}")
        if abs(cal.cov_array[i, 0, 0] - var) > Z * cal.cov_se[i, 0, 0]:
            failures.append(f"variance {s.label}: {cal.cov_array[i, 0, 0]:.5f} vs {var:.5f}")
    return failures


def _hier_failures(cal):
    failures = []
    for s in HIER_PAIR.secrets:
        mean, var = _hier_moments(s.value)
        ess = cal.diagnostics["mcmc"][s.label].get("ess_bulk_min", np.inf)
        through_mu = (3 / 4) ** 2 * 0.5
        se_mean = np.sqrt(var / D + through_mu / ess)
        se_var = np.sqrt(2 * var**2 / D + 2 * through_mu**2 / ess)
        i = cal.index(s)
        if abs(cal.mean_array[i, 0] - mean) > 4 * se_mean:
            failures.append(f"mean {s.label}: {cal.mean_array[i, 0]:.4f} vs {mean:.4f}")
        if abs(cal.cov_array[i, 0, 0] - var) > 4 * se_var:
            failures.append(f"variance {s.label}: {cal.cov_array[i, 0, 0]:.4f} vs {var:.4f}")
    return failures


@pytest.fixture(scope="module")
def beta_calibration():
    return bp.calibrate(beta_model(), BETA_PAIR, bp.mean("y"), n_draws=D, rng=20261124)


def test_element_secret_forward_route_matches_closed_form(beta_calibration):
    cal = beta_calibration
    assert beta_model().route(BETA_PAIR.a) == "forward"
    assert _beta_failures(cal) == []
    # only element 2 is fixed: the other hospitals' rates stay random, drawn from their prior
    batch = beta_model().sample(BETA_PAIR.a, 2000, rng=1)
    y = batch["y"].reshape(2000, M, GROUPS)
    assert np.all(y[:, :, 2].mean() < 0.15) and abs(y[:, :, 0].mean() - 0.5) < 0.03
    # closed-form sensitivity 0.8/4 = 0.2, within the calibration's own bound
    assert cal.sensitivity(2) == pytest.approx(0.2, abs=Z * cal.sensitivity_se(2))
    assert cal.sensitivity(2, bound=True) >= 0.2


class _WholeVector(PyMCDataModel):
    """Broken twin: fixes every element of θ to the value (not only element 2)."""

    def _element_plan(self, secret, observed):
        plan = super()._element_plan(secret, observed)
        name, index, value = plan.element
        plan.element = (name, (...,), value)  # mask[...] = True: every element
        return plan


def test_twin_fixing_the_whole_vector_is_caught():
    model = _WholeVector(build_beta, n_records=N, columns=["y"], parameters=["theta"])
    cal = bp.calibrate(model, BETA_PAIR, bp.mean("y"), n_draws=D, rng=20261124)
    assert any(f.startswith("mean") for f in _beta_failures(cal))


@pytest.mark.slow
def test_element_secret_in_a_hierarchy_needs_the_posterior_of_its_parents_and_releases():
    model = hier_model()
    assert model.route(HIER_PAIR.a) == "mcmc"
    cal = bp.calibrate(model, HIER_PAIR, bp.mean("y"), n_draws=D, rng=5)
    assert _hier_failures(cal) == []
    assert set(cal.posteriors) == {s.label for s in HIER_PAIR.secrets}
    assert all(entry["variables"] == ("mu",) for entry in cal.diagnostics["mcmc"].values())
    # F | θ[2] = a is exactly Gaussian with a variance free of a: APGM's premises hold, and it releases (at a δ
    # that D = 3 000 draws can certify)
    release = APGM(cal, epsilon=1.0, delta=1e-2).release(pd.DataFrame({"y": np.linspace(-1.0, 2.0, N)}), rng=3)
    assert release.guarantee.established and np.all(np.isfinite(np.atleast_1d(release.value)))


class _PriorParents(PyMCDataModel):
    """Broken twin: draws μ from its prior (forward route), ignoring what θ[2] = a says about it."""

    def _element_plan(self, secret, observed):
        plan = super()._element_plan(secret, observed)
        plan.route, plan.pool = "forward", ()
        return plan


def test_twin_drawing_the_parents_from_their_prior_is_caught():
    cal = bp.calibrate(hier_model(_PriorParents), HIER_PAIR, bp.mean("y"), n_draws=D, rng=5)
    assert any(f.startswith("mean") for f in _hier_failures(cal))


def test_element_secret_errors_are_clear():
    model = beta_model()
    with pytest.raises(UnsupportedSecretError, match=r"name an element, e.g. DistributionSecret\('theta\[0\]'"):
        model.check_secret(bp.DistributionSecret("theta", 0.1))
    with pytest.raises(ValidationError, match=r"parameter must be an index within the shape \(4,\)"):
        model.check_secret(bp.DistributionSecret("theta[4]", 0.1))
    with pytest.raises(ValidationError, match="parameters"):
        model.check_secret(bp.DistributionSecret("phi[0]", 0.1))

    def build_dirichlet(n):
        with pm.Model() as m:
            w = pm.Dirichlet("w", np.ones(3))
            pm.Categorical("y", w, shape=n)
        return m

    dirichlet = PyMCDataModel(build_dirichlet, n_records=N, columns=["y"], parameters=["w"])
    dirichlet.check_secret(bp.DistributionSecret("w[0]", 0.2))  # a Dirichlet weight: the aggregation property

    def build_mvnormal(n):
        with pm.Model() as m:
            mu = pm.MvNormal("mu", np.zeros(2), np.eye(2) + 0.5)
            pm.Normal("y", mu[0] + mu[1], 1.0, shape=n)
        return m

    mvnormal = PyMCDataModel(build_mvnormal, n_records=N, columns=["y"], parameters=["mu"])
    with pytest.raises(UnsupportedSecretError, match="independent given its parents"):
        mvnormal.check_secret(bp.DistributionSecret("mu[0]", 0.2))
