"""plot_calibration only reads a Calibration and draws one histogram and one fitted curve per secret."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

import bayespriv as bp
from bayespriv.diagnostics import plot_calibration
from bayespriv.errors import ValidationError


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _model():
    def sampler(secret, n_draws, rng):
        x = rng.normal(secret.value, 1.0, (n_draws, 10))
        return {"x": x, "y": rng.normal(0.0, 1.0, (n_draws, 10))}

    return bp.FunctionDataModel(sampler, columns=["x", "y"], n_records=10)


SECRETS = [bp.DatasetSecret.mean("x", v) for v in (0.0, 0.5, 2.0)]


def _calibration(query=None):
    query = query or bp.mean("x")
    return bp.calibrate(_model(), bp.all_pairs(SECRETS), query, n_draws=300, rng=0)


def _gids(artists, prefix):
    return sorted(a.get_gid() for a in artists if (a.get_gid() or "").startswith(prefix))


def test_one_histogram_and_one_fit_per_secret_of_the_worst_pair():
    cal = _calibration()
    ax = plot_calibration(cal)
    assert isinstance(ax, Axes)
    labels = sorted(s.label for s in cal.worst_pair.secrets)
    assert {s.value for s in cal.worst_pair.secrets} == {0.0, 2.0}
    assert _gids(ax.patches, "hist:") == [f"hist:{lab}" for lab in labels]
    assert _gids(ax.lines, "fit:") == [f"fit:{lab}" for lab in labels]
    # The fitted curve is the calibration's Gaussian: its peak is at the estimated mean.
    for line in ax.lines:
        if (line.get_gid() or "").startswith("fit:"):
            secret = next(s for s in cal.secrets if line.get_gid() == f"fit:{s.label}")
            x, y = line.get_data()
            mu = cal.means[secret][0]
            var = cal.covs[secret][0, 0]
            assert x[np.argmax(y)] == pytest.approx(mu, abs=(x[1] - x[0]))
            assert y.max() == pytest.approx(1 / np.sqrt(2 * np.pi * var), rel=1e-3)


def test_legend_states_the_fit_in_standard_deviations_as_the_title_does():
    cal = _calibration()
    ax = plot_calibration(cal)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    title_sd = float(ax.get_title().split("vs sd ")[1].split(",")[0])
    assert len(legend) == 2 and all("fit normal: mean " in t and ", sd " in t for t in legend)
    sds = [float(t.split(", sd ")[1]) for t in legend]
    # the sds of the legend are the square roots of the fitted variances, and the title's is the smaller
    expected = sorted(math.sqrt(cal.covs[s][0, 0]) for s in cal.worst_pair.secrets)
    np.testing.assert_allclose(sorted(sds), expected, rtol=2e-3)
    assert title_sd == pytest.approx(min(expected), rel=2e-3)


def test_chosen_secrets_and_given_axes():
    cal = _calibration()
    fig, ax = plt.subplots()
    out = plot_calibration(cal, secrets=SECRETS, ax=ax, bins=20)
    assert out is ax
    assert len(_gids(ax.patches, "hist:")) == 3 and len(_gids(ax.lines, "fit:")) == 3
    out = plot_calibration(cal, secrets=[SECRETS[1].label])
    assert len(_gids(out.patches, "hist:")) == 1


def test_several_components_give_a_figure():
    cal = _calibration(bp.stack(bp.mean("x"), bp.mean("y")))
    fig = plot_calibration(cal)
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 2
    ax = plot_calibration(cal, component="mean(y)")
    assert isinstance(ax, Axes) and ax.get_xlabel() == "mean(y)"


def test_refuses_a_calibration_without_samples():
    a, b = SECRETS[:2]
    cal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: [[1.0]], b: [[1.0]]}, bp.SecretPair(a, b))
    with pytest.raises(ValidationError, match="samples.*from_moments"):
        plot_calibration(cal)


def test_refuses_unknown_component_and_secret():
    cal = _calibration()
    with pytest.raises(ValidationError, match="component"):
        plot_calibration(cal, component="nope")
    with pytest.raises(ValidationError, match="secret"):
        plot_calibration(cal, secrets=[bp.DatasetSecret.mean("x", 9.0)])


# -- privacy curve, utility, quilt, ε table, budget and Q–Q plots -----------------------------------------------
import mpmath  # noqa: E402
import pandas as pd  # noqa: E402

from bayespriv.networks.quilts import Quilt  # noqa: E402
from bayespriv.diagnostics import (  # noqa: E402
    plot_budget,
    plot_epsilon_table,
    plot_privacy_curve,
    plot_qq,
    plot_quilt,
    plot_utility,
)
from bayespriv.errors import ParameterTypeError  # noqa: E402
from bayespriv.mechanisms import APGM, ExpM, OptimalGaussian  # noqa: E402

from tests.diagnostics import _fixtures as F  # noqa: E402


@pytest.fixture(scope="module")
def gcal():
    return F.gaussian_calibration(two_components=False)  # k = 1: the accountant integrates on a grid


def _by_gid(artists, gid):
    found = [a for a in artists if a.get_gid() == gid]
    assert len(found) == 1, (gid, [a.get_gid() for a in artists])
    return found[0]


@pytest.mark.slow
def test_privacy_curve_reads_each_mechanism_and_marks_its_guarantee():
    cal = F.gaussian_calibration(two_components=False)  # k = 1: privacy_curve is fast
    apgm = APGM(cal, epsilon=1.0, delta=1e-3)
    opt = OptimalGaussian(cal, epsilon=0.8, delta=2e-3)
    pure = ExpM(cal, epsilon=0.5, noise="laplace")
    eps = np.linspace(0.1, 3.0, 8)
    ax = plot_privacy_curve({"apgm": apgm, "opt": opt, "pure": pure}, eps)
    assert ax.get_yscale() == "log"
    for label, mech in (("apgm", apgm), ("opt", opt)):
        x, y = _by_gid(ax.lines, f"curve:{label}").get_data()
        want = mech.privacy_curve(eps)
        np.testing.assert_array_equal(x, eps)
        np.testing.assert_array_equal(np.asarray(y, dtype=float), np.where(want > 0, want, np.nan))
        g = mech.guarantee
        gx, gy = _by_gid(ax.lines, f"guarantee:{label}").get_data()
        assert (gx[0], gy[0]) == (g.epsilon, g.delta)
    vx, _ = _by_gid(ax.lines, "pure:pure").get_data()
    assert list(vx) == [0.5, 0.5]
    assert len(ax.get_legend().get_texts()) == 5
    # default grid; a single mechanism; given axes
    fig, given = plt.subplots()
    assert plot_privacy_curve(apgm, ax=given) is given
    assert _by_gid(given.lines, "curve:APGM").get_data()[0].max() == pytest.approx(2.5)
    with pytest.raises(ValidationError, match="epsilons must be"):
        plot_privacy_curve(apgm, [0.0, 1.0])
    with pytest.raises(ParameterTypeError, match="mechs must be"):
        plot_privacy_curve(42)


@pytest.mark.slow
def test_utility_is_the_noise_each_mechanism_reports(gcal):
    eps = [0.25, 1.0, 4.0]

    def picky(cal, e):  # a family that cannot be built at small ε
        if e < 0.5:
            raise bp.ValidationError(f"epsilon must be >= 0.5 here; got {e}")
        return APGM(cal, epsilon=e, delta=1e-3)

    mechs = {"APGM": lambda c, e: APGM(c, epsilon=e, delta=1e-3),
             "ExpM(L)": lambda c, e: ExpM(c, epsilon=e, noise="laplace"), "picky": picky}
    ax = plot_utility(gcal, mechs, eps)
    for label, factory in mechs.items():
        y = np.asarray(_by_gid(ax.lines, f"utility:{label}").get_data()[1], dtype=float)
        for e, got in zip(eps, y):
            if label == "picky" and e < 0.5:
                assert np.isnan(got)
                continue
            assert got == pytest.approx(math.sqrt(np.trace(factory(gcal, e).noise_cov)), rel=1e-12)
    assert any("picky (not built at 1 ε)" == t.get_text() for t in ax.get_legend().get_texts())
    ax = plot_utility(gcal, {"APGM": mechs["APGM"]}, [1.0], error="abs")
    (got,) = _by_gid(ax.lines, "utility:APGM").get_data()[1]
    sigma = math.sqrt(APGM(gcal, epsilon=1.0, delta=1e-3).noise_cov[0, 0])  # isotropic noise
    assert got == pytest.approx(float(sigma * mpmath.sqrt(2 / mpmath.pi)), rel=1e-12)
    with pytest.raises(ValidationError, match="error must be"):
        plot_utility(gcal, mechs, eps, error="rmse")


@pytest.mark.slow
def test_utility_table_is_what_the_plot_draws(gcal):
    """utility_curves builds the mechanisms (the plot only draws): its table, passed to the plot, gives the same
    lines; failures are kept per label; bad factories are refused naming the parameter."""
    from bayespriv.mechanisms.utility import utility_curves

    def picky(cal, e):
        if e < 0.5:
            raise bp.ValidationError(f"epsilon must be >= 0.5 here; got {e}")
        return APGM(cal, epsilon=e, delta=1e-3)

    table = utility_curves(gcal, {"picky": picky}, [2.0, 0.25])
    assert list(table.index) == [0.25, 2.0] and np.isnan(table["picky"].iloc[0])
    assert table["picky"].iloc[1] == math.sqrt(np.trace(APGM(gcal, epsilon=2.0, delta=1e-3).noise_cov))
    assert len(table.attrs["failures"]["picky"]) == 1 and table.attrs["error"] == "l2"
    drawn = _by_gid(plot_utility(table).lines, "utility:picky").get_data()[1]
    np.testing.assert_array_equal(np.asarray(drawn, dtype=float), table["picky"].to_numpy())
    default = utility_curves(gcal)
    assert list(default.columns) == ["APGM", "OptimalGaussian"] and len(default) == 12
    with pytest.raises(bp.ParameterTypeError, match="mechanisms must be"):
        utility_curves(gcal, {"x": 1})
    with pytest.raises(ValidationError, match="epsilons must be"):
        utility_curves(gcal, None, [0.0])


def test_quilt_sets_are_coloured_on_the_network():
    qc = F.quilt_calibration()
    ax = plot_quilt(qc, "a", {"b"})
    # a -> b -> c with Q = {b}: nearby {a} (the node alone), remote {c}
    gids = {c.get_gid(): len(c.get_offsets()) for c in ax.collections if c.get_gid()}
    assert gids == {"node": 1, "quilt": 1, "remote": 1}
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sensitive node a", "quilt X_Q", "nearby X_N",
                                                                   "remote X_R"]
    ax = plot_quilt(qc, "a", epsilon=2.0)  # Algorithm 2's choice: {b} (e ≈ 1.25 < 2, Δ = 0)
    assert qc.best("a", 2.0).quilt.quilt == {"b"} and "Q={b}" in ax.get_title()
    graph = qc.graph
    ax = plot_quilt(graph, "a", Quilt({"c"}, {"a", "b"}, set()))
    assert {c.get_gid() for c in ax.collections if c.get_gid()} == {"node", "quilt", "nearby"}
    with pytest.raises(ParameterTypeError, match="quilt must be a Quilt"):
        plot_quilt(graph, "a", {"b"})
    with pytest.raises(ValidationError, match="quilt must be given"):
        plot_quilt(qc, "a")


def test_epsilon_table_heat_map():
    table = bp.epsilon_table([bp.VariableRelease("A", 1, ["age", "sex"]),
                              bp.VariableRelease("B", 0.5, ["region", "age"], protected=["age"])])
    ax = plot_epsilon_table(table)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == table.size and texts.count("∞") == int(np.isinf(table.to_numpy()).sum()) == 2
    assert texts[:3] == ["1", "1", "0"] and texts[-3:] == ["1.5", "1", "∞"]
    image = _by_gid(ax.images, "epsilon")
    np.testing.assert_array_equal(np.ma.getmaskarray(image.get_array()), np.isinf(table.to_numpy()))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A", "B", "Total"]
    with pytest.raises(ParameterTypeError, match="table must be a pandas DataFrame"):
        plot_epsilon_table([[1.0]])


@pytest.mark.slow
def test_budget_over_time_excludes_voided_and_marks_not_established(gcal, tmp_path):
    ledger = bp.Ledger(tmp_path / "budget.sqlite")
    ledger.set_budget("x", epsilon=3.0, delta=0.01)
    df = pd.DataFrame({"x": np.zeros(10), "y": np.zeros(10)})
    for e in (0.5, 0.25, 0.75):  # on separate datasets: each charged its own ε
        APGM(gcal, epsilon=e, delta=1e-3).release(df, ledger=ledger, dataset_name=f"table-{e}")
    ledger.void(2, "test: refunded")
    skewed = APGM(F.skewed_calibration(), epsilon=0.5, delta=1e-3, accountant="gaussian")
    skewed.release(pd.DataFrame({"x": [1.0]}), ledger=ledger, options=bp.ReleaseOptions(accept_failed_assumptions=True))
    ax = plot_budget(ledger)
    _, y = _by_gid(ax.lines, "spent:x").get_data()
    np.testing.assert_allclose(y, [0.5, 1.25, 1.75])  # the voided 0.25 is not counted
    assert y[-1] == pytest.approx(ledger.spent("x")[0])
    assert _by_gid(ax.lines, "total:x").get_data()[1][0] == 3.0
    _, bad = _by_gid(ax.lines, "not_established:x").get_data()
    assert list(bad) == [1.75]
    with pytest.raises(ParameterTypeError, match="ledger must be"):
        plot_budget(object())


def _two_release_ledger(gcal, path):
    ledger = bp.Ledger(path)
    ledger.set_budget("x", epsilon=3.0, delta=0.01)
    df = pd.DataFrame({"x": np.zeros(10), "y": np.zeros(10)})
    for e in (0.5, 0.25):
        APGM(gcal, epsilon=e, delta=1e-3).release(df, ledger=ledger, dataset_name=f"table-{e}")
    return ledger


def test_budget_axis_counts_releases_by_their_ledger_number(gcal, tmp_path):
    """Releases a few milliseconds apart: the x axis reads #1, #2 (the ledger's ids), never seconds."""
    ledger = _two_release_ledger(gcal, tmp_path / "budget.sqlite")
    ax = plot_budget(ledger)
    x, _ = _by_gid(ax.lines, "spent:x").get_data()
    np.testing.assert_array_equal(x, np.asarray(ledger.releases().index, dtype=float))
    ax.figure.canvas.draw()
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert set(ticks) >= {"#1", "#2"} and all(t.startswith("#") for t in ticks)
    day = f"{ledger.releases()['time_utc'].iloc[0]:%Y-%m-%d}"
    assert ax.get_xlabel().startswith("release number in the ledger") and day in ax.get_xlabel()


