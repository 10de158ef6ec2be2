"""Calibrate once, release later: Calibration.to_netcdf / load_calibration, bit for bit.

Everything here is exact (no statistical tolerance): arrays must come back with
the same bytes, and mechanisms built on a loaded calibration must have the same
``noise_cov`` bytes and an equal ``guarantee``. The stored bits are also read
with h5py, an HDF5 reader independent of xarray's netCDF layer.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import os
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.files import load_calibration, read_metadata, save_calibration
from bayespriv.files.calibration_io import FORMAT_VERSION
from bayespriv.errors import ParameterTypeError, ReleaseMismatchError, UnverifiedCalibrationError, ValidationError
from bayespriv.mechanisms import APGM, OptimalGaussian

from tests._signing import get_array, resign, set_array

ARRAYS = ("mean_array", "cov_array", "mean_se", "cov_se", "cov_se_white", "sample_array")
N = 30


def _gaussian_calibration(seed: int = 1, n_draws: int = 20_000, **kw) -> bp.Calibration:
    model = bp.GaussianDataModel([0.0, 1.0, 2.0], [[1.0, 0.5, 0.3], [0.5, 2.0, 0.0], [0.3, 0.0, 1.0]], ["x", "y", "w"], N)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", -1.0), bp.DatasetSecret.mean("x", 2.0))
    return bp.calibrate(model, pair, _query(), n_draws=n_draws, rng=seed, **kw)


def _query(bounds=(-10, 10)) -> bp.Query:
    return bp.stack(bp.mean("y"), bp.mean("w", bounds=bounds))


def _same_bits(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _assert_identical(cal: bp.Calibration, loaded: bp.Calibration) -> None:
    for name in ARRAYS:
        assert _same_bits(getattr(cal, name), getattr(loaded, name)), name
    assert loaded.secrets == cal.secrets and loaded.pairs == cal.pairs
    for attr in ("confidence", "z", "n_draws", "n_records", "component_names", "query_fingerprint"):
        assert getattr(loaded, attr) == getattr(cal, attr), attr
    assert (loaded.theta is None) == (cal.theta is None)
    if cal.theta is not None:
        assert dict(loaded.theta) == dict(cal.theta)
    assert repr(loaded.diagnostics) == repr(cal.diagnostics)
    assert len(loaded.family) == len(cal.family)
    for m, lm in zip(cal.family, loaded.family):
        _assert_identical(m, lm)


def _assert_same_mechanisms(cal: bp.Calibration, loaded: bp.Calibration, mechanisms=(APGM, OptimalGaussian)) -> None:
    for cls in mechanisms:
        a, b = cls(cal, epsilon=1.0, delta=1e-3), cls(loaded, epsilon=1.0, delta=1e-3)
        assert _same_bits(np.asarray(a.noise_cov), np.asarray(b.noise_cov)), cls.__name__
        assert a.guarantee == b.guarantee, cls.__name__


@pytest.mark.slow
def test_gaussian_round_trip_is_bit_identical_and_keeps_noise_and_guarantee(tmp_path):
    cal = _gaussian_calibration()
    path = cal.to_netcdf(tmp_path / "cal.nc", seed=1)
    loaded = load_calibration(path)
    _assert_identical(cal, loaded)
    assert loaded.query is None and loaded.query_fingerprint == cal.query.fingerprint
    _assert_same_mechanisms(cal, loaded)
    meta = read_metadata(path)
    assert meta["seed"] == 1 and meta["bayespriv_version"] == bp.__version__
    assert meta["query_name"] == cal.query.name and meta["query_columns"] == ["y", "w"]
    assert meta["format_version"] == FORMAT_VERSION and meta["dropped"] == []


def test_stored_bits_read_back_by_h5py(tmp_path):
    """An independent HDF5 reader sees the very bytes of the moments and samples."""
    cal = _gaussian_calibration(seed=2)
    path = cal.to_netcdf(tmp_path / "cal.nc")
    with h5py.File(path, "r") as f:
        assert f["mean"][()].tobytes() == cal.mean_array.tobytes()
        assert f["samples"][()].tobytes() == cal.sample_array.tobytes()
        assert f["cov_se_white"][()].tobytes() == cal.cov_se_white.tobytes()
        assert "_FillValue" not in f["mean"].attrs
        meta = json.loads(f.attrs["bayespriv_metadata"])
    assert meta["z"] == cal.z and meta["query_fingerprint"] == cal.query_fingerprint


@pytest.mark.slow
def test_release_from_a_loaded_calibration_equals_the_original(tmp_path):
    """With the query passed back, a seeded release is the same number (same noise plan, same answer)."""
    cal = _gaussian_calibration(seed=3)
    loaded = load_calibration(cal.to_netcdf(tmp_path / "cal.nc"), query=_query())
    assert loaded.query is not None
    data = pd.DataFrame({"x": np.linspace(-1, 1, N), "y": np.linspace(0, 2, N), "w": np.linspace(1, 3, N)})
    a = APGM(cal, epsilon=1.0, delta=1e-3).release(data, rng=7)
    b = APGM(loaded, epsilon=1.0, delta=1e-3).release(data, rng=7)
    assert _same_bits(a.value, b.value) and a.guarantee == b.guarantee


@pytest.mark.parametrize("other", [
    _query(bounds=(-10, 11)),  # other bounds
    bp.stack(bp.mean("y"), bp.mean("w")),  # no bounds
    bp.stack(bp.mean("w", bounds=(-10, 10)), bp.mean("y")),  # other order
    bp.Query(lambda b: np.stack([b["y"].mean(1), b["w"].mean(1)], 1), ["y", "w"], "mean(y)+mean(w)"),
])
def test_a_changed_query_is_refused_naming_it(tmp_path, other):
    path = _gaussian_calibration(seed=4).to_netcdf(tmp_path / "cal.nc")
    with pytest.raises(ReleaseMismatchError, match=re.escape(f"got query '{other.name}' with fingerprint")):
        load_calibration(path, query=other)


def test_calibration_refuses_a_query_with_another_fingerprint():
    cal = _gaussian_calibration(seed=5)
    with pytest.raises(ReleaseMismatchError, match="query must be the calibrated query"):
        bp.Calibration(cal.secrets, cal.pairs, cal.mean_array, cal.cov_array, cal.mean_se, cal.cov_se, cal.confidence,
                       cal.z, query=bp.mean("y"), cov_se_white=cal.cov_se_white, query_fingerprint=cal.query_fingerprint)
    assert bp.mean("y").fingerprint != cal.query_fingerprint


def test_empirical_model_with_string_categories(tmp_path):
    rng = np.random.default_rng(0)
    table = pd.DataFrame({"sex": rng.choice(["F", "M"], 400), "income": rng.normal(50, 10, 400)})
    model = bp.EmpiricalDataModel(table, n_records=40)
    pair = bp.SecretPair(bp.DatasetSecret.proportion("sex", "F", 0.25), bp.DatasetSecret.proportion("sex", "F", 0.75))
    cal = bp.calibrate(model, pair, bp.mean("income"), n_draws=20_000, rng=4)
    loaded = load_calibration(cal.to_netcdf(tmp_path / "emp.nc"), query=bp.mean("income"))
    _assert_identical(cal, loaded)
    assert loaded.secrets[0].category == "F" and loaded.assumptions == cal.assumptions
    _assert_same_mechanisms(cal, loaded)


@pytest.mark.slow
def test_pymc_family_round_trip(tmp_path):
    """The hospital Θ (PyMC models, 2 members) keeps members, worst θ, diagnostics and noise."""
    from bayespriv.models.hospital import QUERIES, QUERY_GRIDS, hospital_family

    share = lambda p: bp.DatasetSecret.proportion("gender", 1, p)  # noqa: E731
    grid = {k: list(v) for k, v in QUERY_GRIDS["average blood pressure"].items()}
    query = QUERIES["average blood pressure"]
    cal = bp.calibrate(hospital_family(50, grid), bp.SecretPair(share(0.26), share(0.74)), query, n_draws=20_000,
                       rng=3)
    path = cal.to_netcdf(tmp_path / "fam.nc")
    loaded = load_calibration(path, query=query)
    assert loaded.is_family and dict(loaded.worst_theta) == dict(cal.worst_theta)
    assert isinstance(loaded.secrets[0].category, int)
    _assert_identical(cal, loaded)
    _assert_same_mechanisms(cal, loaded)
    assert read_metadata(path)["samples_from_member"] is not None  # the worst member's draws are stored once


def test_exact_and_plug_in_calibrations(tmp_path):
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    exact = bp.Calibration.from_moments({a: [0.0, 1.0], b: [0.5, 1.0]}, {a: np.eye(2) * 0.2, b: np.eye(2) * 0.3},
                                        bp.SecretPair(a, b), n_records=10)
    loaded = load_calibration(exact.to_netcdf(tmp_path / "exact.nc"))
    _assert_identical(exact, loaded)
    assert loaded.exact and loaded.query_fingerprint is None
    with pytest.raises(ReleaseMismatchError, match="recorded no query fingerprint"):
        load_calibration(tmp_path / "exact.nc", query=bp.mean("x"))
    plug = _gaussian_calibration(seed=6, n_draws=50, confidence=None)
    loaded = load_calibration(plug.to_netcdf(tmp_path / "plug.nc"))
    _assert_identical(plug, loaded)
    assert loaded.plug_in and "estimated_moments" in APGM(loaded, epsilon=1.0, delta=1e-3).guarantee.assumptions


def test_diagnostics_plain_data_exact_others_named(tmp_path):
    cal = _gaussian_calibration(seed=7)
    diagnostics = {
        "ess": np.array([1.5, np.nan, np.inf], dtype=np.float32), "rhat": np.float64(1.0000000000000002),
        "count": np.int64(3), "nested": {"a": (1, 2.5, "x"), ("t", 1): None}, "model": object(),
    }
    cal = bp.Calibration(cal.secrets, cal.pairs, cal.mean_array, cal.cov_array, cal.mean_se, cal.cov_se,
                         cal.confidence, cal.z, n_draws=cal.n_draws, cov_se_white=cal.cov_se_white,
                         theta={"rho": np.float64(0.5), "k": 2}, diagnostics=diagnostics)
    path = cal.to_netcdf(tmp_path / "diag.nc")
    loaded = load_calibration(path)
    d = loaded.diagnostics
    assert _same_bits(d["ess"], cal.diagnostics["ess"])
    assert type(d["rhat"]) is np.float64 and d["rhat"] == diagnostics["rhat"] and type(d["count"]) is np.int64
    assert d["nested"]["a"] == (1, 2.5, "x") and d["nested"][("t", 1)] is None
    assert d["model"] == "<builtins.object not saved>"
    assert read_metadata(path)["dropped"] == ["diagnostics.model"]
    assert dict(loaded.theta) == {"rho": 0.5, "k": 2} and type(loaded.theta["rho"]) is np.float64


@pytest.mark.subprocess
def test_lambda_query_fingerprint_is_stable_across_processes(tmp_path):
    """A script's lambda query: the same fingerprint in two fresh interpreters with other hash seeds
    (and another file name), a different one when the script's module-level constant changes."""
    source = textwrap.dedent("""
        import numpy as np, bayespriv as bp
        LIMIT = {limit}
        query = bp.Query(lambda b: np.stack([(b["x"] > LIMIT).mean(1), b["x"].mean(1)], 1), ["x"], "share")
    """)
    runner = textwrap.dedent("""
        import sys
        for limit, name in (("1.0", sys.argv[1]), ("2.0", "other.py")):
            scope = {}
            exec(compile(SOURCE.format(limit=limit), name, "exec"), scope)
            print(scope["query"].fingerprint)
    """).replace("SOURCE", repr(source))

    def run(hash_seed: str, filename: str) -> list[str]:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", runner, filename], capture_output=True, text=True, check=True,
                             env=env, cwd=tmp_path).stdout
        return out.split()

    (one, other_limit), (again, _) = run("1", "a.py"), run("2", "b.py")
    assert one == again and len(one) == 64
    assert other_limit != one


