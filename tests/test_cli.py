"""The `bayespriv demo` command, end to end: with the draws certifying δ needs (its default), and with too few."""

from __future__ import annotations

import pytest

from bayespriv.cli import main


@pytest.mark.slow
@pytest.mark.full_scale  # the quiet demo below makes the same PyMC calls (its family table) with fewer draws
def test_demo_prints_the_table_and_writes_the_figure(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    png = tmp_path / "hospital-release.png"
    assert png.exists() and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The paper's (Δ, Var) with its classic constant reproduce its σ² for the average weight.
    assert "530.54" in out and "87.14" in out and "0.00022" in out
    assert "APGM, accounted law  ← released" in out
    assert "APGM classic (comparison only)" in out and "APGM analytic, Gaussian F" in out
    # the rows compute what they say: the classic constant's noise is larger than the analytic one's (at ε = 1)
    def weight(label: str) -> float:  # the average weight's column
        return float(next(line for line in out.splitlines() if label in line).split(label)[1].split()[0])

    assert weight("APGM classic (comparison only)") > 1.5 * weight("APGM analytic, Gaussian F")
    assert "proven only for ε < 1" in out  # the classic warning, caught and explained once
    assert "guarantee of each release: (ε=1, δ=0.001)" in out
    assert "d(U) erratum" in out
    assert f"figure: {png}" in out


@pytest.mark.slow
def test_demo_quiet_at_a_small_epsilon_keeps_the_table_and_needs_no_warning_line(tmp_path, capsys):
    """Few draws with a δ they can certify (500 draws per secret, δ = 0.2: the floor of 500 draws is about 0.02)."""
    assert main(["demo", "--draws", "500", "--delta", "0.2", "--seed", "1", "--epsilon", "0.5", "--out", str(tmp_path),
                 "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "APGM analytic, Gaussian F" in captured.out and "(ε=0.5, δ=0.2)" in captured.out
    assert "d(U) erratum" not in captured.out and "proven only for ε < 1" not in captured.out
    assert captured.err == ""


def test_demo_with_too_few_draws_is_refused_naming_the_draws(tmp_path, capsys):
    """500 draws per secret cannot certify δ = 1e-3 (a region of mass ~0.02 may hold none of them): the demo stops
    with the refusal, which names the draws that would do."""
    assert main(["demo", "--draws", "500", "--out", str(tmp_path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "certifying delta=0.001 from draws needs more than" in err and "got 500" in err and "n_draws=" in err


@pytest.mark.parametrize("argv", [["demo", "--draws", "1"], ["demo", "--delta", "2"], ["demo", "--epsilon", "0"], ["nope"]])
def test_bad_arguments_give_a_usage_error(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out


# -- calibrate once, release later: calibrate -> inspect -> release -> ledger ----------------------
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

TEMPLATE = Path(__file__).resolve().parents[1] / "examples" / "calibration_template.py"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with the template script, a calibration made from it, and a payroll CSV of 40 rows."""
    d = tmp_path_factory.mktemp("cli")
    shutil.copy(TEMPLATE, d / "script.py")
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal([60.0, 8.0, 3.0], [10.0, 4.0, 1.0], size=(40, 3)),
                 columns=["salary", "years", "score"]).to_csv(d / "payroll.csv", index=False)
    assert main(["calibrate", str(d / "script.py"), "--out", str(d / "cal.nc"), "--draws", "20000", "--seed", "1"]) == 0
    return d


@pytest.mark.slow
def test_round_trip_calibrate_inspect_release_ledger(tmp_path, monkeypatch, capsys):
    """From a temporary directory, with relative paths, as a user would type them."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(TEMPLATE, "script.py")
    pd.DataFrame(np.random.default_rng(1).normal([60.0, 8.0, 3.0], 1.0, size=(40, 3)),
                 columns=["salary", "years", "score"]).to_csv("payroll.csv", index=False)
    assert main(["calibrate", "script.py", "--out", "cal.nc", "--draws", "20000", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "seed 7" in out and "saved: cal.nc" in out

    import bayespriv as bp
    from bayespriv.files import load_calibration

    query = bp.stack(bp.mean("years"), bp.mean("score"))
    cal = load_calibration("cal.nc", query=query)
    assert cal.n_draws == 20_000 and cal.n_records == 40 and cal.query_fingerprint == query.fingerprint

    assert main(["inspect", "cal.nc", "--out", "figures"]) == 0
    out = capsys.readouterr().out
    assert query.fingerprint in out and "seed:" in out and "7" in out
    assert "mean(salary)=55 vs mean(salary)=65" in out and "variance lower" in out
    assert "Calibration(query='stack(mean(years), mean(score))', " in out  # the name the file saved
    pngs = sorted(Path("figures").glob("*.png"))
    assert len(pngs) == 2 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)

    argv = ["release", "cal.nc", "--script", "script.py", "--mechanism", "APGM", "--epsilon", "1", "--delta", "1e-3",
            "--data", "payroll.csv", "--ledger", "budget.sqlite", "--budget", "salary=1.5,1e-2"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["components"] == ["mean(years)", "mean(score)"] and len(first["value"]) == 2
    assert first["guarantee"]["epsilon"] == 1.0 and first["guarantee"]["delta"] == 1e-3
    assert first["established"] is True and first["seeded"] is False and first["ledger_id"] == 1
    assert first["protected"] == ["salary"] and first["query_fingerprint"] == query.fingerprint
    assert first["pairs"] == ["mean(salary)=55 vs mean(salary)=65"]

    # Releases of the same query on the same table are accounted together: each costs the increase of their
    # joint ε (less than 1), until one would exceed the budget of 1.5: refused (exit 1), nothing spent.
    granted = 1
    while main(argv[:-2]) == 0:
        granted += 1
        assert granted < 20
    assert "exceed the budget of 'salary'" in capsys.readouterr().err
    assert granted >= 2
    spent = bp.Ledger("budget.sqlite").spent("salary")[0]
    assert 1.0 < spent <= 1.5

    assert main(["ledger", "budget.sqlite"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("salary"))
    assert row.split()[1] == "1.5" and float(row.split()[2]) == pytest.approx(spent) and row.split()[11] == "1"
    assert "accounted together" in out and "same query (combined noise)" in out


def test_release_refuses_a_changed_query(workdir, capsys):
    changed = workdir / "changed.py"
    changed.write_text(TEMPLATE.read_text().replace('bp.mean("score")', 'bp.mean("score", bounds=(0.0, 6.0))'))
    assert main(["release", str(workdir / "cal.nc"), "--script", str(changed), "--mechanism", "APGM",
                 "--epsilon", "1", "--delta", "1e-3", "--data", str(workdir / "payroll.csv")]) == 2
    err = capsys.readouterr().err
    _one_line_error(err, "(--script): pass the script the calibration was made with",
                    "got query 'stack(mean(years), mean(score))' with fingerprint")


def _bad_cases(d: Path) -> list[tuple[list[str], str]]:
    cal, script, data = str(d / "cal.nc"), str(d / "script.py"), str(d / "payroll.csv")
    rel = ["release", cal, "--script", script, "--mechanism", "APGM", "--epsilon", "1", "--delta", "1e-3", "--data", data]
    (d / "no_query.py").write_text("import bayespriv as bp\nx = 1\n")
    (d / "bad_model.py").write_text("model = 1\n")
    (d / "broken.py").write_text("raise RuntimeError('boom')\n")
    (d / "junk.nc").write_text("junk")
    pd.DataFrame({"salary": [1.0], "years": [1.0], "score": [1.0]}).to_csv(d / "short.csv", index=False)
    return [
        (["calibrate", str(d / "missing.py"), "--out", str(d / "x.nc")],
         "the calibration script '%s' does not exist (SCRIPT.py): check the path" % (d / "missing.py")),
        (["calibrate", str(d / "no_query.py"), "--out", str(d / "x.nc")], "must define 'model'"),
        (["calibrate", str(d / "bad_model.py"), "--out", str(d / "x.nc")], "'model' in"),
        (["calibrate", str(d / "broken.py"), "--out", str(d / "x.nc")], "RuntimeError: boom (SCRIPT.py): fix the script"),
        (["calibrate", script, "--out", str(d / "nowhere" / "x.nc")], "does not exist (--out): create it first"),
        (["calibrate", script, "--out", str(d / "x.nc"), "--draws", "1"], "got 1 (--draws): see `bayespriv calibrate"),
        (["calibrate", script, "--out", str(d / "x.nc"), "--draws", "5"], "(SCRIPT.py): fix the script's model"),
        (["calibrate", script, "--out", str(d / "x.nc"), "--confidence", "2"], "(--confidence)"),
        (["calibrate", script], "a required argument is missing (--out)"),
        (["inspect", str(d / "missing.nc")], "the calibration file '%s' does not exist (CAL.nc)" % (d / "missing.nc")),
        (["inspect", str(d / "junk.nc")], "path must be a netCDF-4 file written by Calibration.to_netcdf"),
        (rel[:5] + ["Nope"] + rel[6:], "there is no mechanism 'Nope' (--mechanism): pass one of APGM"),
        (rel[:-1] + [str(d / "missing.csv")], "does not exist (--data)"),
        (rel[:-1] + [str(d / "short.csv")], "dataset must have 40 rows, as calibrated"),
        (rel[:-2], "a required argument is missing (--data)"),
        (rel + ["--budget", "salary"], "must be NAME=EPSILON or NAME=EPSILON,DELTA; got 'salary' (--budget)"),
        (rel + ["--budget", "salary=1"], "--budget was given without --ledger (--budget): add --ledger"),
        (rel[:7] + ["-1"] + rel[8:], "(--epsilon)"),
        (rel + ["--delta", "2"], "(--delta)"),
        (rel[:1] + [str(d / "junk.nc")] + rel[2:], "(CAL.nc): pass a file written by `bayespriv calibrate`"),
        (["release", cal, "--script", str(d / "no_query.py"), "--mechanism", "APGM", "--epsilon", "1", "--data", data],
         "must define 'query'"),
        (["release", cal, "--script", str(d / "broken.py"), "--mechanism", "APGM", "--epsilon", "1", "--data", data],
         "RuntimeError: boom (--script)"),
        (["ledger", str(d / "missing.sqlite")], "there is no ledger file '%s' (BUDGET.sqlite)" % (d / "missing.sqlite")),
        (["ledger", str(d / "junk.nc")], "is corrupt or truncated"),
        (["ledger", "set-budget", str(d / "missing.sqlite"), "salary", "1"], "there is no ledger file"),
        (["ledger", "set-budget", str(d / "x.sqlite"), "salary", "1,2"], "(EPS[,DELTA])"),
        (["nope"], "invalid choice: 'nope'"),
        (rel + ["--frobnicate"], "unrecognized argument (--frobnicate)"),
    ]


def _one_line_error(err: str, *expected: str) -> None:
    """One line, in the command's error format, no traceback."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("bayespriv: error: "), err
    assert "Traceback" not in err
    assert re.match(r"bayespriv: error: .+ \(.+\): .+", lines[0]), err
    for text in expected:
        assert text in err, (text, err)


@pytest.mark.slow
def test_every_wrong_argument_exits_2_naming_it(workdir, capsys):
    for argv, expected in _bad_cases(workdir):
        assert main(argv) == 2, argv
        _one_line_error(capsys.readouterr().err, expected)


@pytest.mark.parametrize("command", ["calibrate", "inspect", "release", "ledger", "demo"])
def test_help_of_each_subcommand(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"usage: bayespriv {command}" in out
    if command == "calibrate":
        assert "model" in out and "pairs" in out and "query" in out and "calibration_template.py" in out


@pytest.mark.subprocess
def test_console_script_help_in_a_real_subprocess():
    exe = Path(sys.executable).with_name("bayespriv")
    cmd = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "bayespriv.cli", "--help"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    for name in ("demo", "calibrate", "inspect", "release", "ledger"):
        assert name in done.stdout


def test_failed_assumption_refuses_unless_accepted(workdir, capsys):
    """exp(mean(years)) is log-normal (σ ≈ 0.6 in the log), far from Gaussian. By default APGM accounts the law
    actually released and is established; on the papers' route (--accountant gaussian) its gaussian_query check
    fails on 300 draws (p-value below 1e-10 here), so the release refuses (exit 1, nothing spent) unless
    --accept-failed-assumptions, and then says established: false."""
    script = workdir / "skewed.py"
    script.write_text(TEMPLATE.read_text().replace(
        'query = bp.stack(bp.mean("years"), bp.mean("score"))',
        'import numpy as np\nquery = bp.Query(lambda b: np.exp(b["years"].mean(1))[:, None], ["years"], "exp years")'))
    assert main(["calibrate", str(script), "--out", str(workdir / "skewed.nc"), "--draws", "20000", "--seed", "2"]) == 0
    argv = ["release", str(workdir / "skewed.nc"), "--script", str(script), "--mechanism", "APGM", "--epsilon", "1",
            "--delta", "1e-3", "--data", str(workdir / "payroll.csv"), "--ledger", str(workdir / "skewed.sqlite"),
            "--budget", "salary=5,0.1"]
    capsys.readouterr()
    assert main(argv[:-4]) == 0  # the default accountant: established, no ledger
    accounted = json.loads(capsys.readouterr().out)
    assert accounted["established"] is True and "sampled_law" in accounted["guarantee"]["assumptions"]
    argv += ["--accountant", "gaussian"]
    assert main(argv) == 1
    assert "gaussian_query" in capsys.readouterr().err
    assert main(argv + ["--accept-failed-assumptions"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["established"] is False and "gaussian_query" in out["guarantee"]["failed_assumptions"]
    assert main(["ledger", str(workdir / "skewed.sqlite")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("salary"))
    assert row.split()[7:9] == ["1", "1"]  # one release, not established


def test_chain_calibration_through_the_command_line(tmp_path, capsys):
    """A ChainCalibration saved from Python is inspected and released with MQM from the shell."""
    from bayespriv.files import save_calibration
    from bayespriv.networks.quilts import MarkovChain, calibrate_chain

    script = tmp_path / "chain.py"
    script.write_text('import bayespriv as bp\nquery = bp.count(lambda b: b["s"] == "b", "s", name="bs")\n')
    from bayespriv.cli.script import _run_script

    query = _run_script(script, "SCRIPT.py")["query"]
    chain = calibrate_chain(MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], ["a", "b"]), query, length=7)
    save_calibration(chain, tmp_path / "chain.nc")
    pd.DataFrame({"s": list("abbabba")}).to_csv(tmp_path / "chain.csv", index=False)
    assert main(["inspect", str(tmp_path / "chain.nc")]) == 0
    assert "--mechanism MQM" in capsys.readouterr().out
    assert main(["release", str(tmp_path / "chain.nc"), "--script", str(script), "--mechanism", "MQM", "--epsilon", "1",
                 "--data", str(tmp_path / "chain.csv")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mechanism"] == "MQM" and out["guarantee"]["delta"] == 0.0 and out["protected"] == ["s"]


# -- signed calibration files on the command line ------------------------------------------------------------------
def _edited_copy(workdir: Path, name: str) -> Path:
    """The workdir's calibration with secret B's means set to secret A's and B's samples shifted to match
    (h5py; consistent, but not re-signed)."""
    import h5py

    path = workdir / name
    shutil.copy(workdir / "cal.nc", path)
    with h5py.File(path, "r+") as f:
        mean, samples = f["mean"][()], f["samples"][()]
        samples[1] += mean[0] - mean[1]
        f["samples"][...] = samples
        f["mean"][...] = samples.mean(axis=1)
    return path


def _release_argv(workdir: Path, cal: Path) -> list[str]:
    return ["release", str(cal), "--script", str(workdir / "script.py"), "--mechanism", "ExpM", "--epsilon", "1",
            "--data", str(workdir / "payroll.csv")]


@pytest.mark.subprocess
def test_release_of_an_edited_file_exits_1_with_one_line(workdir):
    """As a user types it, in a subprocess (which inherits the session's key): refused, one line on stderr,
    nothing on stdout."""
    edited = _edited_copy(workdir, "evil.nc")
    exe = Path(sys.executable).with_name("bayespriv")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "bayespriv.cli"]
    root = Path(__file__).resolve().parents[1]
    env = {**__import__("os").environ, "PYTHONPATH": str(root)}
    done = subprocess.run(cmd + _release_argv(workdir, edited), capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bayespriv: error: the calibration file") and str(edited) in lines[0]
    assert "contents changed after signing" in lines[0] and "--trust-unverified" in lines[0]


def test_unverified_release_needs_both_flags_and_says_verified_false(workdir, capsys):
    edited = _edited_copy(workdir, "evil2.nc")
    argv = _release_argv(workdir, edited)
    assert main(argv + ["--accept-unverified"]) == 1  # the opt-in alone does not load it
    assert "contents changed" in capsys.readouterr().err
    assert main(argv + ["--trust-unverified"]) == 1  # loaded for inspection, but no release without the opt-in
    err = capsys.readouterr().err
    assert "cannot release" in err and "--accept-unverified" in err
    assert main(argv + ["--trust-unverified", "--accept-unverified"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] is False and "unverified_calibration" in out["guarantee"]["assumptions"]
    assert main(_release_argv(workdir, workdir / "cal.nc")) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True


def test_inspect_shows_verified_or_an_unverified_banner(workdir, capsys):
    assert main(["inspect", str(workdir / "cal.nc")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified:") and "content hash" in out
    edited = _edited_copy(workdir, "evil3.nc")
    assert main(["inspect", str(edited)]) == 1
    assert "contents changed" in capsys.readouterr().err
    assert main(["inspect", str(edited), "--trust-unverified"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("*** UNVERIFIED calibration file:") and "unverified_calibration" in out


def test_key_command_shows_rotates_and_never_prints_the_secret_unasked(tmp_path, monkeypatch, capsys):
    from bayespriv.files import signing

    key_file = tmp_path / "keys" / "key"
    monkeypatch.setenv("BAYESPRIV_KEY_FILE", str(key_file))
    assert main(["key"]) == 0
    assert "none yet" in capsys.readouterr().out and not key_file.exists()  # showing never creates a key
    path = bp_calibration(tmp_path)
    assert main(["key"]) == 0
    out = capsys.readouterr().out
    secret = key_file.read_text().strip()
    assert str(key_file) in out and signing.key_fingerprint() in out and secret not in out
    assert main(["key", "--show-secret"]) == 0
    captured = capsys.readouterr()
    assert secret in captured.out and "forge" in captured.err
    old = signing.key_fingerprint()
    assert main(["key", "--rotate"]) == 0
    captured = capsys.readouterr()
    assert "no longer verify" in captured.err and old in captured.err and secret not in captured.out
    new = signing.key_fingerprint()
    assert new != old and new in captured.out
    assert main(["inspect", str(path)]) == 1
    assert f"signed with key {old}…, yours is {new}…" in capsys.readouterr().err
    monkeypatch.setenv("BAYESPRIV_KEY", "00" * 32)
    assert main(["key", "--rotate"]) == 1
    assert "BAYESPRIV_KEY" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["key"])
def test_help_of_the_key_command(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--rotate" in out and "--show-secret" in out and "fingerprint" in out


def bp_calibration(folder: Path) -> Path:
    """A small signed calibration file (the key of the current environment)."""
    import bayespriv as bp

    model = bp.GaussianDataModel([0.0, 1.0], [[1.0, 0.5], [0.5, 1.0]], ["x", "y"], 20)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
    return bp.calibrate(model, pair, bp.mean("y"), n_draws=100, rng=1).to_netcdf(folder / "small.nc")


@pytest.fixture(scope="module")
def scalar_workdir(workdir):
    """The payroll with a one-component query of known range: the mean score, clipped into [2.9, 3.1]."""
    script = workdir / "scalar.py"
    script.write_text(TEMPLATE.read_text().replace('query = bp.stack(bp.mean("years"), bp.mean("score"))',
                                                   'query = bp.mean("score", bounds=(2.9, 3.1))'))
    assert main(["calibrate", str(script), "--out", str(workdir / "scalar.nc"), "--draws", "20000", "--seed", "2"]) == 0
    return workdir


def _scalar_release_argv(d: Path) -> list[str]:
    return ["release", str(d / "scalar.nc"), "--script", str(d / "scalar.py"), "--mechanism", "ExpM",
            "--epsilon", "0.05", "--data", str(d / "payroll.csv")]


def test_release_json_carries_the_noise_and_reads_back(scalar_workdir, capsys):
    """The JSON holds the noise law, the sd per component, the interval at --level and the valid range,
    and Release.from_dict reads it back to the same release; nothing is clipped unless asked."""
    from bayespriv.privacy.guarantee import Release

    capsys.readouterr()
    assert main(_scalar_release_argv(scalar_workdir) + ["--level", "0.9"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid_range"] == [[2.9, 3.1]] and out["postprocessed"] == []
    assert out["noise"]["kind"] == "laplace" and out["noise"]["laplace_scale"][0] > 0  # ExpM's default noise
    assert len(out["noise_sd"]) == 1 and out["noise_sd"][0] == pytest.approx(2**0.5 * out["noise"]["laplace_scale"][0])
    assert out["noise_sd"][0] == pytest.approx(out["noise"]["cov"][0][0] ** 0.5, rel=1e-12)
    assert out["interval"]["level"] == 0.9
    back = Release.from_dict(out)
    assert back.value.tolist() == out["value"] and back.noise_sd.tolist() == out["noise_sd"]
    assert back.interval(0.9)[:, 0].tolist() == out["interval"]["low"]
    assert back.to_dict(level=0.9)["summary"] == out["summary"]


def test_release_clip_projects_into_the_range_and_says_so(scalar_workdir, capsys):
    """ε = 0.05 adds noise (sd about 0.5) wider than [2.9, 3.1]: with --clip every value lies in it."""
    capsys.readouterr()
    for _ in range(3):
        assert main(_scalar_release_argv(scalar_workdir) + ["--clip"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["postprocessed"] == ["clip"] and 2.9 <= out["value"][0] <= 3.1
        assert 2.9 <= out["interval"]["low"][0] <= out["interval"]["high"][0] <= 3.1


def test_release_text_prints_a_scalar_with_its_noise_sd(scalar_workdir, capsys):
    capsys.readouterr()
    assert main(_scalar_release_argv(scalar_workdir) + ["--format", "text"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert re.fullmatch(r"mean\(score\) = -?\d+\.\d+ ± \d+(\.\d+)? \(sd\)    95% noise interval \[\S+, \S+\]", first), first
    assert "[" not in first.split("=")[1].split("noise interval")[0]


@pytest.mark.slow
def test_a_script_with_other_pairs_is_refused_and_nothing_is_spent(workdir, tmp_path, capsys):
    """The attack: a valid file calibrated for one pair, released under a script of another pair, would get the
    file's (smaller) noise. The script's pairs must be the file's; the twin with the file's own script releases."""
    import bayespriv as bp

    script = (workdir / "script.py").read_text().replace('mean("salary", 55.0)', 'mean("salary", 50.0)')
    assert script != (workdir / "script.py").read_text()
    (tmp_path / "other.py").write_text(script)
    argv = ["release", str(workdir / "cal.nc"), "--mechanism", "APGM", "--epsilon", "1", "--delta", "1e-3",
            "--data", str(workdir / "payroll.csv"), "--ledger", str(tmp_path / "l.sqlite"), "--budget", "salary=5,1e-2"]
    assert main(argv + ["--script", str(tmp_path / "other.py")]) == 2
    err = capsys.readouterr().err
    assert "--script" in err and "must be the pairs" in err and "mean(salary)=50 vs mean(salary)=65" in err
    assert not (tmp_path / "l.sqlite").exists() or bp.Ledger(tmp_path / "l.sqlite").spent("salary") == (0.0, 0.0)
    assert main(argv + ["--script", str(workdir / "script.py")]) == 0


@pytest.mark.parametrize("edit, named", [
    (("[12.0, 16.0, 0.5],", "[12.0, 25.0, 0.5],"), "other parameters"),  # a covariance entry: the digest
    (("N_RECORDS = 40", "N_RECORDS = 39"), "n_records"),
])
def test_a_script_with_another_model_is_refused_and_nothing_is_spent(edit, named, workdir, tmp_path, capsys):
    """The file's noise hides the pairs under the model it was calibrated with; a script whose model differs (its
    parameters, or its records) is refused before any ledger is opened, naming the difference."""
    text = (workdir / "script.py").read_text()
    assert edit[0] in text
    (tmp_path / "other.py").write_text(text.replace(edit[0], edit[1]))
    argv = ["release", str(workdir / "cal.nc"), "--mechanism", "APGM", "--epsilon", "1", "--delta", "1e-3",
            "--data", str(workdir / "payroll.csv"), "--ledger", str(tmp_path / "l.sqlite"), "--budget", "salary=5,1e-2"]
    capsys.readouterr()
    assert main(argv + ["--script", str(tmp_path / "other.py")]) == 2
    err = capsys.readouterr().err
    assert "--script" in err and "must be the one" in err and named in err and "nothing was released" in err
    assert not (tmp_path / "l.sqlite").exists()


@pytest.fixture(scope="module")
def years_calibration(workdir):
    """A second query on the payroll, mean(years), calibrated from the template's model and pairs."""
    script = (workdir / "script.py").read_text().replace('query = bp.stack(bp.mean("years"), bp.mean("score"))',
                                                        'query = bp.mean("years")')
    (workdir / "years.py").write_text(script)
    assert main(["calibrate", str(workdir / "years.py"), "--out", str(workdir / "years.nc"), "--draws", "20000",
                 "--seed", "3"]) == 0
    return workdir / "years.nc", workdir / "years.py"


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["added column", "column subset", "shuffled rows"])
def test_a_copy_of_the_data_is_accounted_with_the_first_release(variant, workdir, years_calibration, tmp_path, capsys):
    """From the shell: a second query released on a copy of payroll.csv (one added column, only the column it
    reads, or its rows shuffled) reads the same protected data; the ledger accounts it with the first (refused:
    files carry no model to form the joint law), where a ledger keyed by the file's bytes granted it."""
    import bayespriv as bp

    payroll = pd.read_csv(workdir / "payroll.csv")
    copy = {"added column": payroll.assign(extra=1.0), "column subset": payroll[["years"]],
            "shuffled rows": payroll.sample(frac=1.0, random_state=1)}[variant]
    copy.to_csv(tmp_path / "copy.csv", index=False)
    common = ["--mechanism", "APGM", "--epsilon", "1", "--delta", "1e-3", "--ledger", str(tmp_path / "l.sqlite")]
    assert main(["release", str(workdir / "cal.nc"), "--script", str(workdir / "script.py"), "--data",
                 str(workdir / "payroll.csv"), "--budget", "salary=5,1e-2"] + common) == 0
    capsys.readouterr()
    cal, script = years_calibration
    assert main(["release", str(cal), "--script", str(script), "--data", str(tmp_path / "copy.csv")] + common) == 1
    err = capsys.readouterr().err
    assert "cannot be formed" in err and "not ways around this refusal" in err
    assert bp.Ledger(tmp_path / "l.sqlite").spent("salary") == pytest.approx((1.0, 1e-3))


@pytest.mark.slow
def test_release_with_the_best_mechanism_names_it_and_shapes_the_noise(workdir, capsys):
    """The shell quickstart's two averages (years, score) have very different spreads: APGM puts the same noise on
    both; --mechanism best compares the candidates on stderr and releases with the least expected squared error,
    never more than APGM's."""
    capsys.readouterr()
    argv = ["release", str(workdir / "cal.nc"), "--script", str(workdir / "script.py"), "--epsilon", "1", "--delta",
            "1e-3", "--data", str(workdir / "payroll.csv")]
    assert main(argv + ["--mechanism", "best"]) == 0
    captured = capsys.readouterr()
    best = json.loads(captured.out)
    assert "--mechanism best chose" in captured.err and "APGM" in captured.err and best["established"] is True
    assert main(argv + ["--mechanism", "APGM"]) == 0
    apgm = json.loads(capsys.readouterr().out)
    assert sum(s * s for s in best["noise_sd"]) <= sum(s * s for s in apgm["noise_sd"]) * (1 + 1e-9)
    no_delta = [a for i, a in enumerate(argv) if a != "--delta" and (i == 0 or argv[i - 1] != "--delta")]
    assert main(no_delta + ["--mechanism", "best"]) == 2
    assert "pass --delta" in capsys.readouterr().err
