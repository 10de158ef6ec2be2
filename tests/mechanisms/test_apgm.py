"""APGM: the Attribute-Private Gaussian Mechanism (Zhang et al., FAccT 2022, Algorithm 1)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import calibration_from_samples
from bayespriv.mechanisms import APGM
from bayespriv.privacy import gaussian_radius

LOW = bp.DatasetSecret.proportion("gender", "female", 0.25)
HIGH = bp.DatasetSecret.proportion("gender", "female", 0.5)
PAIR = bp.SecretPair(LOW, HIGH)
C2_PAPER = 2 * math.log(1.25 / 1e-3)  # c² of the classic constant at δ = 1e-3


def scalar_calibration(sensitivity: float, variance: float, base: float = 100.0) -> bp.Calibration:
    """Two secrets whose F-means differ by ``sensitivity``, both with variance ``variance``."""
    return bp.Calibration.from_moments(
        {LOW: [base], HIGH: [base + sensitivity]}, {LOW: variance, HIGH: variance}, PAIR
    )


def expected_sigma2(sensitivity: float, variance: float, epsilon: float, delta: float, calibration: str) -> float:
    """Algorithm 1's σ² = max(0, (Δ/r*)² − Var), with r* = ε/c (classic) or the analytic radius."""
    if calibration == "classic":
        r = epsilon / math.sqrt(2 * math.log(1.25 / delta))
    else:
        r = gaussian_radius(epsilon, delta)  # checked against mpmath in tests/privacy/test_analytic_gaussian.py
    return max(0.0, (sensitivity / r) ** 2 - variance)


# -- the paper's numbers (§4.2) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "sensitivity, variance, paper_sigma2, abs_tol",
    [
        (6.125, 4.5, 530.54, 0.005),  # average weight F1
        (2.5, 2.0, 87.14, 0.005),  # average blood pressure F2
        # average temperature F3: the formula gives 0.00022; the paper rounds this to "no noise"
        (0.075, 0.08, 0.00022, 0.000005),
    ],
)
def test_paper_section_4_2_classic(sensitivity, variance, paper_sigma2, abs_tol):
    """σ² = (cΔ/ε)² − Var with c = sqrt(2 ln(1.25/δ)), ε = 1, δ = 1e-3 (the paper's setting).

    ε = 1 is outside the classic proof (ε < 1), so the mechanism must warn.
    """
    cal = scalar_calibration(sensitivity, variance)
    with pytest.warns(bp.PrivacyAssumptionWarning, match="epsilon"):
        mech = APGM(cal, epsilon=1, delta=1e-3, gaussian_calibration="classic")
    assert mech.sigma2 == pytest.approx(paper_sigma2, abs=abs_tol)
    assert mech.sigma2 == pytest.approx(sensitivity**2 * C2_PAPER - variance, rel=1e-12)
    np.testing.assert_allclose(mech.noise_cov, [[mech.sigma2]], rtol=1e-15)
    assert mech.noise == "gaussian"
    assert mech.noise_scale is None and mech.noise_basis is None


def test_paper_sigma_values_other_constants():
    """The intermediate value (cΔ/ε)² for F1 is 535.04 and √σ² of F2 is ≈ 9.335."""
    with pytest.warns(bp.PrivacyAssumptionWarning):
        m1 = APGM(scalar_calibration(6.125, 4.5), epsilon=1, delta=1e-3, gaussian_calibration="classic")
    assert m1.sigma2 + 4.5 == pytest.approx(535.04, abs=0.005)
    with pytest.warns(bp.PrivacyAssumptionWarning):
        m2 = APGM(scalar_calibration(2.5, 2.0), epsilon=1, delta=1e-3, gaussian_calibration="classic")
    assert math.sqrt(m2.sigma2) == pytest.approx(9.335, abs=5e-4)


# -- empirical error of the released values ---------------------------------------------------------

N_RELEASES = 10_000
ALPHA = 1e-6


