"""PyMC models as the gallery writes them: record variables declared with ``dims=`` (or ``shape=``).

The partial-pooling binomial of PyMC's gallery (phi ~ U(0, 1), kappa ~ Exp(0.1), theta ~ Beta(phi·kappa,
(1 − phi)·kappa) with ``dims="experiment"``, y ~ Binomial(20, theta) with the same dims) used to fail in the
batched sampler ("Size length is incompatible with batched dimensions"): a variable with an explicit size whose
parameters get a batch dimension. Independent check of the law drawn under the secret phi = a: E[mean(y)] = 20a
exactly, and Var(mean(y)) against 400 000 draws of the same hierarchy in NumPy (tolerances below); the twin —
the law under the other secret — is caught by the same checks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp

pm = pytest.importorskip("pymc")

N_EXPERIMENTS, TRIALS, DRAWS = 20, 20, 20_000
PAIR = bp.SecretPair(bp.DistributionSecret("phi", 0.1), bp.DistributionSecret("phi", 0.2))


def partial_pooling(n: int):
    coords = {"experiment": np.arange(n)}
    with pm.Model(coords=coords) as model:
        phi = pm.Uniform("phi", 0.0, 1.0)
        kappa = pm.Exponential("kappa", 0.1)
        theta = pm.Beta("theta", alpha=phi * kappa, beta=(1.0 - phi) * kappa, dims="experiment")
        pm.Binomial("y", n=TRIALS, p=theta, dims="experiment")
    return model


def _numpy_variance(phi: float, draws: int = 400_000, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    kappa = rng.exponential(10.0, (draws, 1))
    theta = rng.beta(phi * kappa, (1.0 - phi) * kappa, (draws, N_EXPERIMENTS))
    return float(rng.binomial(TRIALS, theta).mean(axis=1).var())


@pytest.fixture(scope="module")
def calibration() -> bp.Calibration:
    model = bp.PyMCDataModel(partial_pooling, n_records=N_EXPERIMENTS, columns=["y"], parameters=["phi"])
    return bp.calibrate(model, PAIR, bp.mean("y"), n_draws=DRAWS, rng=0)


@pytest.mark.slow
def test_a_dims_model_draws_the_hierarchy_it_states(calibration):
    """Mean within 5 standard errors of 20·phi (false failure < 1e-6 per secret); variance within 30 % of the
    NumPy reference (5 standard errors of a sample variance at kurtosis below 10, 20 000 draws). Twin: each
    secret's draws fail the other secret's checks."""
    draws = {s.label: calibration.sample_array[i, :, 0] for i, s in enumerate(calibration.secrets)}
    for secret, other in ((PAIR.a, PAIR.b), (PAIR.b, PAIR.a)):
        x = draws[secret.label]
        se = x.std() / np.sqrt(x.size)
        assert abs(x.mean() - TRIALS * secret.value) <= 5 * se
        assert abs(x.var() / _numpy_variance(secret.value) - 1) <= 0.3
        assert abs(x.mean() - TRIALS * other.value) > 5 * se  # the twin


@pytest.mark.slow
def test_a_dims_model_releases_established(calibration):
    mech = bp.mechanisms.APGM(calibration, epsilon=1.0, delta=1e-3)
    assert mech.guarantee.established
    release = mech.release(pd.DataFrame({"y": np.arange(N_EXPERIMENTS) % 5}), rng=1)
    assert np.isfinite(release.value).all()


# -- a Gaussian mixture with a secret on its Dirichlet weight ----------------------------------------------------
MIX_RECORDS = 50
MIX_PAIR = bp.SecretPair(bp.DistributionSecret("w[0]", 0.3), bp.DistributionSecret("w[0]", 0.5))


def gaussian_mixture(n: int):
    """The gallery's marginalised form: w ~ Dirichlet(1, 1), mu ~ N((−2, 2), 1), x ~ NormalMixture(w, mu, 1)."""
    with pm.Model() as model:
        w = pm.Dirichlet("w", a=np.ones(2))
        mu = pm.Normal("mu", np.array([-2.0, 2.0]), 1.0, shape=2)
        pm.NormalMixture("x", w=w, mu=mu, sigma=1.0, shape=n)
    return model


