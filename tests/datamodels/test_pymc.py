"""PyMCDataModel: Θ as a PyMC hierarchical model.

Statistical checks use a fixed seed and a tolerance z·SE with z the two-sided
normal quantile for a stated false-failure probability α per check; the SE is
derived in each test (exact where F | secret is Gaussian, CLT otherwise, plus
the MCMC error of the posterior draws where a posterior is resampled).
"""

from __future__ import annotations

import multiprocessing
import pickle
import weakref
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import bayespriv as bp
import bayespriv.datamodels.pymc as pymc_module
from bayespriv.calibration import ExecutionOptions
from bayespriv.datamodels.pymc import PyMCDataModel
from bayespriv.errors import ConvergenceError, ParameterTypeError, UnsupportedSecretError, ValidationError

from tests._pymc_oracles import C_SCORE, SD_Z, build_logit, build_normal_normal, logit_posterior_moments

MU0, MU1, SIGMA, N = 64.0, 70.0, 3.0, 50
ALPHA = 1e-3
Z = stats.norm.isf(ALPHA / 2)  # 3.29: two-sided, per check


# -- models (module level: they pickle by reference) ----------------------------------------
def build_hier(n):
    """p ~ Beta(2, 2); gender ~ Bernoulli(p); height | gender ~ N(μ_gender, σ)."""
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        g = pm.Bernoulli("gender", p, shape=n)
        pm.Normal("height", pt.switch(pt.eq(g, 1), MU1, MU0), SIGMA, shape=n)
    return m


N_LOGIT = 20  # records of the logit model (its SD_Z, C_SCORE: tests/_pymc_oracles.py)


def build_beta_score(n):
    """Conjugate twin of build_logit: p ~ Beta(2, 2)."""
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", C_SCORE * p, 1.0, shape=n)
    return m


def build_parents(n):
    """τ → φ → x and τ → μ → y: φ has a parent that also reaches other columns."""
    with pm.Model() as m:
        tau = pm.Normal("tau", 0.0, 1.0)
        phi = pm.Normal("phi", tau, 1.0)
        mu = pm.Normal("mu", tau, 0.1)
        pm.Normal("x", phi, 1.0, shape=n)
        pm.Normal("y", mu, 1.0, shape=n)
        pm.Normal("vec", 0.0, 1.0, shape=2)
    return m


def build_gauss(n):
    """x ~ N(1, 2) i.i.d., y | x ~ N(2x, 1): a mean secret on x has an exact route."""
    with pm.Model() as m:
        x = pm.Normal("x", 1.0, 2.0, shape=n)
        pm.Normal("y", 2.0 * x, 1.0, shape=n)
        pm.Deterministic("x2", 2.0 * x)
    return m


def hier_model(**kw):
    return PyMCDataModel(build_hier, n_records=N, columns=["gender", "height"], parameters=["p"], **kw)


def logit_model(**kw):
    """The logit model on the MCMC route (its 1-D posterior would otherwise be tabulated:
    tests/datamodels/test_pymc_quadrature.py)."""
    kw.setdefault("conjugate", False)
    return PyMCDataModel(build_logit, n_records=N_LOGIT, columns=["gender", "score"], parameters=["z"], **kw)


# -- 1. distribution secret: pm.do intervention, closed form ---------------------------------
def _hier_moments(p):
    """Exact mean, variance and 4th central moment of the average height given p.

    Average height = μ0 + Δ K/n + B with K ~ Binomial(n, p), B ~ N(0, σ²/n)
    independent, Δ = μ1 − μ0. Var = (σ² + p(1 − p)Δ²)/n. The 4th central moment
    is μ4(A) + 6 Var(A) Var(B) + 3 Var(B)² with A = ΔK/n and
    μ4(K) = n p q (1 + 3(n − 2) p q).
    """
    d, q = MU1 - MU0, 1 - p
    var_a, var_b = d**2 * p * q / N, SIGMA**2 / N
    mu4_a = (d / N) ** 4 * N * p * q * (1 + 3 * (N - 2) * p * q)
    return MU0 + p * d, var_a + var_b, mu4_a + 6 * var_a * var_b + 3 * var_b**2


