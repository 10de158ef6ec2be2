"""Wasserstein (Theorem 3.1) and Approximate Wasserstein (Theorems 3.2 / 3.3) mechanisms.

Statistical checks state their false-failure probability α; each has a broken
twin (half the noise) that the same check catches.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.calibration import Calibration, calibration_from_samples
from bayespriv.calibration.w_distances import wasserstein_bounds
from bayespriv.mechanisms.wasserstein import ApproxWasserstein, Wasserstein

A = bp.DistributionSecret("theta", 0.0)
B = bp.DistributionSecret("theta", 1.0)
PAIR = bp.SecretPair(A, B)
SURE = 1 - 1e-6


def _identity(batch):
    return batch["x"][:, :1]


QUERY = bp.Query(_identity, ["x"], "F")


def cal_from(samples_a, samples_b, confidence=0.95) -> Calibration:
    arr = np.stack([np.asarray(samples_a, float), np.asarray(samples_b, float)])
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return calibration_from_samples(arr, (A, B), (PAIR,), QUERY, confidence=confidence)


def uniform_cal(n=20_000, seed=1, confidence=0.95) -> Calibration:
    """F | A ~ U(0, 1), F | B ~ U(0.3, 1.3): W∞ = 0.3."""
    g = np.random.default_rng(seed)
    return cal_from(g.uniform(0, 1, n), g.uniform(0.3, 1.3, n), confidence)


def normal_cal(n=20_000, seed=3, confidence=SURE) -> Calibration:
    """F | A ~ N(0, 1), F | B ~ N(0, 2²): W∞ = ∞."""
    g = np.random.default_rng(seed)
    return cal_from(g.normal(0, 1, n), g.normal(0, 2, n), confidence)


# -- noise and guarantee -------------------------------------------------------------------------------------


def test_wasserstein_noise_scale_is_bound_over_epsilon():
    cal = uniform_cal()
    for epsilon in (0.5, 1.0, 3.0):
        mech = Wasserstein(cal, epsilon=epsilon, support=(0.0, 1.3))
        bound = wasserstein_bounds(cal, support=(0.0, 1.3)).bound
        assert 0.3 < bound < 0.36
        assert mech.sensitivity == bound
        np.testing.assert_array_equal(mech.noise_scale, [bound / epsilon])
        np.testing.assert_array_equal(mech.noise_basis, [[1.0]])
        np.testing.assert_allclose(mech.noise_cov, [[2 * (bound / epsilon) ** 2]], rtol=1e-15)
        assert mech.expected_abs_error[0] == pytest.approx(bound / epsilon, rel=1e-15)
        assert mech.noise == "laplace"
    assert mech.pair_table.loc[PAIR.label, "bound"] == mech.sensitivity
    assert mech.pair_table.loc[PAIR.label, "estimate"] <= mech.sensitivity
    g = mech.guarantee
    assert (g.epsilon, g.delta, g.confidence, g.assumptions) == (3.0, 0.0, 0.95, ())
    assert "Theorem 3.1" in g.theorem


def test_explicit_confidence_and_plug_in():
    cal = uniform_cal()
    strict = Wasserstein(cal, epsilon=1.0, support=(0.0, 1.3), confidence=0.999)
    default = Wasserstein(cal, epsilon=1.0, support=(0.0, 1.3))
    assert strict.guarantee.confidence == 0.999 and strict.sensitivity > default.sensitivity
    plug = Wasserstein(uniform_cal(confidence=None), epsilon=1.0)  # plug-in needs no support
    assert plug.guarantee.confidence is None and plug.guarantee.assumptions == ("estimated_moments",)
    assert plug.noise_scale[0] == plug.pair_table["estimate"].max() == plug.pair_table["bound"].max()
    assert plug.sensitivity < default.sensitivity


def test_release_noise_is_the_declared_laplace():
    """A seeded release is exactly the exact sampler's grid release of the declared Laplace scale
    (bits from the seed), and that plan keeps the scale up to its tiny inflation."""
    from bayespriv.noise import BitSource, plan_laplace

    mech = Wasserstein(uniform_cal(), epsilon=0.8, support=(0.0, 1.3))
    plan = plan_laplace(mech.noise_scale, mech.noise_basis)
    assert 1.0 <= plan.inflation <= 1.0 + 2.0**-50
    for seed in (0, 1, 2):
        rel = mech.release_value([0.4], rng=seed)
        expected = plan.release(np.array([0.4]), BitSource.from_rng(seed))[0]
        assert rel.value[0] == expected
        assert rel.seeded and rel.mechanism == "Wasserstein" and rel.guarantee == mech.guarantee


# -- statistical privacy check -----------------------------------------------------------------------------------------

N_OUT = 400_000
ALPHA = 1e-6
EDGES = np.concatenate([[-np.inf], np.arange(-1.5, 2.81, 0.1), [np.inf]])


def max_log_ratio_lower_bound(scale: float, seed: int) -> float:
    """Lower confidence bound on max over bins and both directions of ln(P_a(bin)/P_b(bin)).

    Outputs F + Lap(scale) with F drawn from the true U(0, 1) / U(0.3, 1.3),
    N_OUT per secret, histogrammed on 45 bins. For each bin and direction, a
    one-sided Clopper–Pearson lower bound of the numerator and upper bound of
    the denominator, each at level α/(4·bins), so by the union bound all hold
    together with probability ≥ 1 − α. On that event the returned value is ≤
    the true largest log ratio, which for an ε-private mechanism is ≤ ε: a
    correct mechanism fails ``value ≤ ε`` with probability ≤ α = 1e-6.
    """
    g = np.random.default_rng(seed)
    ya = g.uniform(0.0, 1.0, N_OUT) + g.laplace(0.0, scale, N_OUT)
    yb = g.uniform(0.3, 1.3, N_OUT) + g.laplace(0.0, scale, N_OUT)
    ca, _ = np.histogram(ya, EDGES)
    cb, _ = np.histogram(yb, EDGES)
    level = ALPHA / (4 * ca.size)
    lower = lambda k: np.where(k > 0, stats.beta.ppf(level, np.maximum(k, 1), N_OUT - k + 1), 0.0)
    upper = lambda k: np.where(k < N_OUT, stats.beta.ppf(1 - level, k + 1, np.maximum(N_OUT - k, 1)), 1.0)
    with np.errstate(divide="ignore"):
        ratios = np.concatenate([np.log(lower(ca) / upper(cb)), np.log(lower(cb) / upper(ca))])
    return float(ratios.max())


def test_histogram_likelihood_ratio_within_epsilon():
    """ε = 1: the released distributions' bin probabilities differ by at most
    e^ε (true worst ratio e^{0.3/W} ≈ e^{0.91} in the tails); α = 1e-6."""
    mech = Wasserstein(uniform_cal(), epsilon=1.0, support=(0.0, 1.3))
    assert max_log_ratio_lower_bound(mech.noise_scale[0], seed=10) <= mech.epsilon


def test_histogram_likelihood_ratio_catches_half_noise():
    """Twin: half the scale makes the tail ratio e^{0.6/W} ≈ e^{1.8}; with
    400 000 outputs per secret the lower confidence bound exceeds ε = 1."""
    mech = Wasserstein(uniform_cal(), epsilon=1.0, support=(0.0, 1.3))
    assert max_log_ratio_lower_bound(mech.noise_scale[0] / 2, seed=10) > mech.epsilon


# -- unbounded F: Wasserstein refuses, ApproxWasserstein trims -------------------------------------------------------


def test_normals_refused_by_wasserstein():
    with pytest.raises(bp.errors.ValidationError, match="ApproxWasserstein"):
        Wasserstein(normal_cal(), epsilon=1.0)


def test_normals_approx_wasserstein_depends_on_delta():
    """Exact δ-trimmed W∞ of N(0,1) vs N(0, 2²) is Φ⁻¹(1 − δ/2); the bound
    (confidence 1 − 1e-6) is above it, and smaller δ gives more noise."""
    cal = normal_cal()
    scales = []
    for delta in (0.3, 0.2, 0.1):
        mech = ApproxWasserstein(cal, epsilon=2.0, delta=delta)
        exact = stats.norm.ppf(1 - delta / 2)
        assert exact <= mech.sensitivity < 1.5 * exact
        assert mech.noise_scale[0] == mech.sensitivity / 2.0
        assert mech.method == "quantile"
        g = mech.guarantee
        assert (g.epsilon, g.delta, g.confidence, g.assumptions) == (2.0, delta, SURE, ())
        assert "Theorem 3.2" in g.theorem
        scales.append(mech.noise_scale[0])
    assert scales[0] < scales[1] < scales[2]


def test_approx_refuses_when_delta_is_below_the_dkw_band():
    with pytest.raises(bp.errors.ValidationError, match="delta must exceed"):
        ApproxWasserstein(normal_cal(n=2000), epsilon=1.0, delta=0.01)


def test_approx_with_support_and_mean_deviation():
    """With a declared support even a tiny δ is finite (never above W∞'s bound);
    method='mean_deviation' on k = 1 follows Theorem 3.3."""
    cal = uniform_cal()
    w = Wasserstein(cal, epsilon=1.0, support=(0.0, 1.3))
    tiny = ApproxWasserstein(cal, epsilon=1.0, delta=1e-9, support=(0.0, 1.3))
    assert tiny.sensitivity <= w.sensitivity
    md = ApproxWasserstein(cal, epsilon=1.0, delta=0.05, method="mean_deviation")
    table = md.pair_table
    assert md.sensitivity == pytest.approx(table["mean term"].iloc[0] + table["deviation term"].iloc[0], rel=1e-12)
    assert "monte_carlo_clt" in md.guarantee.assumptions and "3.3" in md.guarantee.theorem


# -- several components -------------------------------------------------------------------------------------------------


def _bivariate_cal():
    g = np.random.default_rng(9)
    return cal_from(g.normal([0.0, 0.0], [1.0, 2.0], (5000, 2)), g.normal([1.0, -0.5], [1.5, 1.0], (5000, 2)))


def test_vector_query_refused_by_wasserstein_served_by_theorem_3_3():
    cal = _bivariate_cal()
    with pytest.raises(bp.errors.ValidationError, match="ApproxWasserstein"):
        Wasserstein(cal, epsilon=1.0, support=(-100.0, 100.0))
    mech = ApproxWasserstein(cal, epsilon=0.5, delta=0.05)
    bound = wasserstein_bounds(cal, delta=0.05).bound
    assert mech.method == "mean_deviation" and mech.sensitivity == bound
    np.testing.assert_array_equal(mech.noise_scale, [bound / 0.5] * 2)
    np.testing.assert_array_equal(mech.noise_basis, np.eye(2))
    g = mech.guarantee
    assert (g.delta, g.confidence, g.assumptions) == (0.05, 0.95, ("monte_carlo_clt",))
    with pytest.raises(ValueError, match="one-dimensional"):
        ApproxWasserstein(cal, epsilon=0.5, delta=0.05, method="quantile")


@dataclasses.dataclass(frozen=True, eq=False)
class FamilyCalibration(Calibration):
    """Stand-in for the coming Calibration.members."""

    members: tuple = ()


def test_family_noise_covers_every_member():
    g = np.random.default_rng(8)
    m0 = cal_from(g.uniform(0, 1, 2000), g.uniform(0.2, 1.2, 2000))
    m1 = cal_from(g.uniform(0, 1, 2000), g.uniform(0.5, 1.5, 2000))
    fam = FamilyCalibration(**{f.name: getattr(m0, f.name) for f in dataclasses.fields(Calibration)}, members=(m0, m1))
    mech = Wasserstein(fam, epsilon=1.0, support=(0.0, 1.5))
    assert mech.sensitivity == wasserstein_bounds(fam, support=(0.0, 1.5)).bound
    assert mech.sensitivity >= Wasserstein(m1, epsilon=1.0, support=(0.0, 1.5)).sensitivity
    assert mech.sensitivity > 0.5


# -- end to end --------------------------------------------------------------------------------------------------------------


def test_release_on_a_dataframe_after_calibrate():
    """Counts of 20 records with p ~ Beta(a, 5 − a): support [0, 20] is derived from the query."""

    def draw(secret, n_draws, rng):
        p = rng.beta(secret.value, 5.0 - secret.value, size=n_draws)
        return {"x": (rng.random((n_draws, 20)) < p[:, None]).astype(float)}

    model = bp.FunctionDataModel(draw, columns=["x"], n_records=20)
    pair = bp.SecretPair(bp.DistributionSecret("a", 2.0), bp.DistributionSecret("a", 3.0))
    cal = bp.calibrate(model, pair, bp.count(lambda b: b["x"] == 1.0, "x"), n_draws=5000, rng=1)
    mech = Wasserstein(cal, epsilon=1.0)
    assert 5.0 <= mech.sensitivity <= 20.0
    rel = mech.release(pd.DataFrame({"x": [1.0] * 7 + [0.0] * 13}), rng=3)
    assert rel.value.shape == (1,) and rel.guarantee.delta == 0.0
    assert rel.protected == ("a",)


# -- bad input -----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon(epsilon):
    cal = uniform_cal(n=200)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        Wasserstein(cal, epsilon=epsilon, support=(0.0, 1.3))
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        ApproxWasserstein(cal, epsilon=epsilon, delta=0.1)


def test_epsilon_of_wrong_type():
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        Wasserstein(uniform_cal(n=200), epsilon="1", support=(0.0, 1.3))


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.1, 2.0, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match=r"delta must be in the open interval \(0, 1\)"):
        ApproxWasserstein(uniform_cal(n=200), epsilon=1.0, delta=delta)


def test_no_samples_refused():
    cal = bp.Calibration.from_moments({A: [0.0], B: [1.0]}, {A: 1.0, B: 1.0}, PAIR)
    with pytest.raises(ValueError, match="from_moments"):
        Wasserstein(cal, epsilon=1.0, support=(-5, 5))
    with pytest.raises(ValueError, match="from_moments"):
        ApproxWasserstein(cal, epsilon=1.0, delta=0.1)


@pytest.mark.parametrize("support, match", [
    ((0.0, 1.3, 2.0), "support must be a pair"),
    (([0.0, 0.0], [1.3, 1.3]), r"shape \(1,\)"),
    ((1.3, 0.0), "lo <= hi"),
    ((0.0, 1.0), "support must contain every calibration draw"),
])
def test_bad_support(support, match):
    cal = uniform_cal(n=200)
    with pytest.raises(ValueError, match=match):
        Wasserstein(cal, epsilon=1.0, support=support)
    with pytest.raises(ValueError, match=match):
        ApproxWasserstein(cal, epsilon=1.0, delta=0.1, support=support)


def test_bad_method_and_confidence():
    cal = uniform_cal(n=200)
    with pytest.raises(ValueError, match="method must be one of"):
        ApproxWasserstein(cal, epsilon=1.0, delta=0.1, method="exact")
    with pytest.raises(ValueError, match="confidence must be"):
        Wasserstein(cal, epsilon=1.0, support=(0.0, 1.3), confidence=1.0)
    with pytest.raises(TypeError, match="calibration must be a bayespriv Calibration"):
        Wasserstein(object(), epsilon=1.0)


def test_wasserstein_accepts_delta_but_promises_pure_epsilon():
    mech = Wasserstein(uniform_cal(n=200), epsilon=1.0, delta=1e-5, support=(0.0, 1.3))
    assert mech.delta == 0.0 and mech.guarantee.delta == 0.0
    with pytest.raises(ValueError, match="delta must be in"):
        Wasserstein(uniform_cal(n=200), epsilon=1.0, delta=1.0, support=(0.0, 1.3))
