"""Census calibration: bayespriv against the authors' published method and against plain NumPy.

Workload of the distribution-privacy paper (Chen & Ohrimenko, AISTATS 2023, §5.1 and appendix
C.1): for each of the two secrets "45 % / 55 % of the 100 records earn >50K", draw 1000 subsets of
100 Adult records without replacement, compute the five statistics of interest (mean age, mean
years of education, number never married, number of women, mean weekly hours), and estimate their
mean vector and covariance matrix. Every implementation reads the same DataFrame, the whole
45,222-row table of :func:`bayespriv.models.census.load_adult`, and is timed from that DataFrame.

* **notebook**: the authors' method as published in ``exp_adult.ipynb`` of
  github.com/mgcsls/mechanisms-global-properties (cells 3, 5 and 11): the table split once into
  the two income groups with ``isin``; each subset ``hi.sample(k)`` + ``lo.sample(100 − k)`` +
  ``pd.concat(..., ignore_index=True)``; the three means by ``np.mean`` and the two counts by
  ``value_counts``; the 1000 subsets of the two secrets drawn alternately; the plug-in mean and
  covariance (ddof 1) of each secret's 1000 rows by ``pd.DataFrame.mean`` / ``.cov``. Only the
  column labels differ (the notebook reads the raw files with integer labels and leading spaces).
* **ours, fresh**: what a user runs once — ``census_model(table)`` (a new
  ``EmpiricalDataModel``: it checks the numeric columns for missing values at construction and,
  the table holding more than ``EAGER_TEXT_CELLS`` text cells, each text column on its first use —
  here income, sex and marital-status, the three the secrets and the query read) and
  ``bp.calibrate(model, income_pairs(0.1), census_query(), n_draws=1000, rng=0)``; with the
  default 95 % bounds, and as a plug-in (``confidence=None``: the same estimates as the notebook).
* **best plain NumPy**: the fastest script we could write from the DataFrame: the income groups
  split once, the five per-record features as one float array per group (object comparisons for
  the two counts), uniform k-subsets as integer indices (i.i.d. indices, rows with a repeat drawn
  again), the features gathered and summed per subset, ``mean`` and ``np.cov``.

They are timed interleaved (rotating order) in one run, with ``census_model(table)`` alone (the
constructor's checks, a cost NumPy does not pay); the best and the median are reported, and each
ratio names its baseline. The fresh calibration against NumPy is also given round by round (each
round times both once): the median and the range of the per-round ratios. A second table splits
the fresh calibration into its stages, and a third compares a model built once with NumPy on
prebuilt features at 100, 1,000 and 10,000 records per subset.

Writing ``RESULTS.md`` keeps the figures the previous run wrote, as they were, under "Previous run
of this script" (the one before it is dropped).

Run by hand (never as a timed unit test)::

    .venv/bin/python benchmarks/bench_empirical.py [--repeats 15] [--notebook-repeats 3] [--no-write]

Writes ``benchmarks/RESULTS.md``. Skips (exit 0, with a message) when the Adult data is absent.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayespriv as bp  # noqa: E402
from bayespriv.models.census import DEFAULT_ADULT_DIR, census_model, census_query, income_pairs, load_adult  # noqa: E402

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
NOTEBOOK = "github.com/mgcsls/mechanisms-global-properties, `exp_adult.ipynb`"
N_DRAWS = 1000
N_RECORDS = 100
SHARES = (0.45, 0.55)
SIZES = (100, 1_000, 10_000)


# -- the authors' notebook -------------------------------------------------------------------------
def notebook_method(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """``exp_adult.ipynb`` (cells 3, 5 and 11) on ``table``: means ``(2, 5)`` and covariances ``(2, 5, 5)``.

    As published, ``DataFrame.sample`` draws from NumPy's global random state (a permutation of the
    whole group per call); it is kept so, since a ``Generator`` would change what the method costs.
    """
    data_high_income = table[table["income"].isin([">50K"])]
    data_low_income = table[table["income"].isin(["<=50K"])]

    def get_data(data_hi: pd.DataFrame, data_lo: pd.DataFrame, hi_ratio: float) -> np.ndarray:
        num_hi = round(hi_ratio * N_RECORDS)
        num_lo = N_RECORDS - num_hi
        sample = pd.concat([data_hi.sample(num_hi), data_lo.sample(num_lo)], ignore_index=True)
        data = [np.mean(sample["age"]), np.mean(sample["education-num"])]
        ms_counts = sample["marital-status"].value_counts()
        data.append(ms_counts["Never-married"] if "Never-married" in ms_counts.keys() else 0)
        s_counts = sample["sex"].value_counts()
        data.append(s_counts["Female"] if "Female" in s_counts.keys() else 0)
        data.append(np.mean(sample["hours-per-week"]))
        return np.array(data)

    theta1, theta2 = [], []
    for _ in range(N_DRAWS):
        theta1.append(get_data(data_high_income, data_low_income, SHARES[0]))
        theta2.append(get_data(data_high_income, data_low_income, SHARES[1]))
    theta1, theta2 = pd.DataFrame(theta1), pd.DataFrame(theta2)
    return np.array([theta1.mean(), theta2.mean()]), np.array([theta1.cov(), theta2.cov()])


# -- bayespriv ----------------------------------------------------------------------------------------
def ours_fresh(table: pd.DataFrame, confidence: float | None = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """A new census model of ``table`` and its calibration, as a user runs them once."""
    cal = bp.calibrate(census_model(table, N_RECORDS), income_pairs(0.1), census_query(), n_draws=N_DRAWS,
                       rng=0, confidence=confidence)
    return cal.mean_array, cal.cov_array


# -- the best plain NumPy ------------------------------------------------------------------------------
def numpy_features(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-record contributions of the five statistics ``(5, N_group)``, one array per income group."""
    high = table["income"].to_numpy(dtype=object) == ">50K"
    features = np.empty((5, len(table)))
    features[0] = table["age"].to_numpy(dtype=float)
    features[1] = table["education-num"].to_numpy(dtype=float)
    features[2] = table["marital-status"].to_numpy(dtype=object) == "Never-married"
    features[3] = table["sex"].to_numpy(dtype=object) == "Female"
    features[4] = table["hours-per-week"].to_numpy(dtype=float)
    return features[:, high], features[:, ~high]


