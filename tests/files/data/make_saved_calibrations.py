"""Write the saved calibration files of ``tests/files/test_saved_files.py`` and what they must give.

The files under ``saved/`` were written by ``save_calibration`` of the package at commit d86009f, signed with
:data:`FIXTURE_KEY` (a key for these files only), and are kept unchanged: they check that calibration files
written by that layout of the package load, verify and give the same mechanisms under any later layout.
Regenerating them would defeat that purpose; run this script only to add a new kind of file::

    PYTHONPATH=<checkout> python tests/files/data/make_saved_calibrations.py

Those files hold query fingerprints of scheme 1 (bytecode), which only their Python (3.11) can verify when the
query has code of its own (the chain's and the quilt's lambdas). ``--python-version`` writes, under
``saved/python-<major>.<minor>/``, the gaussian, chain and quilt files again with the running interpreter and
the current scheme (the queries' verified source), and their ``expected.json``: the tests load every such
folder under every Python, so a file written under 3.11 must verify and release under 3.12 and back. Run it
once per supported interpreter (written at commit 3c1e0f5+ with Python 3.11.7 and 3.12.1)::

    .venv/bin/python tests/files/data/make_saved_calibrations.py --python-version

``saved/expected.json`` holds what each file must give once loaded: SHA-256 digests of its arrays and of
the noise covariance of mechanisms built on it, and their guarantees (floats as ``float.hex``) — or, where
the file's draws cannot certify the request, the refusal and the draws it names. The arrays are the file's
and never change; the mechanisms' entries are what the accountant of this package gives on them, and are
rewritten with ``--mechanisms`` (which first checks that every array digest is unchanged), with the noise
covariances' values under ``noise_values`` (a CPU with other SIMD exp/log gives other last bits: the tests
then compare the values within :data:`NOISE_RTOL`).
"""

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np

#: The key the fixture files are signed with (32 bytes; never a data owner's key).
FIXTURE_KEY = bytes(range(32))
HERE = Path(__file__).with_name("saved")
EPSILON, DELTA = 1.0, 1e-3
#: A δ the sampled fixtures' few draws (300 and 200 per secret) can certify.
LARGE_DELTA = 0.05


def digest(array) -> str:
    """SHA-256 of an array's dtype, shape and bytes (None for a missing array)."""
    if array is None:
        return "none"
    a = np.ascontiguousarray(np.asarray(array))
    return hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()


def gaussian_setting():
    """A Gaussian Θ (3 columns, 30 records), a mean secret pair and a stacked query of two bounded means."""
    import bayespriv as bp

    model = bp.GaussianDataModel([0.0, 1.0, 2.0], [[1.0, 0.5, 0.3], [0.5, 2.0, 0.0], [0.3, 0.0, 1.0]],
                                 ["x", "y", "w"], 30)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", -1.0), bp.DatasetSecret.mean("x", 2.0))
    return model, pair, bp.stack(bp.mean("y"), bp.mean("w", bounds=(-10, 10)))


def hospital_setting():
    """The hospital Θ of the attribute-privacy paper (two PyMC members) hiding the share of women."""
    import bayespriv as bp
    from bayespriv.models.hospital import QUERIES, QUERY_GRIDS, hospital_family

    share = lambda p: bp.DatasetSecret.proportion("gender", 1, p)  # noqa: E731
    grid = {k: list(v) for k, v in QUERY_GRIDS["average blood pressure"].items()}
    return hospital_family(50, grid), bp.SecretPair(share(0.26), share(0.74)), QUERIES["average blood pressure"]


def chain_setting():
    """Two Markov chains over {a, b} and a count of b's."""
    import bayespriv as bp
    from bayespriv.networks.quilts import MarkovChain

    chains = [MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], ["a", "b"]),
              MarkovChain.stationary([[0.7, 0.3], [1 / 3, 2 / 3]], ["a", "b"])]
    return chains, bp.count(lambda b: b["s"] == "b", "s", name="bs")


ARRAYS = ("mean_array", "cov_array", "mean_se", "cov_se", "sample_array")


def calibration_figures(cal) -> dict:
    """What a loaded sampled calibration must give: its arrays, and APGM / OptimalGaussian noise and guarantee at
    δ = :data:`DELTA` (or their refusal) and at :data:`LARGE_DELTA`."""
    from bayespriv.mechanisms import APGM, OptimalGaussian

    out = {name: digest(getattr(cal, name)) for name in ARRAYS}
    for cls in (APGM, OptimalGaussian):
        out[cls.__name__] = built_figures(cls, cal, DELTA)
        out[f"{cls.__name__}@{LARGE_DELTA}"] = built_figures(cls, cal, LARGE_DELTA)
    return out


def built_figures(cls, cal, delta: float) -> dict:
    """:func:`mechanism_figures` of ``cls(cal)`` at δ, or the refusal for want of draws and the draws it names."""
    from bayespriv.errors import DrawsNeededError

    try:
        return mechanism_figures(cls(cal, epsilon=EPSILON, delta=delta))
    except DrawsNeededError as exc:
        return {"refused": "DrawsNeededError", "draws_needed": exc.draws_needed, "draws": exc.draws}


def mechanism_figures(m) -> dict:
    """Noise covariance digest and guarantee of a mechanism."""
    g = m.guarantee
    return {"noise_cov": digest(np.asarray(m.noise_cov, dtype=float)), "epsilon": float(g.epsilon).hex(),
            "delta": float(g.delta).hex()}


#: How far (relative) a sampled file's mechanism noise may be from the recorded value when its digest differs:
#: the accountant's root-finding runs on NumPy's SIMD exp/log, whose last bits differ between CPUs (AVX-512 and
#: AVX2 builds of the same wheel); a changed default or a misread file moves the noise by far more.
NOISE_RTOL = 1e-9