def mae_tolerance(sigma: float, n: int, alpha: float) -> float:
    """Half-width t with P(|MAE − σ√(2/π)| ≥ t) ≤ α for n i.i.d. N(0, σ²) draws.

    MAE = (1/n) Σ|Z_i| is a (σ/√n)-Lipschitz function of n standard normals
    (|Σ|x_i| − Σ|y_i||/n ≤ ‖x − y‖₁/n ≤ ‖x − y‖₂/√n), so by Gaussian
    concentration (Tsirelson–Ibragimov–Sudakov) P(|MAE − E MAE| ≥ t) ≤
    2 exp(−n t² / (2σ²)). Solving for α: t = σ sqrt(2 ln(2/α) / n). This is
    exact (non-asymptotic), not a CLT approximation.
    """
    return sigma * math.sqrt(2 * math.log(2 / alpha) / n)


def released_noise(mech: APGM, answer: float, seed: int) -> np.ndarray:
    """``N_RELEASES`` seeded releases of ``answer``, minus the answer."""
    gen = np.random.default_rng(seed)
    values = np.array([mech.release_value([answer], rng=gen).value[0] for _ in range(N_RELEASES)])
    return values - answer


def mae_check(mech: APGM, sigma: float, seed: int) -> tuple[bool, float, float]:
    noise = released_noise(mech, 161.33, seed)
    mae = float(np.abs(noise).mean())
    expected = sigma * math.sqrt(2 / math.pi)
    tol = mae_tolerance(sigma, N_RELEASES, ALPHA)
    return abs(mae - expected) <= tol, mae, tol


class HalfNoiseAPGM(APGM):
    """Deliberately broken: half the noise standard deviation."""

    def _freeze(self) -> None:  # the noise halved as construction ends, before it is fixed
        self._set_gaussian(self.noise_cov / 4.0)
        super()._freeze()


SETTING = dict(sensitivity=6.125, variance=4.5, epsilon=1.0, delta=1e-3)


def _setting_sigma() -> float:
    return math.sqrt(expected_sigma2(SETTING["sensitivity"], SETTING["variance"], SETTING["epsilon"], SETTING["delta"], "analytic"))


def test_mean_absolute_error_matches_sigma():
    """MAE of 10 000 seeded releases = σ√(2/π) within t = σ sqrt(2 ln(2/α)/n), α = 1e-6.

    σ is computed in the test from Algorithm 1's formula with the analytic
    radius (F1 of §4.2, analytic calibration: σ ≈ 15.63). With n = 10⁴ the
    tolerance is 0.054σ, i.e. 6.8% of the expected MAE. See :func:`mae_tolerance`.
    """
    sigma = _setting_sigma()
    mech = APGM(scalar_calibration(SETTING["sensitivity"], SETTING["variance"]),
                epsilon=SETTING["epsilon"], delta=SETTING["delta"])
    assert mech.expected_abs_error[0] == pytest.approx(sigma * math.sqrt(2 / math.pi), rel=1e-12)
    ok, mae, tol = mae_check(mech, sigma, seed=20240611)
    assert ok, (mae, sigma * math.sqrt(2 / math.pi), tol)


def test_mean_absolute_error_catches_half_noise():
    """Broken twin: half the noise SD gives MAE ≈ 0.5·σ√(2/π), a deviation of
    50% ≫ the 6.8% tolerance; the broken MAE concentrates within 3.4% of its
    own mean (same bound, σ/2) except with probability 1e-6, so it is caught
    with probability ≥ 1 − 1e-6."""
    sigma = _setting_sigma()
    broken = HalfNoiseAPGM(scalar_calibration(SETTING["sensitivity"], SETTING["variance"]),
                           epsilon=SETTING["epsilon"], delta=SETTING["delta"])
    ok, mae, tol = mae_check(broken, sigma, seed=20240611)
    assert not ok, (mae, tol)


def test_released_values_are_seeded_and_reproducible():
    mech = APGM(scalar_calibration(2.5, 2.0), epsilon=1.0, delta=1e-3)
    a = mech.release_value([102.18], rng=7)
    with pytest.warns(bp.BayesPrivWarning, match="rng=7 was already used"):  # same seed, same noise: warned
        b = mech.release_value([102.18], rng=7)
    assert a.seeded and b.seeded
    assert a.value[0] == b.value[0] != 102.18
    assert a.guarantee == mech.guarantee
    assert a.mechanism == "APGM"
    assert not a.value.flags.writeable
    assert not mech.release_value([102.18]).seeded


