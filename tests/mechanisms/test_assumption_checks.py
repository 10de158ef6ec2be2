"""Honest assumptions on the papers' route (``accountant="gaussian"``): a mechanism
checks its proof's assumptions on the calibration samples, records failures in
its Guarantee, and offers the relaxed guarantees of Chen & Ohrimenko (AISTATS
2023) Theorems 4.6 and 4.7. With the default accountant the same checks are
diagnostics only (last tests of this file).

Checks run at α = 1e-3 per named assumption (the mechanisms' default): a test
expecting a check to pass on data that satisfy the assumption fails with
probability ≤ 1e-3 per name.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

import bayespriv as bp
from bayespriv.calibration import calibration_from_samples
from bayespriv.calibration.assumptions import estimate_lambda_eta, estimate_w_infinity
from bayespriv.mechanisms import APGM, ExpM
from bayespriv.mechanisms.mechanism import Guarantee
from bayespriv.mechanisms.sampled_moments import WithExtraLaplace, relaxed_parameters

A = bp.DistributionSecret("theta", 1.0)
B = bp.DistributionSecret("theta", 2.0)
PAIR = bp.SecretPair(A, B)


def cal_from(xa, xb, confidence=0.95) -> bp.Calibration:
    xa, xb = np.asarray(xa, float), np.asarray(xb, float)
    if xa.ndim == 1:
        xa, xb = xa[:, None], xb[:, None]
    return calibration_from_samples(np.stack([xa, xb]), (A, B), (PAIR,), None, confidence=confidence)


@pytest.fixture(scope="module")
def gaussian_cal() -> bp.Calibration:
    """F = mean(y) given mean(x) = ∓0.2 under a GaussianDataModel: exactly Gaussian."""
    model = bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.6], [0.6, 2.0]], ["x", "y"], n_records=50)
    a, b = bp.DatasetSecret.mean("x", -0.2), bp.DatasetSecret.mean("x", 0.2)
    return bp.calibrate(model, bp.SecretPair(a, b), bp.mean("y"), n_draws=20_000, rng=1)


@pytest.fixture(scope="module")
def gamma_cal() -> bp.Calibration:
    """F | a ~ Gamma(20), F | b ~ Gamma(20) + 2: a translation, not Gaussian (skewness 0.45)."""
    rng = np.random.default_rng(40)
    return cal_from(rng.gamma(20.0, size=20_000), rng.gamma(20.0, size=20_000) + 2.0)


def no_bayespriv_warning(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    assert not [w for w in caught if issubclass(w.category, bp.BayesPrivWarning)]
    return out


def test_guarantee_keeps_its_positional_fields():
    g = Guarantee(1.0, 1e-5, 0.95, ("gaussian_query",), "T")
    assert g.failed_assumptions == () and g.checks_passed
    assert "FAILED" not in str(g)


def test_gaussian_calibration_gives_the_nominal_guarantee(gaussian_cal):
    mech = APGM(gaussian_cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    g = no_bayespriv_warning(lambda: mech.guarantee)
    assert (g.epsilon, g.delta, g.confidence) == (1.0, 1e-5, 0.95)
    assert {"gaussian_query", "equal_covariance"} <= set(g.assumptions)  # a pass is not a proof: still named
    assert g.failed_assumptions == () and g.checks_passed
    report = mech.check(strict=True)
    assert report.ok and report.names == ("gaussian_query", "equal_covariance")
    assert mech.assumption_checks.checks == report.checks
    assert "<table" in report._repr_html_()


def test_non_gaussian_calibration_reports_the_failure(gamma_cal):
    mech = APGM(gamma_cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    g = no_bayespriv_warning(lambda: mech.guarantee)
    assert (g.epsilon, g.delta) == (1.0, 1e-5)  # the nominal claim, flagged
    assert g.failed_assumptions == ("gaussian_query",)
    assert not g.checks_passed
    assert "FAILED check: gaussian_query" in str(g)
    assert mech.assumption_checks.holds("equal_covariance") is True  # Var equal: false failure ≤ 1e-3
    with pytest.raises(bp.ValidationError, match=r"assumptions of APGM's proof must hold .* gaussian_query \(p="):
        mech.check(strict=True)
    assert mech.check().failed == ("gaussian_query",)


def test_relaxed_guarantee_theorem_4_6(gamma_cal):
    mech = APGM(gamma_cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    eta = 0.025  # the default, 500 / n_draws
    lam = estimate_lambda_eta(gamma_cal, eta).value
    assert 0 < lam < math.inf
    r = mech.relaxed_guarantee
    assert r.epsilon == pytest.approx(1.0 + 2 * lam, rel=1e-12)
    assert r.epsilon > 1.0
    assert r.delta == pytest.approx((1 + math.exp(1.0 + lam)) * eta + math.exp(lam) * 1e-5, rel=1e-12)
    assert "gaussian_query" not in r.assumptions and "equal_covariance" not in r.assumptions
    assert "estimated_divergence" in r.assumptions and "monte_carlo_clt" in r.assumptions
    assert "Theorem 4.6" in r.theorem and r.failed_assumptions == ()
    # larger η: smaller λ
    assert mech.relaxed(0.1).epsilon <= r.epsilon


def test_relaxed_with_a_given_lambda_and_from_moments():
    cal = bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 2.0, B: 2.0}, PAIR)
    mech = APGM(cal, epsilon=0.5, delta=1e-6, accountant="gaussian")
    assert mech.guarantee.failed_assumptions == ()  # unchecked: the user vouches
    assert mech.assumption_checks.unchecked == ("gaussian_query",)
    with pytest.raises(bp.ValidationError, match="calibration must carry samples"):
        mech.relaxed_guarantee
    g = mech.relaxed(1e-4, lambda_eta=0.1)
    assert g.epsilon == pytest.approx(0.7, rel=1e-12)
    assert g.delta == pytest.approx((1 + math.exp(0.6)) * 1e-4 + math.exp(0.1) * 1e-6, rel=1e-12)
    assert "divergence_bound_given" in g.assumptions
    with pytest.raises(bp.ValidationError, match="lambda_eta must be a finite number >= 0; got -1"):
        mech.relaxed(1e-4, lambda_eta=-1)
    assert relaxed_parameters(1.0, 1e-5, math.inf, 0.01) == (math.inf, 1.0)


def test_expm_scale_change_fails_translation():
    rng = np.random.default_rng(42)
    cal = cal_from(rng.normal(0.0, 1.0, 5000), rng.normal(1.0, 1.6, 5000))
    mech = ExpM(cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    assert mech.guarantee.failed_assumptions == ("translation",)
    assert mech.relaxed(0.2).epsilon > 1.0


def test_twin_exact_privacy_loss_of_a_non_gaussian_query():
    """Exact check that the flag matters, and that λ = 0 would be wrong.

    F | a ~ Gamma(2), F | b ~ Gamma(2) + 0.2. APGM credits Var = 2 > (Δ/r*)²,
    so it adds no noise and releases F itself; the true hockey-stick
    δ(ε) = ∫(p_a − e^ε p_b)₊ is at least P_a(F < 0.2) ≈ 0.0175 for every ε
    (computed by quadrature). So the nominal (1, 1e-5) is violated (and flagged);
    Theorem 4.6 with λ forced to 0 (η = 1e-3) claims δ' ≈ 0.0037 — violated
    too — while the estimated λ at η = 0.1 gives a guarantee that holds.
    """
    rng = np.random.default_rng(41)
    cal = cal_from(rng.gamma(2.0, size=20_000), rng.gamma(2.0, size=20_000) + 0.2)
    mech = APGM(cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    assert mech.sigma2 == 0.0 and mech.guarantee.failed_assumptions == ("gaussian_query",)

    def delta_true(eps: float) -> float:
        f = lambda t: max(stats.gamma.pdf(t, 2.0) - math.exp(eps) * stats.gamma.pdf(t - 0.2, 2.0), 0.0)  # noqa: E731
        return integrate.quad(f, 0, 0.2)[0] + integrate.quad(f, 0.2, 60, limit=200)[0]

    assert delta_true(1.0) > 1000 * mech.guarantee.delta
    forced = mech.relaxed(1e-3, lambda_eta=0.0)
    assert delta_true(forced.epsilon) > forced.delta
    honest = mech.relaxed(0.1)
    assert math.isfinite(honest.epsilon)
    assert delta_true(honest.epsilon) <= honest.delta


# -- Theorem 4.7: extra Laplace noise ---------------------------------------------------------------


def test_with_extra_laplace_guarantee_and_noise(gamma_cal):
    base = APGM(gamma_cal, epsilon=1.0, delta=1e-5, accountant="gaussian")
    lam = 0.5
    mech = base.with_extra_laplace(lam, eta=0.1)
    assert isinstance(mech, WithExtraLaplace)
    w = estimate_w_infinity(gamma_cal, 0.1).value
    assert mech.w_infinity == w and mech.extra_scale == pytest.approx(w / lam)
    g = mech.guarantee
    assert g.epsilon == pytest.approx(1.0 + 2 * lam)
    assert g.delta == pytest.approx(math.exp(lam) * 1e-5 + (1 + math.exp(1.0 + lam)) * 0.1)
    assert g.confidence == pytest.approx(0.90)  # calibration 0.95 minus the DKW bands' 0.05
    assert "gaussian_query" not in g.assumptions and "componentwise_coupling" not in g.assumptions  # k = 1: rigorous
    np.testing.assert_allclose(mech.noise_cov, base.noise_cov + 2 * mech.extra_scale**2, rtol=1e-12)
    assert mech.noise == "gaussian+laplace" and mech.noise_scale is None
    _assert_expected_abs_error_of_the_sum(mech, np.sqrt(base.noise_cov[0, 0]), rng=np.random.default_rng(8))
    rel = mech.release_value([50.0], rng=5)
    assert rel.guarantee == g and rel.mechanism == "WithExtraLaplace" and rel.seeded


def _assert_expected_abs_error_of_the_sum(mech, base_sd: float, rng, n: int = 1_000_000) -> None:
    """E|G + L| against 10⁶ draws of the sum: tolerance 5 standard errors of the mean of |X| (a false failure
    has probability 6e-7); the twin — the base's E|G| alone — lies outside it."""
    b = mech.extra_scale
    x = np.abs(rng.normal(0.0, base_sd, n) + rng.laplace(0.0, b, n))
    tol = 5 * x.std() / math.sqrt(n)
    assert abs(mech.expected_abs_error[0] - x.mean()) < tol
    assert abs(base_sd * math.sqrt(2 / math.pi) - x.mean()) > tol  # the twin ignoring the extra Laplace is caught


