"""Monte-Carlo standard errors of the sensitivity, the convergence view and draws_for_slack.

Exact parts are checked against NumPy computations written out here; the two
statistical checks state their false-failure probability α and derive their
tolerance, and each has a twin (a deliberately wrong formula) that they catch.
"""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
from scipy import stats

import bayespriv as bp
from bayespriv.calibration.convergence import Convergence, convergence, draws_for_slack
from bayespriv.calibration.engine import calibration_from_samples
from bayespriv.errors import ValidationError

matplotlib.use("Agg")
ALPHA = 1e-3
Z = stats.norm.isf(ALPHA / 2)  # two-sided, per check
SA, SB = bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 1.0)
PAIR = bp.SecretPair(SA, SB)


def _engine_calibration(n_draws: int, rng: int, confidence=0.95) -> bp.Calibration:
    model = bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.5], [0.5, 2.0]], ["s", "y"], 20)
    return bp.calibrate(model, PAIR, bp.mean("y"), n_draws=n_draws, rng=rng, confidence=confidence)


# -- exact ----------------------------------------------------------------------------------------
def test_convergence_prefixes_match_direct_numpy_and_end_at_the_calibration():
    cal = _engine_calibration(500, rng=3)
    conv = cal.convergence(n_points=8)
    assert isinstance(conv, Convergence) and conv.n[-1] == 500 and np.all(np.diff(conv.n) > 0)
    assert conv.n[0] == bp.calibration.engine.minimum_draws(0.95, 1, 4)[0]  # 2 secrets x (1 mean + 1 variance)
    assert conv.sensitivity[-1] == cal.sensitivity(2) and conv.sensitivity_bound[-1] == cal.sensitivity(2, bound=True)
    assert conv.variance[-1] == np.min(cal.variance()) and conv.variance_bound[-1] == np.min(cal.variance(bound=True))
    x = cal.sample_array[:, :, 0]
    for n, sens, slack, var in zip(conv.n, conv.sensitivity, conv.slack, conv.variance):
        a, b = x[0, :n], x[1, :n]
        assert sens == pytest.approx(abs(a.mean() - b.mean()), rel=1e-12)
        # k = 1: bound − estimate = z (se_a + se_b) with the calibration's own z
        assert slack == pytest.approx(cal.z * (a.std(ddof=1) + b.std(ddof=1)) / math.sqrt(n), rel=1e-9)
        assert var == pytest.approx(min(a.var(ddof=1), b.var(ddof=1)), rel=1e-12)
    assert list(conv.to_frame().columns)[:3] == ["sensitivity", "sensitivity bound", "slack"]


def test_sensitivity_standard_errors_in_summary_and_repr():
    cal = _engine_calibration(300, rng=1)
    x = cal.sample_array[:, :, 0]
    se = math.sqrt(x[0].var(ddof=1) / 300 + x[1].var(ddof=1) / 300)
    assert cal.pair_sensitivity_se(2)[0] == pytest.approx(se, rel=1e-12)
    assert cal.pair_sensitivity_se(1)[0] == pytest.approx(se, rel=1e-12)
    assert cal.sensitivity_se() == pytest.approx(se, rel=1e-12)
    table = cal.summary()
    assert list(table.columns) == ["L1", "L1 s.e.", "L1 bound", "L2", "L2 s.e.", "L2 bound", "W∞", "W∞ bound"]
    # W∞ of two equal-size samples = the largest gap of the quantile coupling (independent computation)
    assert table["W∞"].iloc[0] == pytest.approx(np.abs(np.sort(x[0]) - np.sort(x[1])).max(), rel=1e-12)
    assert table["W∞ bound"].iloc[0] >= table["W∞"].iloc[0]
    assert table["L2 s.e."].iloc[0] == pytest.approx(se, rel=1e-12)
    i = int(np.argmin(np.diagonal(cal.cov_array, axis1=1, axis2=2)[:, 0]))
    assert cal.variance_se()[0] == cal.cov_se[i, 0, 0] and "variance s.e." in cal.moments_table().columns
    text = repr(cal)
    assert f"(s.e. {se:.2g}, bound" in text and "smallest variance=" in text
    exact = bp.Calibration.from_moments({SA: [0.0], SB: [1.0]}, {SA: 1.0, SB: 1.0}, PAIR)
    assert exact.sensitivity_se() == 0.0 and np.all(exact.variance_se() == 0.0)


# -- statistical ------------------------------------------------------------------------------------
R_REPLICATES, N_REP = 400, 200
SIGMA_CORR = np.array([[1.0, 0.9], [0.9, 1.0]])


def _replicate_ratio(se_of) -> float:
    """sd over replicates of the L2 sensitivity estimate / mean reported s.e. (k = 2, correlated components)."""
    rng = np.random.default_rng(20261124)
    chol = np.linalg.cholesky(SIGMA_CORR)
    means = np.array([[0.0, 0.0], [1.0, 1.0]])
    draws = rng.standard_normal((R_REPLICATES, 2, N_REP, 2)) @ chol.T + means[None, :, None, :]
    est, ses = [], []
    for r in range(R_REPLICATES):
        cal = calibration_from_samples(draws[r], (SA, SB), (PAIR,), None, confidence=None)
        est.append(cal.sensitivity(2))
        ses.append(se_of(cal))
    return float(np.std(est, ddof=1) / np.mean(ses))


