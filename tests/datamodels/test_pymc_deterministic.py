"""Distribution secrets on PyMC deterministics: ``DistributionSecret("theta[2]", a)`` for
``theta = pm.Deterministic("theta", mu + tau * eta)`` — conditioning on the event, not intervening.

Statistical checks use a fixed seed and a tolerance z·SE, z = Φ⁻¹(1 − a/2) with a = α/m over the m
checks of a test and α = 1e-3. Where F | secret is drawn exactly (forward route, i.i.d. draws) the
SE is the CLT one; where datasets are drawn from a resampled MCMC posterior, the SE adds the MCMC
error of the pool's mean of g = E[F | parameters], Var(g)/ESS with ESS the run's smallest bulk
effective sample size (a Gaussian approximation). Each route has a twin (a wrong conditioning) that
the same check catches.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, stats

import bayespriv as bp
from bayespriv.datamodels.pymc import PyMCDataModel
from bayespriv.calibration import ExecutionOptions
from bayespriv.errors import UnsupportedSecretError, ValidationError

ALPHA = 1e-3
N, GROUPS, D = 40, 4, 3000
#: No progress bar in the test log.
QUIET = ExecutionOptions(progress=False)


def _z(m: int) -> float:
    return float(stats.norm.isf(ALPHA / m / 2))


# -- a non-centred hierarchy with a closed form ----------------------------------------------------
def build_noncentred(n):
    """mu ~ N(0, 1); eta_g ~ N(0, 1); theta = mu + eta (a deterministic); y_r ~ N(theta[r mod 4], 1).

    The centred twin of tests/datamodels/test_pymc_elements.py (theta_g ~ N(mu, 1) free): the same
    joint law, so the same conditional law given theta_2 = a."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        eta = pm.Normal("eta", 0.0, 1.0, shape=GROUPS)
        theta = pm.Deterministic("theta", mu + eta)
        pm.Normal("y", theta[np.arange(n) % GROUPS], 1.0, shape=n)
    return m


PAIR = bp.SecretPair(bp.DistributionSecret("theta[2]", -1.0), bp.DistributionSecret("theta[2]", 2.0))


def _closed_form(a):
    """mu | theta_2 = a ~ N(a/2, 1/2); the other theta's | a ~ N(a/2, 3/2), covariance 1/2, so
    mean(y) has E = 5a/8 and Var = (3·3/2 + 6·1/2)/16 + 1/N, all of it but 1/N through the parameters."""
    return 5 * a / 8, 7.5 / 16 + 1 / N, 7.5 / 16


def _failures(cal, moments=_closed_form):
    z = _z(4)
    failures = []
    for s in PAIR.secrets:
        mean, var, g_var = moments(s.value)
        ess = cal.diagnostics["mcmc"][s.label].get("ess_bulk_min", np.inf)
        se_mean = np.sqrt(var / D + g_var / ess)
        se_var = np.sqrt(2 * var**2 / D + 2 * g_var**2 / ess)  # F is Gaussian here
        i = cal.index(s)
        if abs(cal.mean_array[i, 0] - mean) > z * se_mean:
            failures.append(f"mean {s.label}: {cal.mean_array[i, 0]:.4f} vs {mean:.4f}")
        if abs(cal.cov_array[i, 0, 0] - var) > z * se_var:
            failures.append(f"variance {s.label}: {cal.cov_array[i, 0, 0]:.4f} vs {var:.4f}")
    return failures


@pytest.fixture(scope="module")
def noncentred_calibration():
    model = PyMCDataModel(build_noncentred, n_records=N, columns=["y"], parameters=["theta"])
    return bp.calibrate(model, PAIR, bp.mean("y"), n_draws=D, rng=11, execution=QUIET)