def test_errors_name_the_argument(tmp_path):
    with pytest.raises(ValidationError, match="path must be an existing file"):
        load_calibration(tmp_path / "missing.nc")
    (tmp_path / "junk.nc").write_bytes(b"not a netCDF file")
    with pytest.raises(ValidationError, match="path must be a netCDF-4 file"):
        load_calibration(tmp_path / "junk.nc")
    import xarray as xr

    xr.Dataset({"v": ("d", [1.0])}).to_netcdf(tmp_path / "other.nc", engine="h5netcdf")
    with pytest.raises(UnverifiedCalibrationError, match="no MAC"):
        load_calibration(tmp_path / "other.nc")
    with pytest.raises(ValidationError, match="no bayespriv metadata"):
        load_calibration(tmp_path / "other.nc", trust="unverified")
    with pytest.raises(ValidationError, match="trust must be 'verified' or 'unverified'"):
        load_calibration(tmp_path / "other.nc", trust="yes")
    cal = _gaussian_calibration(seed=8)
    with pytest.raises(ValidationError, match="path must be in an existing directory"):
        cal.to_netcdf(tmp_path / "nowhere" / "cal.nc")
    with pytest.raises(ParameterTypeError, match="seed must be"):
        cal.to_netcdf(tmp_path / "cal.nc", seed="x")
    with pytest.raises(ParameterTypeError, match="calibration must be a bayespriv Calibration"):
        save_calibration(object(), tmp_path / "x.nc")
    with pytest.raises(ParameterTypeError, match="query must be a bayespriv Query"):
        load_calibration(cal.to_netcdf(tmp_path / "cal.nc"), query="mean(y)")