def _closed_form_failures(cal, n_draws):
    """Which of sensitivity / the two variances miss the closed form (empty when all hold).

    Each check: |estimate − exact| <= Z·SE, α = 1e-3 per check (3 checks: 3e-3 in all).
    SE of the mean difference: sqrt((V_a + V_b)/D); SE of a sample variance
    (CLT): sqrt((μ4 − V²)/D).
    """
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    (ma, va, m4a), (mb, vb, m4b) = _hier_moments(0.3), _hier_moments(0.7)
    failures = []
    se = np.sqrt((va + vb) / n_draws)
    diff = cal.means[a][0] - cal.means[b][0]
    if abs(diff - (ma - mb)) > Z * se:
        failures.append(f"sensitivity {diff:.4f} vs {ma - mb:.4f}")
    for s, v, m4 in ((a, va, m4a), (b, vb, m4b)):
        est = cal.covs[s][0, 0]
        if abs(est - v) > Z * np.sqrt((m4 - v**2) / n_draws):
            failures.append(f"variance {s.label} {est:.5f} vs {v:.5f}")
    return failures


def test_distribution_secret_gives_closed_form_sensitivity_and_variance():
    """p = 0.3 vs 0.7: sensitivity 0.4·|μ1 − μ0| = 2.4, variance (σ² + p(1−p)Δ²)/n = 0.3312."""
    model = hier_model()
    assert model.route(bp.DistributionSecret("p", 0.3)) == "forward"
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    cal = bp.calibrate(model, pair, bp.mean("height"), n_draws=4000, rng=20240501)
    assert _closed_form_failures(cal, 4000) == []
    assert cal.sensitivity(2) == pytest.approx(0.4 * (MU1 - MU0), abs=0.1)
    assert cal.diagnostics["mcmc"]["p=0.3"]["route"] == "forward"


class _IgnoresIntervention(PyMCDataModel):
    """Broken twin: draws from the prior whatever the distribution secret."""

    def _sample(self, secret, n_draws, rng, columns):
        return super()._sample(None, n_draws, rng, columns)


def test_twin_ignoring_the_intervention_is_caught():
    model = _IgnoresIntervention(build_hier, n_records=N, columns=["gender", "height"], parameters=["p"])
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    cal = bp.calibrate(model, pair, bp.mean("height"), n_draws=4000, rng=20240501)
    failures = _closed_form_failures(cal, 4000)
    assert any(f.startswith("sensitivity") for f in failures)
    assert any(f.startswith("variance") for f in failures)


def test_batch_does_not_share_hyperparameters_and_is_seeded():
    """Unconditionally p varies per dataset: Var(share) = E[p(1−p)]/n + Var(p) = 0.2/50 + 0.05
    = 0.054 for Beta(2, 2); one p shared by the whole batch would give about 0.005.
    SE of a sample variance of D draws: sqrt((μ4 − V²)/D) <= sqrt(μ4/D) with μ4 <= 1/16
    (a share lies in [0, 1]); α = 1e-3."""
    model = hier_model()
    D = 4000
    batch = model.sample(None, D, rng=3)
    share = batch["gender"].mean(axis=1)
    assert abs(share.var(ddof=1) - 0.054) <= Z * np.sqrt(1 / 16 / D)
    np.testing.assert_array_equal(model.sample(None, 50, rng=9)["height"], model.sample(None, 50, rng=9)["height"])
    assert not np.array_equal(model.sample(None, 50, rng=9)["height"], model.sample(None, 50, rng=10)["height"])


# -- 2. dataset secret through MCMC ------------------------------------------------------------
LOGIT_SECRETS = (bp.DatasetSecret.proportion("gender", 1, 0.3), bp.DatasetSecret.proportion("gender", 1, 0.7))
LOGIT_DRAWS = 3000


@pytest.fixture(scope="module")
def logit_calibration():
    model = logit_model()
    return model, bp.calibrate(model, bp.SecretPair(*LOGIT_SECRETS), bp.mean("score"), n_draws=LOGIT_DRAWS,
                               rng=77, execution=ExecutionOptions(chunk_size=1000))


def _logit_failures(cal):
    """Moments of the average score given exactly k women vs quadrature.

    E[F | k] = C E[p | k], Var[F | k] = C² Var(p | k) + 1/n. The draws resample a
    pool of MCMC draws, whose own error adds to the Monte-Carlo error:
    SE(mean)² = Var(F)/D + C² Var(p|k)/ESS and, treating p | k as near Gaussian,
    SE(var)² = 2 Var(F)²/D + 2 (C² Var(p|k))²/ESS, with ESS the smallest bulk ESS
    reported. The Gaussian approximations are loose, so z = 4 (nominal α ≈ 6e-5)
    per check, 4 checks.
    """
    failures = []
    for s in LOGIT_SECRETS:
        k = round(s.value * N_LOGIT)
        e, v = logit_posterior_moments(k, N_LOGIT)
        mean_exact, var_exact = C_SCORE * e, C_SCORE**2 * v + 1 / N_LOGIT
        ess = cal.diagnostics["mcmc"][s.label].get("ess_bulk_min", np.inf)
        se_mean = np.sqrt(var_exact / LOGIT_DRAWS + C_SCORE**2 * v / ess)
        se_var = np.sqrt(2 * var_exact**2 / LOGIT_DRAWS + 2 * (C_SCORE**2 * v) ** 2 / ess)
        if abs(cal.means[s][0] - mean_exact) > 4 * se_mean:
            failures.append(f"mean {s.label}: {cal.means[s][0]:.4f} vs {mean_exact:.4f}")
        if abs(cal.covs[s][0, 0] - var_exact) > 4 * se_var:
            failures.append(f"variance {s.label}: {cal.covs[s][0, 0]:.4f} vs {var_exact:.4f}")
    return failures