def _tolerance_replicates() -> float:
    """α = 1e-3: the sample sd of R normal estimates has relative sd 1/√(2(R − 1)); the mean of the R reported
    s.e. (each with relative sd ≈ 1/√(2 N_REP)) adds 1/√(2 N_REP R); the delta method's curvature term is
    O(se²/‖d‖) ≈ 1% of se here (‖d‖ = √2, se = √(3.8/200) = 0.14), added in full."""
    rel = math.sqrt(1 / (2 * (R_REPLICATES - 1)) + 1 / (2 * N_REP * R_REPLICATES))
    return Z * rel + 0.01


def test_sensitivity_se_matches_the_spread_over_replicates():
    ratio = _replicate_ratio(lambda cal: cal.sensitivity_se(2))
    assert abs(ratio - 1) <= _tolerance_replicates(), ratio


def test_twin_ignoring_the_correlation_between_components_is_caught():
    """Broken s.e.: diagonal variances only (components treated as independent): 1/√1.9 too small."""
    def diagonal_only(cal):
        d = cal.mean_array[0] - cal.mean_array[1]
        g = d / np.linalg.norm(d)
        var = np.diagonal(cal.cov_array, axis1=1, axis2=2).sum(axis=0) / cal.n_draws
        return math.sqrt(float(g**2 @ var))
    ratio = _replicate_ratio(diagonal_only)
    assert abs(ratio - 1) > _tolerance_replicates(), ratio


N_FIRST = 400


def _slack_after(predict) -> tuple[float, float, int]:
    """Calibrate with N_FIRST draws, predict the draws for half its slack, calibrate again with them."""
    first = _engine_calibration(N_FIRST, rng=11)
    target = (first.sensitivity(2, bound=True) - first.sensitivity(2)) / 2
    n2 = predict(first, target)
    second = _engine_calibration(n2, rng=12)
    return second.sensitivity(2, bound=True) - second.sensitivity(2), target, n2


def _tolerance_slack(n1: int, n2: int) -> float:
    """α = 1e-3 on log(slack₂ / target): k = 1, slack = z (ŝ_a + ŝ_b)/√n, Gaussian F: each ŝ has relative sd
    1/√(2(n − 1)), their sum 1/(2√(n − 1)); two independent calibrations; the ceiling adds < 1/n₂."""
    return Z * math.sqrt(1 / (4 * (n1 - 1)) + 1 / (4 * (n2 - 1))) + 1 / n2


def test_draws_for_slack_reaches_the_target():
    slack, target, n2 = _slack_after(lambda cal, t: draws_for_slack(cal, t))
    assert 3.2 * N_FIRST < n2 < 4.8 * N_FIRST
    assert abs(math.log(slack / target)) <= _tolerance_slack(N_FIRST, n2), (slack, target, n2)
    first = _engine_calibration(N_FIRST, rng=11)
    assert first.draws_for_slack(target) == n2 == first.convergence(n_points=3).draws_for_slack(target)


def test_twin_slack_scaling_as_one_over_n_is_caught():
    """Broken prediction: slack ∝ 1/n (n·slack/target): half the draws needed, slack √2 too large."""
    slack, target, n2 = _slack_after(
        lambda cal, t: int(math.ceil(cal.n_draws * (cal.sensitivity(2, bound=True) - cal.sensitivity(2)) / t)))
    assert abs(math.log(slack / target)) > _tolerance_slack(N_FIRST, n2), (slack, target, n2)


# -- errors and the plot -------------------------------------------------------------------------------
def test_errors_name_the_parameter():
    cal = _engine_calibration(200, rng=2)
    with pytest.raises(ValidationError, match="target"):
        draws_for_slack(cal, -1.0)
    with pytest.raises(ValidationError, match="slack"):
        draws_for_slack(_engine_calibration(200, rng=2, confidence=None), 0.01)
    exact = bp.Calibration.from_moments({SA: [0.0], SB: [1.0]}, {SA: 1.0, SB: 1.0}, PAIR)
    with pytest.raises(ValidationError, match="sampled calibration"):
        convergence(exact)
    with pytest.raises(ValidationError, match="n_points"):
        convergence(cal, n_points=1)


def test_plot_convergence_draws_bound_slack_and_target():
    cal = _engine_calibration(400, rng=5)
    target = (cal.sensitivity(2, bound=True) - cal.sensitivity(2)) / 3
    axes = bp.diagnostics.plot_convergence(cal, target=target, n_points=6)
    gids = {line.get_gid() for ax in axes for line in ax.get_lines()}
    assert gids == {"estimate", "bound", "slack", "sqrt-n", "target", "draws-for-target"}
    (marker,) = [line for line in axes[1].get_lines() if line.get_gid() == "draws-for-target"]
    assert marker.get_xdata()[0] == cal.draws_for_slack(target)
    matplotlib.pyplot.close("all")
