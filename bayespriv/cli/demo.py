"""``bayespriv demo``: the hospital experiment of the attribute-privacy paper, its progress lines and figure."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

import bayespriv as bp
from bayespriv.cli.files import _out_dir, _write_atomically


FIGURE_NAME = "hospital-calibration.png"


def _say(quiet: bool, text: str = "") -> None:
    """A line of the demo's narrative on stdout, unless ``--quiet``."""
    if not quiet:
        print(text)


def _progress(quiet: bool, text: str) -> None:
    """A progress line on stderr, unless ``--quiet``."""
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def _demo(args: argparse.Namespace) -> int:
    # lazy, here and in the demo's stages: the package never depends on models/ at import time
    from bayespriv.models.hospital_demo import demo_setting, difference_lines, header_lines, worst_pair_lines

    start = time.perf_counter()
    eps, delta, quiet = args.epsilon, args.delta, args.quiet
    out_dir = _out_dir(Path(args.out), "--out")  # before the calibration: a wrong --out fails at once
    setting = demo_setting(args.seed)
    if args.draws is None:  # enough draws to certify δ from them, with room for the noise (at least 2 000)
        args.draws = max(2000, bp.mechanisms.draws_for_delta(setting.pairs, delta))
    for line in header_lines(setting, epsilon=eps, delta=delta, n_draws=args.draws, seed=args.seed):
        _say(quiet, line)
    comparisons = _compared_queries(setting, args)
    _print_comparison(comparisons, epsilon=eps, delta=delta)
    if not quiet:
        for line in worst_pair_lines(comparisons) + difference_lines(setting, comparisons, epsilon=eps, delta=delta):
            _say(quiet, line)
    _print_family(args)

    path = out_dir / FIGURE_NAME
    calibrations = {name: comparison.calibration for name, comparison in comparisons.items()}
    _figure(calibrations, path, n_draws=args.draws, n_records=setting.n_records)
    print(f"figure: {path}")
    _say(quiet, f"done in {time.perf_counter() - start:.1f} s")
    return 0


def _compared_queries(setting: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Calibrate each query of the hospital (reporting progress) and compare it with the paper's values.

    ``setting`` is a :class:`bayespriv.models.hospital_demo.DemoSetting`; the values are its
    ``QueryComparison`` per query.
    """
    from bayespriv.models.hospital import QUERIES
    from bayespriv.models.hospital_demo import compare_query

    comparisons = {}
    for (name, query), seed in zip(QUERIES.items(), setting.query_seeds):
        _progress(args.quiet, f"calibrating {name} …")
        t0 = time.perf_counter()
        cal = bp.calibrate(setting.model, setting.pairs, query, n_draws=args.draws, rng=seed, confidence=0.95)
        _progress(args.quiet, f"calibrated {name}: {len(setting.secrets)} secrets × {args.draws} datasets in "
                              f"{time.perf_counter() - t0:.2f} s")
        comparisons[name] = compare_query(name, query, cal, setting, epsilon=args.epsilon, delta=args.delta)
    return comparisons


def _print_comparison(comparisons: dict[str, Any], *, epsilon: float, delta: float) -> None:
    """Print the comparison table, the note on the classic constant (when it applies) and the guarantees."""
    from bayespriv.models.hospital_demo import classic_note, comparison_table, guarantee_lines

    table = comparison_table(comparisons)
    with pd.option_context("display.width", 200, "display.max_colwidth", 40, "display.max_columns", 10):
        print(table.to_string())
    print()
    note = classic_note(comparisons, epsilon=epsilon, delta=delta)
    if note is not None:
        print(note)
    for line in guarantee_lines(comparisons):
        print(line)


def _print_family(args: argparse.Namespace) -> None:
    """Print the table of the paper's Θ as a family of PyMC models, reporting how long it took."""
    from bayespriv.models.hospital_demo import FAMILY_HEADER, family_table

    for line in FAMILY_HEADER:
        _say(args.quiet, line)
    t0 = time.perf_counter()
    report = (lambda line: _progress(args.quiet, line))
    print(family_table(seed=args.seed, epsilon=args.epsilon, delta=args.delta, report=report).to_string())
    _progress(args.quiet, f"calibrated the PyMC family in {time.perf_counter() - t0:.2f} s")
    print()


def _figure(calibrations: dict[str, bp.Calibration], path: Path, *, n_draws: int, n_records: int) -> None:
    """One PNG: per query, the worst pair's distributions with their Gaussian fits."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state in a command

    from bayespriv.diagnostics import plot_calibration

    fig = Figure(figsize=(5.4 * len(calibrations), 4.6), layout="constrained")
    axes = fig.subplots(1, len(calibrations), squeeze=False)[0]
    for ax, cal in zip(axes, calibrations.values()):
        plot_calibration(cal, ax=ax)
    fig.suptitle(
        f"Each released average given the share of women, for the worst pair of secrets: "
        f"{n_draws} simulated hospitals of {n_records} patients per secret (histograms) and Gaussian fits (curves)",
        fontsize="medium",
    )
    _write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"), "--out")
