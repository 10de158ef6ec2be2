"""Authenticated calibration files: the owner's key, the MAC over all contents, self-consistency on load.

The attacks are run as a user would run them: save a calibration, edit the file with h5py
(an HDF5 library independent of bayespriv), and load it. Exact checks (no statistical tolerance).
The session's key lives in a temporary directory (``tests/conftest.py``); tests that need
another key set ``BAYESPRIV_KEY_FILE`` / ``BAYESPRIV_KEY`` themselves.
"""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import warnings
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.files import load_calibration
from bayespriv.files import calibration_io as persist, signing
from bayespriv.files.signing import UNVERIFIED, FileProvenance
from bayespriv.errors import BayesPrivWarning, SigningKeyError, UnverifiedCalibrationError
from bayespriv.mechanisms import APGM, MQM

from tests._every_mechanism import BUILDERS
from tests._signing import get_array, resign, set_array

N = 30
OTHER_KEY = bytes(range(32))
SA, SB = bp.DatasetSecret.mean("x", -1.0), bp.DatasetSecret.mean("x", 2.0)


def _query() -> bp.Query:
    return bp.stack(bp.mean("y"), bp.mean("w", bounds=(-10, 10)))


def _calibration(seed: int = 1, n_draws: int = 300) -> bp.Calibration:
    model = bp.GaussianDataModel([0.0, 1.0, 2.0], [[1.0, 0.6, 0.3], [0.6, 2.0, 0.0], [0.3, 0.0, 1.0]], ["x", "y", "w"], N)
    return bp.calibrate(model, bp.SecretPair(SA, SB), _query(), n_draws=n_draws, rng=seed)


def _data() -> pd.DataFrame:
    return pd.DataFrame({"x": np.linspace(-1, 1, N), "y": np.linspace(0, 2, N), "w": np.linspace(1, 3, N)})


@pytest.fixture
def own_key(tmp_path, monkeypatch) -> Path:
    """A key file of this test only, in a directory that does not exist yet."""
    path = tmp_path / "config" / "bayespriv" / "key"
    monkeypatch.setenv("BAYESPRIV_KEY_FILE", str(path))
    monkeypatch.delenv("BAYESPRIV_KEY", raising=False)
    return path


# -- the key -------------------------------------------------------------------------------------------------------
def test_a_writer_creates_the_key_0600_in_a_0700_directory_a_reader_never(own_key, tmp_path):
    path = _calibration().to_netcdf(tmp_path / "cal.nc")  # the first save creates the key
    assert stat.S_IMODE(own_key.stat().st_mode) == 0o600
    assert stat.S_IMODE(own_key.parent.stat().st_mode) == 0o700
    assert len(bytes.fromhex(own_key.read_text())) == signing.KEY_BYTES
    assert signing.key_path() == own_key
    with h5py.File(path, "r") as f:
        assert f.attrs[signing.KEY_ID_ATTR] == signing.key_fingerprint() and len(f.attrs[signing.MAC_ATTR]) == 64
    own_key.unlink()
    with pytest.raises(SigningKeyError, match="Readers never create a key"):
        signing.load_key(create=False)
    with pytest.raises(UnverifiedCalibrationError, match="cannot be verified: .*there is none at"):
        load_calibration(path)
    assert not own_key.exists()


def test_the_environment_key_is_hex_and_comes_first(own_key, tmp_path, monkeypatch):
    monkeypatch.setenv("BAYESPRIV_KEY", OTHER_KEY.hex())
    path = _calibration().to_netcdf(tmp_path / "cal.nc")
    assert not own_key.exists()  # the key file is not read, not created
    assert signing.load_key() == OTHER_KEY and signing.key_fingerprint() == signing.key_fingerprint(OTHER_KEY)
    assert load_calibration(path, key=OTHER_KEY).content_hash is not None
    monkeypatch.setenv("BAYESPRIV_KEY", "not hex at all")
    with pytest.raises(SigningKeyError, match="BAYESPRIV_KEY must hold the key in hexadecimal"):
        signing.load_key()
    monkeypatch.setenv("BAYESPRIV_KEY", "ab" * 16)
    with pytest.raises(SigningKeyError, match="at least 32 bytes"):
        signing.load_key()
    with pytest.raises(SigningKeyError, match="rotate it by setting a new value there"):
        signing.rotate_key()