def numpy_subsets(n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_draws, k)`` uniform k-subsets of ``range(n_rows)``: the fastest sampler for the k of each size.

    k(k − 1)/2N < 0.3: i.i.d. indices, rows holding a repeat drawn again; k ≤ N/8: only the
    repeated entries drawn again; above: a Bernoulli bitmap with about k/N of the bits set,
    corrected to exactly k (random keys + ``argpartition`` measured 2.5–3.5× slower).
    """
    if k * (k - 1) / (2 * n_rows) < 0.3:
        idx = np.sort(rng.integers(0, n_rows, (n_draws, k)), axis=1)
        bad = np.flatnonzero((idx[:, 1:] == idx[:, :-1]).any(axis=1))
        while bad.size:
            new = np.sort(rng.integers(0, n_rows, (bad.size, k)), axis=1)
            idx[bad] = new
            bad = bad[(new[:, 1:] == new[:, :-1]).any(axis=1)]
        return idx
    if 8 * k <= n_rows:
        return _numpy_redraw(n_rows, k, n_draws, rng)
    chunk = max(1, 4_000_000 // n_rows)  # ~4M bits at a time: cache-friendly
    return np.concatenate([_numpy_bitmap(n_rows, k, min(n_draws, s + chunk) - s, rng)
                           for s in range(0, n_draws, chunk)])


def _numpy_redraw(n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    idx = np.sort(rng.integers(0, n_rows, (n_draws, k)), axis=1)
    rows = np.flatnonzero((idx[:, 1:] == idx[:, :-1]).any(axis=1))
    while rows.size:
        sub = idx[rows]
        r, c = np.nonzero(sub[:, 1:] == sub[:, :-1])
        sub[r, c + 1] = rng.integers(0, n_rows, r.size)
        sub.sort(axis=1)
        idx[rows] = sub
        rows = rows[(sub[:, 1:] == sub[:, :-1]).any(axis=1)]
    return idx


def _numpy_bitmap(n_rows: int, k: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    mark = rng.integers(0, 65536, (n_draws, n_rows), dtype=np.uint16) < min(65535, round(65536 * k / n_rows))
    have, flat = np.count_nonzero(mark, axis=1), mark.reshape(-1)
    for add in (True, False):
        rows = np.flatnonzero(have < k if add else have > k)
        while rows.size:
            r = np.repeat(rows, np.abs(k - have[rows])).astype(np.int64)
            key = np.unique(r * n_rows + rng.integers(0, n_rows, r.size))
            key = key[flat[key] != add]
            flat[key] = add
            have += (1 if add else -1) * np.bincount(key // n_rows, minlength=n_draws)
            rows = rows[have[rows] != k]
    return np.flatnonzero(mark).reshape(n_draws, k) - (np.arange(n_draws) * n_rows)[:, None]


def numpy_moments(high: np.ndarray, low: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Plug-in means ``(2, 5)`` and covariances ``(2, 5, 5)`` of the statistics of ``n``-record subsets."""
    scale = np.array([1 / n, 1 / n, 1.0, 1.0, 1 / n])[:, None]
    step = max(1, min(N_DRAWS, 1_000_000 // n))  # ~10^6 drawn records at a time (cache-friendly)
    means, covs = [], []
    for share in SHARES:
        k = round(share * n)
        values = np.empty((5, N_DRAWS))
        for start in range(0, N_DRAWS, step):
            d = min(N_DRAWS, start + step) - start
            part = np.zeros((5, d))
            for group, m in ((high, k), (low, n - k)):
                idx = numpy_subsets(group.shape[1], m, d, rng)
                part += np.einsum("cdr->cd", np.take(group, idx, axis=1))
            values[:, start:start + d] = part
        values *= scale
        means.append(values.mean(axis=1))
        covs.append(np.cov(values))
    return np.array(means), np.array(covs)


def numpy_fresh(table: pd.DataFrame, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The best plain NumPy from the DataFrame: features, groups, subsets, plug-in moments."""
    high, low = numpy_features(table)
    return numpy_moments(high, low, N_RECORDS, np.random.default_rng(seed))


# -- timing ---------------------------------------------------------------------------------------------
def interleaved(fns: dict[str, Callable[[], object]], repeats: dict[str, int]) -> dict[str, list[float]]:
    """Wall times of each function, called in rotating order; ``repeats[name]`` calls of each."""
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(max(repeats.values())):
        for name in names[r % len(names):] + names[:r % len(names)]:
            if len(times[name]) < repeats[name]:
                t0 = time.perf_counter()
                fns[name]()
                times[name].append(time.perf_counter() - t0)
    return times


def fresh_stages(table: pd.DataFrame) -> dict[str, float]:
    """Seconds spent in each stage of one fresh calibration (the same calls ``bp.calibrate`` makes)."""
    from bayespriv.calibration import DrawReport
    from bayespriv.calibration.engine import _events, calibration_from_samples

    pairs, query = income_pairs(0.1), census_query()
    t0 = time.perf_counter()
    model = census_model(table, N_RECORDS)
    t1 = time.perf_counter()
    for secret in pairs.secrets:
        model.check_secret(secret)
    t2 = time.perf_counter()
    model._features(query)
    t3 = time.perf_counter()
    seeds = np.random.SeedSequence(0).spawn(2)
    samples = np.stack([model.sample_query(s, N_DRAWS, np.random.default_rng(q), query)
                        for s, q in zip(pairs.secrets, seeds)])
    t4 = time.perf_counter()
    calibration_from_samples(samples, pairs.secrets, [pairs], query, confidence=0.95, n_records=N_RECORDS,
                             report=DrawReport(n_events=_events(2, samples.shape[-1])))
    t5 = time.perf_counter()
    return {"construction (numbers checked; text on first use)": t1 - t0,
            "secret strata (income checked)": t2 - t1,
            "query features (sex, marital-status checked; packed lanes)": t3 - t2,
            "sampling (2 × 1000 subsets)": t4 - t3, "moments and 95 % bounds": t5 - t4}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def _stats(times: list[float]) -> tuple[float, float]:
    return min(times), statistics.median(times)


def _agreement(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Largest difference between two mean estimates in units of its Monte-Carlo standard error."""
    (ma, ca), (mb, cb) = a, b
    se = np.sqrt((np.diagonal(ca, axis1=1, axis2=2) + np.diagonal(cb, axis1=1, axis2=2)) / N_DRAWS)
    return float(np.max(np.abs(ma - mb) / se))


def main_table(table: pd.DataFrame, repeats: int, nb_repeats: int) -> tuple[str, dict[str, list[float]]]:
    """The four implementations side by side, and the ratios between them."""
    fns = {
        "notebook": lambda: notebook_method(table),
        "ours95": lambda: ours_fresh(table),
        "ours_plugin": lambda: ours_fresh(table, confidence=None),
        "numpy": lambda: numpy_fresh(table),
        "construction": lambda: census_model(table, N_RECORDS),
    }
    outputs = {name: fn() for name, fn in fns.items()}  # warm-up (imports), and the estimates compared below
    counts = {name: (nb_repeats if name == "notebook" else repeats) for name in fns}
    times = interleaved(fns, counts)
    best = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    labels = {
        "notebook": "authors' notebook method (`DataFrame.sample`, `pd.concat`, `value_counts`, `DataFrame.cov`)",
        "ours95": "**ours, fresh**: `census_model(table)` + `bp.calibrate(...)` with 95 % bounds",
        "ours_plugin": "ours, fresh, plug-in (`confidence=None`: the notebook's estimates)",
        "numpy": "best plain NumPy from the DataFrame",
        "construction": "of ours, fresh: `census_model(table)` alone (numeric columns checked; text columns on first use)",
    }
    rows = ["| implementation | best | median | runs |", "| --- | ---: | ---: | --- |"]
    for name, label in labels.items():
        runs = ", ".join(_ms(t) for t in times[name])
        rows.append(f"| {label} | {_ms(best[name])} | {_ms(med[name])} | {runs} |")
    ratio = lambda a, b: f"{best[a] / best[b]:.0f}× / {med[a] / med[b]:.0f}×"  # noqa: E731
    slower = lambda a, b: f"**{best[a] / best[b]:.2f}×** / {med[a] / med[b]:.2f}×"  # noqa: E731
    ratios = [
        "| ratio (best / median) | against | value |", "| --- | --- | ---: |",
        f"| notebook time ÷ ours fresh (95 % bounds) | the authors' notebook method | **{ratio('notebook', 'ours95')}** |",
        f"| notebook time ÷ ours fresh, plug-in | the authors' notebook method | {ratio('notebook', 'ours_plugin')} |",
        f"| notebook time ÷ best plain NumPy | the authors' notebook method | {ratio('notebook', 'numpy')} |",
        f"| ours fresh (95 % bounds) ÷ best plain NumPy | the best plain NumPy | {slower('ours95', 'numpy')} |",
        f"| ours fresh, plug-in ÷ best plain NumPy | the best plain NumPy | {slower('ours_plugin', 'numpy')} |",
        f"| (ours fresh − `census_model(table)` alone) ÷ best plain NumPy | the best plain NumPy | "
        f"{(best['ours95'] - best['construction']) / best['numpy']:.2f}× / "
        f"{(med['ours95'] - med['construction']) / med['numpy']:.2f}× |",
    ]
    agree = (f"The estimates agree: the largest difference between the means of ours and the notebook is "
             f"{_agreement(outputs['ours95'], outputs['notebook']):.1f} Monte-Carlo standard errors, between ours "
             f"and NumPy {_agreement(outputs['ours95'], outputs['numpy']):.1f} (over 2 secrets × 5 statistics).")
    return "\n".join(rows) + "\n\n" + "\n".join(ratios) + "\n\n" + agree, times


def rounds_table(times: dict[str, list[float]]) -> str:
    """Ours fresh (95 % bounds) against the best plain NumPy, round by round: the per-round ratios."""
    ours, numpy_ = times["ours95"], times["numpy"]
    ratios = [a / b for a, b in zip(ours, numpy_)]
    return "\n".join([
        "| rounds | ours, fresh (95 % bounds): median | best plain NumPy: median | ratio of the medians "
        "| per-round ratio: median | per-round ratio: range |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
        f"| {len(ratios)} | {_ms(statistics.median(ours))} | {_ms(statistics.median(numpy_))} "
        f"| {statistics.median(ours) / statistics.median(numpy_):.2f}× | **{statistics.median(ratios):.2f}×** "
        f"| {min(ratios):.2f}× – {max(ratios):.2f}× |",
    ])


def with_previous(text: str, previous: str) -> str:
    """``text``, then the tables of the previous run's ``previous`` (its own previous run dropped),
    headings one level down, under "Previous run of this script"."""
    previous = previous.split("\n## Previous run of this script")[0]
    body = previous.split("\n## ", 1)
    if len(body) < 2:
        return text
    demoted = "\n".join("#" + line if line.startswith("##") else line for line in ("## " + body[1]).splitlines())
    return (f"{text.rstrip()}\n\n## Previous run of this script\n\nThe figures the previous run wrote, as it "
            f"wrote them (labels included).\n\n{demoted.rstrip()}\n")


def stages_table(table: pd.DataFrame, repeats: int) -> str:
    """Median seconds per stage of a fresh calibration, next to the NumPy script's two stages."""
    runs = [fresh_stages(table) for _ in range(repeats)]
    feats, moments = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        high, low = numpy_features(table)
        t1 = time.perf_counter()
        numpy_moments(high, low, N_RECORDS, np.random.default_rng(0))
        feats.append(t1 - t0)
        moments.append(time.perf_counter() - t1)
    rows = ["| stage of ours, fresh (95 % bounds) | median | | stage of the best plain NumPy | median |",
            "| --- | ---: | --- | --- | ---: |"]
    numpy_rows = [("groups and features from the DataFrame", feats), ("subsets, sums, mean and covariance", moments)]
    for i, name in enumerate(runs[0]):
        left = f"| {name} | {statistics.median([r[name] for r in runs]) * 1e3:.2f} ms |"
        right = (f" | {numpy_rows[i][0]} | {statistics.median(numpy_rows[i][1]) * 1e3:.2f} ms |"
                 if i < len(numpy_rows) else " | | |")
        rows.append(left + right)
    return "\n".join(rows)


def sizes_table(table: pd.DataFrame, repeats: int) -> str:
    """A model built once (features cached) against NumPy on prebuilt features, per subset size."""
    high, low = numpy_features(table)
    query = census_query()
    rows = ["| records per subset | ours, model built once, `bp.calibrate` (95 % bounds) | NumPy, features prebuilt "
            "| ours ÷ NumPy (best / median) |", "| ---: | ---: | ---: | ---: |"]
    for n in SIZES:
        model, pairs = census_model(table, n), income_pairs(0.1, n)
        fns = {"ours": lambda: bp.calibrate(model, pairs, query, n_draws=N_DRAWS, rng=0),
               "numpy": lambda: numpy_moments(high, low, n, np.random.default_rng(0))}
        for fn in fns.values():
            fn()
        times = interleaved(fns, {name: repeats for name in fns})
        (bo, mo), (bn, mn) = _stats(times["ours"]), _stats(times["numpy"])
        rows.append(f"| {n:,} | {bo * 1e3:.2f} ms | {bn * 1e3:.2f} ms | {bo / bn:.2f}× / {mo / mn:.2f}× |")
        print(rows[-1], flush=True)
    return "\n".join(rows)


def machine_info() -> str:
    cpu = platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{cpu}, {cores} cores shared with other work (load average {load:.1f} at the end of the run); "
            f"Python {platform.python_version()}, NumPy {np.__version__}, pandas {pd.__version__}, "
            f"bayespriv {bp.__version__}; {_dt.date.today().isoformat()}")


def report(table: pd.DataFrame, args: argparse.Namespace) -> str:
    main, times = main_table(table, args.repeats, args.notebook_repeats)
    rounds = rounds_table(times)
    print(main, rounds, sep="\n\n", flush=True)
    stages = stages_table(table, args.repeats)
    print(stages, flush=True)
    sizes = sizes_table(table, args.repeats)
    n_high = int((table["income"] == ">50K").sum())
    return f"""# Benchmark results: census calibration

`benchmarks/bench_empirical.py`; run by hand, figures from one machine, written by the script.

## Against the authors' notebook method and the best plain NumPy

The census workload of the distribution-privacy paper (appendix C.1): 2 secrets (45 / 55 of {N_RECORDS}
records >50K) × {N_DRAWS:,} subsets drawn without replacement, five statistics, mean vector and
covariance matrix per secret. Every implementation starts from the same DataFrame, the whole
{len(table):,}-row Adult table ({n_high:,} rows >50K) of `bayespriv.models.census.load_adult`.

The notebook method is the authors' published code ({NOTEBOOK}, cells 3, 5 and 11), reproduced
call for call in `notebook_method`: the table split once into the two income groups, each subset
`hi.sample(k)` + `lo.sample(100 − k)` + `pd.concat`, the means by `np.mean`, the counts by
`value_counts`, 1,000 subsets per secret, plug-in mean and covariance (ddof 1). "Ours, fresh" builds
a new `EmpiricalDataModel` inside the timed call, as a user does once (its constructor checks the
numeric columns for missing values; each text column is checked on its first use, here the three
the secrets and the query read), then calibrates. The best plain NumPy reads the same DataFrame:
groups split once, features as float arrays (object comparisons for the two counts), integer
index sampling, feature sums gathered per subset, `mean` / `np.cov`; it checks nothing.
Interleaved calls in rotating order, {args.repeats} of each ({args.notebook_repeats} of the notebook's); times are wall clock.

{main}

### Ours, fresh, against the best plain NumPy, round by round

Each round of the interleaved run above times both once; the ratio of each round, its median and
its range over the {args.repeats} rounds.

{rounds}

### Where a fresh calibration spends its time

Median of {args.repeats} runs of each stage (the calls `bp.calibrate` makes, timed one by one),
next to the two stages of the NumPy script.

{stages}

### A model built once, by subset size

The same workload at 100, 1,000 and 10,000 records per subset, a model built once (its features
cached by the first call) against the same NumPy script on features prebuilt once; best of
{args.repeats} interleaved calls each.

{sizes}

Machine: {machine_info()}.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adult-dir", type=Path, default=Path(os.environ.get("BAYESPRIV_ADULT_DIR", DEFAULT_ADULT_DIR)))
    parser.add_argument("--repeats", type=int, default=15, help="timed calls of ours and of NumPy")
    parser.add_argument("--notebook-repeats", type=int, default=3, help="timed calls of the notebook method")
    parser.add_argument("--no-write", action="store_true", help=f"do not write {RESULTS.name}")
    args = parser.parse_args(argv)
    if not ((args.adult_dir / "adult.data").exists() and (args.adult_dir / "adult.test").exists()):
        print(f"SKIPPED: UCI Adult data not found in {args.adult_dir} (set BAYESPRIV_ADULT_DIR); it is never committed")
        return 0
    text = report(load_adult(args.adult_dir), args)
    print(text)
    if not args.no_write:
        RESULTS.write_text(with_previous(text, RESULTS.read_text() if RESULTS.exists() else ""))
        print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