def test_newer_format_is_refused(tmp_path):
    cal = _gaussian_calibration(seed=9)
    path = cal.to_netcdf(tmp_path / "cal.nc")
    with h5py.File(path, "r+") as f:
        meta = json.loads(f.attrs["bayespriv_metadata"])
        meta["format_version"] = FORMAT_VERSION + 1
        f.attrs["bayespriv_metadata"] = json.dumps(meta)
    with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
        load_calibration(path)
    resign(path)  # as a newer bayespriv with this key would have signed it
    with pytest.raises(ValidationError, match="format version"):
        load_calibration(path)


# -- exact laws (Calibration.finite_laws) -----------------------------------------------------------------
def _census_table(seed: int = 5, n_rows: int = 500) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    sex = g.choice(["F", "M"], n_rows)
    return pd.DataFrame({"sex": sex, "xray": np.where(g.random(n_rows) < np.where(sex == "F", 0.2, 0.5), "pos", "neg")})


_SHARE = [bp.DatasetSecret.proportion("sex", "F", p) for p in (0.4, 0.6)]


def _law_calibrations() -> dict[str, bp.Calibration]:
    query = bp.count("xray", "pos")
    pair = bp.SecretPair(*_SHARE)
    tables = {5: _census_table(5), 6: _census_table(6)}
    family = bp.DataModelFamily(lambda seed: bp.EmpiricalDataModel(tables[seed], 30, theta={"seed": seed}),
                                {"seed": [5, 6]})
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.5)
    return {
        "from_laws": bp.Calibration.from_laws({a: ([0, 1, 2], [0.49, 0.42, 0.09]), b: ([0, 1, 2], [0.25, 0.5, 0.25])},
                                              bp.SecretPair(a, b), n_records=2),
        "calibrate": bp.calibrate(bp.EmpiricalDataModel(tables[5], 30), pair, query, n_draws=200, rng=1),
        "family": bp.calibrate(family, pair, query, n_draws=200, rng=2),
    }


