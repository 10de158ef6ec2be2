"""Relaxed MCMC convergence thresholds are named in the calibration's assumptions and in every guarantee.

``PyMCDataModel(mcmc=McmcSettings(max_r_hat=..., min_ess_bulk=..., max_divergences=...))`` looser than the defaults
(1.01, 400, 0) gives ``"mcmc_relaxed:<argument>=<value>"`` in ``Calibration.assumptions`` when some
secret went through MCMC; a mechanism built on the calibration, and a calibration saved and loaded,
keep the names. No statistical check here: the tests read names only.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest

import bayespriv as bp
from bayespriv.calibration import ExecutionOptions
from bayespriv.files import load_calibration, save_calibration
from bayespriv.datamodels.pymc import RELAXED_PREFIX, PyMCDataModel, relaxed_thresholds
from bayespriv.mechanisms import APGM

GROUPS = 4
PAIR = bp.SecretPair(bp.DistributionSecret("theta[2]", -1.0), bp.DistributionSecret("theta[2]", 2.0))
RELAXED = ("mcmc_relaxed:max_r_hat=1.05", "mcmc_relaxed:min_ess_bulk=100", "mcmc_relaxed:max_divergences=50")
#: No progress bar in the test log.
QUIET = ExecutionOptions(progress=False)


def build(n):
    """mu ~ N(0, 1); theta_g ~ N(mu, 1); y_r ~ N(theta[r mod 4], 1): a secret on theta[2] needs mu's posterior."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        theta = pm.Normal("theta", mu, 1.0, shape=GROUPS)
        pm.Normal("y", theta[np.arange(n) % GROUPS], 1.0, shape=n)
    return m


def relaxed_model(**extra):
    settings = dict(draws=300, tune=300, max_r_hat=1.05, min_ess_bulk=100, max_divergences=50)
    settings.update(extra)
    return PyMCDataModel(build, n_records=8, columns=["y"], parameters=["mu", "theta"],
                         mcmc=bp.McmcSettings(**settings), conjugate=False)


def test_names_follow_the_settings_not_the_run():
    assert relaxed_thresholds({"r_hat_max": 1.01, "ess_bulk_min": 400.0, "divergences_max": 0}) == ()
    assert relaxed_thresholds({"r_hat_max": 1.005, "ess_bulk_min": 1000.0, "divergences_max": 0}) == ()  # stricter
    assert relaxed_thresholds({"r_hat_max": 1.05, "ess_bulk_min": 100.0, "divergences_max": 50}) == RELAXED
    assert relaxed_thresholds({"r_hat_max": 1.0100001}) == ("mcmc_relaxed:max_r_hat=1.0100001",)
    assert relaxed_thresholds({"ess_bulk_min": 399.5, "divergences_max": 1}) == (
        "mcmc_relaxed:min_ess_bulk=399.5", "mcmc_relaxed:max_divergences=1")
    assert all(name.startswith(RELAXED_PREFIX) for name in RELAXED)
    assert relaxed_model().thresholds == {"r_hat_max": 1.05, "ess_bulk_min": 100.0, "divergences_max": 50}


@pytest.fixture(scope="module")
def relaxed_calibration():
    return bp.calibrate(relaxed_model(), PAIR, bp.mean("y"), n_draws=200, rng=3, execution=QUIET)


@pytest.mark.slow
def test_a_calibration_through_mcmc_names_every_relaxed_threshold(relaxed_calibration):
    cal = relaxed_calibration
    assert {d["route"] for d in cal.diagnostics["mcmc"].values()} == {"mcmc"}
    assert cal.assumptions == ("monte_carlo_clt", "mcmc_posterior") + RELAXED
    guarantee = APGM(cal, epsilon=1.0, delta=0.1).guarantee  # a δ that 200 draws can certify
    assert set(RELAXED) <= set(guarantee.assumptions)


@pytest.mark.slow
def test_the_names_survive_save_and_load(relaxed_calibration, tmp_path):
    path = save_calibration(relaxed_calibration, tmp_path / "relaxed.nc")
    loaded = load_calibration(path, query=bp.mean("y"))
    assert loaded.assumptions == relaxed_calibration.assumptions


@pytest.mark.slow
def test_only_the_relaxed_ones_are_named_and_only_when_mcmc_ran():
    one = bp.calibrate(relaxed_model(max_r_hat=1.01, min_ess_bulk=100, max_divergences=0), PAIR, bp.mean("y"),
                       n_draws=200, rng=3, execution=QUIET)
    assert [a for a in one.assumptions if a.startswith(RELAXED_PREFIX)] == ["mcmc_relaxed:min_ess_bulk=100"]
    # a secret on mu (a root): exact forward sampling, no MCMC; the relaxed thresholds gate nothing
    forward = bp.SecretPair(bp.DistributionSecret("mu", -1.0), bp.DistributionSecret("mu", 1.0))
    cal = bp.calibrate(relaxed_model(), forward, bp.mean("y"), n_draws=200, rng=3, execution=QUIET)
    assert {d["route"] for d in cal.diagnostics["mcmc"].values()} == {"forward"}
    assert not any(a.startswith(RELAXED_PREFIX) for a in cal.assumptions)


@pytest.mark.slow
def test_a_family_names_them_once():
    family = bp.DataModelFamily(lambda member: relaxed_model(), {"member": [0, 1]})
    cal = bp.calibrate(family, PAIR, bp.mean("y"), n_draws=200, rng=3, execution=QUIET)
    assert cal.assumptions.count("mcmc_relaxed:max_divergences=50") == 1