def test_budget_axis_as_dates(gcal, tmp_path):
    import matplotlib.dates as mdates

    ledger = _two_release_ledger(gcal, tmp_path / "budget.sqlite")
    ax = plot_budget(ledger, x="time")
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.DateFormatter)
    ax.figure.canvas.draw()
    day = f"{ledger.releases()['time_utc'].iloc[0]:%Y-%m-%d}"
    assert all(day in t.get_text() for t in ax.get_xticklabels() if t.get_text())
    assert ax.get_xlabel() == "release time (UTC)"
    with pytest.raises(ValidationError, match="x must be one of"):
        plot_budget(ledger, x="seconds")


def test_qq_points_are_the_samples_against_the_fit_quantiles(gcal):
    ax = plot_qq(gcal, "mean(x)", secrets=[SECRETS[0].label])
    x, y = _by_gid(ax.lines, f"qq:{SECRETS[0].label}").get_data()
    i = gcal.index(SECRETS[0])
    sample = np.sort(np.asarray(gcal.samples.values)[i, :, 0])
    n = sample.size
    keep = np.unique(np.linspace(0, n - 1, min(n, 1000)).round().astype(int))
    np.testing.assert_array_equal(y, sample[keep])
    mu, sd = gcal.mean_array[i, 0], math.sqrt(gcal.cov_array[i, 0, 0])
    for j in (0, len(keep) // 3, len(keep) - 1):  # Gaussian quantile by mpmath: μ + σ √2 erfinv(2p − 1)
        p = mpmath.mpf(int(keep[j]) * 2 + 1) / (2 * n)
        assert x[j] == pytest.approx(float(mu + sd * mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1)), rel=1e-9, abs=1e-12)
    assert len([a for a in ax.lines if (a.get_gid() or "").startswith("qq:")]) == 1
    assert len([a for a in plot_qq(gcal).lines if (a.get_gid() or "").startswith("qq:")]) == 2  # worst pair