@pytest.mark.slow
def test_dataset_secret_mcmc_matches_quadrature_and_reports_diagnostics(logit_calibration):
    model, cal = logit_calibration
    assert "mcmc_posterior" in cal.assumptions and "tabulated_posterior" not in cal.assumptions
    assert model.route(LOGIT_SECRETS[0]) == "mcmc"
    assert _logit_failures(cal) == []
    diag = cal.diagnostics["mcmc"]
    assert set(diag) == {s.label for s in LOGIT_SECRETS}
    for entry in diag.values():
        assert entry["route"] == "mcmc" and entry["variables"] == ("z",)  # read-only: lists become tuples
        assert entry["r_hat_max"] <= 1.01 and entry["ess_bulk_min"] >= 400 and entry["divergences"] == 0
        assert entry["chains"] == 2 and entry["draws"] == 1000 and np.isfinite(entry["ess_tail_min"])
    assert cal.diagnostics["mcmc_thresholds"] == {"r_hat_max": 1.01, "ess_bulk_min": 400.0, "divergences_max": 0}
    # the notebook representation shows them as a table, one row per secret
    html = cal._repr_html_()
    assert "<b>mcmc</b>" in html and "r_hat_max" in html and "ess_bulk_min" in html
    assert all(s.label in html for s in LOGIT_SECRETS)


class _PriorInsteadOfPosterior(PyMCDataModel):
    """Broken twin: resamples prior draws of z instead of its posterior given the share."""

    def _run_mcmc(self, secret, plan, seed):
        rng = np.random.default_rng(seed)
        return {"z": rng.normal(0.0, SD_Z, 2000)}, {"route": "mcmc", "ess_bulk_min": 2000.0}, None


def test_twin_using_the_prior_instead_of_the_posterior_is_caught():
    model = _PriorInsteadOfPosterior(build_logit, n_records=N_LOGIT, columns=["gender", "score"], parameters=["z"],
                                     conjugate=False)
    cal = bp.calibrate(model, bp.SecretPair(*LOGIT_SECRETS), bp.mean("score"), n_draws=LOGIT_DRAWS, rng=77)
    assert any(f.startswith("mean") for f in _logit_failures(cal))


@pytest.mark.slow
def test_prepared_draws_fix_the_share_at_random_positions(logit_calibration):
    model, _ = logit_calibration
    secret = LOGIT_SECRETS[0]
    prepared = model.prepare([secret], np.random.default_rng(1))
    batch = prepared.sample(secret, 400, rng=2)
    assert np.all(batch["gender"].sum(axis=1) == 6)
    # positions are shuffled per draw: each record is a woman in about 30% of the datasets
    # (Binomial(400, 0.3) per position; 5 sd = 0.115 covers all 20 positions at α < 1e-5)
    assert np.all(np.abs(batch["gender"].mean(axis=0) - 0.3) < 0.115)


def test_non_converging_mcmc_is_refused_with_a_clear_message():
    model = logit_model(mcmc=bp.McmcSettings(tune=0, draws=20))
    with pytest.raises(ConvergenceError, match=r"(R-hat|bulk ESS).*tune=0, draws=20.*Increase tune and draws") as info:
        bp.calibrate(model, bp.SecretPair(*LOGIT_SECRETS), bp.mean("score"), n_draws=10, rng=0)
    # the failed run travels with the error, for az.plot_trace
    assert dict(info.value.posterior.posterior.sizes) == {"chain": 2, "draw": 20}