# -- noise amount ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sensitivity, variance", [(6.125, 4.5), (2.5, 2.0), (1.0, 0.0)])
def test_analytic_less_noise_than_classic(sensitivity, variance):
    cal = scalar_calibration(sensitivity, variance)
    for epsilon in (0.3, 0.9):
        analytic = APGM(cal, epsilon=epsilon, delta=1e-3)
        classic = APGM(cal, epsilon=epsilon, delta=1e-3, gaussian_calibration="classic")
        assert analytic.sigma2 < classic.sigma2
        assert analytic.sigma2 == pytest.approx(expected_sigma2(sensitivity, variance, epsilon, 1e-3, "analytic"), rel=1e-12)
        assert classic.sigma2 == pytest.approx(expected_sigma2(sensitivity, variance, epsilon, 1e-3, "classic"), rel=1e-12)
    with pytest.warns(bp.PrivacyAssumptionWarning):
        classic1 = APGM(cal, epsilon=1.0, delta=1e-3, gaussian_calibration="classic")
    assert APGM(cal, epsilon=1.0, delta=1e-3).sigma2 < classic1.sigma2


def test_no_noise_when_variance_covers_sensitivity():
    """F3 of §4.2 with the analytic radius: (0.075 · 2.5747)² ≈ 0.037 < Var = 0.08."""
    mech = APGM(scalar_calibration(0.075, 0.08), epsilon=1.0, delta=1e-3)
    assert (0.075 / gaussian_radius(1.0, 1e-3)) ** 2 < 0.08
    assert mech.sigma2 == 0.0
    assert mech.noiseless
    np.testing.assert_array_equal(mech.noise_cov, [[0.0]])
    release = mech.release_value([98.58], rng=1)
    assert release.value[0] == 98.58


def test_no_noise_when_means_equal():
    cal = scalar_calibration(0.0, 0.0)
    mech = APGM(cal, epsilon=0.1, delta=1e-6)
    assert mech.sigma2 == 0.0 and mech.noiseless


def _cov_with_eigenvalues(eigenvalues, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(eigenvalues), len(eigenvalues))))
    return q @ np.diag(eigenvalues) @ q.T


def test_vector_query_uses_l2_sensitivity_and_smallest_eigenvalue():
    """k = 3: σ² = max(0, (‖μ_a − μ_b‖₂/r*)² − min(λ_min(Σ_a), λ_min(Σ_b))), noise σ² I.

    The covariances are built from known eigenvalues (smallest 0.7 and 0.4),
    so λ_min is known without an eigen-solver.
    """
    a = bp.DistributionSecret("p_female", 0.3)
    b = bp.DistributionSecret("p_female", 0.6)
    mu_a = np.array([10.0, -2.0, 5.0])
    mu_b = np.array([11.0, 0.0, 3.0])  # difference (−1, −2, 2): ‖·‖₂ = 3
    cov_a = _cov_with_eigenvalues([0.7, 2.0, 9.0], seed=1)
    cov_b = _cov_with_eigenvalues([0.4, 1.0, 3.0], seed=2)
    cal = bp.Calibration.from_moments({a: mu_a, b: mu_b}, {a: cov_a, b: cov_b}, bp.SecretPair(a, b))
    for epsilon, delta in [(1.0, 1e-5), (0.5, 1e-3), (3.0, 1e-8)]:
        mech = APGM(cal, epsilon=epsilon, delta=delta, covariance="equal")  # the paper's formula
        r = gaussian_radius(epsilon, delta)
        expected = max(0.0, (3.0 / r) ** 2 - 0.4)
        assert expected > 0
        assert mech.sigma2 == pytest.approx(expected, rel=1e-10)
        np.testing.assert_allclose(mech.noise_cov, expected * np.eye(3), rtol=1e-10)
    # a large enough covariance absorbs all noise
    big = bp.Calibration.from_moments({a: mu_a, b: mu_b}, {a: 1e4 * cov_a, b: 1e4 * cov_b}, bp.SecretPair(a, b))
    assert APGM(big, epsilon=1.0, delta=1e-5, covariance="equal").sigma2 == 0.0
    # the covariances differ, so the default calibrates for unequal covariances (same shape σ²I)
    honest = APGM(cal, epsilon=1.0, delta=1e-5)
    assert honest.covariance_mode == "unequal" and "equal_covariance" not in honest.guarantee.assumptions
    np.testing.assert_allclose(honest.noise_cov, honest.sigma2 * np.eye(3), rtol=0)
    assert honest.privacy_curve([1.0])[0] <= 1e-5
    assert APGM(cal, epsilon=1.0, delta=1e-5, covariance="equal").privacy_curve([1.0])[0] > 1e-5