def test_expected_abs_error_of_a_laplace_sum_is_the_closed_form():
    """E|L₁ + L₂| = b + a²/(a + b), checked by quadrature of the sum's density, and a Gaussian of sd 0 gives b."""
    from scipy import integrate

    from bayespriv.mechanisms.sampled_moments import gaussian_plus_laplace_abs_mean

    a, b = 0.7, 1.9

    def density(x: float) -> float:  # the convolution of the two Laplace densities, a ≠ b
        return (a * math.exp(-abs(x) / a) - b * math.exp(-abs(x) / b)) / (2 * (a * a - b * b))

    exact = 2 * integrate.quad(lambda x: x * density(x), 0, math.inf, epsabs=1e-14)[0]
    assert b + a * a / (a + b) == pytest.approx(exact, rel=1e-10)
    assert gaussian_plus_laplace_abs_mean(0.0, b) == b


def test_extra_laplace_w_bounds_the_true_trimmed_distance(gamma_cal):
    """For each approximation N(μ̂_s, C) the bound is ≥ the true η-trimmed quantile
    distance (Gamma quantiles); DKW at confidence 0.95 jointly."""
    w = estimate_w_infinity(gamma_cal, 0.1)
    u = np.linspace(0.05, 0.95, 100_001)
    mu = gamma_cal.mean_array[:, 0]
    c = gamma_cal.cov_array[:, 0, 0].mean()
    for (label, value), shift, m in zip(w.per_approximation, (0.0, 2.0), mu):
        truth = np.max(np.abs(stats.gamma.ppf(u, 20.0) + shift - (m + math.sqrt(c) * stats.norm.ppf(u))))
        assert truth <= value, label


