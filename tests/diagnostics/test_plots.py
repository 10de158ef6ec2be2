"""plot_calibration only reads a Calibration and draws one histogram and one fitted curve per secret."""

from __future__ import annotations

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