def _assert_same_laws(cal: bp.Calibration, loaded: bp.Calibration) -> None:
    for m, lm in zip(cal.members, loaded.members):
        assert list(m.finite_laws) == list(lm.finite_laws) and m.finite_laws
        for label, law in m.finite_laws.items():
            other = lm.finite_laws[label]
            assert _same_bits(law.points, other.points) and _same_bits(law.weights, other.weights), label
            assert not other.weights.flags.writeable


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["from_laws", "calibrate", "family"])
def test_exact_laws_round_trip_bit_identical(tmp_path, kind):
    cal = _law_calibrations()[kind]
    path = cal.to_netcdf(tmp_path / "laws.nc")
    loaded = load_calibration(path)
    _assert_identical(cal, loaded)
    _assert_same_laws(cal, loaded)
    assert loaded.exact and loaded.confidence == 1.0 and loaded.assumptions == cal.assumptions
    _assert_same_mechanisms(cal, loaded)
    assert read_metadata(path)["format_version"] == 2


def test_a_stored_law_edited_and_signed_again_is_refused(tmp_path):
    """The law moves mass between two values; the moments stored beside it no longer follow from it."""
    path = _law_calibrations()["calibrate"].to_netcdf(tmp_path / "laws.nc")
    weights = get_array(path, "law_weights")
    weights[[3, 4]] = weights[[4, 3]]
    set_array(path, "law_weights", weights)
    with pytest.raises(UnverifiedCalibrationError, match="contents changed"):  # the MAC covers the laws
        load_calibration(path)
    resign(path)  # someone holding the key signs the edit
    with pytest.raises(UnverifiedCalibrationError, match=r"must agree with itself.*mean of secret 'share\(sex=F\)=0.4'"):
        load_calibration(path)