@pytest.mark.slow
def test_a_deterministic_secret_is_the_conditional_law_of_the_centred_model(noncentred_calibration):
    cal = noncentred_calibration
    assert _failures(cal) == []
    for s in PAIR.secrets:
        d = cal.diagnostics["mcmc"][s.label]
        assert d["route"] == "mcmc" and d["pivot"] == "mu, eta[2]" and d["pivot_kind"] == "gaussian"
        assert d["pivot_error"] <= 1e-12
    assert cal.sensitivity(2, bound=True) >= 5 / 8 * 3  # closed form 1.875


class _Intervention(PyMCDataModel):
    """Broken twin: pm.do(theta[2] := a) — eta[2] solved from the constraint with its density dropped, so mu
    keeps its prior: E[mean y] = a/4 instead of 5a/8."""

    def _find_pivot(self, name, index):
        return (("eta", index),), False, "the innovation, as an intervention"

    @staticmethod
    def _pivot_density(logp, beta):
        return 0.0 * beta


@pytest.mark.slow
def test_the_intervention_twin_is_caught():
    model = _Intervention(build_noncentred, n_records=N, columns=["y"], parameters=["theta"])
    cal = bp.calibrate(model, PAIR, bp.mean("y"), n_draws=D, rng=11, execution=QUIET)
    assert any(f.startswith("mean") for f in _failures(cal))
    assert _failures(cal, lambda a: (a / 4, 12 / 16 + 1 / N, 12 / 16)) == []  # the intervention's law: mu at its prior


@pytest.mark.slow
def test_every_draw_has_the_secret_value_and_the_rest_stays_random():
    model = PyMCDataModel(build_noncentred, n_records=8, columns=["y"], parameters=["theta"])
    prepared = model.prepare([PAIR.b], np.random.default_rng(3))
    pool = prepared._pools[PAIR.b]
    theta = pool["mu"][:, None] + pool["eta"]
    np.testing.assert_allclose(theta[:, 2], 2.0, atol=1e-12)
    assert np.std(theta[:, 0]) > 0.5


# -- the Jacobian: a scale times an innovation ------------------------------------------------------
def build_scale(innovation):
    def build(n):
        """s ~ LogNormal(0, 0.3); e ~ innovation; d = s·e (a deterministic); x_r ~ N(s, 1)."""
        with pm.Model() as m:
            s = pm.LogNormal("s", 0.0, 0.3)
            e = innovation()
            pm.Deterministic("d", s * e)
            pm.Normal("x", s, 1.0, shape=n)
        return m
    return build


def _student():
    return pm.StudentT("e", nu=4.0, mu=0.0, sigma=1.0)


def _normal():
    return pm.Normal("e", 0.0, 1.0)


SCALE_PAIR = bp.SecretPair(bp.DistributionSecret("d", 0.5), bp.DistributionSecret("d", 2.0))


def _scale_moments(a, density, jacobian=True):
    """E and Var of mean(x) given d = a: s | d = a has density ∝ p(s)·p_e(a/s)/s (quadrature); F = s + N(0, 1/n)."""
    def f(t, p):
        return stats.lognorm.pdf(t, 0.3) * density(a / t) / t**jacobian * t**p

    z0, z1, z2 = (integrate.quad(f, 0, np.inf, args=(p,), epsabs=0, epsrel=1e-12)[0] for p in (0, 1, 2))
    mean, var_s = z1 / z0, z2 / z0 - (z1 / z0) ** 2
    return mean, var_s + 1 / N, var_s


def _scale_failures(cal, density, jacobian=True):
    return _failures_for(cal, SCALE_PAIR, lambda a: _scale_moments(a, density, jacobian))


def _failures_for(cal, pair, moments):
    z = _z(4)
    failures = []
    for s in pair.secrets:
        mean, var, g_var = moments(s.value)
        ess = cal.diagnostics["mcmc"][s.label]["ess_bulk_min"]
        i = cal.index(s)
        se_mean = np.sqrt(var / D + g_var / ess)
        if abs(cal.mean_array[i, 0] - mean) > z * se_mean:
            failures.append(f"mean {s.label}: {cal.mean_array[i, 0]:.4f} vs {mean:.4f} (SE {se_mean:.4f})")
    return failures