def test_a_key_file_others_can_read_is_refused(own_key):
    signing.load_key(create=True)
    own_key.chmod(0o644)
    with pytest.raises(SigningKeyError, match=r"readable by its owner only \(mode 0600\); got mode 0644.*chmod 600"):
        signing.load_key()


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_key_in_a_directory_others_can_write_is_refused(own_key, mode):
    """Whoever can write the key's directory can replace the key (and sign forged files): refused, with the fix."""
    signing.load_key(create=True)
    own_key.parent.chmod(mode)
    try:
        with pytest.raises(SigningKeyError, match=rf"writable by its owner only; got mode {mode:04o}.*chmod go-w"):
            signing.load_key()
    finally:
        own_key.parent.chmod(0o700)
    assert len(signing.load_key()) >= 32  # the twin: the same key in a private directory is read


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_key_file_owned_by_another_user_is_refused(own_key):
    signing.load_key(create=True)
    os.chown(own_key, 4242, -1)
    with pytest.raises(SigningKeyError, match=r"must be owned by the user running bayespriv \(uid 0\); got uid 4242"):
        signing.load_key()
    os.chown(own_key, 0, -1)
    os.chown(own_key.parent, 4242, -1)
    with pytest.raises(SigningKeyError, match=r"directory .* must be owned by you \(uid 0\) or root; got uid 4242"):
        signing.load_key()
    os.chown(own_key.parent, 0, -1)
    assert len(signing.load_key()) >= 32


def test_rotation_keeps_nothing_old_files_stop_verifying_naming_both_keys(own_key, tmp_path):
    path = _calibration().to_netcdf(tmp_path / "cal.nc")
    old = signing.key_fingerprint()
    with pytest.warns(BayesPrivWarning, match=f"rotated \\({old} -> .*no longer verify"):
        new = signing.rotate_key()
    assert new != old and signing.key_fingerprint() == new and stat.S_IMODE(own_key.stat().st_mode) == 0o600
    with pytest.raises(UnverifiedCalibrationError, match=f"signed with key {old}…, yours is {new}…"):
        load_calibration(path)


# -- attack (a): a consistent forgery ---------------------------------------------------------------------------------
def _forge_consistent(path: Path) -> None:
    """Secret B's mean set to A's, B's samples shifted to match: moments and samples agree (only the MAC can tell)."""
    mean, samples = get_array(path, "mean"), get_array(path, "samples")
    shift = mean[0] - mean[1]
    samples[1] += shift
    set_array(path, "samples", samples)
    from bayespriv.calibration.moments import sample_moments

    set_array(path, "mean", sample_moments(samples)[0])


@pytest.mark.slow
def test_attack_a_a_consistent_forgery_is_refused_by_the_mac(tmp_path):
    cal = _calibration(n_draws=20_000)  # enough draws to certify δ = 1e-3
    path = cal.to_netcdf(tmp_path / "cal.nc")
    _forge_consistent(path)
    with pytest.raises(UnverifiedCalibrationError, match="valid MAC.*contents changed after signing") as caught:
        load_calibration(path)
    message = str(caught.value)
    assert str(path) in message and "trust='unverified'" in message and "re-run calibrate" in message
    assert "\n" not in message
    # The same forgery signed with another key (another owner, or a forger's own key): refused too.
    resign(path, key=OTHER_KEY)
    with pytest.raises(UnverifiedCalibrationError, match=f"signed with key {signing.key_fingerprint(OTHER_KEY)}…, "
                                                         f"yours is {signing.key_fingerprint()}…"):
        load_calibration(path)
    # What the forgery would have released: inspected as unverified, its sensitivity is (nearly) gone ...
    forged = load_calibration(path, query=_query(), trust="unverified")
    assert forged.sensitivity(2) < 1e-12 < cal.sensitivity(2)
    mech = APGM(forged, epsilon=1, delta=1e-3)
    assert mech.sigma2 < APGM(cal, epsilon=1, delta=1e-3).sigma2 / 100
    # ... so it cannot release without the explicit opt-in, and never as verified.
    assert UNVERIFIED in mech.guarantee.assumptions
    with pytest.raises(UnverifiedCalibrationError, match="accept_unverified=True"):
        mech.release(_data())


