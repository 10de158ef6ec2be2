"""Kernel sums of two-dimensional laws: cell expansions against the direct float32 blocks, side by side.

    .venv/bin/python benchmarks/bench_cells.py [--repeats 5] [--out benchmarks/RESULTS_cells.md]

The importance sampler (``bayespriv/privacy/mixture_mc.py``) sums the Gaussian noise density over points ×
atoms. For a two-dimensional law of at least ``CELL_MIN_ATOMS`` atoms it now does so by Taylor expansions on
cells of atoms (``bayespriv/privacy/gauss_cells.py``) where that pays and each sum's error bound is within
1e-9 relative, and by the direct blocks elsewhere. For each law of the coverage harness in two dimensions
(``bayespriv.audit.coverage``), one calibration, then in the same process, alternating, ``repeats`` times each:

1. one account of APGM's released law at its noise (``bayespriv.privacy.accountant.account``: both directions,
   the split halves) — the direct blocks alone (``CELL_MIN_ATOMS`` set above every law) and the default;
2. the whole APGM construction (its scale search and final account), both ways.

Reported: the median times and their ratio, the accounted δ both ways and their relative difference, and the
relative difference of the noise variances the two constructions choose.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

import bayespriv as bp
import bayespriv.privacy.mixture_mc as mixture_mc
from bayespriv.audit.coverage import gaussian_2d_law, rare_far_2d_law
from bayespriv.calibration import ExecutionOptions
from bayespriv.calibration.laws import conditions_of
from bayespriv.datamodels import FunctionDataModel
from bayespriv.privacy.accountant import GaussianNoise, account

ROOT = Path(__file__).resolve().parents[1]
LAWS = [(gaussian_2d_law(), 20_000), (gaussian_2d_law(), 10_000), (rare_far_2d_law(2e-3), 10_000)]
DIRECT = 10**12  # CELL_MIN_ATOMS above every law: the direct blocks alone


def _calibration(law, n_draws: int):
    def draw(secret, n, rng):
        x = law.sample(int(secret.value), n, rng)
        return {"x0": x[:, :1], "x1": x[:, 1:]}

    model = FunctionDataModel(draw, columns=["x0", "x1"], n_records=1)
    pair = bp.SecretPair(bp.DistributionSecret("secret", 0.0), bp.DistributionSecret("secret", 1.0))
    query = bp.stack(bp.mean("x0"), bp.mean("x1"))
    return bp.calibrate(model, pair, query, n_draws=n_draws, rng=2026, execution=ExecutionOptions(progress=False))


def _timed(fn, minimum: int):
    """(result, seconds) of ``fn()`` under ``CELL_MIN_ATOMS = minimum``."""
    saved = mixture_mc.CELL_MIN_ATOMS
    mixture_mc.CELL_MIN_ATOMS = minimum
    try:
        t = time.perf_counter()
        out = fn()
        return out, time.perf_counter() - t
    finally:
        mixture_mc.CELL_MIN_ATOMS = saved


def _side_by_side(fn, repeats: int) -> tuple[list, list, object, object]:
    """Alternate the direct and the default runs ``repeats`` times: their times and last results."""
    times = {DIRECT: [], mixture_mc.CELL_MIN_ATOMS: []}
    results = {}
    for _ in range(repeats):
        for minimum in (DIRECT, mixture_mc.CELL_MIN_ATOMS):
            results[minimum], seconds = _timed(fn, minimum)
            times[minimum].append(seconds)
    return times[DIRECT], times[mixture_mc.CELL_MIN_ATOMS], results[DIRECT], results[mixture_mc.CELL_MIN_ATOMS]


def law_rows(law, n_draws: int, repeats: int) -> list[str]:
    cal = _calibration(law, n_draws)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)
    conds, noise = conditions_of(cal), GaussianNoise(np.atleast_2d(mech.noise_cov))
    direct_t, cells_t, direct_acc, cells_acc = _side_by_side(
        lambda: account(conds, noise, 1.0, confidence=0.95, target=1e-3), repeats)
    build_direct_t, build_cells_t, build_direct, build_cells = _side_by_side(
        lambda: bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3), repeats)
    gap = abs(cells_acc.delta - direct_acc.delta) / direct_acc.delta
    cov_direct, cov_cells = np.asarray(build_direct.noise_cov), np.asarray(build_cells.noise_cov)
    variance_gap = float(np.max(np.abs(cov_cells - cov_direct)) / np.max(np.abs(cov_direct)))
    name = f"{law.name}, {n_draws:,} draws"
    med = np.median
    return [f"| {name} | one account | {med(direct_t):.3f} | {med(cells_t):.3f} | {med(direct_t) / med(cells_t):.2f} | "
            f"{direct_acc.delta:.6g} / {cells_acc.delta:.6g} (relative difference {gap:.1e}) |",
            f"| {name} | APGM construction | {med(build_direct_t):.2f} | {med(build_cells_t):.2f} | "
            f"{med(build_direct_t) / med(build_cells_t):.2f} | noise covariances differ by {variance_gap:.1e} "
            "(of the largest entry); "
            f"established {build_direct.guarantee.established} / {build_cells.guarantee.established} |"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_cells.md")
    args = ap.parse_args()
    load = os.getloadavg()
    rows = [row for law, n in LAWS for row in law_rows(law, n, args.repeats)]
    lines = ["# Kernel sums of two-dimensional laws: cell expansions against the direct blocks", "",
             f"`benchmarks/bench_cells.py --repeats {args.repeats}`, one run; Python {platform.python_version()}, "
             f"bayespriv {bp.__version__}, 2 cores; load average before {tuple(round(v, 2) for v in load)}, after "
             f"{tuple(round(v, 2) for v in os.getloadavg())}. Each row alternates the two ways {args.repeats} times in "
             "one process (medians, seconds): the direct float32 blocks alone (`CELL_MIN_ATOMS` above every law) "
             "and the default (cell expansions where they pay, `bayespriv/privacy/gauss_cells.py`). (ε, δ) = "
             "(1, 1e-3), confidence 0.95, one calibration per law (seed 2026).", "",
             "| law | what | direct (s) | default (s) | direct / default | accounted δ: direct / default |",
             "|---|---|---|---|---|---|", *rows]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