@pytest.mark.parametrize("edit, match", [
    (lambda w: np.where(np.arange(w.size) == 0, -w[0], w), r"a stored law of secret .* that is not a law"),
    (lambda w: np.where(np.arange(w.size) == 0, 0.0, w), r"a stored law of secret .* that is not a law"),
])
def test_a_stored_law_that_is_not_a_law_is_refused(tmp_path, edit, match):
    path = _law_calibrations()["from_laws"].to_netcdf(tmp_path / "laws.nc")
    set_array(path, "law_weights", edit(get_array(path, "law_weights")))
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match=match):
        load_calibration(path)


def test_law_sizes_that_do_not_cover_the_points_are_refused(tmp_path):
    path = _law_calibrations()["from_laws"].to_netcdf(tmp_path / "laws.nc")
    set_array(path, "law_size", np.array([2, 3]))
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match=r"exact laws of sizes \[2, 3\] for 2 secrets with 6 points"):
        load_calibration(path)


def test_a_file_whose_laws_were_removed_is_refused(tmp_path):
    path = _law_calibrations()["calibrate"].to_netcdf(tmp_path / "laws.nc")
    with h5py.File(path, "r+") as f:
        for name in ("law_size", "law_points", "law_weights"):
            del f[name]
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match="no exact laws in a node whose metadata says it has them"):
        load_calibration(path)


def test_format_version_1_files_still_load(tmp_path):
    """Files written before the exact laws (format 1) have the same layout otherwise."""
    cal = _gaussian_calibration(seed=10)
    path = cal.to_netcdf(tmp_path / "cal.nc")
    with h5py.File(path, "r+") as f:
        meta = json.loads(f.attrs["bayespriv_metadata"])
        meta["format_version"] = 1
        f.attrs["bayespriv_metadata"] = json.dumps(meta)
    resign(path)
    _assert_identical(cal, load_calibration(path))


