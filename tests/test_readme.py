"""The README's quickstarts run exactly as printed, in a fresh checkout after ``make demo``.

The shell and Python quickstart blocks are read from README.md and run verbatim in a temporary copy
of the repository's tracked files, whose ``.venv`` is a link to the environment running these tests
(the one ``make`` created), so nothing is installed. ``PYTHONPATH`` points at the copy, so the
commands import the code of the copy whichever checkout that environment was installed from.
The copy is a git repository of its own: after the quickstarts, ``git status`` shows what they left.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bayespriv as bp

from tests._checkout import ROOT, copy_checkout

README = ROOT / "README.md"
VENV = Path(sys.prefix)
#: Per command; each takes a few seconds (mostly imports) on the 2-core CI machine.
TIMEOUT = 300


def _block(heading: str, language: str) -> str:
    """The first ``language`` code block after the line ``heading`` in README.md."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    return re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start).group(1)


def _commands(block: str) -> list[str]:
    """The block's commands: continued lines joined, blank lines dropped (comments stay for bash)."""
    joined = block.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _run(args: list[str], cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(cwd), "MPLBACKEND": "Agg"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, **kwargs)


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(checkout), "-c", "user.name=readme", "-c", "user.email=readme@test",
                           *args], capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A fresh checkout with ``.venv`` linked to this environment, committed as the baseline."""
    if not (VENV / "bin" / "bayespriv").exists():
        pytest.skip(f"the tests do not run in an environment with the bayespriv command ({VENV}/bin/bayespriv); "
                    "run them with `make test`")
    where = copy_checkout(tmp_path_factory.mktemp("fresh-clone"))
    (where / ".venv").symlink_to(VENV, target_is_directory=True)
    _git(where, "init", "-q")
    _git(where, "add", "-A")
    _git(where, "commit", "-q", "-m", "baseline")
    return where


@pytest.fixture(scope="module")
def shell_quickstart(checkout: Path) -> list[tuple[str, subprocess.CompletedProcess]]:
    """Each command of the shell quickstart, run in order with bash, and what it returned."""
    return [(command, _run(["bash", "-c", command], checkout)) for command in _commands(
        _block("## Quickstart from the shell", "sh"))]


@pytest.fixture(scope="module")
def python_quickstart(checkout: Path, shell_quickstart) -> subprocess.CompletedProcess:
    """The Python quickstart fed to ``.venv/bin/python`` (after the shell one: both leave the copy clean)."""
    return _run([".venv/bin/python", "-"], checkout, input=_block("## Quickstart", "python"))


def test_readme_starts_with_the_two_commands():
    head = README.read_text(encoding="utf-8").splitlines()[:6]
    assert any(line.startswith("make demo") for line in head)
    assert any(line.startswith("make test") for line in head)


@pytest.mark.subprocess
def test_every_shell_command_succeeds_without_warnings(shell_quickstart):
    assert [c.split()[0] for c, _ in shell_quickstart][:2] == ["mkdir", ".venv/bin/python"]
    for command, done in shell_quickstart:
        assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stderr[-3000:]}"
        assert "Warning" not in done.stderr, f"`{command}` printed a warning:\n{done.stderr[-3000:]}"


@pytest.mark.subprocess
def test_shell_quickstart_outputs(checkout: Path, shell_quickstart):
    out = {command.split()[1]: done.stdout for command, done in shell_quickstart if command.startswith(".venv/bin/")}
    payroll = (checkout / "work" / "payroll.csv").read_text().splitlines()
    assert payroll[0] == "salary,years,score" and len(payroll) == 1 + 40  # N_RECORDS of the template
    assert "saved: work/cal.nc" in out["calibrate"] and (checkout / "work" / "cal.nc").stat().st_size > 0
    figures = sorted((checkout / "work" / "figures").glob("*.png"))
    assert len(figures) == 2 and all(f.stat().st_size > 0 for f in figures)  # one per query component
    release = json.loads(out["release"])
    assert len(release["value"]) == 2 and release["established"] and release["verified"]
    delta = release["guarantee"]["delta"]  # --mechanism best: 1e-3, or 0 for a pure-ε mechanism
    assert release["guarantee"]["epsilon"] == 1.0 and delta in (0.0, 1e-3)
    assert release["protected"] == ["salary"] and release["ledger_id"] == 1
    assert any(line.startswith("salary ") for line in out["ledger"].splitlines()), out["ledger"]
    ledger = bp.Ledger(checkout / "work" / "budget.sqlite")
    assert (ledger.budget("salary"), ledger.spent("salary")) == ((3.0, 0.01), (1.0, delta))


@pytest.mark.subprocess
def test_shell_quickstart_writes_only_ignored_files_under_work(checkout: Path, shell_quickstart):
    assert _git(checkout, "status", "--porcelain", "--untracked-files=all") == ""
    ignored = [line[3:] for line in _git(checkout, "status", "--porcelain", "--ignored", "--untracked-files=all")
               .splitlines() if line.startswith("!! ") and "__pycache__/" not in line]
    assert ignored and all(path.startswith("work/") for path in ignored), ignored


@pytest.mark.subprocess
def test_python_quickstart_runs_as_printed(checkout: Path, python_quickstart):
    assert python_quickstart.returncode == 0, python_quickstart.stderr[-3000:]
    assert "Warning" not in python_quickstart.stderr, python_quickstart.stderr[-3000:]
    lines = python_quickstart.stdout.splitlines()  # its four print() calls
    assert len(lines) == 4 and lines[0].startswith("Calibration(query='mean(weight)'"), lines
    assert re.match(r"mean\(weight\) = -?\d+\.\d\d ± \d+(\.\d+)? \(sd\) \(ε=1, δ=0\.001\)", lines[2]), lines[2]
    low, high = (float(v) for v in lines[3].strip("[] ").split())
    assert low < high, lines[3]
    assert _git(checkout, "status", "--porcelain", "--untracked-files=all") == ""


def test_every_python_block_runs_in_order():
    """Later blocks build on the quickstart's imports; each runs as pasted."""
    namespace: dict = {}
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, str(README), "exec"), namespace)
    assert namespace["cal"].worst_theta == {"rho": 0.8}