def noise_values(cal) -> dict:
    """The noise covariance entries (``float.hex``) of each established mechanism of :func:`calibration_figures`."""
    from bayespriv.mechanisms import APGM, OptimalGaussian

    out = {}
    for cls in (APGM, OptimalGaussian):
        for label, delta in ((cls.__name__, DELTA), (f"{cls.__name__}@{LARGE_DELTA}", LARGE_DELTA)):
            if "refused" not in built_figures(cls, cal, delta):
                noise = np.asarray(cls(cal, epsilon=EPSILON, delta=delta).noise_cov, dtype=float)
                out[label] = [float(v).hex() for v in noise.ravel()]
    return out


def same_figures(got: dict, expected: dict, values: dict) -> list[str]:
    """The entries of ``got`` that differ from ``expected``: every array digest, refusal and guarantee exactly; a
    mechanism's noise covariance by digest, or else within :data:`NOISE_RTOL` of its recorded ``values``."""
    differ = []
    for key in sorted(set(got) | set(expected)):
        a, b = got.get(key), expected.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict) and key in values and \
                {k: v for k, v in a.items() if k != "noise_cov"} == {k: v for k, v in b.items() if k != "noise_cov"}:
            continue  # the noise itself is compared by value below
        differ.append(key)
    return differ


def main() -> None:
    """Calibrate each setting, save it signed with the fixture key and record what it must give."""
    warnings.filterwarnings("ignore")
    import bayespriv as bp
    from bayespriv.files import save_calibration
    from bayespriv.networks.quilts import calibrate_chain
    from bayespriv.mechanisms import APMQM, MQM
    from bayespriv.models import school

    HERE.mkdir(exist_ok=True)
    expected = {"generated": "by tests/files/data/make_saved_calibrations.py at commit d86009f"}
    for name, setting, draws in (("gaussian", gaussian_setting, 300), ("hospital", hospital_setting, 200)):
        model, pair, query = setting()
        cal = bp.calibrate(model, pair, query, n_draws=draws, rng=3)
        save_calibration(cal, HERE / f"{name}.nc", seed=3, key=FIXTURE_KEY)
        expected[name] = calibration_figures(cal)
    chains, query = chain_setting()
    chain = calibrate_chain(chains, query, length=7)
    save_calibration(chain, HERE / "chain.nc", seed=None, key=FIXTURE_KEY)
    expected["chain"] = {"influence": digest(chain.influence), "MQM": mechanism_figures(MQM(chain, epsilon=EPSILON))}
    quilt = school.calibration("tall")
    save_calibration(quilt, HERE / "quilt.nc", seed=5, key=FIXTURE_KEY)
    expected["quilt"] = {f"APMQM@{eps}": mechanism_figures(APMQM(quilt, epsilon=eps)) for eps in (0.1, 1.0)}
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


def version_folder() -> Path:
    """``saved/python-<major>.<minor>`` of the running interpreter."""
    import sys

    return HERE / f"python-{sys.version_info[0]}.{sys.version_info[1]}"


def write_version_files() -> None:
    """The gaussian, chain and quilt files of the running Python, fingerprinted by the current scheme."""
    import platform

    warnings.filterwarnings("ignore")
    import bayespriv as bp
    from bayespriv.files import save_calibration
    from bayespriv.networks.quilts import calibrate_chain
    from bayespriv.mechanisms import APMQM, MQM
    from bayespriv.models import school

    folder = version_folder()
    folder.mkdir(exist_ok=True)
    expected = {"generated": f"by make_saved_calibrations.py --python-version under Python {platform.python_version()}"}
    model, pair, query = gaussian_setting()
    cal = bp.calibrate(model, pair, query, n_draws=300, rng=3)
    save_calibration(cal, folder / "gaussian.nc", seed=3, key=FIXTURE_KEY)
    expected["gaussian"] = {**calibration_figures(cal), "fingerprint": query.fingerprint}
    chains, query = chain_setting()
    chain = calibrate_chain(chains, query, length=7)
    save_calibration(chain, folder / "chain.nc", seed=None, key=FIXTURE_KEY)
    expected["chain"] = {"influence": digest(chain.influence), "MQM": mechanism_figures(MQM(chain, epsilon=EPSILON)),
                         "fingerprint": query.fingerprint}
    quilt = school.calibration("tall")
    save_calibration(quilt, folder / "quilt.nc", seed=5, key=FIXTURE_KEY)
    expected["quilt"] = {**{f"APMQM@{eps}": mechanism_figures(APMQM(quilt, epsilon=eps)) for eps in (0.1, 1.0)},
                         "fingerprint": school.QUERIES["tall"].fingerprint}
    (folder / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


def rewrite_mechanisms() -> None:
    """Rewrite the mechanisms' entries of ``expected.json`` for the sampled files, after checking that every
    array digest of the files is unchanged (the files themselves are never rewritten)."""
    from bayespriv.files import load_calibration

    expected = json.loads((HERE / "expected.json").read_text())
    for name, setting in (("gaussian", gaussian_setting), ("hospital", hospital_setting)):
        cal = load_calibration(HERE / f"{name}.nc", query=setting()[2], key=FIXTURE_KEY)
        figures = calibration_figures(cal)
        assert all(figures[a] == expected[name][a] for a in ARRAYS), f"{name}.nc no longer gives its arrays"
        expected[name] = figures
        expected.setdefault("noise_values", {})[name] = noise_values(cal)
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":  # pytest imports this file for doctests: nothing runs then
    import sys

    if "--mechanisms" in sys.argv:
        rewrite_mechanisms()
    elif "--python-version" in sys.argv:
        write_version_files()
    else:
        main()