@pytest.mark.slow
def test_a_single_pivot_divides_by_its_slope():
    """e ~ Student-t (not normal): one pivot, e = a/s, density p_e(a/s)/s — the 1/s is the Jacobian."""
    model = PyMCDataModel(build_scale(_student), n_records=N, columns=["x"], parameters=["d"])
    cal = bp.calibrate(model, SCALE_PAIR, bp.mean("x"), n_draws=D, rng=5, execution=QUIET)
    t4 = stats.t(4).pdf
    assert _scale_failures(cal, t4) == []
    for s in SCALE_PAIR.secrets:
        d = cal.diagnostics["mcmc"][s.label]
        assert d["pivot"] == "e" and d["pivot_kind"] == "single" and "slope depends" in d["note"]


class _NoJacobian(PyMCDataModel):
    """Broken twin: the single pivot's density without the Jacobian 1/|slope|."""

    @staticmethod
    def _pivot_density(logp, beta):
        return logp


@pytest.mark.slow
def test_the_twin_without_the_jacobian_is_caught():
    bp.clear_posterior_cache()  # the twin's runs have the same cache key as the correct ones
    model = _NoJacobian(build_scale(_student), n_records=N, columns=["x"], parameters=["d"])
    cal = bp.calibrate(model, SCALE_PAIR, bp.mean("x"), n_draws=D, rng=5, execution=QUIET)
    bp.clear_posterior_cache()
    t4 = stats.t(4).pdf
    assert any(f.startswith("mean") for f in _scale_failures(cal, t4))
    assert _scale_failures(cal, t4, jacobian=False) == []


@pytest.mark.slow
def test_a_normal_pivot_gets_its_density_from_the_gaussian_route():
    """e ~ N(0, 1): the Gaussian route's density of d at a, N(a; 0, s²) = φ(a/s)/s, is the same law."""
    model = PyMCDataModel(build_scale(_normal), n_records=N, columns=["x"], parameters=["d"])
    cal = bp.calibrate(model, SCALE_PAIR, bp.mean("x"), n_draws=D, rng=6, execution=QUIET)
    assert _scale_failures(cal, stats.norm.pdf) == []
    assert all(d["pivot_kind"] == "gaussian" for d in cal.diagnostics["mcmc"].values())


# -- a sum of normals: a group of elements of one variable ------------------------------------------
def build_total(n):
    """eta ~ N(0, 1) × 5; total = Σ eta (a scalar deterministic); x_r ~ N(eta[r mod 5], 1)."""
    with pm.Model() as m:
        eta = pm.Normal("eta", 0.0, 1.0, shape=5)
        pm.Deterministic("total", eta.sum())
        pm.Normal("x", eta[np.arange(n) % 5], 1.0, shape=n)
    return m


@pytest.mark.slow
def test_a_secret_on_a_sum_projects_every_element():
    """Given Σ eta = a, eta ~ N(a/5·1, I − 11ᵀ/5): every dataset's group means average exactly a/5,
    and each eta_j has variance 4/5 — mean of x given the secret is N(a/5, 1/n) exactly (α = 1e-3)."""
    model = PyMCDataModel(build_total, n_records=50, columns=["x"], parameters=["total"])
    secret = bp.DistributionSecret("total", 3.0)
    prepared = model.prepare([secret], np.random.default_rng(2))
    entry = prepared.diagnostics["mcmc"][secret.label]
    assert entry["pivot"] == "eta[0], eta[1], eta[2], eta[3], eta[4]" and entry["pivot_kind"] == "gaussian"
    eta = prepared._pools[secret]["eta"]
    np.testing.assert_allclose(eta.sum(axis=1), 3.0, atol=1e-12)
    z = _z(2)
    ess = entry["ess_bulk_min"]
    assert abs(eta[:, 0].mean() - 0.6) <= z * np.sqrt(0.8 / ess)
    assert abs(eta[:, 0].var() - 0.8) <= z * np.sqrt(2 * 0.8**2 / ess)
    f = prepared.sample_query(secret, D, np.random.default_rng(4), bp.mean("x"))[:, 0]
    assert abs(f.mean() - 0.6) <= z * np.sqrt(1 / 50 / D)