ALPHA_QQ = 1e-3


def _outside_band(ax, cal, secret, level):
    """Points of the Q–Q plot whose fitted CDF is further than the DKW half-width (+ the ½/n of the
    plotting position) from their position."""
    from scipy.stats import norm

    x, y = _by_gid(ax.lines, f"qq:{secret.label}").get_data()
    i = cal.index(secret)
    mu, sd = cal.mean_array[i, 0], math.sqrt(cal.cov_array[i, 0, 0])
    n = cal.n_draws
    p = norm.cdf(x, mu, sd)
    eps = math.sqrt(math.log(2 / (1 - level)) / (2 * n)) + 0.5 / n
    return int(np.sum(np.abs(norm.cdf(y, mu, sd) - p) > eps))


def test_qq_band_contains_gaussian_draws_and_catches_a_skewed_query(gcal):
    """Statistical, false-failure probability ≤ α = 1e-3 for any seed (the seed is fixed for
    determinism only): with F Gaussian, DKW gives P(sup |F_n − F| > ε_n) ≤ 2 exp(−2 n ε_n²) = α at
    ε_n = sqrt(ln(2/α)/(2n)); with the fit's estimated (μ̂, σ̂) the statistic is Lilliefors', which
    is stochastically smaller than Kolmogorov's, so the band is conservative. A point's sample
    quantile outside its band means |F_n − F| > ε_n somewhere (up to the ½/n of the plotting
    position, added). Twin: F = one exponential record (skewness 2), whose distance to its Gaussian
    fit (≈ 0.09) is three times ε_n at n = 4000 — the band must be left."""
    level = 1 - ALPHA_QQ
    for secret in SECRETS:
        ax = plot_qq(gcal, 0, secrets=[secret], level=level)
        assert _outside_band(ax, gcal, secret, level) == 0
    skewed = F.skewed_calibration()
    secret = skewed.secrets[0]
    ax = plot_qq(skewed, 0, secrets=[secret], level=level)
    assert _outside_band(ax, skewed, secret, level) > 10