@pytest.mark.slow
def test_mcmc_posteriors_are_kept_for_arviz(logit_calibration, tmp_path):
    """Every MCMC run behind the draws is on cal.posteriors: ArviZ reads it, and its R-hat / ESS are the
    diagnostics' own numbers (exact: the same function on the same draws); pickling and saving keep it."""
    import arviz as az
    import matplotlib

    from bayespriv.datamodels.compat import group_names, is_inference_data

    matplotlib.use("Agg")
    _, cal = logit_calibration
    assert set(cal.posteriors) == {s.label for s in LOGIT_SECRETS}
    with pytest.raises(TypeError):
        cal.posteriors["x"] = None  # read-only
    for label, idata in cal.posteriors.items():
        assert is_inference_data(idata) and dict(idata.posterior.sizes) == {"chain": 2, "draw": 1000}
        summary = az.summary(idata, var_names=["z"], round_to="none")
        assert summary.loc["z", "r_hat"] == pytest.approx(cal.diagnostics["mcmc"][label]["r_hat_max"], rel=1e-12)
        assert summary.loc["z", "ess_bulk"] == pytest.approx(cal.diagnostics["mcmc"][label]["ess_bulk_min"], rel=1e-12)
    az.plot_trace(cal.posteriors[LOGIT_SECRETS[0].label], var_names=["z"])  # an array of axes on 0.x, a PlotCollection on 1.x
    axes = matplotlib.pyplot.gcf().axes  # 0.x: trace and density (2); 1.x: the trace (plot_trace_dist adds densities)
    assert len(axes) >= 1 and "z" in {ax.get_title() for ax in axes}
    matplotlib.pyplot.close("all")
    clone = pickle.loads(pickle.dumps(cal))
    np.testing.assert_array_equal(clone.posteriors[LOGIT_SECRETS[0].label].posterior["z"].values,
                                  cal.posteriors[LOGIT_SECRETS[0].label].posterior["z"].values)
    loaded = bp.load_calibration(cal.to_netcdf(tmp_path / "logit.nc"), query=cal.query)
    for label, idata in cal.posteriors.items():
        back = loaded.posteriors[label]
        assert set(group_names(back)) == set(group_names(idata))
        np.testing.assert_array_equal(back.posterior["z"].values, idata.posterior["z"].values)
        np.testing.assert_array_equal(back.sample_stats["diverging"].values, idata.sample_stats["diverging"].values)


def test_conjugate_route_is_exact_and_said_so():
    """Beta(2, 2)–Bernoulli: p | k ~ Beta(2 + k, 2 + n − k), no MCMC. Closed form:
    E[F] = C (2 + k)/(4 + n), Var[F] = C² Var(p | k) + 1/n; CLT SEs, α = 1e-3 per check
    (the average score is a normal mixture with a Beta-distributed mean: μ4 <= 3 Var²
    up to the Beta's kurtosis (< 3), so SE(var) <= sqrt(2 Var²/D))."""
    model = PyMCDataModel(build_beta_score, n_records=N_LOGIT, columns=["gender", "score"], parameters=["p"])
    assert model.route(LOGIT_SECRETS[0]) == "conjugate"
    assert PyMCDataModel(build_beta_score, n_records=N_LOGIT, columns=["gender", "score"], parameters=["p"],
                         conjugate=False).route(LOGIT_SECRETS[0]) == "mcmc"
    D = 6000
    cal = bp.calibrate(model, bp.SecretPair(*LOGIT_SECRETS), bp.mean("score"), n_draws=D, rng=5)
    for s in LOGIT_SECRETS:
        k = round(s.value * N_LOGIT)
        a, b = 2 + k, 2 + N_LOGIT - k
        v_p = a * b / ((a + b) ** 2 * (a + b + 1))
        mean, var = C_SCORE * a / (a + b), C_SCORE**2 * v_p + 1 / N_LOGIT
        assert abs(cal.means[s][0] - mean) <= Z * np.sqrt(var / D)
        assert abs(cal.covs[s][0, 0] - var) <= Z * np.sqrt(2 * var**2 / D)
        entry = cal.diagnostics["mcmc"][s.label]
        assert entry["route"] == "conjugate" and f"Beta(2 + {k}, 2 + {N_LOGIT - k})" in entry["note"]


# -- other secrets --------------------------------------------------------------------------
def build_public(n):
    """p ~ Beta(2, 2) informed by public data (30 ones of 100, observed in the model);
    gender ~ Bernoulli(p); score ~ N(10 p, 1)."""
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        pm.Bernoulli("public", p, observed=np.r_[np.ones(30), np.zeros(70)])
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", C_SCORE * p, 1.0, shape=n)
    return m


def _within(estimate, exact, se, z=4.0):
    return abs(estimate - exact) <= z * se