def _mixture_variance(v: float, draws: int = 400_000, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    mu = rng.normal([-2.0, 2.0], 1.0, (draws, 2))
    z = rng.random((draws, MIX_RECORDS)) >= v  # component 1 with probability 1 − v
    x = np.take_along_axis(mu, z.astype(int), axis=1) + rng.normal(0.0, 1.0, (draws, MIX_RECORDS))
    return float(x.mean(axis=1).var())


@pytest.mark.slow
def test_a_dirichlet_weight_secret_on_a_mixture_draws_its_law_and_releases_established():
    """Given w₀ = v the other weight is 1 − v (aggregation property), so E[mean(x)] = −2v + 2(1 − v) exactly;
    the variance is checked against NumPy as above. The mixture's operation cannot be vectorised by PyTensor: the
    sampler is called once per dataset (same law). Twin: each secret's draws fail the other's mean."""
    model = bp.PyMCDataModel(gaussian_mixture, n_records=MIX_RECORDS, columns=["x"], parameters=["w"])
    cal = bp.calibrate(model, MIX_PAIR, bp.mean("x"), n_draws=DRAWS, rng=0)
    draws = {s.label: cal.sample_array[i, :, 0] for i, s in enumerate(cal.secrets)}
    for secret, other in ((MIX_PAIR.a, MIX_PAIR.b), (MIX_PAIR.b, MIX_PAIR.a)):
        x = draws[secret.label]
        se = x.std() / np.sqrt(x.size)
        assert abs(x.mean() - (2.0 - 4.0 * secret.value)) <= 5 * se
        assert abs(x.var() / _mixture_variance(secret.value) - 1) <= 0.3
        assert abs(x.mean() - (2.0 - 4.0 * other.value)) > 5 * se
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    assert mech.guarantee.established


def test_a_dirichlet_weight_needs_constant_concentrations_and_a_weight_in_the_open_interval():
    def random_concentration(n: int):
        with pm.Model() as model:
            a = pm.Gamma("a", 2.0, 1.0)
            w = pm.Dirichlet("w", a=pm.math.stack([a, a]))
            pm.NormalMixture("x", w=w, mu=np.array([-2.0, 2.0]), sigma=1.0, shape=n)
        return model

    model = bp.PyMCDataModel(random_concentration, n_records=10, columns=["x"], parameters=["w"])
    with pytest.raises(bp.errors.UnsupportedSecretError, match="constant concentrations"):
        bp.calibrate(model, MIX_PAIR, bp.mean("x"), n_draws=100, rng=0)
    fixed = bp.PyMCDataModel(gaussian_mixture, n_records=10, columns=["x"], parameters=["w"])
    with pytest.raises(bp.ValidationError, match=r"value.*\(0, 1\)"):
        fixed.check_secret(bp.DistributionSecret("w[0]", 1.0))


def test_record_variables_with_shapes_keep_their_dependence_when_batched():
    """Two record variables with ``shape=`` whose parameters get a batch dimension, the second a function of the
    first: every draw of v must be the one of its own record's g (v = 100 (1 − g) up to sd 1e-3). Replacing both
    sizes at once left v reading another draw of g (the hospital notebook's gender and blood pressure)."""

    def two_levels(n: int):
        with pm.Model() as model:
            p = pm.Beta("p", 2.0, 2.0)
            g = pm.Bernoulli("g", p, shape=n)
            pm.Normal("v", pm.math.switch(pm.math.eq(g, 1), 0.0, 100.0), 1e-3, shape=n)
        return model

    model = bp.PyMCDataModel(two_levels, n_records=30, columns=["g", "v"], parameters=["p"])
    batch = model.sample(None, 400, rng=0)
    assert batch["g"].shape == batch["v"].shape == (400, 30)
    assert np.all(np.abs(batch["v"] - 100.0 * (1 - batch["g"])) < 0.01)
    assert 0.2 < batch["g"].mean() < 0.8  # p drawn per dataset, not fixed


# -- rat tumours: the published form (pm.Potential) and its recipe ----------------------------------------------
RAT_TRIALS = np.array([20, 20, 20, 19, 19, 18, 18, 25, 24, 23, 20, 20, 20, 20, 20, 20, 23, 19, 19, 27])


def _rat_potential(n: int):
    with pm.Model() as model:
        ab = pm.HalfNormal("ab", 10.0, shape=2)
        pm.Potential("p(a, b)", -2.5 * pm.math.log(pm.math.sum(ab)))
        theta = pm.Beta("theta", alpha=ab[0], beta=ab[1], shape=n)
        pm.Binomial("y", n=RAT_TRIALS[:n], p=theta, shape=n)
    return model


def _rat_recipe(n: int):
    """The same hyperprior written as a proper prior: phi ~ U(0, 1), kappa ~ Pareto(0.5, 1) (density kappa^-1.5)."""
    with pm.Model() as model:
        phi = pm.Uniform("phi", 0.0, 1.0)
        kappa = pm.Pareto("kappa", alpha=0.5, m=1.0)
        theta = pm.Beta("theta", alpha=phi * kappa, beta=(1.0 - phi) * kappa, shape=n)
        pm.Binomial("y", n=RAT_TRIALS[:n], p=theta, shape=n)
    return model


def test_the_published_rat_tumour_model_is_refused_at_once_with_the_recipe_which_releases():
    import time

    start = time.perf_counter()
    with pytest.raises(bp.ValidationError, match=r"Potential.*Pareto\('kappa', alpha=0.5"):
        bp.PyMCDataModel(_rat_potential, n_records=len(RAT_TRIALS), columns=["y"], parameters=["ab"])
    assert time.perf_counter() - start < 30  # before any MCMC (one model build)
    model = bp.PyMCDataModel(_rat_recipe, n_records=len(RAT_TRIALS), columns=["y"], parameters=["phi"])
    pair = bp.SecretPair(bp.DistributionSecret("phi", 0.1), bp.DistributionSecret("phi", 0.2))
    cal = bp.calibrate(model, pair, bp.mean("y"), n_draws=DRAWS, rng=0)
    assert bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3).guarantee.established
    # E[mean(y)] = phi · mean(n_j) exactly under each secret (5 standard errors)
    for i, secret in enumerate(cal.secrets):
        x = cal.sample_array[i, :, 0]
        assert abs(x.mean() - secret.value * RAT_TRIALS.mean()) <= 5 * x.std() / np.sqrt(x.size)
