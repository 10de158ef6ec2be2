"""``bayespriv demo``: the hospital experiment of the attribute-privacy paper, its progress lines and figure."""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd

import bayespriv as bp
from bayespriv.cli.files import _out_dir, _write_atomically


FIGURE_NAME = "hospital-release.png"


def _say(quiet: bool, text: str = "") -> None:
    """A line of the demo's narrative on stdout, unless ``--quiet``."""
    if not quiet:
        print(text)


def _progress(quiet: bool, text: str) -> None:
    """A progress line on stderr, unless ``--quiet``."""
    if not quiet:
        print(text, file=sys.stderr, flush=True)


#: Seconds between the progress lines of a step still running (the demo is never silent longer).
HEARTBEAT = 4.0


@contextlib.contextmanager
def _step(quiet: bool, label: str, every: float = HEARTBEAT) -> Any:
    """A progress line when the step starts, another every ``every`` seconds while it runs (from a thread
    that only prints), and the step's time when it ends."""
    _progress(quiet, f"{label} …")
    done, started = threading.Event(), time.perf_counter()

    def beat() -> None:
        while not done.wait(every):
            _progress(quiet, f"  … {time.perf_counter() - started:.0f} s")

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        _progress(quiet, f"  done in {time.perf_counter() - started:.2f} s")


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
    _progress(quiet, "drawing the figure …")
    _figure(comparisons, path, n_draws=args.draws, n_records=setting.n_records)
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
        with _step(args.quiet, f"calibrating {name}: {len(setting.secrets)} secrets × {args.draws} datasets"):
            cal = bp.calibrate(setting.model, setting.pairs, query, n_draws=args.draws, rng=seed, confidence=0.95)
        with _step(args.quiet, f"accounting APGM on the released law of {name} ({len(setting.pairs)} pairs) and "
                               "building the comparison rows"):
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
    report = (lambda line: _progress(args.quiet, line))
    with _step(args.quiet, "calibrating and accounting the PyMC family"):
        table = family_table(seed=args.seed, epsilon=args.epsilon, delta=args.delta, report=report)
    print(table.to_string())
    print()


def _figure(comparisons: dict[str, Any], path: Path, *, n_draws: int, n_records: int) -> None:
    """One PNG, a column per query: above, the worst pair's laws of the statistic with their Gaussian fits
    (what the noise must hide); below, the release with the law of its noise and the true answer."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state in a command

    from bayespriv.diagnostics import plot_calibration, plot_release

    fig = Figure(figsize=(5.4 * len(comparisons), 8.4), layout="constrained")
    axes = fig.subplots(2, len(comparisons), squeeze=False)
    for column, comparison in enumerate(comparisons.values()):
        plot_calibration(comparison.calibration, ax=axes[0, column])
        plot_release(comparison.release, true_value=comparison.true_answer, ax=axes[1, column])
    fig.suptitle(
        f"Above: each average given the share of women, for the worst pair of secrets ({n_draws} simulated "
        f"hospitals of {n_records} patients per secret, histograms; Gaussian fits, curves). Below: the release "
        "on the simulated hospital, the law of its noise around it, and the true average (known to the owner only)",
        fontsize="medium", wrap=True,
    )
    _write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"), "--out")