@pytest.mark.slow
def test_mean_secret_through_mcmc_matches_normal_normal_closed_form():
    """x̄ = a with μ ~ N(0, 1), x_r ~ N(μ, 1): μ | x̄ = a ~ N(n a/(n + 1), 1/(n + 1)) (conjugate
    normal, not detected: MCMC on the sum likelihood). Then ȳ ~ N(n a/(n + 1), 1/(n + 1) + 1/n).
    SE includes the resampled pool: sqrt(Var(ȳ)/D + Var(μ | a)/ESS), and for the variance
    sqrt(2 Var(ȳ)²/D + 2 Var(μ | a)²/ESS); z = 4 (nominal α ≈ 6e-5 per check, 2 checks)."""
    n, a, D = 20, 0.5, 4000
    model = PyMCDataModel(build_normal_normal, n_records=n, columns=["x", "y"], parameters=["mu"], conjugate=False)
    secret = bp.DatasetSecret.mean("x", a)
    assert model.route(secret) == "mcmc"
    prepared = model.prepare([secret], np.random.default_rng(12))
    ess = prepared.diagnostics["mcmc"][secret.label]["ess_bulk_min"]
    batch = prepared.sample(secret, D, rng=13)
    np.testing.assert_allclose(batch["x"].mean(axis=1), a, atol=1e-12)
    ybar = batch["y"].mean(axis=1)
    v_mu = 1 / (n + 1)
    v_y = v_mu + 1 / n
    assert _within(ybar.mean(), n * a / (n + 1), np.sqrt(v_y / D + v_mu / ess))
    assert _within(ybar.var(ddof=1), v_y, np.sqrt(2 * v_y**2 / D + 2 * v_mu**2 / ess))


@pytest.mark.slow
def test_public_data_in_the_model_is_conditioned_on():
    """Observed variables are public data: the belief is the posterior given them. With
    30 of 100 public ones and exactly k = 6 of 20 women, p ~ Beta(2 + 36, 2 + 84); MCMC (the
    conjugate shortcut does not cover public data). Same SEs as above, z = 4."""
    D = 4000
    model = PyMCDataModel(build_public, n_records=N_LOGIT, columns=["gender", "score"], parameters=["p"],
                          conjugate=False)
    secret = LOGIT_SECRETS[0]
    assert model.route(secret) == "mcmc"
    assert model.route(bp.DistributionSecret("p", 0.3)) == "forward"  # given p, the public data do not matter
    prepared = model.prepare([secret], np.random.default_rng(14))
    ess = prepared.diagnostics["mcmc"][secret.label]["ess_bulk_min"]
    score = prepared.sample(secret, D, rng=15)["score"].mean(axis=1)
    a, b = 2 + 30 + 6, 2 + 70 + 14
    v_p = a * b / ((a + b) ** 2 * (a + b + 1))
    var = C_SCORE**2 * v_p + 1 / N_LOGIT
    assert _within(score.mean(), C_SCORE * a / (a + b), np.sqrt(var / D + C_SCORE**2 * v_p / ess))
    assert _within(score.var(ddof=1), var, np.sqrt(2 * var**2 / D + 2 * (C_SCORE**2 * v_p) ** 2 / ess))


def test_mean_secret_exact_route():
    """x ~ N(1, 2), y | x ~ N(2x, 1): given mean(x) = a every dataset has x̄ = a exactly,
    ȳ ~ N(2a, 1/n) exactly (α = 1e-3 per check: mean and χ² variance bounds)."""
    n, D = 30, 3000
    model = PyMCDataModel(build_gauss, n_records=n, columns=["x", "y", "x2"])
    secret = bp.DatasetSecret.mean("x", 0.25)
    assert model.route(secret) == "forward"
    batch = model.sample(secret, D, rng=4)
    np.testing.assert_allclose(batch["x"].mean(axis=1), 0.25, atol=1e-12)
    np.testing.assert_allclose(batch["x2"], 2 * batch["x"])
    ybar = batch["y"].mean(axis=1)
    assert abs(ybar.mean() - 0.5) <= Z * np.sqrt(1 / n / D)
    lo, hi = stats.chi2.ppf([ALPHA / 2, 1 - ALPHA / 2], D - 1) / (D - 1) / n
    assert lo <= ybar.var(ddof=1) <= hi
    # the records keep their spread: Var(x_r | x̄) = σ²(1 − 1/n) per record
    assert abs(batch["x"][:, 0].var() / (4 * (1 - 1 / n)) - 1) < 0.1


def test_interval_secret_is_the_prior_restricted_to_the_set():
    """φ in [0.5, 2] with τ ~ N(0, 1), φ | τ ~ N(τ, 1): φ ~ N(0, 2) truncated; E[x̄] = E[φ | set]
    (truncated normal), CLT SE with Var(x̄) <= Var(φ | set) + 1/n, α = 1e-3."""
    secret = bp.DistributionSecret("phi", 1.0)
    model = PyMCDataModel(build_parents, n_records=30, columns=["x", "y"], parameters=["phi", "tau", "vec"],
                          intervals={secret: (0.5, 2.0)})
    assert model.route(secret) == "rejection"
    assert model.route(bp.DistributionSecret("phi", 2.0)) == "quadrature"  # a parent τ also reaches y (1-D posterior)
    assert model.route(bp.DistributionSecret("tau", 1.0)) == "forward"  # nothing upstream of τ
    D = 4000
    xbar = model.sample(secret, D, rng=6)["x"].mean(axis=1)
    trunc = stats.truncnorm(0.5 / np.sqrt(2), 2 / np.sqrt(2), scale=np.sqrt(2))
    assert abs(xbar.mean() - trunc.mean()) <= Z * np.sqrt((trunc.var() + 1 / 30) / D)
    prepared = model.prepare([secret], np.random.default_rng(0))
    assert prepared.diagnostics["mcmc"][secret.label]["route"] == "rejection"