# ------------------------------------------------------------------------------------ plot_release
def _release(noise_cov=None, laplace=None, value=(148.5,)):
    from bayespriv.privacy.guarantee import Guarantee
    from bayespriv.noise.release_noise import ReleaseNoise

    k = len(value)
    return bp.mechanisms.Release(np.array(value, float), Guarantee(1.0, 1e-3, 1.0), "APGM", False, query="q",
                                 component_names=tuple(f"c{i}" for i in range(k)),
                                 noise=ReleaseNoise.of(k, None if noise_cov is None else np.asarray(noise_cov, float),
                                                       laplace))


def test_plot_release_draws_the_noise_law_around_the_value_with_its_interval_and_the_truth():
    from bayespriv.diagnostics import plot_release

    release = _release([[4.0]])
    ax = plot_release(release, true_value=147.0)
    line = next(a for a in ax.lines if a.get_gid() == "release:density")
    x, y = line.get_xdata(), line.get_ydata()
    assert x[np.argmax(y)] == pytest.approx(148.5, abs=0.05)  # centred at the release
    assert np.trapezoid(y, x) == pytest.approx(1.0, abs=1e-6)  # a density
    assert y.max() == pytest.approx(1 / math.sqrt(2 * math.pi * 4.0), rel=1e-4)  # sd 2
    truth = next(a for a in ax.lines if a.get_gid() == "release:truth")
    assert truth.get_xdata()[0] == 147.0
    band = next(p for p in ax.patches if p.get_gid() == "release:interval")
    low, high = release.interval(0.95)[0]
    xs = band.get_patch_transform().transform(band.get_path().vertices)[:, 0]  # Rectangle or Polygon
    assert xs.min() == pytest.approx(low) and xs.max() == pytest.approx(high)


