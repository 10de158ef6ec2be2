"""The command line under attack: the README's release command cannot lift a spent budget, a crafted ledger
is refused, and every rough edge (crafted .nc files, --out at a directory, /proc or a symbolic link, an
unwritable directory, a CSV with duplicate headers) is a one-line error with a non-zero exit and no
traceback unless --debug."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayespriv import Ledger
from bayespriv.cli import main

#: Every test here uses the quickstart fixture, which runs the template script in a Python subprocess.
pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TEMPLATE = ROOT / "examples" / "calibration_template.py"


def _one_line_error(err: str, *expected: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert re.fullmatch(r"bayespriv: error: .+ \(.+\): .+", lines[0]), err
    assert "Traceback" not in err
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _readme_commands() -> list[list[str]]:
    """The `.venv/bin/bayespriv ...` lines of the README's shell quickstart, continuation lines joined, with the
    README's working folder `work/` dropped from their paths (these tests run them in a flat temporary folder).
    ``--mechanism best`` becomes ``APGM``: these tests are about the ledger and repeat the release dozens of times;
    ``best`` builds six mechanisms per release (tests/test_cli.py and tests/test_readme.py run it as written)."""
    block = re.search(r"## Quickstart from the shell.*?```sh\n(.*?)```", README.read_text(), re.S).group(1)
    text = block.replace("\\\n", " ")
    lines = [line for line in text.splitlines() if line.startswith(".venv/bin/bayespriv ")]
    commands = [[a.removeprefix("work/") for a in shlex.split(line.split("#")[0])[1:]] for line in lines]
    return [["APGM" if a == "best" and c[i - 1] == "--mechanism" else a for i, a in enumerate(c)] for c in commands]


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as con:
        return list(con.iterdump())


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """A folder where the README's shell quickstart ran up to (not including) its release command."""
    d = tmp_path_factory.mktemp("quickstart")
    (d / "examples").mkdir()
    shutil.copy(TEMPLATE, d / "examples" / "calibration_template.py")
    done = subprocess.run([sys.executable, "examples/calibration_template.py"], cwd=str(d), capture_output=True,
                          text=True, timeout=300)  # `python examples/calibration_template.py` writes payroll.csv
    assert done.returncode == 0 and (d / "payroll.csv").is_file(), done.stderr
    cwd = os.getcwd()
    os.chdir(d)
    try:
        commands = _readme_commands()
        assert [c[0] for c in commands] == ["calibrate", "inspect", "release", "ledger"]
        assert main(commands[0] + ["--draws", "20000"]) == 0
    finally:
        os.chdir(cwd)
    return d, commands


# -- (a) the README's release command cannot lift a spent budget -----------------------------------------------