def test_check_secret_errors_are_clear():
    model = hier_model()
    with pytest.raises(ValidationError, match="secret parameter must be one of the model's parameters"):
        model.check_secret(bp.DistributionSecret("q", 0.5))
    with pytest.raises(ValidationError, match="secret column must be a column"):
        model.check_secret(bp.DatasetSecret.proportion("sex", 1, 0.5))
    with pytest.raises(UnsupportedSecretError, match="p·n_records must be an integer"):
        model.check_secret(bp.DatasetSecret.proportion("gender", 1, 0.31))
    with pytest.raises(ValidationError, match="category must be 0 or 1"):
        model.check_secret(bp.DatasetSecret.proportion("gender", "female", 0.3))
    with pytest.raises(UnsupportedSecretError, match="proportion secrets need a Bernoulli"):
        model.check_secret(bp.DatasetSecret.proportion("height", 1, 0.3))
    with pytest.raises(UnsupportedSecretError, match="mean secrets need a Normal"):
        model.check_secret(bp.DatasetSecret.mean("gender", 0.3))
    parents = PyMCDataModel(build_parents, n_records=5, columns=["x"], parameters=["vec"])
    with pytest.raises(UnsupportedSecretError, match="scalar parameter"):
        parents.check_secret(bp.DistributionSecret("vec", 0.0))
    gauss = PyMCDataModel(build_gauss, n_records=5, columns=["x", "x2"])
    with pytest.raises(UnsupportedSecretError, match="deterministic"):
        gauss.check_secret(bp.DatasetSecret.mean("x2", 0.0))


def test_constructor_errors_are_clear():
    with pytest.raises(ValidationError, match="columns must name variables"):
        PyMCDataModel(build_hier, n_records=5, columns=["weight"])
    with pytest.raises(ValidationError, match=r"must have shape \(n_records,\)"):
        PyMCDataModel(build_hier, n_records=5, columns=["p"])
    with pytest.raises(ValidationError, match="parameters must name free random variables"):
        PyMCDataModel(build_hier, n_records=5, columns=["height"], parameters=["mu"])
    with pytest.raises(ParameterTypeError, match="must return a pymc.Model"):
        PyMCDataModel(lambda n: None, n_records=5, columns=["x"])
    with pytest.raises(ParameterTypeError, match="builder must be callable"):
        PyMCDataModel(None, n_records=5, columns=["x"])

    def with_potential(n):
        with pm.Model() as m:
            x = pm.Normal("x", shape=n)
            pm.Potential("pen", -x.sum())
        return m

    with pytest.raises(ValidationError, match="Potential"):
        PyMCDataModel(with_potential, n_records=5, columns=["x"])
    s = bp.DistributionSecret("p", 0.3)
    with pytest.raises(ValidationError, match="containing the secret's value"):
        hier_model(intervals={s: (0.4, 0.6)})
    with pytest.raises(ValidationError, match="lo < hi"):
        hier_model(intervals={s: (0.3, 0.3)})
    with pytest.raises(ValidationError, match="max_r_hat must be >= 1"):
        hier_model(mcmc=bp.McmcSettings(max_r_hat=0.9))


# -- pickling and executors -------------------------------------------------------------------
@pytest.mark.slow
def test_pickle_round_trip_rebuilds_and_gives_identical_draws(logit_calibration, monkeypatch):
    model, _ = logit_calibration
    prepared = model.prepare(LOGIT_SECRETS, np.random.default_rng(3))
    expected = prepared.sample(LOGIT_SECRETS[1], 200, rng=8)
    blob = pickle.dumps(prepared)
    # a fresh process has no runtime: the model is rebuilt and recompiled from the builder
    monkeypatch.setattr(pymc_module, "_live_runtimes", weakref.WeakValueDictionary())
    monkeypatch.setattr(pymc_module, "_recent_runtimes", type(pymc_module._recent_runtimes)())
    clone = pickle.loads(blob)
    assert clone.diagnostics == prepared.diagnostics
    got = clone.sample(LOGIT_SECRETS[1], 200, rng=8)
    for c in ("gender", "score"):
        np.testing.assert_array_equal(got[c], expected[c])