def test_several_pairs_take_the_worst_pair():
    """σ² is the maximum over pairs of the per-pair requirement."""
    s = [bp.DistributionSecret("phi", v) for v in (0.0, 1.0, 2.0)]
    means = {s[0]: [0.0], s[1]: [1.0], s[2]: [4.0]}
    covs = {s[0]: 1.0, s[1]: 1.0, s[2]: 1.0}
    pairs = bp.all_pairs(s)
    cal = bp.Calibration.from_moments(means, covs, pairs)
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    r = gaussian_radius(1.0, 1e-3)
    assert mech.sigma2 == pytest.approx((4.0 / r) ** 2 - 1.0, rel=1e-12)
    assert len(mech.pair_table) == 3


# -- guarantee ------------------------------------------------------------------------------------


def test_guarantee_from_moments():
    mech = APGM(scalar_calibration(2.5, 2.0), epsilon=0.7, delta=1e-4)
    g = mech.guarantee
    assert isinstance(g, bp.Guarantee)
    assert (g.epsilon, g.delta, g.confidence) == (0.7, 1e-4, 1.0)
    assert "gaussian_query" in g.assumptions and "equal_covariance" in g.assumptions
    assert "estimated_moments" not in g.assumptions
    assert "Algorithm 1" in g.theorem
    with pytest.raises(AttributeError):
        g.epsilon = 2.0  # frozen


def test_guarantee_plug_in_calibration():
    """A plug-in calibration (confidence=None) gives confidence None and 'estimated_moments'."""
    rng = np.random.default_rng(3)
    samples = np.stack([rng.normal(100.0, 1.5, size=(20_000, 1)), rng.normal(102.5, 1.5, size=(20_000, 1))])
    cal = calibration_from_samples(samples, (LOW, HIGH), (PAIR,), None, confidence=None)
    mech = APGM(cal, epsilon=1.0, delta=1e-3, accountant="gaussian")
    g = mech.guarantee
    assert g.confidence is None
    assert "estimated_moments" in g.assumptions
    assert {"gaussian_query", "equal_covariance"} <= set(g.assumptions)
    # plug-in: the bounds are the estimates
    est_diff = abs(samples[1].mean() - samples[0].mean())
    est_var = min(samples[0].var(ddof=1), samples[1].var(ddof=1))
    assert mech.sigma2 == pytest.approx(expected_sigma2(est_diff, est_var, 1.0, 1e-3, "analytic"), rel=1e-10)


def test_guarantee_sampled_calibration_is_more_conservative():
    """With confidence 0.95 the bounds widen: more noise than plug-in, confidence recorded."""
    rng = np.random.default_rng(4)
    samples = np.stack([rng.normal(100.0, 1.5, size=(20_000, 1)), rng.normal(102.5, 1.5, size=(20_000, 1))])
    plug = APGM(calibration_from_samples(samples, (LOW, HIGH), (PAIR,), None, confidence=None), epsilon=1.0, delta=1e-3)
    conf = APGM(calibration_from_samples(samples, (LOW, HIGH), (PAIR,), None, confidence=0.95), epsilon=1.0, delta=1e-3)
    assert conf.sigma2 > plug.sigma2
    assert conf.guarantee.confidence == 0.95
    assert "estimated_moments" not in conf.guarantee.assumptions


# -- ledger ----------------------------------------------------------------------------------------


class RefusingLedger:
    def __init__(self):
        self.calls = 0

    def charge(self, mechanism, *, seeded=None, dataset=None, independent=False):
        self.calls += 1
        raise bp.BudgetExceededError("budget 'hospital' exceeded: 1.0 of 1.0 already spent")


class AcceptingLedger:
    def __init__(self):
        self.charged = []

    def charge(self, mechanism, *, seeded=None, dataset=None, independent=False):
        self.charged.append(mechanism)


