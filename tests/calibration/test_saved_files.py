"""Calibration files saved by an earlier layout of the package load, verify and give the same mechanisms.

The files in ``data/saved/`` were written once by ``data/make_saved_calibrations.py`` (see its docstring) and
are never regenerated: a module move, a renamed class or a changed default that breaks reading a file a data
owner already holds fails here. Every comparison is exact (SHA-256 of the arrays' bytes, floats as hex).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from bayespriv.calibration import load_calibration
from bayespriv.errors import UnverifiedCalibrationError

DATA = Path(__file__).with_name("data")
sys.path.insert(0, str(DATA))
import make_saved_calibrations as saved  # noqa: E402

EXPECTED = json.loads((saved.HERE / "expected.json").read_text())


def _load(name: str, query):
    return load_calibration(saved.HERE / f"{name}.nc", query=query, key=saved.FIXTURE_KEY)


@pytest.mark.parametrize("name, setting", [("gaussian", saved.gaussian_setting), ("hospital", saved.hospital_setting)])
def test_saved_sampled_calibrations_give_the_same_arrays_and_mechanisms(name, setting):
    _, _, query = setting()
    assert saved.calibration_figures(_load(name, query)) == EXPECTED[name]


def test_saved_chain_calibration_gives_the_same_influences_and_mqm():
    from bayespriv.mechanisms import MQM

    _, query = saved.chain_setting()
    chain = _load("chain", query)
    assert saved.digest(chain.influence) == EXPECTED["chain"]["influence"]
    assert saved.mechanism_figures(MQM(chain, epsilon=saved.EPSILON)) == EXPECTED["chain"]["MQM"]


def test_saved_quilt_calibration_gives_the_same_apmqm():
    from bayespriv.mechanisms import APMQM
    from bayespriv.models import school

    quilt = _load("quilt", school.QUERIES["tall"])
    for eps in (0.1, 1.0):
        assert saved.mechanism_figures(APMQM(quilt, epsilon=eps)) == EXPECTED["quilt"][f"APMQM@{eps}"]


def test_the_twin_a_saved_file_under_another_key_is_refused():
    """The fixtures are verified, not trusted: the same file under any other key does not load."""
    _, _, query = saved.gaussian_setting()
    with pytest.raises(UnverifiedCalibrationError):
        load_calibration(saved.HERE / "gaussian.nc", query=query, key=bytes(32))


def test_the_twin_a_different_calibration_has_other_digests():
    """The digests see a change: the same setting calibrated with another seed gives another file's figures."""
    import bayespriv as bp

    model, pair, query = saved.gaussian_setting()
    other = bp.calibrate(model, pair, query, n_draws=300, rng=4)
    figures = saved.calibration_figures(other)
    assert all(figures[k] != v for k, v in EXPECTED["gaussian"].items() if k != "APGM" and k != "OptimalGaussian")
    assert np.isfinite(other.mean_array).all()
