"""The README's quickstart runs as pasted, and its first lines are the two commands."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_the_two_commands():
    head = README.read_text().splitlines()[:6]
    assert any(line.startswith("make demo") for line in head)
    assert any(line.startswith("make test") for line in head)


def test_quickstart_runs(capsys):
    code = re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "Calibration(" in out and "APGM" in out


def test_every_python_block_runs_in_order():
    """Later blocks build on the quickstart's imports; each runs as pasted."""
    namespace: dict = {}
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, str(README), "exec"), namespace)
    assert namespace["cal"].worst_theta == {"rho": 0.8}