# -- attack (b): a file that contradicts itself under a valid MAC -------------------------------------------------------
@pytest.mark.parametrize("name, edit, message", [
    ("mean", lambda a: a[1].__setitem__(0, a[0, 0]), r"mean of secret 'mean\(x\)=2', component mean\(y\) in root"),
    ("cov", lambda a: a.__imul__(0.5), r"cov of secret 'mean\(x\)=.*', component mean\(.\), mean\(.\) in root"),
    ("mean_se", lambda a: a.__imul__(0.0), r"mean_se of secret"),
    ("cov_se", lambda a: a.__imul__(0.5), r"cov_se of secret"),
    ("cov_se_white", lambda a: a.__imul__(0.0), r"cov_se_white of secret 'mean\(x\)=-1' in root giving the shrink factor"),
])
def test_attack_b_a_contradiction_signed_with_the_right_key_is_refused(tmp_path, name, edit, message):
    path = _calibration().to_netcdf(tmp_path / "cal.nc")
    value = get_array(path, name)
    edit(value)
    set_array(path, name, value)
    resign(path)  # a bug in the writer, or a stolen key
    with pytest.raises(UnverifiedCalibrationError, match=message) as caught:
        load_calibration(path)
    assert "must agree with itself" in str(caught.value) and "recomputed from the stored samples" in str(caught.value)
    with pytest.raises(UnverifiedCalibrationError, match=message):  # inspection does not load it either
        load_calibration(path, trust="unverified")


def test_metadata_that_contradicts_the_arrays_is_refused(tmp_path):
    path = _calibration().to_netcdf(tmp_path / "cal.nc")
    for change, message in (({"n_draws": 299}, "n_draws=299 in root but 300 stored draws"),
                            ({"confidence": 0.999999}, "stored values that no calibration can hold .*z must be >="),
                            ({"has_samples": True}, None)):
        with h5py.File(path, "r+") as f:
            original = f.attrs["bayespriv_metadata"]
            f.attrs["bayespriv_metadata"] = json.dumps({**json.loads(original), **change})
        resign(path)
        if message is None:
            load_calibration(path)  # true: nothing contradicts
        else:
            with pytest.raises(UnverifiedCalibrationError, match=message):
                load_calibration(path)
        with h5py.File(path, "r+") as f:
            f.attrs["bayespriv_metadata"] = original
        resign(path)
    with h5py.File(path, "r+") as f:
        del f["samples"]
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match="no samples at the root, whose metadata says it has them"):
        load_calibration(path)


def test_the_twin_a_small_consistent_rounding_difference_loads(tmp_path):
    """Twin of the consistency checks: differences of one ulp (another BLAS or NumPy summation order) load."""
    path = _calibration().to_netcdf(tmp_path / "cal.nc")
    mean = get_array(path, "mean")
    set_array(path, "mean", np.nextafter(mean, np.inf))
    resign(path)
    loaded = load_calibration(path)
    assert not np.array_equal(loaded.mean_array, _calibration().mean_array)


def test_a_family_whose_root_is_not_its_worst_member_is_refused(tmp_path):
    def member(rho):
        return bp.GaussianDataModel([0.0, 1.0], [[1.0, rho], [rho, 1.0]], ["x", "y"], N)

    family = bp.DataModelFamily(member, {"rho": [0.2, 0.8]})
    cal = bp.calibrate(family, bp.SecretPair(SA, SB), bp.mean("y"), n_draws=300, rng=2)
    path = cal.to_netcdf(tmp_path / "fam.nc")
    assert load_calibration(path).content_hash is not None
    worst = [i for i, m in enumerate(cal.family) if np.array_equal(m.mean_array, cal.mean_array)][0]
    other = 1 - worst
    for group in ("member_%03d/mean" % other,):
        value = get_array(path, group)
        value[0, 0] += 1.0
        set_array(path, group, value)
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match=f"mean of secret .* in member_{other:03d}"):
        load_calibration(path)


# -- chains and quilts ------------------------------------------------------------------------------------------------
def _chain_file(tmp_path):
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain

    query = bp.count(lambda b: b["s"] == "b", "s", name="bs")
    chain = calibrate_chain(MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], ["a", "b"]), query, length=7)
    return chain, query, chain.to_netcdf(tmp_path / "chain.nc")