def test_budget_exceeded_raises_before_any_noise():
    mech = APGM(scalar_calibration(2.5, 2.0), epsilon=1.0, delta=1e-3)
    gen = np.random.default_rng(11)
    state = copy.deepcopy(gen.bit_generator.state)
    ledger = RefusingLedger()
    with pytest.raises(bp.BudgetExceededError, match="exceeded"):
        mech.release_value([100.0], rng=gen, ledger=ledger)
    assert ledger.calls == 1
    assert gen.bit_generator.state == state  # no noise drawn


def test_state_check_detects_drawn_noise():
    """Twin of the check above: an accepted release does advance the generator."""
    mech = APGM(scalar_calibration(2.5, 2.0), epsilon=1.0, delta=1e-3)
    gen = np.random.default_rng(11)
    state = copy.deepcopy(gen.bit_generator.state)
    ledger = AcceptingLedger()
    mech.release_value([100.0], rng=gen, ledger=ledger)
    assert ledger.charged == [mech]
    assert gen.bit_generator.state != state


def test_budget_exceeded_on_release_of_a_dataset():
    import pandas as pd

    query = bp.mean("weight")
    cal = bp.Calibration.from_moments({LOW: [100.0], HIGH: [102.5]}, {LOW: 2.0, HIGH: 2.0}, PAIR, query, n_records=2)
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    gen = np.random.default_rng(12)
    state = copy.deepcopy(gen.bit_generator.state)
    with pytest.raises(bp.BudgetExceededError):
        mech.release(pd.DataFrame({"weight": [150.0, 170.0]}), rng=gen, ledger=RefusingLedger())
    assert gen.bit_generator.state == state
    release = mech.release(pd.DataFrame({"weight": [150.0, 170.0]}), rng=gen)
    assert release.query == "mean(weight)"
    assert release.component_names == ("mean(weight)",)


def test_few_draws_give_little_credit_but_a_psd_lower_bound():
    """With 8 heavy-tailed draws the multiplicative Loewner lower bound Σ̂/(1 + η)
    is far below Σ̂ but never indefinite; APGM credits exactly its smallest
    eigenvalue: σ² = (Δ/r*)² − λ_min(Σ_lo)."""
    a = bp.DistributionSecret("phi", 1.0)
    b = bp.DistributionSecret("phi", 2.0)
    rng = np.random.default_rng(0)
    samples = np.stack([rng.standard_t(3, (8, 2)), rng.standard_t(3, (8, 2)) + 0.5])
    cal = calibration_from_samples(samples, (a, b), (bp.SecretPair(a, b),), None, confidence=0.95)
    lows = [cal.cov_lower(s) for s in (a, b)]
    for s, low in zip((a, b), lows):
        assert np.linalg.eigvalsh(low).min() > 0
        ratio = low / cal.covs[s]
        assert np.allclose(ratio, ratio[0, 0]) and ratio[0, 0] < 0.5
    mech = APGM(cal, epsilon=1.0, delta=1e-3, accountant="gaussian")
    lam = min(np.linalg.eigvalsh(low).min() for low in lows)
    expected = max(0.0, (cal.sensitivity(2, bound=True) / gaussian_radius(1.0, 1e-3)) ** 2 - lam)
    assert mech.sigma2 == pytest.approx(expected, rel=1e-12)


# -- unequal covariances ---------------------------------------------------------------------------
# Nothing here is random except the sampled calibration, whose bounds hold with probability
# ≥ confidence = 0.999 (α = 1e-3); the fixed seed makes the test deterministic.
from bayespriv.mechanisms import DauM, EigM, OptimalGaussian  # noqa: E402

from tests._gaussian_oracles import two_sided_delta as mp_delta  # noqa: E402


def unequal_variance_calibration() -> bp.Calibration:
    s1, s2 = bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8)
    return bp.Calibration.from_moments({s1: np.array([0.0]), s2: np.array([1.0])},
                                       {s1: np.array([[1.0]]), s2: np.array([[25.0]])}, [bp.SecretPair(s1, s2)])


