"""Benchmark: chunk sizing that counts the model's columns, and BLAS threads in process workers.

Run by hand (not a timed test)::

    .venv/bin/python benchmarks/bench_dask.py            # full run, writes benchmarks/RESULTS_dask.md
    .venv/bin/python benchmarks/bench_dask.py --quick    # 10^5 records, prints only

1. Memory. ``bayespriv.calibrate(mean("height"))`` over 1000 draws of 10^6 records per
   secret (2 secrets, ``DistributionSecret("p", 0.3)`` vs ``0.7``) for PyMC models that
   draw more columns than the query reads: the README's hierarchical model (gender,
   height) and a wider one (gender, height, weight, age). Two chunk rules: the old one
   (``CHUNK_ELEMENTS // (n_records × query columns)`` draws per task, passed as
   ``chunk_size``) and the default (:func:`bayespriv.calibration.engine.default_chunk_size`,
   every column the model draws). Peak memory is the growth of the process's peak RSS
   (``ru_maxrss``) over the RSS before ``calibrate``, each scenario in a fresh subprocess.
2. BLAS threads. A 60-dimensional ``GaussianDataModel`` (its draws are a BLAS matrix
   product) calibrated on a ``ProcessPoolExecutor(2)`` with the engine's one-thread BLAS
   limit per task and without it (the limit replaced by a no-op before the pool forks).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Columns each benchmark model draws (the query reads only "height").
MODEL_COLUMNS = {"hier": ["gender", "height"], "wide": ["gender", "height", "weight", "age"]}


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _builder(kind: str):
    """A PyMC model builder ``n -> pm.Model`` for ``kind`` in :data:`MODEL_COLUMNS`."""

    def build(n):
        import pymc as pm
        import pytensor.tensor as pt

        with pm.Model() as m:
            p = pm.Beta("p", 2.0, 2.0)
            g = pm.Bernoulli("gender", p, shape=n)
            h = pm.Normal("height", pt.switch(pt.eq(g, 1), 64.0, 70.0), 3.0, shape=n)
            if kind == "wide":
                pm.Normal("weight", 0.9 * h - 10.0, 5.0, shape=n)
                pm.Normal("age", 40.0, 10.0, shape=n)
        return m

    return build


def memory_child(kind: str, rule: str, n_records: int, n_draws: int) -> dict:
    """One calibration in this (fresh) process: peak RSS growth, time, chunk size."""
    import bayespriv as bp
    from bayespriv.calibration import ExecutionOptions
    from bayespriv.calibration.engine import CHUNK_ELEMENTS, default_chunk_size
    from bayespriv.datamodels.pymc import PyMCDataModel

    cols = MODEL_COLUMNS[kind]
    model = PyMCDataModel(_builder(kind), n_records=n_records, columns=cols, parameters=["p"])
    pair = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    query = bp.mean("height")
    chunk = (max(1, CHUNK_ELEMENTS // (n_records * len(query.columns))) if rule == "query"
             else default_chunk_size(model, query, n_draws))
    model.sample(pair.a, 2, rng=0, columns=["height"])  # compile outside the measurement
    base = _rss_mib()
    t0 = time.perf_counter()
    cal = bp.calibrate(model, pair, query, n_draws=n_draws, rng=0, execution=ExecutionOptions(chunk_size=chunk))
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"kind": kind, "rule": rule, "columns": cols, "chunk": chunk, "n_records": n_records,
            "n_draws": n_draws, "rss_before_mib": base, "peak_mib": peak, "growth_mib": peak - base,
            "seconds": seconds, "sensitivity": cal.sensitivity(2)}


def memory(n_records: int, n_draws: int) -> list[dict]:
    """Every (model, rule) scenario in its own subprocess, two at a time."""
    scenarios = [(k, r) for k in MODEL_COLUMNS for r in ("query", "model")]
    rows = []
    for i in range(0, len(scenarios), 2):
        procs = [subprocess.Popen([sys.executable, __file__, "--memory-child", k, r, str(n_records), str(n_draws)],
                                  stdout=subprocess.PIPE, text=True) for k, r in scenarios[i:i + 2]]
        for p in procs:
            out, _ = p.communicate()
            if p.returncode:
                raise RuntimeError(f"memory child failed with code {p.returncode}")
            rows.append(json.loads(out.strip().splitlines()[-1]))
    return rows


def blas(repeats: int = 2) -> list[dict]:
    """Seconds for one process-pool calibration of a 60-dimensional Gaussian, BLAS limited or not."""
    from concurrent.futures import ProcessPoolExecutor

    import bayespriv as bp
    from bayespriv.calibration import ExecutionOptions, engine

    d = 60
    a = np.random.default_rng(0).normal(size=(d, d))
    cols = ["s"] + [f"x{i}" for i in range(d - 1)]
    model = bp.GaussianDataModel(np.zeros(d), a @ a.T / d + np.eye(d), cols, 200)
    pair = bp.SecretPair(bp.DatasetSecret.mean("s", -1.0), bp.DatasetSecret.mean("s", 1.0))
    query = bp.mean("x0")
    rows = []
    original = engine._one_blas_thread
    for label, limit in (("one BLAS thread per task (engine)", original), ("no limit", contextlib.nullcontext)):
        engine._one_blas_thread = limit
        try:
            with ProcessPoolExecutor(2) as pool:
                bp.calibrate(model, pair, query, n_draws=200, rng=0,
                             execution=ExecutionOptions(chunk_size=100, executor=pool))  # warm
                best = np.inf
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    bp.calibrate(model, pair, query, n_draws=2000, rng=0,
                                 execution=ExecutionOptions(chunk_size=500, executor=pool))
                    best = min(best, time.perf_counter() - t0)
        finally:
            engine._one_blas_thread = original
        rows.append({"case": label, "seconds": best})
    return rows


def write(mem_rows: list[dict], blas_rows: list[dict], path: Path) -> str:
    n_rec, n_draws = mem_rows[0]["n_records"], mem_rows[0]["n_draws"]
    lines = [
        "# Dask / executor benchmark: chunk memory and BLAS threads",
        "",
        f"Run: `benchmarks/bench_dask.py` on {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}. Not a timed test.",
        "",
        f"## Memory: `calibrate(mean(\"height\"))`, {n_draws} draws × {n_rec:,} records per secret, 2 secrets",
        "",
        "PyMC models p ~ Beta(2, 2), gender ~ Bernoulli(p), height | gender ~ N(64 or 70, 3)",
        "(\"hier\", the README's model) plus weight | height and age (\"wide\"); secrets p = 0.3 vs 0.7.",
        "Rule \"query\": draws per task = 8·10^6 / (n_records × query columns), the old default;",
        "rule \"model\": `default_chunk_size` (64 MiB / (n_records × `bytes_per_record()`), every model column).",
        "Growth = peak RSS (`ru_maxrss`) − RSS before `calibrate`, each row in a fresh process.",
        "",
        "| model | columns drawn | rule | draws per task | peak RSS growth (MiB) | time (s) | sensitivity |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in mem_rows:
        lines.append(f"| {r['kind']} | {len(r['columns'])} | {r['rule']} | {r['chunk']} | {r['growth_mib']:.0f} | "
                     f"{r['seconds']:.1f} | {r['sensitivity']:.4f} |")
    lines += [
        "",
        "The old rule counted the query's one column; the default counts every model column",
        "(`DataModel.bytes_per_record`, 8 bytes per column unless a model declares less). A PyMC model",
        "draws only the requested columns and their ancestors (here gender and height), so under the old",
        "rule the wide model held no more than the two-column one, and the default is conservative for it.",
        "Changing the default chunk size changes the seed-determined numbers of a default calibration",
        "(seeds are spawned per chunk): compare the sensitivity columns.",
        "",
        "## BLAS threads in process-pool workers",
        "",
        "60-dimensional `GaussianDataModel`, 200 records, 2 secrets × 2000 draws in tasks of 500,",
        "`ProcessPoolExecutor(2)`, best of 2 after a warm-up.",
        "",
        "| case | seconds |",
        "|---|---:|",
    ]
    lines += [f"| {r['case']} | {r['seconds']:.2f} |" for r in blas_rows]
    text = "\n".join(lines) + "\n"
    path.write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10^5 records in the memory run; do not write results")
    parser.add_argument("--memory-child", nargs=4, metavar=("KIND", "RULE", "N_RECORDS", "N_DRAWS"))
    parser.add_argument("--blas-only", action="store_true")
    args = parser.parse_args()
    if args.memory_child:
        kind, rule, n_records, n_draws = args.memory_child
        print(json.dumps(memory_child(kind, rule, int(n_records), int(n_draws))))
        return
    if args.blas_only:
        print(json.dumps(blas()))
        return
    mem_rows = memory(10**5 if args.quick else 10**6, 1000)
    blas_rows = blas()
    path = Path(__file__).with_name("RESULTS_dask.md") if not args.quick else Path(os.devnull)
    print(write(mem_rows, blas_rows, path))


if __name__ == "__main__":
    main()
