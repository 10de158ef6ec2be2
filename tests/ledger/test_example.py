"""examples/subset_tables.py runs as a user would run it."""

from __future__ import annotations

import runpy
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "subset_tables.py"


def test_subset_tables_example_runs(capsys):
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "refused:" in out and "Tables A, B & C" in out
