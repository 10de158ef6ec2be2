"""EmpiricalDataModel vs a straightforward pandas loop, on the census scenario.

Workload of the distribution-privacy paper (§5.1, appendix C.1): for each of the
two secrets "45 % / 55 % of the 100 records earn >50K", draw 1000 subsets of 100
Adult records without replacement, compute the five statistics of interest, and
estimate their mean vector and covariance matrix.

(a) ours:   bp.calibrate(census_model(train), income_pairs(0.1), census_query(), n_draws=1000, rng=0)
(b) pandas: as the paper's notebook does it — for each secret and subset, one
            DataFrame.sample per income stratum, pd.concat, the five statistics
            with pandas, then np.mean / np.cov.

Run by hand (never as a timed unit test)::

    .venv/bin/python benchmarks/bench_empirical.py [--repeats 5] [--no-write]

Writes the figures under "EmpiricalDataModel vs pandas" in benchmarks/RESULTS.md.
Skips (exit 0, with a message) when the Adult data is absent.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayespriv as bp  # noqa: E402
from models.census import DEFAULT_ADULT_DIR, census_model, census_query, income_pairs, load_adult  # noqa: E402

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
HEADING = "## EmpiricalDataModel vs pandas"
N_DRAWS = 1000
N_RECORDS = 100


def paper_split(table: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The paper's modelling data: what is left after 10 000 auxiliary and 10 000 test records."""
    order = np.random.default_rng(seed).permutation(len(table))
    return table.iloc[order[20_000:]].reset_index(drop=True)


def ours(train: pd.DataFrame) -> np.ndarray:
    # the model is built inside the timed call: its one-off column conversion is part of the cost
    cal = bp.calibrate(census_model(train, N_RECORDS), income_pairs(0.1), census_query(), n_draws=N_DRAWS, rng=0)
    return cal.mean_array


def ours_prebuilt(model: bp.EmpiricalDataModel) -> np.ndarray:
    """The same calibration on a model built beforehand (its columns already converted)."""
    return bp.calibrate(model, income_pairs(0.1), census_query(), n_draws=N_DRAWS, rng=0).mean_array


def pandas_loop(train: pd.DataFrame, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    high = train[train["income"] == ">50K"]
    low = train[train["income"] != ">50K"]
    means = []
    for p in (0.45, 0.55):
        k = round(p * N_RECORDS)
        rows = []
        for _ in range(N_DRAWS):
            subset = pd.concat([high.sample(k, random_state=rng), low.sample(N_RECORDS - k, random_state=rng)])
            rows.append(
                [
                    subset["age"].mean(),
                    subset["education-num"].mean(),
                    (subset["marital-status"] == "Never-married").sum(),
                    (subset["sex"] == "Female").sum(),
                    subset["hours-per-week"].mean(),
                ]
            )
        values = np.array(rows, dtype=float)
        means.append(values.mean(axis=0))
        np.cov(values, rowvar=False)
    return np.array(means)


def best_of(fn, repeats: int) -> tuple[float, list[float], object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), times, out


def machine_info() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"{cpu}, {cores} cores available; Python {platform.python_version()}, numpy {np.__version__}, "
        f"pandas {pd.__version__}, bayespriv {bp.__version__}; {_dt.date.today().isoformat()}"
    )


def write_results(text: str) -> None:
    old = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\nRun by hand; figures from one machine.\n"
    if HEADING in old:
        start = old.index(HEADING)
        nxt = old.find("\n## ", start + len(HEADING))
        old = old[:start].rstrip("\n") + ("\n\n" + old[nxt + 1:] if nxt != -1 else "")
    RESULTS.write_text(old.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adult-dir", type=Path, default=Path(os.environ.get("BAYESPRIV_ADULT_DIR", DEFAULT_ADULT_DIR)))
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of ours (best-of)")
    parser.add_argument("--pandas-repeats", type=int, default=3, help="timed runs of the pandas loop (best-of)")
    parser.add_argument("--no-write", action="store_true", help=f"do not update {RESULTS.name}")
    args = parser.parse_args(argv)

    if not ((args.adult_dir / "adult.data").exists() and (args.adult_dir / "adult.test").exists()):
        print(f"SKIPPED: UCI Adult data not found in {args.adult_dir} (set BAYESPRIV_ADULT_DIR); it is never committed")
        return 0
    train = paper_split(load_adult(args.adult_dir))
    print(f"modelling data: {len(train)} rows, {int((train['income'] == '>50K').sum())} >50K")

    ours(train)  # warm-up (imports, first-call caches)
    t_ours, ours_times, ours_means = best_of(lambda: ours(train), args.repeats)
    t_build, _, model = best_of(lambda: census_model(train, N_RECORDS), args.repeats)
    ours_prebuilt(model)  # converts the columns the query reads, once
    t_pre, pre_times, _ = best_of(lambda: ours_prebuilt(model), args.repeats)
    t_pd, pd_times, pd_means = best_of(lambda: pandas_loop(train), args.pandas_repeats)
    ratio = t_pd / t_pre
    diff = np.abs(np.asarray(ours_means) - np.asarray(pd_means)).max()

    info = machine_info()
    report = f"""{HEADING}

Census workload of the distribution-privacy paper (appendix C.1): 2 secrets (45 / 55 of 100 records
>50K) × {N_DRAWS} subsets of {N_RECORDS} records drawn without replacement from the
{len(train)}-row modelling split of Adult, five statistics, mean vector and covariance.
`benchmarks/bench_empirical.py`, best of {args.repeats} (ours) / {args.pandas_repeats} (pandas) runs, `time.perf_counter`.

| implementation | best time | all runs |
| --- | --- | --- |
| **(a) ours, the calibration**: `bp.calibrate(model, income_pairs(0.1), census_query(), n_draws=1000, rng=0)` on a model built once | {t_pre * 1e3:.2f} ms | {", ".join(f"{t * 1e3:.2f}" for t in pre_times)} ms |
| **(b) pandas loop** (`DataFrame.sample` per stratum, `pd.concat`, pandas statistics, `np.mean`/`np.cov`) | {t_pd:.2f} s | {", ".join(f"{t:.2f}" for t in pd_times)} s |
| (a') ours including the one-off setup: `census_model(train)` + first use of the query (features cached) | {t_ours * 1e3:.1f} ms | {", ".join(f"{t * 1e3:.1f}" for t in ours_times)} ms |
| setup alone: `census_model(train)` (validation, column conversion) | {t_build * 1e3:.1f} ms | |

**Speed-up of the calibration (a) vs (b): {ratio:.0f}×** (target ≥ 300×). Including the one-off
setup of a new model and query every time (a'): {t_pd / t_ours:.0f}×.
Largest difference between the mean estimates of (a') and (b): {diff:.3f} (Monte-Carlo noise; both
estimate the same means).

How (a) is fast: for additive queries `EmpiricalDataModel.sample_query` evaluates the per-record
contributions once on the whole table (an N × k float matrix, cached per query) and each drawn
dataset only gathers and sums rows of it — the same row indices and arithmetic as materialising the
records (a test checks equality), without copying string columns or re-running predicates per draw.
Row indices come from vectorized rejection sampling (k distinct of N, redrawing only rows with a
duplicate). The xarray view of the samples is built lazily. The machine is shared: runs vary ±20 %.

The setup (a') is dominated by the missing-value scan of pandas string columns and their one-off
conversion to NumPy unicode arrays (so user predicates such as `b["sex"] == "Female"` stay vectorized).

Machine: {info}.
"""
    print(report)
    if not args.no_write:
        write_results(report)
        print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