def test_chain_files_are_signed_and_their_influences_recomputed(tmp_path):
    chain, query, path = _chain_file(tmp_path)
    loaded = load_calibration(path, query=query)
    assert loaded.content_hash is not None and MQM(loaded, epsilon=1.0).guarantee == MQM(chain, epsilon=1.0).guarantee
    infl = get_array(path, "influence")
    infl[3, 1, 1] /= 2
    set_array(path, "influence", infl)
    with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
        load_calibration(path, query=query)
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match=r"influence at \(0, 3, 1, 1\): stored .* recomputed from "
                                                         "the stored chains"):
        load_calibration(path, query=query)
    _, _, path = _chain_file(tmp_path)
    with h5py.File(path, "r+") as f:
        meta = json.loads(f.attrs["bayespriv_metadata"])
        f.attrs["bayespriv_metadata"] = json.dumps({**meta, "lipschitz": 0.5})
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match="lipschitz=0.5, below the query's record sensitivity 1.0"):
        load_calibration(path, query=query)


def test_quilt_files_are_signed_and_their_quilts_rescored(tmp_path):
    from bayespriv.models import school

    query = school.QUERIES["tall"]
    path = school.calibration("tall").to_netcdf(tmp_path / "quilt.nc")
    assert load_calibration(path, query=query).content_hash is not None
    sens = get_array(path, "quilt_sensitivity")
    sens[np.argmax(sens)] /= 2
    set_array(path, "quilt_sensitivity", sens)
    resign(path)
    with pytest.raises(UnverifiedCalibrationError, match=r"Δ_\{A∩N\} F of the quilt .* of 'income': stored"):
        load_calibration(path, query=query)


# -- any edit anywhere breaks the MAC ----------------------------------------------------------------------------------
def _datasets(path) -> list[str]:
    names: list[str] = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) and obj.size else None)
    return names


def _bump(value: np.ndarray) -> np.ndarray:
    flat = value.reshape(-1).copy()
    if flat.dtype.kind == "f":
        flat.view(np.uint64 if flat.dtype.itemsize == 8 else np.uint32)[0] ^= 1
    elif flat.dtype.kind in "iub":
        flat[0] = flat[0] + 1 if flat.dtype.kind != "b" else not flat[0]
    elif flat.dtype.kind == "O":
        flat[0] = (flat[0].decode() if isinstance(flat[0], bytes) else str(flat[0])) + "x"
    return flat.reshape(value.shape)


def test_any_single_change_to_any_variable_or_attribute_breaks_the_mac(tmp_path):
    """Every stored array (the secrets' labels and the pairs' indices included) and every attribute is covered."""
    cal = _calibration()
    clean = cal.to_netcdf(tmp_path / "clean.nc")
    names = _datasets(clean)
    assert {"mean", "samples", "secret_label", "pair_secret", "component_name"} <= set(names)
    for name in names:
        path = tmp_path / "edited.nc"
        path.write_bytes(clean.read_bytes())
        with h5py.File(path, "r+") as f:
            if f[name].attrs.get("CLASS") == b"DIMENSION_SCALE" and name not in ("mean", "samples"):
                continue  # netCDF dimensions without data: nothing the loader reads
            f[name][...] = _bump(f[name][()])
        with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
            load_calibration(path)
    edits = [lambda f: f.attrs.__setitem__("title", "edited"),  # a root attribute
             lambda f: f["mean"].attrs.__setitem__("scale_factor", 2.0),  # a decoding attribute
             lambda f: f["mean"].attrs.__setitem__("note", "new"),  # a new variable attribute
             lambda f: f.create_dataset("extra", data=np.zeros(2)),  # a new variable
             lambda f: f.move("mean_se", "mean_se_renamed")]  # a renamed variable
    for edit in edits:
        path = tmp_path / "edited.nc"
        path.write_bytes(clean.read_bytes())
        with h5py.File(path, "r+") as f:
            edit(f)
        with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
            load_calibration(path)
    with h5py.File(path, "r+") as f:
        del f.attrs[signing.MAC_ATTR]
    with pytest.raises(UnverifiedCalibrationError, match="got a file with no MAC"):
        load_calibration(path)