def test_plot_release_convolves_gaussian_and_laplace_noise():
    """Normal (sd 1) plus Laplace (b = 1): the drawn density against the exact convolution by quadrature."""
    from scipy.integrate import quad
    from scipy.stats import laplace, norm

    from bayespriv.diagnostics import plot_release

    ax = plot_release(_release([[1.0]], (np.array([1.0]), np.array([[1.0]])), value=(0.0,)))
    line = next(a for a in ax.lines if a.get_gid() == "release:density")
    x, y = line.get_xdata(), line.get_ydata()
    for t in (0.0, 1.3, -2.5):
        exact = quad(lambda u: norm.pdf(t - u) * laplace.pdf(u), -40, 40, points=[0.0])[0]
        assert np.interp(t, x, y) == pytest.approx(exact, rel=2e-3)


def test_plot_release_without_noise_says_why_and_names_bad_components():
    from bayespriv.diagnostics import plot_release

    ax = plot_release(_release(np.zeros((2, 2)), value=(1.0, 2.0)), component="c1")
    assert not any(a.get_gid() == "release:density" for a in ax.lines)
    assert any("no noise" in t.get_text() for t in ax.texts)
    assert ax.get_xlabel() == "c1"
    with pytest.raises(ValidationError, match="component"):
        plot_release(_release([[1.0]]), component="nope")
