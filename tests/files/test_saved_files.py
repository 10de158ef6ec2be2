"""Calibration files saved by an earlier layout of the package load, verify and give the same mechanisms.

The files in ``data/saved/`` were written once by ``data/make_saved_calibrations.py`` (see its docstring) and
are never regenerated: a module move, a renamed class or a changed default that breaks reading a file a data
owner already holds fails here. Every comparison is exact (SHA-256 of the arrays' bytes, floats as hex).
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from bayespriv.files import load_calibration
from bayespriv.errors import UnverifiedCalibrationError

from tests.files.data import make_saved_calibrations as saved

EXPECTED = json.loads((saved.HERE / "expected.json").read_text())


def _load(name: str, query):
    return load_calibration(saved.HERE / f"{name}.nc", query=query, key=saved.FIXTURE_KEY)


@pytest.mark.parametrize("name, setting", [("gaussian", saved.gaussian_setting), ("hospital", saved.hospital_setting)])
def test_saved_sampled_calibrations_give_the_same_arrays_and_mechanisms(name, setting):
    """Arrays, refusals and guarantees exactly; each mechanism's noise by digest or, on a CPU whose SIMD exp/log
    give other last bits than the recording machine's, within ``NOISE_RTOL`` of the recorded values."""
    _, _, query = setting()
    cal = _load(name, query)
    recorded = EXPECTED["noise_values"][name]
    assert saved.same_figures(saved.calibration_figures(cal), EXPECTED[name], recorded) == []
    for label, values in saved.noise_values(cal).items():
        np.testing.assert_allclose([float.fromhex(v) for v in values], [float.fromhex(v) for v in recorded[label]],
                                   rtol=saved.NOISE_RTOL, atol=0.0, err_msg=f"{name}.nc: {label}")


def test_the_twin_a_mechanism_with_other_noise_differs_from_the_recorded_values():
    """The value comparison sees a change of 1e-6 in a noise variance (1000 times the tolerance)."""
    _, _, query = saved.gaussian_setting()
    recorded = EXPECTED["noise_values"]["gaussian"]["APGM@0.05"]
    moved = [float.fromhex(v) * (1 + 1e-6) for v in recorded]
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(moved, [float.fromhex(v) for v in recorded], rtol=saved.NOISE_RTOL, atol=0.0)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="chain.nc holds a scheme-1 (bytecode) fingerprint of a "
                    "lambda, verifiable under Python 3.11 only (see test_a_scheme_1_file_with_code_loads_only_under_its_"
                    "python_and_says_so; the python-* folders hold the same file for every version)")
def test_saved_chain_calibration_gives_the_same_influences_and_mqm():
    from bayespriv.mechanisms import MQM

    _, query = saved.chain_setting()
    chain = _load("chain", query)
    assert saved.digest(chain.influence) == EXPECTED["chain"]["influence"]
    assert saved.mechanism_figures(MQM(chain, epsilon=saved.EPSILON)) == EXPECTED["chain"]["MQM"]


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="quilt.nc holds a scheme-1 (bytecode) fingerprint of a "
                    "lambda, verifiable under Python 3.11 only (the python-* folders hold the same file for every "
                    "version)")
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


# -- Files written under each supported Python (fingerprint scheme 2) ----------------------------------------
VERSION_FOLDERS = sorted(saved.HERE.glob("python-*"))
HERE_VERSION = f"python-{sys.version_info[0]}.{sys.version_info[1]}"
#: The queries' code is in the chain's and the quilt's lambdas: scheme 1 fingerprinted its bytecode.
CODE_FILES = ("chain", "quilt")


def test_files_of_both_python_generations_are_committed():
    """PyMC 5 / ArviZ 0.x (Python 3.11) and PyMC 6 / ArviZ 1.x (Python 3.12) each wrote a folder of files."""
    assert {"python-3.11", "python-3.12"} <= {f.name for f in VERSION_FOLDERS}