def test_the_mac_is_checked_before_anything_is_read(tmp_path):
    """Garbage metadata under a broken MAC: the MAC error, not a parse error of the metadata."""
    path = _calibration().to_netcdf(tmp_path / "cal.nc")
    with h5py.File(path, "r+") as f:
        f.attrs["bayespriv_metadata"] = "{not json"
    with pytest.raises(UnverifiedCalibrationError, match="contents changed"):
        load_calibration(path)


def test_the_digest_written_is_the_digest_read_for_every_kind_of_file(tmp_path):
    """Signing sees the tree as the loader will read it back: plain, exact, plug-in, chain and quilt files verify,
    and their content hashes are the SHA-256 of what was read."""
    from bayespriv.models import school

    exact = bp.Calibration.from_moments({SA: [0.0], SB: [1.0]}, {SA: [[1.0]], SB: [[2.0]]}, bp.SecretPair(SA, SB),
                                        n_records=5)
    chain, chain_query, chain_path = _chain_file(tmp_path)
    files = [(_calibration().to_netcdf(tmp_path / "a.nc"), None),
             (exact.to_netcdf(tmp_path / "b.nc"), None),
             (_calibration(n_draws=50).to_netcdf(tmp_path / "c.nc"), None),
             (chain_path, chain_query),
             (school.calibration("tall").to_netcdf(tmp_path / "d.nc"), school.QUERIES["tall"])]
    hashes = set()
    for path, query in files:
        loaded = load_calibration(path, query=query)
        assert loaded.content_hash == signing.content_digest(persist._open_tree(Path(path)))
        hashes.add(loaded.content_hash)
    assert len(hashes) == len(files)


# -- content hash and provenance ---------------------------------------------------------------------------------------
def test_content_hash_is_stable_none_in_memory_and_none_when_unverified(tmp_path):
    cal = _calibration()
    assert cal.content_hash is None and cal.provenance is None
    path = cal.to_netcdf(tmp_path / "cal.nc", seed=1)
    a, b = load_calibration(path), load_calibration(path)
    assert a.content_hash == b.content_hash and len(a.content_hash) == 64
    assert a.provenance == FileProvenance(str(path), a.content_hash, True, signing.key_fingerprint(),
                                          model_signature=a.provenance.model_signature)
    assert json.loads(a.provenance.model_signature)["type"].endswith("GaussianDataModel")  # the model it was drawn from
    assert UNVERIFIED not in a.assumptions
    assert load_calibration(cal.to_netcdf(tmp_path / "cal2.nc", seed=2)).content_hash != a.content_hash  # seed
    foreign = cal.to_netcdf(tmp_path / "foreign.nc", key=OTHER_KEY)
    f = load_calibration(foreign, trust="unverified")
    assert f.content_hash is None and f.provenance.verified is False and len(f.provenance.content_hash) == 64
    assert "signed with key" in f.provenance.reason and UNVERIFIED in f.assumptions
    assert "UNVERIFIED calibration file" in repr(f)
    assert all(UNVERIFIED in m.assumptions for m in f.members)
    with pytest.raises(UnverifiedCalibrationError, match="would make a file nothing vouches for verify as yours"):
        f.to_netcdf(tmp_path / "laundered.nc")  # no laundering: an unverified file is not re-signed as yours
    assert not (tmp_path / "laundered.nc").exists()


# -- releases from unverified calibrations -------------------------------------------------------------------------------
@pytest.mark.slow
def test_unverified_releases_need_the_opt_in_and_say_so(tmp_path):
    path = _calibration(n_draws=20_000).to_netcdf(tmp_path / "cal.nc", key=OTHER_KEY)
    cal = load_calibration(path, query=_query(), trust="unverified")
    mech = APGM(cal, epsilon=1.0, delta=1e-3)
    ledger = bp.Ledger(tmp_path / "budget.sqlite")
    ledger.set_budget("x", 10.0, 0.1)
    for call in (lambda: mech.release(_data(), ledger=ledger), lambda: mech.release_value([0.1, 0.2], ledger=ledger)):
        with pytest.raises(UnverifiedCalibrationError, match=f"cannot release: .*trust='unverified' from the file "
                                                             f"'{path}'.*Nothing was spent"):
            call()
    assert ledger.spent("x") == (0.0, 0.0)
    with pytest.raises(bp.ParameterTypeError, match="accept_unverified must be True or False"):
        mech.release(_data(), options=bp.ReleaseOptions(accept_unverified="yes"))
    release = mech.release(_data(), ledger=ledger, options=bp.ReleaseOptions(accept_unverified=True))
    assert UNVERIFIED in release.guarantee.assumptions and release.verified is False
    assert "UNVERIFIED calibration" in repr(release) and "UNVERIFIED calibration" in release._repr_html_()
    assert ledger.spent("x")[0] == 1.0
    row = ledger.releases().iloc[-1]  # the ledger does not call it established either, and report() counts it
    assert not row["established"] and UNVERIFIED in row["failed_assumptions"]
    assert ledger.report().loc["x", "not established"] == 1
    verified = APGM(load_calibration(_calibration(n_draws=20_000).to_netcdf(tmp_path / "own.nc"), query=_query()),
                    epsilon=1.0, delta=1e-3).release(_data())
    assert verified.verified and "UNVERIFIED" not in repr(verified)