def test_extra_laplace_noise_variance_and_half_scale_twin(gamma_cal):
    """Sample variance of R = 20000 noise draws against Var = σ² + 2b².

    Var(s²) ≈ (μ₄ − v²)/R with μ₄ = 3σ⁴ + 12σ²b² + 24b⁴ (Gaussian plus
    independent Laplace); tolerance 4.42 standard errors (two-sided α = 1e-5).
    Twin: the same draws with half the Laplace scale miss the stated variance.
    """
    mech = APGM(gamma_cal, epsilon=1.0, delta=1e-5, accountant="gaussian").with_extra_laplace(0.5, eta=0.1)
    s2, b = mech.base.sigma2, mech.extra_scale
    assert s2 > 0 and b > 0
    R = 20_000
    gen = np.random.default_rng(6)
    draws = np.array([mech._draw_noise(gen)[0] for _ in range(R)])
    v = s2 + 2 * b**2
    mu4 = 3 * s2**2 + 12 * s2 * b**2 + 24 * b**4
    tol = 4.42 * math.sqrt((mu4 - v**2) / R)
    assert abs(draws.var() - v) <= tol
    assert abs(mech.noise_cov[0, 0] - v) < 1e-9 * v
    half = APGM(gamma_cal, epsilon=1.0, delta=1e-5, accountant="gaussian").with_extra_laplace(1.0, eta=0.1)  # scale W/1 = half of W/0.5
    gen = np.random.default_rng(6)
    draws_half = np.array([half._draw_noise(gen)[0] for _ in range(R)])
    assert abs(draws_half.var() - v) > tol