def test_chain_calibration_round_trip_gives_the_same_mqm(tmp_path):
    """MQM on a loaded ChainCalibration: same influence bits (NaN entries included), noise and guarantee."""
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain
    from bayespriv.mechanisms import MQM

    query = bp.count(lambda b: b["s"] == "b", "s", name="bs")
    chains = [MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], ["a", "b"]),
              MarkovChain.stationary([[0.7, 0.3], [1 / 3, 2 / 3]], ["a", "b"])]
    chain = calibrate_chain(chains, query, length=7)
    path = save_calibration(chain, tmp_path / "chain.nc", seed=None)
    with pytest.raises(ValidationError, match="query must be given to load the chain calibration"):
        load_calibration(path)
    loaded = load_calibration(path, query=query)
    assert _same_bits(loaded.influence, chain.influence) and np.isnan(loaded.influence).any()
    for a, b in zip(chain.chains, loaded.chains):
        assert _same_bits(a.transition, b.transition) and _same_bits(a.initial, b.initial) and a.states == b.states
    for attr in ("length", "column", "lipschitz", "window", "k", "component_names", "confidence", "assumptions"):
        assert getattr(loaded, attr) == getattr(chain, attr), attr
    for eps in (0.5, 2.0):
        m1, m2 = MQM(chain, epsilon=eps), MQM(loaded, epsilon=eps)
        assert _same_bits(np.asarray(m1.noise_cov), np.asarray(m2.noise_cov)) and m1.guarantee == m2.guarantee
    data = pd.DataFrame({"s": list("abbabba")})
    assert MQM(loaded, epsilon=1.0).release(data, rng=3).value == MQM(chain, epsilon=1.0).release(data, rng=3).value
    with pytest.raises(ReleaseMismatchError, match="got query 'as'"):
        load_calibration(path, query=bp.count(lambda b: b["s"] == "a", "s", name="as"))


def _assert_same_quilt_calibration(cal, loaded) -> None:
    """Every field APMQM reads: networks (CPD bits), graph, quilts with Δ and e (all fields), counts, constants."""
    for a, b in zip(cal.networks, loaded.networks, strict=True):
        assert list(a.nodes()) == list(b.nodes()) and list(a.edges()) == list(b.edges())
        for ca, cb in zip(a.get_cpds(), b.get_cpds(), strict=True):
            assert ca.variables == cb.variables and ca.state_names == cb.state_names
            assert _same_bits(np.asarray(ca.values), np.asarray(cb.values))
    assert list(cal.graph.nodes()) == list(loaded.graph.nodes()) and set(cal.graph.edges()) == set(loaded.graph.edges())
    assert dict(cal.candidates) == dict(loaded.candidates)  # QuiltScore / Quilt / MaxInfluence equality, field by field
    for attr in ("sensitive", "n_records", "queried", "sensitivity", "exhaustive", "confidence", "k",
                 "component_names", "assumptions"):
        assert getattr(loaded, attr) == getattr(cal, attr), attr
    for attr in ("columns", "n_quilts", "skipped"):
        assert dict(getattr(loaded, attr)) == dict(getattr(cal, attr)), attr
    assert loaded.search == cal.search and cal.search.startswith("exhaustive")
    assert loaded.parameter_network.kind == "discrete" and loaded.query.fingerprint == cal.query.fingerprint