def test_readme_release_cannot_lift_a_spent_budget(quickstart, tmp_path, monkeypatch, capsys):
    src, commands = quickstart
    for name in ("cal.nc", "payroll.csv"):
        shutil.copy(src / name, tmp_path / name)
    shutil.copytree(src / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    release = commands[2]
    assert "--budget" in release and release[release.index("--budget") + 1] == "salary=3,1e-2"
    assert release[release.index("--epsilon") + 1] == "1" and release[release.index("--ledger") + 1] == "budget.sqlite"

    granted = 0
    while main(release) == 0:  # ε = 1 each, charged jointly (each release's increase of the joint ε), up to ε = 3
        json.loads(capsys.readouterr().out)
        granted += 1
        assert granted <= 100, "the budget of ε = 3 was never exhausted"
    spent = Ledger("budget.sqlite").spent("salary")
    assert granted >= 3 and spent[0] <= 3.0 + 1e-9, (granted, spent)
    _one_line_error(capsys.readouterr().err, "would exceed the budget of 'salary'", "(--ledger)",
                    "bayespriv ledger set-budget budget.sqlite salary EPS[,DELTA]")

    before = _dump(Path("budget.sqlite"))
    lifted = [a if a != "salary=3,1e-2" else "salary=1000" for a in release]
    assert main(lifted) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing released
    _one_line_error(captured.err, "budget 'salary' in 'budget.sqlite' is ε=3, δ=0.01",
                    "--budget salary=1000 would change it; nothing was released or spent",
                    "to change it on purpose run `bayespriv ledger set-budget budget.sqlite salary 1000`")
    assert _dump(Path("budget.sqlite")) == before  # not a row changed, not even a refusal recorded

    # δ = 1e-3 per release adds up (ε composes jointly, δ linearly): raise both, on purpose
    assert main(["ledger", "set-budget", "budget.sqlite", "salary", "1000,0.1", "--reason", "approved"]) == 0
    out = capsys.readouterr().out
    assert (f"budget 'salary' in 'budget.sqlite': ε=3, δ=0.01 -> ε=1000, δ=0.1 (raised; spent ε={spent[0]:g}, "
            f"δ={spent[1]:g}") in out
    assert main(commands[3]) == 0  # `bayespriv ledger budget.sqlite`, as the README prints it
    report = capsys.readouterr().out
    row = next(line for line in report.splitlines() if line.startswith("salary"))
    assert row.split()[1] == "1000.0" and row.split()[12] == "1"  # one change after creation
    assert float(row.split()[2]) == pytest.approx(spent[0], abs=0.05)
    assert "Budget creations and changes:" in report
    change = next(line for line in report.splitlines() if " raised " in line)
    assert "3.0" in change and "1000.0" in change and "approved" in change

    assert main(lifted) == 0  # the budget now is 1000: --budget salary=1000 is a no-op and the release goes through
    assert json.loads(capsys.readouterr().out)["ledger_id"] == granted + 1
    assert main(release) == 2  # and the original command is now the one that would change it
    _one_line_error(capsys.readouterr().err, "budget 'salary' in 'budget.sqlite' is ε=1000, δ=0.1")


def test_budget_without_delta_creates_with_zero_and_compares_epsilon_only(quickstart, tmp_path, monkeypatch, capsys):
    src, commands = quickstart
    monkeypatch.chdir(src)
    release = [a for a in commands[2] if a not in ("--budget", "salary=3,1e-2")]
    ledger = str(tmp_path / "l.sqlite")
    release[release.index("--ledger") + 1] = ledger
    assert main(release + ["--budget", "salary=2", "--delta", "1e-3"]) == 1  # created with δ = 0: δ exceeded
    err = capsys.readouterr().err
    assert "created budget 'salary'" in err and "would exceed the budget of 'salary'" in err
    assert main(["ledger", "set-budget", ledger, "salary", "2,1e-2"]) == 0
    assert main(release + ["--budget", "salary=2"]) == 0  # ε equal, δ not given: a no-op
    capsys.readouterr()
    assert main(release + ["--budget", "salary=2", "--budget", "salary=3"]) == 2
    _one_line_error(capsys.readouterr().err, "budget 'salary' is given twice with different values (--budget)")
    assert main(release) == 0  # without --budget, the budget in the ledger applies


def test_release_names_a_missing_budget(quickstart, tmp_path, monkeypatch, capsys):
    src, commands = quickstart
    monkeypatch.chdir(src)
    release = [a for a in commands[2] if a not in ("--budget", "salary=3,1e-2")]
    release[release.index("--ledger") + 1] = str(tmp_path / "empty.sqlite")
    assert main(release) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    _one_line_error(captured.err, "has no budget for ['salary']", "create it with --budget salary=EPS[,DELTA]")


# -- (b) a crafted ledger file, through the command line --------------------------------------------------------


def test_a_ledger_with_a_reset_trigger_is_refused_by_every_command(quickstart, tmp_path, monkeypatch, capsys):
    src, commands = quickstart
    monkeypatch.chdir(src)
    ledger = tmp_path / "crafted.sqlite"
    release = list(commands[2])
    release[release.index("--ledger") + 1] = str(ledger)
    assert main(release) == 0
    capsys.readouterr()
    with sqlite3.connect(ledger) as con:
        con.execute("CREATE TRIGGER reset_spent AFTER UPDATE ON budgets BEGIN "
                    "UPDATE budgets SET epsilon_spent = 0 WHERE name = NEW.name; END")
    before = _dump(ledger)
    for argv, argument in ((release, "--ledger"), (["ledger", str(ledger)], "BUDGET.sqlite"),
                           (["ledger", "set-budget", str(ledger), "salary", "5"], "BUDGET.sqlite")):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        _one_line_error(captured.err, "holds trigger 'reset_spent' on table 'budgets'", f"({argument})", str(ledger))
    assert _dump(ledger) == before


# -- (c) rough edges ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(quickstart, tmp_path_factory):
    """Crafted calibration files beside a real one."""
    import h5py

    src, _ = quickstart
    d = tmp_path_factory.mktemp("crafted")
    shutil.copy(src / "cal.nc", d / "cal.nc")
    (d / "text.nc").write_text("model = 'not a netCDF file'\n")
    with h5py.File(d / "plain.nc", "w") as f:  # HDF5, no bayespriv content
        f["x"] = np.arange(3)
    with h5py.File(d / "foreign_meta.nc", "w") as f:  # HDF5 with metadata that is not JSON
        f["x"] = np.arange(3)
        f.attrs["bayespriv_metadata"] = "{not json"
    shutil.copy(src / "cal.nc", d / "no_samples.nc")
    with h5py.File(d / "no_samples.nc", "r+") as f:  # a dimension deleted under its variables
        del f["secret"]
    shutil.copy(src / "cal.nc", d / "short_meta.nc")
    with h5py.File(d / "short_meta.nc", "r+") as f:  # valid JSON metadata missing keys the loader reads
        meta = json.loads(f.attrs["bayespriv_metadata"])
        for key in ("z", "n_records", "theta", "kind"):
            meta.pop(key)
        f.attrs["bayespriv_metadata"] = json.dumps(meta)
    (d / "dir.nc").mkdir()
    return src, d


CRAFTED = ["text.nc", "plain.nc", "foreign_meta.nc", "no_samples.nc", "short_meta.nc", "dir.nc", "missing.nc"]


@pytest.mark.parametrize("name", CRAFTED)
def test_a_crafted_calibration_file_is_one_line(files, name, capsys):
    src, d = files
    script, data = str(src / "examples" / "calibration_template.py"), str(src / "payroll.csv")
    for argv in (["inspect", str(d / name)],
                 ["release", str(d / name), "--script", script, "--mechanism", "APGM", "--epsilon", "1",
                  "--delta", "1e-3", "--data", data]):
        code = main(argv)
        captured = capsys.readouterr()
        # 2: not a calibration file at all; 1: a calibration file refused because it does not verify
        assert code in (1, 2) and captured.out == "", (argv, captured)
        _one_line_error(captured.err, "(CAL.nc)")


def test_debug_shows_the_traceback(files, capsys):
    _, d = files
    with pytest.raises(Exception) as exc:
        main(["inspect", str(d / "short_meta.nc"), "--debug"])
    assert not isinstance(exc.value, SystemExit)
    with pytest.raises(Exception):
        main(["--debug", "inspect", str(d / "text.nc")])
    done = subprocess.run([sys.executable, "-m", "bayespriv.cli", "inspect", str(d / "short_meta.nc"), "--debug"],
                          capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert done.returncode != 0 and "Traceback" in done.stderr


def test_crafted_files_in_a_real_process_print_one_line(files):
    """As a user runs it: no traceback, and no stray library warning around the error."""
    _, d = files
    for name in ("plain.nc", "short_meta.nc", "no_samples.nc"):
        done = subprocess.run([sys.executable, "-m", "bayespriv.cli", "inspect", str(d / name)], capture_output=True,
                              text=True, timeout=300, cwd=str(ROOT))
        assert done.returncode in (1, 2) and done.stdout == ""
        _one_line_error(done.stderr, "(CAL.nc)")


def test_an_unexpected_failure_is_one_line(files, monkeypatch, capsys):
    import bayespriv.cli.inspection as inspection

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(inspection, "_inspect_without_query", boom)
    monkeypatch.setattr(inspection, "_inspect_plots", boom)
    src, _ = files
    monkeypatch.setattr("bayespriv.files.read_metadata", lambda path: {"kind": "chain"})
    assert main(["inspect", str(src / "cal.nc")]) == 1
    _one_line_error(capsys.readouterr().err, "unexpected RuntimeError: disk on fire (inspect)", "--debug")


def _calibrate(src: Path, out: str) -> list[str]:
    return ["calibrate", str(src / "examples" / "calibration_template.py"), "--out", out, "--draws", "20000",
            "--seed", "3"]


def test_out_at_a_directory_proc_or_a_missing_directory(files, tmp_path, capsys):
    src, _ = files
    cases = [(str(tmp_path), "is a directory (--out)"),
             ("/proc/self/status", "(--out)"),
             ("/proc/bayespriv-cannot-exist.nc", "(--out)"),
             ("/proc/self", "(--out)"),
             ("/proc/1", "is a directory (--out)"),
             (str(tmp_path / "nowhere" / "cal.nc"), "does not exist (--out)")]
    if Path("/dev/null").exists():
        cases.append(("/dev/null", "is not a regular file (a device, FIFO or socket) (--out)"))
    for out, expected in cases:
        assert main(_calibrate(src, out)) == 2, out
        captured = capsys.readouterr()
        _one_line_error(captured.err, expected)
        assert "calibrated" not in captured.out  # refused before the calibration ran (or before anything was saved)
    assert main(["inspect", str(src / "cal.nc"), "--out", "/proc/self/status"]) == 2
    _one_line_error(capsys.readouterr().err, "exists and is not a directory (--out)")
    assert main(["inspect", str(src / "cal.nc"), "--out", "/proc/bayespriv-figures"]) == 2
    _one_line_error(capsys.readouterr().err, "cannot be created", "(--out)")
    (tmp_path / "a-file").write_text("x")
    assert main(["demo", "--out", str(tmp_path / "a-file")]) == 2  # at once, before the demo's calibration
    _one_line_error(capsys.readouterr().err, "exists and is not a directory (--out)")


def test_out_through_a_symbolic_link_is_refused_and_its_target_untouched(files, tmp_path, capsys):
    src, _ = files
    target = tmp_path / "precious.txt"
    target.write_text("do not overwrite me")
    stat = target.stat()
    link = tmp_path / "cal.nc"
    link.symlink_to(target)
    assert main(_calibrate(src, str(link))) == 2
    _one_line_error(capsys.readouterr().err, "is a symbolic link", "(--out)", "remove the link")
    dangling = tmp_path / "dangling.nc"
    dangling.symlink_to(tmp_path / "would-be-created.nc")
    assert main(_calibrate(src, str(dangling))) == 2
    _one_line_error(capsys.readouterr().err, "is a symbolic link")
    assert not (tmp_path / "would-be-created.nc").exists()
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "calibration-0.png").symlink_to(target)
    assert main(["inspect", str(src / "cal.nc"), "--out", str(figures)]) == 2
    _one_line_error(capsys.readouterr().err, "calibration-0.png' is a symbolic link (to")
    assert target.read_text() == "do not overwrite me" and target.stat().st_mtime_ns == stat.st_mtime_ns
    assert link.is_symlink() and (figures / "calibration-0.png").is_symlink()


def test_out_is_written_atomically(files, tmp_path, capsys):
    src, _ = files
    out = tmp_path / "cal.nc"
    out.write_bytes(b"an older calibration")
    os.chmod(out, 0o640)
    inode = out.stat().st_ino
    assert main(_calibrate(src, str(out))) == 0
    assert "saved: " + str(out) in capsys.readouterr().out
    assert out.stat().st_ino != inode and out.read_bytes()[:4] == b"\x89HDF"  # replaced, not rewritten in place
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file's permissions are kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cal.nc"]  # no temporary file left
    assert main(["inspect", str(out)]) == 0
    capsys.readouterr()

    from bayespriv.cli.files import _write_atomically
    from bayespriv.cli.problems import _ArgumentProblem

    def fails_halfway(tmp: Path) -> None:
        tmp.write_bytes(b"half a file")
        raise OSError(28, "No space left on device")

    before = out.read_bytes()
    with pytest.raises(_ArgumentProblem, match="No space left on device"):
        _write_atomically(out, fails_halfway, "--out")
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["cal.nc"]


_AS_NOBODY = r"""
import os, sys
from bayespriv.cli import main
import bayespriv.files.calibration_io, xarray, h5netcdf  # imported as root: root's home is closed to nobody
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)
sys.exit(main(sys.argv[1:]))
"""


def test_unwritable_and_unreadable_paths(files):
    """Run as an unprivileged user (root may write anywhere): an --out in a read-only directory, a
    calibration file and a CSV the user may not read."""
    src, _ = files
    base = Path(tempfile.mkdtemp(prefix="bp-cli-ro-"))
    try:
        base.chmod(0o755)
        locked = base / "locked"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        secret_cal = base / "secret.nc"
        shutil.copy(src / "cal.nc", secret_cal)
        secret_cal.chmod(0o000)
        script = base / "script.py"
        shutil.copy(src / "examples" / "calibration_template.py", script)
        script.chmod(0o644)
        runs = [
            (["calibrate", str(script), "--out", str(locked / "cal.nc")], "(--out)"),
            (["inspect", str(secret_cal)], "cannot be read"),
        ]
        for argv, expected in runs:
            done = subprocess.run([sys.executable, "-c", _AS_NOBODY, *argv], capture_output=True, text=True,
                                  timeout=300, cwd=str(ROOT))
            assert done.returncode == 2, (argv, done.stderr)
            _one_line_error(done.stderr, expected)
        assert list(locked.iterdir()) == []
    finally:
        for p in (base / "locked", base / "secret.nc"):
            if p.exists():
                p.chmod(0o755)
        shutil.rmtree(base)


# -- CSV headers as written ------------------------------------------------------------------------------------------


def _release_on(src: Path, csv: Path) -> list[str]:
    return ["release", str(src / "cal.nc"), "--script", str(src / "examples" / "calibration_template.py"),
            "--mechanism", "APGM", "--epsilon", "1", "--delta", "1e-3", "--data", str(csv)]


def test_duplicate_csv_headers_are_refused_by_name(files, tmp_path, capsys):
    src, _ = files
    payroll = pd.read_csv(src / "payroll.csv")
    doubled = payroll.assign(extra=payroll["years"] * 100)
    text = doubled.to_csv(index=False).replace(",extra\n", ",years\n", 1)
    (tmp_path / "dup.csv").write_text(text)
    assert pd.read_csv(tmp_path / "dup.csv").columns.tolist()[-1] == "years.1"  # what pandas alone would do
    assert main(_release_on(src, tmp_path / "dup.csv")) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    _one_line_error(captured.err, "names the column(s) ['years'] more than once in its header row (--data)")

    quoted = '"salary","years","score","a,b"\n' + "".join(f'{r.salary},{r.years},{r.score},"x, y"\n'
                                                         for r in payroll.itertuples())
    (tmp_path / "quoted.csv").write_text(quoted)  # quoting still works, and a literal "a.1" is not a duplicate
    assert main(_release_on(src, tmp_path / "quoted.csv")) == 0
    capsys.readouterr()
    (tmp_path / "dotted.csv").write_text(payroll.assign(**{"years.1": 1}).to_csv(index=False))
    assert main(_release_on(src, tmp_path / "dotted.csv")) == 0
    capsys.readouterr()
    (tmp_path / "empty.csv").write_text("")
    assert main(_release_on(src, tmp_path / "empty.csv")) == 2
    _one_line_error(capsys.readouterr().err, "is empty (--data)")
    (tmp_path / "binary.csv").write_bytes(os.urandom(4096))
    assert main(_release_on(src, tmp_path / "binary.csv")) == 2
    _one_line_error(capsys.readouterr().err, "(--data)")


def test_a_fifo_as_data_is_refused_without_blocking(files, tmp_path, capsys):
    src, _ = files
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    assert main(_release_on(src, fifo)) == 2
    _one_line_error(capsys.readouterr().err, "is not a regular file (a device, FIFO or socket) (--data)")