@pytest.mark.parametrize("mech_cls", [APGM, EigM, DauM, OptimalGaussian])
def test_default_meets_delta_for_unequal_covariances(mech_cls):
    """Means 0 vs 1, variances 1 vs 25, ε = 1, δ = 1e-3: the default calibration meets δ by an
    independent mpmath computation, its half-noise twin does not (same check), and the
    equal-covariance noise (σ² = 5.63) gives δ ≈ 0.24 with a failed equal_covariance check."""
    cal = unequal_variance_calibration()
    mech = mech_cls(cal, epsilon=1.0, delta=1e-3)
    assert mech.covariance_mode == "unequal"
    g = mech.guarantee
    assert "gaussian_query" in g.assumptions and "equal_covariance" not in g.assumptions
    assert g.failed_assumptions == ()
    s2 = float(mech.noise_cov[0, 0])

    def meets(noise_var):
        return mp_delta(1.0, 1.0, 25.0 + noise_var, 1.0 + noise_var) <= 1e-3

    assert meets(s2) and not meets(s2 / 2)
    assert s2 == pytest.approx(98.2633, rel=1e-5)
    assert mech.privacy_curve([1.0])[0] <= 1e-3
    old = mech_cls(cal, epsilon=1.0, delta=1e-3, covariance="equal")
    assert old.covariance_mode == "equal" and old.guarantee.failed_assumptions == ("equal_covariance",)
    assert old.noise_cov[0, 0] == pytest.approx(5.6289, rel=1e-4)
    assert round(mp_delta(1.0, 1.0, 25.0 + old.noise_cov[0, 0], 1.0 + old.noise_cov[0, 0]), 2) == 0.24
    assert old.privacy_curve([1.0])[0] == pytest.approx(0.2416, rel=1e-3)


def test_covariance_argument_is_validated():
    with pytest.raises(bp.ValidationError, match="covariance must be one of .*'unequal'.*; got 'different'"):
        APGM(unequal_variance_calibration(), epsilon=1.0, delta=1e-3, covariance="different")


def test_equal_moments_keep_the_equal_covariance_calibration():
    mech = APGM(scalar_calibration(2.5, 2.0), epsilon=1.0, delta=1e-3)
    assert mech.covariance_mode == "equal" and "equal_covariance" in mech.guarantee.assumptions
    unequal = APGM(scalar_calibration(2.5, 2.0), epsilon=1.0, delta=1e-3, covariance="unequal")
    assert unequal.sigma2 == pytest.approx(mech.sigma2, rel=1e-8)  # same answer by the exact curve
    assert "equal_covariance" not in unequal.guarantee.assumptions


def test_sampled_unequal_covariances_hold_over_the_confidence_box():
    """F | a ~ N(0, 1), F | b ~ N(1, 4), 20 000 draws each, confidence 0.999: the equal_covariance
    check fails, so APGM calibrates over the box of means and covariances; with probability
    ≥ 0.999 (α = 1e-3) the box holds the truth, and then the true δ at ε meets the target
    (exact 1-D computation). Half the noise does not (twin)."""
    rng = np.random.default_rng(2024)
    xa, xb = rng.normal(0.0, 1.0, 20_000), 1.0 + rng.normal(0.0, 2.0, 20_000)
    s1, s2 = bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8)
    cal = calibration_from_samples(np.stack([xa[:, None], xb[:, None]]), (s1, s2), (bp.SecretPair(s1, s2),), None,
                                   confidence=0.999)
    mech = APGM(cal, epsilon=1.0, delta=1e-3, accountant="gaussian")
    assert mech.covariance_mode == "unequal" and "equal_covariance" not in mech.guarantee.assumptions
    s = mech.sigma2
    assert mp_delta(1.0, -1.0, 1.0 + s, 4.0 + s) <= 1e-3
    assert mp_delta(1.0, -1.0, 1.0 + s / 2, 4.0 + s / 2) > 1e-3
    plug_in = APGM(calibration_from_samples(np.stack([xa[:, None], xb[:, None]]), (s1, s2), (bp.SecretPair(s1, s2),),
                                            None, confidence=None), epsilon=1.0, delta=1e-3, covariance="unequal",
                   accountant="gaussian")
    assert plug_in.sigma2 < s  # the box costs noise
    assert mech.privacy_curve([0.5, 1.0, 2.0])[1] <= 1e-3