@pytest.mark.parametrize("key, epsilons, forced", [
    # ln 1.2 ≈ 0.18: the trivial quilt below, Q = {height} above; Example 1's Q = {gender} forced at ε = 1.
    ("tall", (0.1, 0.5, 1.0), ({"gender"}, 1.0)),
    # ln 7.2 ≈ 1.97: the trivial quilt below, Q = {height, sat} above; Q = {gender, sat} (ln 12) forced at ε = 3.
    ("tall_high_sat", (0.5, 1.5, 2.5), ({"gender", "sat"}, 3.0)),
])
def test_quilt_calibration_round_trip_gives_the_same_apmqm(tmp_path, key, epsilons, forced):
    """APMQM on a loaded school calibration: same noise_cov bytes, scale and guarantee at ε picking other quilts."""
    from bayespriv.networks.influence import InfluenceEngine
    from bayespriv.mechanisms import APMQM
    from bayespriv.models import school

    cal = school.calibration(key)
    path = cal.to_netcdf(tmp_path / "quilt.nc", seed=5)
    assert read_metadata(path)["kind"] == "quilt"
    loaded = load_calibration(path, query=school.QUERIES[key])
    _assert_same_quilt_calibration(cal, loaded)
    picked = set()
    for eps in epsilons:
        a, b = APMQM(cal, epsilon=eps), APMQM(loaded, epsilon=eps)
        assert _same_bits(np.asarray(a.noise_cov), np.asarray(b.noise_cov)) and a.scale == b.scale
        assert a.guarantee == b.guarantee and dict(a.chosen) == dict(b.chosen)
        assert a.scale == school.noise_scale(key, eps)  # the closed form, independently
        picked.add(b.chosen["income"].quilt.quilt)
    assert len(picked) == 2
    quilt, eps = forced  # evaluated afresh on the rebuilt network (not among the stored candidates)
    a, b = APMQM(cal, epsilon=eps, quilts={"income": quilt}), APMQM(loaded, epsilon=eps, quilts={"income": quilt})
    assert _same_bits(np.asarray(a.noise_cov), np.asarray(b.noise_cov)) and a.guarantee == b.guarantee
    # the hand-derived logarithms of the school model (rounding differs from variable elimination by ~1 ulp)
    assert math.isclose(b.chosen["income"].max_influence, school.INFLUENCE[frozenset(quilt)], rel_tol=1e-12)
    fresh = InfluenceEngine(loaded.parameter_network)  # the stored e's are what the rebuilt network gives
    assert all(fresh("income", c.quilt.quilt) == c.influence for c in cal.candidates["income"])
    data = school.sample_school(rng=11)
    m1, m2 = APMQM(cal, epsilon=epsilons[0]), APMQM(loaded, epsilon=epsilons[0])
    assert _same_bits(m1.release(data, rng=3).value, m2.release(data, rng=3).value)


def test_quilt_calibration_refuses_a_changed_or_missing_query(tmp_path):
    from bayespriv.models import school

    path = school.calibration("tall").to_netcdf(tmp_path / "quilt.nc")
    with pytest.raises(ReleaseMismatchError, match="got query 'taller than 66 in with SAT > 1300'"):
        load_calibration(path, query=school.QUERIES["tall_high_sat"])
    with pytest.raises(ValidationError, match="query must be given to load the quilt calibration"):
        load_calibration(path)


def test_quilt_calibrations_of_non_discrete_networks_are_refused_clearly(tmp_path):
    from pgmpy.factors.continuous import LinearGaussianCPD
    from pgmpy.models import LinearGaussianBayesianNetwork

    from bayespriv.networks.quilts import ParameterNetwork, calibrate_quilts

    net = LinearGaussianBayesianNetwork([("i", "q")])
    net.add_cpds(LinearGaussianCPD("i", [0.0], 1.0), LinearGaussianCPD("q", [1.0, 0.5], 2.0, ["i"]))
    cal = calibrate_quilts(ParameterNetwork(net, columns={"i": "a", "q": "b"}), "i",
                           bp.mean("b", bounds=(0, 1)), n_records=10)
    with pytest.raises(ValidationError, match="discrete parameter network.*'gaussian' parameter network.*PyMC"):
        save_calibration(cal, tmp_path / "quilt.nc")
    assert not (tmp_path / "quilt.nc").exists()