def test_thread_pool_gives_identical_numbers():
    """Threads share one compiled function per process; its reseeding is serialised."""
    from concurrent.futures import ThreadPoolExecutor

    model = hier_model()
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    serial = bp.calibrate(model, pair, bp.mean("height"), n_draws=800, rng=4,
                          execution=ExecutionOptions(chunk_size=100))
    with ThreadPoolExecutor(2) as pool:
        threaded = bp.calibrate(model, pair, bp.mean("height"), n_draws=800, rng=4,
                                execution=ExecutionOptions(chunk_size=100, executor=pool))
    np.testing.assert_array_equal(serial.samples.values, threaded.samples.values)


@pytest.mark.subprocess
def test_process_pool_gives_identical_numbers(logit_calibration):
    model, serial = logit_calibration
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        parallel = bp.calibrate(model, bp.SecretPair(*LOGIT_SECRETS), bp.mean("score"), n_draws=LOGIT_DRAWS,
                                rng=77, execution=ExecutionOptions(chunk_size=1000, executor=pool))
    np.testing.assert_array_equal(serial.samples.values, parallel.samples.values)
    assert parallel.diagnostics["mcmc"] == serial.diagnostics["mcmc"]


class _ScriptedConvergence(PyMCDataModel):
    """The logit model whose convergence numbers are scripted per run (R-hat of the 1st, 2nd, … run; ESS 1000)."""

    def __init__(self, r_hats, **kw):
        super().__init__(build_logit, n_records=N_LOGIT, columns=["gender", "score"], parameters=["z"],
                         conjugate=False, mcmc=bp.McmcSettings(tune=100, draws=100, **kw))
        self.__dict__["_script"] = list(r_hats)

    def _convergence(self, idata, names):
        return self.__dict__["_script"].pop(0), 1000.0, 1000.0


@pytest.mark.slow
def test_a_run_that_misses_r_hat_by_a_little_is_extended_and_says_so():
    """R-hat 1.02 (> 1.01, within 0.04): the run is repeated with twice the tuning and draws; the second passes and
    the diagnostics record it. The twins: R-hat 1.2 (far) is refused at once, and so is 1.02 with
    mcmc_extensions=0."""
    secret = LOGIT_SECRETS[0]
    prepared = _ScriptedConvergence([1.02, 1.001]).prepare([secret], np.random.default_rng(0))
    run = prepared.diagnostics["mcmc"][secret.label]
    assert (run["extension"], run["tune"], run["draws"]) == (1, 200, 200)
    assert prepared.sample(secret, 5, rng=1)["gender"].shape == (5, N_LOGIT)
    with pytest.raises(ConvergenceError, match=r"R-hat 1\.2 > 1\.01 with tune=100, draws=100"):
        _ScriptedConvergence([1.2, 1.0]).prepare([secret], np.random.default_rng(0))
    with pytest.raises(ConvergenceError, match=r"R-hat 1\.02 > 1\.01"):
        _ScriptedConvergence([1.02, 1.0], mcmc_extensions=0).prepare([secret], np.random.default_rng(0))
    with pytest.raises(ConvergenceError, match=r"tune=400, draws=400, chains=2, target_accept=0.9 \(after 2 extension"):
        _ScriptedConvergence([1.02, 1.03, 1.02]).prepare([secret], np.random.default_rng(0))


class _CountedRuns(PyMCDataModel):
    """The logit model by MCMC (short runs), recording the secret of every run it asks for."""

    def __init__(self):
        super().__init__(build_logit, n_records=N_LOGIT, columns=["gender", "score"], parameters=["z"],
                         conjugate=False, mcmc=bp.McmcSettings(tune=300, draws=300))
        self.__dict__["_asked"] = []  # shared by the copies prepare makes

    def _run_mcmc(self, secret, plan, seed):
        self.__dict__["_asked"].append(secret)
        return super()._run_mcmc(secret, plan, seed)


@pytest.mark.slow
def test_a_prepared_model_keeps_its_runs_when_prepared_again():
    """Preparing a prepared model (an attack on the model calibration_rows prepared) runs only the secrets it lacks,
    keeping the others' draws and diagnostics; the twin: the unprepared model, prepared again, runs again."""
    a, b = LOGIT_SECRETS
    model = _CountedRuns()
    once = model.prepare([a], np.random.default_rng(0))
    again = once.prepare([a, b], np.random.default_rng(1))
    assert model._asked == [a, b]
    assert again._pools[a] is once._pools[a] and again.diagnostics["mcmc"][a.label] == once.diagnostics["mcmc"][a.label]
    assert set(again.diagnostics["mcmc"]) == {a.label, b.label} and again.posteriors[a.label] is once.posteriors[a.label]
    model.prepare([a], np.random.default_rng(1))
    assert model._asked == [a, b, a]