def test_unverified_chain_calibrations_gate_mqm(tmp_path):
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain

    query = bp.count(lambda b: b["s"] == "b", "s", name="bs")
    chain = calibrate_chain(MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], ["a", "b"]), query, length=7)
    loaded = load_calibration(chain.to_netcdf(tmp_path / "c.nc", key=OTHER_KEY), query=query, trust="unverified")
    assert UNVERIFIED in loaded.assumptions and loaded.content_hash is None
    mech = MQM(loaded, epsilon=1.0)
    with pytest.raises(UnverifiedCalibrationError):
        mech.release(pd.DataFrame({"s": list("abbabba")}))
    assert not mech.release(pd.DataFrame({"s": list("abbabba")}), options=bp.ReleaseOptions(accept_unverified=True)).verified


@pytest.mark.parametrize("name", sorted(set(BUILDERS) - {"MQM", "APMQM", "SubsetCountMechanism"}))
def test_every_mechanism_on_an_unverified_calibration_names_it_and_refuses(name, monkeypatch):
    """Every mechanism's guarantee names unverified_calibration when its calibration carries it, so the gate
    catches every one (MQM and APMQM read their own calibration kinds: tests above and below; a count table
    is built from no calibration)."""
    real = bp.Calibration.assumptions.fget
    monkeypatch.setattr(bp.Calibration, "assumptions", property(lambda self: real(self) + (UNVERIFIED,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech, answer = BUILDERS[name](1.0)
        assert UNVERIFIED in mech.guarantee.assumptions
        with pytest.raises(UnverifiedCalibrationError, match="cannot release"):
            mech.release_value(answer, options=bp.ReleaseOptions(accept_failed_assumptions=True))
        assert not mech.release_value(answer, options=bp.ReleaseOptions(accept_failed_assumptions=True, accept_unverified=True)).verified


def test_unverified_quilt_calibrations_gate_apmqm(tmp_path):
    from bayespriv.mechanisms import APMQM
    from bayespriv.models import school

    path = school.calibration("tall").to_netcdf(tmp_path / "q.nc", key=OTHER_KEY)
    cal = load_calibration(path, query=school.QUERIES["tall"], trust="unverified")
    mech = APMQM(cal, epsilon=1.0)
    assert UNVERIFIED in mech.guarantee.assumptions
    with pytest.raises(UnverifiedCalibrationError):
        mech.release_value([10.0])


def test_an_unverified_mark_survives_replace():
    cal = _calibration()
    marked = dataclasses.replace(cal, provenance=FileProvenance("f.nc", "0" * 64, False))
    assert UNVERIFIED in dataclasses.replace(marked, query=None).assumptions
    extra = APGM(marked, epsilon=1.0, delta=1e-3, accountant="gaussian").with_extra_laplace(0.5, w_infinity=0.1)
    assert UNVERIFIED in extra.guarantee.assumptions


def test_benchmark_switch_is_private_and_off_by_default(tmp_path):
    assert signing._ENABLED
    with signing._disabled():
        path = _calibration().to_netcdf(tmp_path / "plain.nc")
        assert load_calibration(path).content_hash is None
    assert signing._ENABLED
    with pytest.raises(UnverifiedCalibrationError, match="no MAC"):
        load_calibration(path)
    assert "sign" not in persist.save_calibration.__code__.co_varnames[:4]
    assert os.environ["BAYESPRIV_KEY_FILE"] != str(Path.home() / ".config" / "bayespriv" / "key")