def test_the_twin_a_tampered_quilt_file_is_caught(tmp_path):
    """Twin of the quilt checks: one flipped bit in a stored max-influence or CPD is seen by the same comparisons,
    and the file is refused on load (MAC; re-signed, the recomputed max-influence)."""
    from bayespriv.models import school

    cal = school.calibration("tall")
    path = cal.to_netcdf(tmp_path / "quilt.nc")
    e = get_array(path, "max_influence")
    e.view(np.uint64)[1] ^= 1
    set_array(path, "max_influence", e)
    with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
        load_calibration(path, query=school.QUERIES["tall"])
    e[np.argmax(e)] /= 2  # a max-influence half its value: less noise than the quilt needs
    set_array(path, "max_influence", e)
    resign(path)  # a key holder signs the contradiction
    with pytest.raises(UnverifiedCalibrationError, match="max-influence of the quilt"):
        load_calibration(path, query=school.QUERIES["tall"])
    loaded = load_calibration(cal.to_netcdf(tmp_path / "clean.nc"), query=school.QUERIES["tall"])
    cands = dict(loaded.candidates)
    first = cands["income"][1]
    bumped = dataclasses.replace(first.influence, value=np.nextafter(first.influence.value, 1.0))
    cands["income"] = (cands["income"][0], dataclasses.replace(first, influence=bumped), *cands["income"][2:])
    tampered = dataclasses.replace(loaded, candidates=cands)
    assert dict(tampered.candidates) != dict(cal.candidates)
    with pytest.raises(AssertionError):
        _assert_same_quilt_calibration(cal, tampered)
    cpd = get_array(path, "network_000/cpd_000")
    cpd.view(np.uint64)[0] ^= 1
    assert not _same_bits(np.asarray(cal.networks[0].get_cpds()[0].values), cpd)


def test_the_twin_a_tampered_file_is_not_identical(tmp_path):
    """Twin of the bit-identity checks: one flipped bit in the stored means is seen (and refused on load)."""
    cal = _gaussian_calibration(seed=10)
    path = cal.to_netcdf(tmp_path / "cal.nc")
    mean = get_array(path, "mean")
    mean.view(np.uint64)[0, 0] ^= 1
    set_array(path, "mean", mean)
    with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
        load_calibration(path)
    tampered = dataclasses.replace(cal, mean_array=mean)
    assert not _same_bits(cal.mean_array, tampered.mean_array)
    assert tampered.mean_array[0, 0] != cal.mean_array[0, 0]


class _Above:
    """A user's callable class: its state is part of what the query computes."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def __call__(self, batch):
        return batch["x"] > self.limit


def _closing_over(table: pd.DataFrame):
    return lambda b: b["x"].mean(1)[:, None] * float(table["v"].sum())


def test_fingerprint_sees_state_closures_and_data_but_not_library_internals():
    assert bp.count(_Above(1.0), "x").fingerprint != bp.count(_Above(2.0), "x").fingerprint
    assert bp.count(_Above(1.0), "x").fingerprint == bp.count(_Above(1.0), "x").fingerprint
    t = pd.DataFrame({"v": [1.0, 2.0]})
    t2 = t.copy()
    t2.loc[0, "v"] = 5.0
    same, other = (bp.Query(_closing_over(x), ["x"], "q").fingerprint for x in (t.copy(), t2))
    assert same == bp.Query(_closing_over(t), ["x"], "q").fingerprint and other != same
    assert bp.mean("x", name="a").fingerprint != bp.mean("x", name="b").fingerprint
    assert bp.mean("x").fingerprint != bp.mean("y").fingerprint

    import pymc as pm

    def with_model():
        with pm.Model() as model:
            pm.Normal("y", pm.Normal("mu"), 1.0, shape=5)
        return lambda b: b["x"].mean(1)[:, None] + 0 * len(model.free_RVs)

    # Two builds of one PyMC model differ in internal ids; the fingerprint must not depend on them.
    assert bp.Query(with_model(), ["x"], "q").fingerprint == bp.Query(with_model(), ["x"], "q").fingerprint


def test_check_query_sees_a_callable_mutated_after_calibration():
    """The check proposed for the release path: a query whose state changed since calibration is refused."""
    from bayespriv.files import check_query

    above = _Above(0.0)
    model = bp.GaussianDataModel([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]], ["x", "w"], N)
    pair = bp.SecretPair(bp.DatasetSecret.mean("w", -1.0), bp.DatasetSecret.mean("w", 1.0))
    cal = bp.calibrate(model, pair, bp.count(above, "x", name="above"), n_draws=300, rng=11)
    check_query(cal.query, cal.query_fingerprint)
    above.limit = 1.0  # the predicate now computes something else than what was calibrated
    with pytest.raises(ReleaseMismatchError, match="got query 'above'"):
        check_query(cal.query, cal.query_fingerprint)