def test_extra_laplace_with_given_w_and_validation():
    cal = bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 2.0, B: 2.0}, PAIR)
    base = APGM(cal, epsilon=1.0, delta=1e-6, accountant="gaussian")
    with pytest.raises(bp.ValidationError, match="calibration must carry samples"):
        base.with_extra_laplace(0.3)
    mech = base.with_extra_laplace(0.3, w_infinity=0.6)
    assert mech.eta == 0.0 and mech.extra_scale == pytest.approx(2.0)
    g = mech.guarantee
    assert (g.epsilon, g.delta) == (pytest.approx(1.6), pytest.approx(math.exp(0.3) * 1e-6))  # Theorem 4.7 as printed
    assert "w_infinity_given" in g.assumptions and g.confidence == 1.0
    with pytest.raises(bp.ValidationError, match="lam must be a finite number > 0; got 0"):
        base.with_extra_laplace(0.0, w_infinity=0.6)
    rng = np.random.default_rng(3)
    sampled = cal_from(rng.standard_normal(500), rng.standard_normal(500) + 0.3)
    with pytest.raises(bp.ValidationError, match=r"eta must be large enough for 500 draws to bound W∞"):
        APGM(sampled, epsilon=1.0, delta=1e-6, accountant="gaussian").with_extra_laplace(0.3, eta=0.01)


def test_laplace_mechanism_relaxation_keeps_delta_zero_base(gamma_cal):
    mech = ExpM(gamma_cal, epsilon=1.0, noise="laplace", accountant="gaussian")
    assert mech.guarantee.delta == 0.0 and mech.guarantee.failed_assumptions == ()  # a translation: passes
    r = mech.relaxed(0.1, lambda_eta=0.2)
    assert r.delta == pytest.approx((1 + math.exp(1.2)) * 0.1)


def test_nothing_to_relax_without_a_distributional_assumption(gamma_cal):
    cal = bp.calibrate(
        bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.6], [0.6, 2.0]], ["x", "y"], n_records=50),
        bp.SecretPair(bp.DatasetSecret.mean("x", -0.2), bp.DatasetSecret.mean("x", 0.2)),
        bp.mean("y", bounds=(-10.0, 10.0)), n_draws=500, rng=2,
    )
    dp = bp.mechanisms.GroupDP(cal, epsilon=1.0, noise="laplace")
    assert dp.assumption_checks.names == () and dp.check(strict=True).ok
    with pytest.raises(bp.ValidationError, match="relaxed guarantee .* must be asked of a mechanism whose guarantee assumes"):
        dp.relaxed_guarantee
    with pytest.raises(bp.ValidationError, match="GroupDP, whose guarantee assumes nothing"):
        dp.with_extra_laplace(0.5)


# -- a check without power reads unchecked ---------------------------------------------------------


def test_too_few_draws_leave_the_assumptions_unchecked_not_passed():
    """APGM on 100 exactly Gaussian draws per secret (k = 1): Shapiro–Wilk needs 103
    and the covariance test 114 draws to detect the departures that matter
    (POWER_RULES), so both assumptions are unchecked, not passed; with 2000 draws both
    are checked and pass (each fails falsely with probability ≤ 1e-3)."""
    model = bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.6], [0.6, 2.0]], ["x", "y"], n_records=50)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", -0.2), bp.DatasetSecret.mean("x", 0.2))
    few = APGM(bp.calibrate(model, pair, bp.mean("y"), n_draws=100, rng=3), epsilon=1.0, delta=1e-5,
               accountant="gaussian")
    g = few.guarantee
    assert g.failed_assumptions == ()
    assert {"gaussian_query", "equal_covariance"} <= set(g.unchecked_assumptions)
    assert "unchecked: " in str(g) and "gaussian_query" in str(g).split("unchecked: ")[1]
    report = few.assumption_checks
    assert all(c.holds is None and c.detail.startswith("unchecked: n=100 < n_min=") for c in report)
    many = APGM(bp.calibrate(model, pair, bp.mean("y"), n_draws=2000, rng=3), epsilon=1.0, delta=1e-5,
                accountant="gaussian")
    assert many.guarantee.unchecked_assumptions == () and many.guarantee.failed_assumptions == ()


# -- the default accountant: the checks explain, they do not gate -----------------------------------


def test_default_accountant_keeps_the_checks_as_diagnostics(gamma_cal):
    """On the skewed Gamma law the normality check fails; the default mechanism accounts the law actually
    released, states exactly the (ε, δ) asked, is established, and still reports the failed check."""
    mech = APGM(gamma_cal, epsilon=1.0, delta=1e-3)
    g = mech.guarantee
    assert (g.epsilon, g.delta) == (1.0, 1e-3) and g.established and g.failed_assumptions == ()
    assert "sampled_law" in g.assumptions and "gaussian_query" not in g.assumptions
    assert mech.assumption_checks.failed == ("gaussian_query",)  # a diagnostic: explains the shape
    assert mech.accounting.account.delta <= 1e-3
    with pytest.raises(bp.ValidationError, match="must be asked of a mechanism whose guarantee assumes"):
        mech.relaxed_guarantee  # nothing to relax: no distributional premise