# -- routes without MCMC, intervals, refusals -------------------------------------------------------
def build_shift(n):
    """d = mu + 2·eta; the records depend on d only: conditioning on d is the intervention pm.do(d := a)."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        eta = pm.Normal("eta", 0.0, 1.0)
        d = pm.Deterministic("d", mu + 2.0 * eta)
        pm.Normal("x", d, 1.0, shape=n)
    return m


def test_a_scalar_deterministic_only_the_records_see_is_fixed_forward():
    model = PyMCDataModel(build_shift, n_records=10, columns=["x"], parameters=["d"])
    secret = bp.DistributionSecret("d", 3.0)
    assert model.route(secret) == "forward"
    x = model.sample(secret, 20_000, rng=0)["x"]
    f = x.mean(axis=1)  # exactly N(3, 1/10)
    z = _z(2)
    assert abs(f.mean() - 3.0) <= z * np.sqrt(0.1 / 20_000)
    lo, hi = stats.chi2.ppf([ALPHA / 4, 1 - ALPHA / 4], 19_999) / 19_999
    assert lo <= f.var(ddof=1) / 0.1 <= hi


def test_an_interval_on_a_scalar_deterministic_is_rejection_sampled():
    """0 <= d <= 2 with d ~ N(0, 5) a priori: the records' mean is N(E[d | 0 <= d <= 2], ·)."""
    secret = bp.DistributionSecret("d", 1.0)
    model = PyMCDataModel(build_shift, n_records=10, columns=["x"], parameters=["d"], intervals={secret: (0.0, 2.0)})
    assert model.route(secret) == "rejection"
    f = model.sample(secret, 20_000, rng=1)["x"].mean(axis=1)
    truncated = stats.truncnorm(0.0, 2.0 / np.sqrt(5.0), 0.0, np.sqrt(5.0))
    assert abs(f.mean() - truncated.mean()) <= _z(1) * np.sqrt((truncated.var() + 0.1) / 20_000)


def build_awkward(n):
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        tau = pm.HalfNormal("tau", 1.0)
        a = pm.Normal("a", 0.0, 1.0)
        b = pm.Normal("b", 0.0, 1.0)
        eta = pm.Normal("eta", 0.0, 1.0, shape=3)
        pm.Deterministic("p", pm.math.invlogit(mu + eta))
        pm.Deterministic("scale", 2.0 * tau * np.ones(3))
        pm.Deterministic("ab", a * b)
        pm.Deterministic("vec", mu + eta)
        pm.Normal("x", mu + tau + a + b + eta.sum(), 1.0, shape=n)
    return m


def test_deterministics_without_a_pivot_are_refused_with_the_reason():
    model = PyMCDataModel(build_awkward, n_records=6, columns=["x"], parameters=["p", "scale", "ab", "vec"])
    with pytest.raises(UnsupportedSecretError, match=r"is not affine in .*linear predictor"):
        model.check_secret(bp.DistributionSecret("p[1]", 0.3))
    with pytest.raises(UnsupportedSecretError, match="'tau' has a bounded support"):
        model.check_secret(bp.DistributionSecret("scale[0]", 1.0))
    with pytest.raises(UnsupportedSecretError, match="name an element"):
        model.check_secret(bp.DistributionSecret("vec", 1.0))
    with pytest.raises(ValidationError, match=r"index within the shape \(3,\)"):
        model.check_secret(bp.DistributionSecret("vec[3]", 1.0))
    # a·b is affine in a and in b, not jointly: one pivot (b, slope a), not the Gaussian route
    members, gaussian, how = model._pivots.pivot("ab", ())
    assert members == (("b", ()),) and not gaussian and "slope depends" in how
    with pytest.raises(ValidationError, match="free random variables or deterministics"):
        PyMCDataModel(build_awkward, n_records=6, columns=["x"], parameters=["x2"])
