"""Calibration.to_inference_data(): the draws of F per secret, read by ArviZ.

The checks are exact: ArviZ's mean and standard deviation of every
(secret, component) must equal the calibration's own moments (NumPy einsum in
:func:`bayespriv.calibration.moments.sample_moments`, an independent
computation), and its MCSE of the mean must equal sd/√ESS by ArviZ's own
definition. A twin test shows that a layout mistake (draws and secrets swapped
without transposing) is caught by the same check.
"""

from __future__ import annotations

import logging

import arviz as az
import matplotlib
import numpy as np
import pytest
import xarray as xr

import bayespriv as bp
from bayespriv.datamodels.compat import make_inference_data
from bayespriv.errors import ValidationError

matplotlib.use("Agg")
V = np.array([[1.0, 0.5], [0.5, 2.0]])


@pytest.fixture(autouse=True)
def _quiet_arviz():
    """ArviZ logs a shape warning for one chain (no R-hat); not what these tests look at."""
    logger = logging.getLogger("arviz")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def _calibration(n_draws: int = 200) -> bp.Calibration:
    model = bp.GaussianDataModel([0.0, 1.0, 2.0], [[1.0, 0.5, 0.3], [0.5, 2.0, 0.0], [0.3, 0.0, 1.0]], ["s", "y", "w"], 20)
    pairs = bp.pairs_between([bp.DatasetSecret.mean("s", -1.0)],
                             [bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 1.0)])
    return bp.calibrate(model, pairs, bp.stack(bp.mean("y"), bp.mean("w")), n_draws=n_draws, rng=4)


def _rows(cal: bp.Calibration, variable: str) -> list[str]:
    return [f"{variable}[{s.label}, {c}]" for s in cal.secrets for c in cal.component_names]


def _check_moments(summary, cal: bp.Calibration, variable: str) -> None:
    rows = _rows(cal, variable)
    assert list(summary.index) == rows
    np.testing.assert_allclose(summary.loc[rows, "mean"].to_numpy(), cal.mean_array.reshape(-1), rtol=1e-12, atol=1e-12)
    sd = np.sqrt(np.diagonal(cal.cov_array, axis1=1, axis2=2)).reshape(-1)
    np.testing.assert_allclose(summary.loc[rows, "sd"].to_numpy(), sd, rtol=1e-12)


def test_summary_has_ess_and_mcse_for_every_secret_and_component():
    cal = _calibration()
    idata = cal.to_inference_data()
    post = idata.posterior
    var = cal.query.name
    assert list(post.data_vars) == [var]
    assert post[var].dims == ("chain", "draw", "secret", "component")
    assert post.sizes["chain"] == 1 and post.sizes["draw"] == cal.n_draws
    summary = az.summary(idata, round_to="none")
    _check_moments(summary, cal, var)
    for column in ("ess_bulk", "ess_tail", "mcse_mean", "mcse_sd"):
        values = summary[column].to_numpy()
        assert np.all(np.isfinite(values) & (values > 0)), column
    # ArviZ's own definition of the MCSE of a mean
    ess_mean = az.ess(idata, method="mean")[var].transpose("secret", "component").values.reshape(-1)
    np.testing.assert_allclose(summary["mcse_mean"].to_numpy(), summary["sd"].to_numpy() / np.sqrt(ess_mean), rtol=1e-9)
    mcse = az.mcse(idata)[var]
    assert mcse.dims == ("secret", "component") and np.all(np.isfinite(mcse.values))


def test_twin_layout_mistake_is_caught():
    """A broken conversion (reshape instead of transposing draws and secrets) fails the same check."""
    cal = _calibration()
    broken = cal.sample_array.reshape(1, cal.n_draws, len(cal.secrets), cal.k)
    var = cal.query.name
    ds = xr.Dataset({var: (("chain", "draw", "secret", "component"), broken)},
                    coords={"secret": [s.label for s in cal.secrets], "component": list(cal.component_names)})
    with pytest.raises(AssertionError):
        _check_moments(az.summary(make_inference_data({"posterior": ds}), round_to="none"), cal, var)


def test_family_has_one_variable_per_member_and_plots():
    fam = bp.DataModelFamily(lambda mu: bp.GaussianDataModel([mu, 0.0], V, ["x", "y"], 10), {"mu": [0.0, 1.0]})
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", -1.0), bp.DatasetSecret.mean("x", 1.0))
    cal = bp.calibrate(fam, pair, bp.mean("y"), n_draws=120, rng=2)
    idata = cal.to_inference_data()
    names = list(idata.posterior.data_vars)
    assert names == ["mean(y) | mu=0", "mean(y) | mu=1"]
    summary = az.summary(idata, round_to="none")
    for name, member in zip(names, cal.members):
        _check_moments(summary.loc[_rows(member, name)], member, name)
    if hasattr(az, "plot_posterior"):  # ArviZ 0.x
        assert np.size(az.plot_posterior(idata)) == 2 * len(cal.secrets)
    else:  # ArviZ 1.x: plot_dist draws the same marginals, one panel per (member, secret)
        az.plot_dist(idata)
        assert len(matplotlib.pyplot.gcf().axes) == 2 * len(cal.secrets)
    matplotlib.pyplot.close("all")


def test_exact_calibration_has_no_draws():
    sa, sb = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    cal = bp.Calibration.from_moments({sa: [0.0], sb: [1.0]}, {sa: [[1.0]], sb: [[1.0]]}, bp.SecretPair(sa, sb))
    with pytest.raises(ValidationError, match="calibration"):
        cal.to_inference_data()