@pytest.mark.parametrize("folder", VERSION_FOLDERS, ids=lambda f: f.name)
def test_a_file_written_under_any_supported_python_verifies_and_releases(folder):
    """Each file verifies under this Python with the query's current fingerprint (the same on every version),
    gives its arrays, influences and exact mechanisms bit for bit, and releases."""
    from bayespriv.mechanisms import APGM, APMQM, MQM
    from bayespriv.models import school

    expected = json.loads((folder / "expected.json").read_text())
    _, _, query = saved.gaussian_setting()
    cal = load_calibration(folder / "gaussian.nc", query=query, key=saved.FIXTURE_KEY)
    assert cal.query_fingerprint == query.fingerprint == expected["gaussian"]["fingerprint"]
    figures = saved.calibration_figures(cal)
    assert {a: figures[a] for a in saved.ARRAYS} == {a: expected["gaussian"][a] for a in saved.ARRAYS}
    if folder.name == HERE_VERSION:  # the accountant's last bits may follow NumPy's build; its guarantee does not
        assert figures["APGM"] == expected["gaussian"]["APGM"]
    mech = APGM(cal, epsilon=saved.EPSILON, delta=saved.LARGE_DELTA)
    assert (mech.guarantee.epsilon, mech.guarantee.delta) == (saved.EPSILON, saved.LARGE_DELTA)
    assert np.isfinite(mech.release_value(np.zeros(cal.k)).value).all()

    _, chain_query = saved.chain_setting()
    chain = load_calibration(folder / "chain.nc", query=chain_query, key=saved.FIXTURE_KEY)
    assert chain_query.fingerprint == expected["chain"]["fingerprint"]
    assert saved.digest(chain.influence) == expected["chain"]["influence"]
    assert saved.mechanism_figures(MQM(chain, epsilon=saved.EPSILON)) == expected["chain"]["MQM"]
    quilt = load_calibration(folder / "quilt.nc", query=school.QUERIES["tall"], key=saved.FIXTURE_KEY)
    assert school.QUERIES["tall"].fingerprint == expected["quilt"]["fingerprint"]
    for eps in (0.1, 1.0):
        apmqm = APMQM(quilt, epsilon=eps)
        assert saved.mechanism_figures(apmqm) == expected["quilt"][f"APMQM@{eps}"]
    assert np.isfinite(apmqm.release_value(np.zeros(quilt.k)).value).all()


@pytest.mark.parametrize("folder", VERSION_FOLDERS, ids=lambda f: f.name)
def test_the_twin_an_edited_query_is_refused_by_every_file(folder):
    """The version-independent fingerprint still sees the code: the chain's count of 'a' instead of 'b' is refused."""
    import bayespriv as bp
    from bayespriv.errors import ReleaseMismatchError

    other = bp.count(lambda b: b["s"] == "a", "s", name="bs")
    with pytest.raises(ReleaseMismatchError, match="its code, columns, name or bounds differ"):
        load_calibration(folder / "chain.nc", query=other, key=saved.FIXTURE_KEY)


@pytest.mark.parametrize("name", CODE_FILES)
def test_a_scheme_1_file_with_code_loads_only_under_its_python_and_says_so(name, tmp_path):
    """The files of commit d86009f fingerprinted their queries' bytecode (Python 3.11): under 3.11 they verify
    (and the loaded calibration carries the current fingerprint, so saving it again moves it to scheme 2);
    under another Python they are refused with the way out."""
    from bayespriv.errors import ReleaseMismatchError
    from bayespriv.models import school

    query = saved.chain_setting()[1] if name == "chain" else school.QUERIES["tall"]
    if sys.version_info[:2] == (3, 11):
        import xarray as xr

        from bayespriv.files import save_calibration

        again = save_calibration(_load(name, query), tmp_path / f"{name}.nc", seed=None, key=saved.FIXTURE_KEY)
        with xr.open_dataset(again, engine="h5netcdf") as root:
            assert root.attrs["query_fingerprint"] == query.fingerprint  # saved again: scheme 2
        assert load_calibration(again, query=query, key=saved.FIXTURE_KEY) is not None
    else:
        with pytest.raises(ReleaseMismatchError, match=r"written under Python 3\.11.*load it under Python 3\.11 and "
                                                       r"save it again"):
            _load(name, query)