# -- the MCMC settings: one option object, McmcSettings; their own keywords deprecated for one release --------------
MCMC_FIELDS = dict(draws=300, tune=200, chains=3, target_accept=0.95, max_r_hat=1.05, min_ess_bulk=100,
                   max_divergences=5, mcmc_extensions=1)


def test_old_mcmc_keywords_warn_and_build_the_same_model_as_mcmc_settings():
    """``draws=..., tune=..., …`` (deprecated) warn and give the model of ``mcmc=McmcSettings(...)``: the same settings,
    attributes, signature (saved calibration files) and posterior cache key. Twin: other settings change both."""
    from bayespriv.datamodels.signature import model_signature
    from bayespriv.errors import BayesPrivDeprecationWarning

    new = hier_model(mcmc=bp.McmcSettings(**MCMC_FIELDS))
    with pytest.warns(BayesPrivDeprecationWarning, match=r"PyMCDataModel\(draws=\.\.\., .*use PyMCDataModel\(mcmc="
                                                         r"McmcSettings\(draws=\.\.\."):
        old = hier_model(**MCMC_FIELDS)
    assert old.mcmc == new.mcmc == bp.McmcSettings(**MCMC_FIELDS)
    assert {k: getattr(old, k) for k in MCMC_FIELDS} == {k: getattr(new, k) for k in MCMC_FIELDS} == MCMC_FIELDS
    assert isinstance(new.min_ess_bulk, float) and isinstance(new.draws, int)
    assert model_signature(old) == model_signature(new)
    secret = bp.DistributionSecret("p", 0.3)
    plan = new._plans.plan(secret)
    assert old._runs.key(secret, plan, 7) == new._runs.key(secret, plan, 7)
    assert pickle.loads(pickle.dumps(new)).mcmc == new.mcmc
    default = hier_model()
    assert default.mcmc == bp.McmcSettings() and (default.draws, default.max_r_hat) == (1000, 1.01)
    assert model_signature(default) != model_signature(new)
    assert default._runs.key(secret, plan, 7) != new._runs.key(secret, plan, 7)
    with pytest.raises(AttributeError):
        new.mcmc = bp.McmcSettings()


def test_mcmc_and_its_old_keywords_together_are_refused():
    with pytest.raises(ValidationError, match=r"pass mcmc= only \(draws=\.\.\. is its deprecated spelling\); got both"):
        hier_model(mcmc=bp.McmcSettings(), draws=300)


@pytest.mark.parametrize("field, value, error, rule", [
    ("draws", 0, ValidationError, "an integer >= 1"),
    ("tune", -1, ValidationError, "an integer >= 0"),
    ("chains", 1.5, ParameterTypeError, "an integer >= 1"),
    ("target_accept", 1.0, ValidationError, "in the open interval (0, 1)"),
    ("max_r_hat", 0.9, ValidationError, ">= 1"),
    ("min_ess_bulk", -1.0, ValidationError, ">= 0"),
    ("max_divergences", True, ParameterTypeError, "an integer >= 0"),
    ("mcmc_extensions", -1, ValidationError, "an integer >= 0"),
])
def test_mcmc_settings_refuse_an_invalid_value_naming_the_field(field, value, error, rule):
    with pytest.raises(error) as info:
        bp.McmcSettings(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must be") and rule in message and f"got {value!r}" in message


def test_mcmc_settings_are_a_keyword_only_frozen_value():
    import dataclasses

    settings = bp.McmcSettings(draws=500)
    assert settings == bp.McmcSettings(draws=500) and hash(settings) == hash(bp.McmcSettings(draws=500))
    assert bp.McmcSettings is bp.datamodels.McmcSettings and "McmcSettings" in bp.__all__
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.draws = 10
    with pytest.raises(TypeError):
        bp.McmcSettings(500)


def test_an_unknown_keyword_is_still_a_type_error():
    """The broken twin: only the eight settings are folded into ``mcmc=``; a misspelt one is Python's TypeError,
    without a deprecation warning, and ``mcmc=`` takes a McmcSettings only."""
    with pytest.raises(TypeError, match=r"PyMCDataModel\.__init__\(\) got an unexpected keyword argument 'drawz'"):
        hier_model(drawz=300)
    with pytest.raises(ParameterTypeError, match=r"mcmc must be None or a bayespriv McmcSettings; got \{'draws': 300\}"):
        hier_model(mcmc={"draws": 300})
