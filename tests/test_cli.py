"""The `bayespriv demo` command, end to end but with few draws (fast)."""

from __future__ import annotations

import pytest

from bayespriv.cli import main


def test_demo_prints_the_table_and_writes_the_figure(tmp_path, capsys):
    assert main(["demo", "--draws", "500", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    png = tmp_path / "hospital-calibration.png"
    assert png.exists() and png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The paper's (Δ, Var) with its classic constant reproduce its σ² for the average weight.
    assert "530.54" in out and "87.14" in out and "0.00022" in out
    assert "APGM analytic  ← released" in out
    assert "APGM classic (comparison only)" in out
    assert "proven only for ε < 1" in out  # the classic warning, caught and explained once
    assert "guarantee of each release: (ε=1, δ=0.001)" in out
    assert "d(U) erratum" in out
    assert f"figure: {png}" in out


def test_demo_quiet_keeps_the_table(tmp_path, capsys):
    assert main(["demo", "--draws", "500", "--seed", "1", "--out", str(tmp_path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "530.54" in captured.out and "APGM analytic" in captured.out
    assert "d(U) erratum" not in captured.out
    assert captured.err == ""


def test_small_epsilon_needs_no_warning_line(tmp_path, capsys):
    assert main(["demo", "--draws", "500", "--epsilon", "0.5", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "proven only for ε < 1" not in out
    assert "(ε=0.5, δ=0.001)" in out


@pytest.mark.parametrize("argv", [["demo", "--draws", "1"], ["demo", "--delta", "2"], ["demo", "--epsilon", "0"], ["nope"]])
def test_bad_arguments_give_a_usage_error(argv, capsys):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
