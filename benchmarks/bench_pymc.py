"""Benchmark: batched PyMC sampling vs NumPy, and calibration memory at 10^6 records.

Run by hand (not a timed test)::

    .venv/bin/python benchmarks/bench_pymc.py            # full run, writes benchmarks/RESULTS_pymc.md
    .venv/bin/python benchmarks/bench_pymc.py --quick    # smaller memory run, prints only

1. Speed. The hospital generator of §4.2 (``bayespriv.models.hospital``) written as a PyMC
   model (:func:`bayespriv.models.hospital.hospital_generator_pymc`) and sampled through
   ``PyMCDataModel.sample`` (one compiled, batched function per call), against
   the NumPy implementation of the same model (``bayespriv.models.hospital.hospital_model``,
   i.e. ``_draw``), both conditioned on exactly 30 women of 50 and
   unconditionally; ``pm.sample_prior_predictive`` for reference. Datasets per
   second, best of several repeats, after one warm-up call (compilation).
2. Forward sampling of a hierarchical model against the best plain NumPy: p ~ Beta(2, 2),
   gender ~ Bernoulli(p), height | gender ~ N(64 or 70, 3), 100 records, the two secrets
   p = 0.3 and p = 0.7 × N draws each, ``PyMCDataModel.sample`` against the fastest of a few
   NumPy samplers of the same model (boolean gender, no string columns; the best variant of
   each run is the baseline), side by side, best of 7.
3. MCMC posterior cache: ``calibrate`` of the logit model (z ~ N(0, 1.5), p = sigmoid(z),
   gender ~ Bernoulli(p), score ~ N(10 p, 1), 20 records) under the dataset secrets "6 / 14
   women of 20" with MCMC forced (``conjugate=False``; default settings: 2 chains × 1000
   draws, 1000 tuning steps). In a fresh process: the first call (cold: compiles NUTS), a
   second call with a new model object and the same seed (cache hit), a call with another
   seed (warm MCMC, a miss), and the same calibration in another fresh process after
   ``load_calibration`` of the first one's file, passed as
   ``calibrate(..., execution=ExecutionOptions(reuse=loaded))``
   (disk; loading alone puts nothing in the cache). The quadrature route (the default
   for this model) is timed too.
4. Memory. ``bayespriv.calibrate`` of ``mean("height")`` over 1000 draws of
   10^6 records per secret, for a hierarchical model (p ~ Beta(2, 2), gender ~
   Bernoulli(p), height | gender normal) under ``DistributionSecret("p", 0.3)``
   vs ``0.7`` (forward route) and under the dataset secrets "30% / 70% women"
   (exact Beta-Bernoulli route). The engine chunks the draws (``default_chunk_size``:
   64 MiB of drawn records per task counting both model columns, 4 per task);
   peak memory is the growth of the process's peak RSS (``ru_maxrss``) over
   the RSS before the run, each scenario in a fresh subprocess.
"""

from __future__ import annotations

import argparse
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


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _best_rate(fn, n_draws: int, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(n_draws)
        best = min(best, time.perf_counter() - t0)
    return n_draws / best


def speed(repeats: int = 5) -> list[dict]:
    import bayespriv as bp
    from bayespriv.models.hospital import hospital_generator_pymc, hospital_model

    pymc_model = hospital_generator_pymc(50)
    numpy_model = hospital_model(50)
    rows = []
    cases = [
        ("30 of 50 women", bp.DatasetSecret.proportion("gender", 1, 0.6), bp.DatasetSecret.proportion("gender", "female", 0.6)),
        ("unconditional", None, None),
    ]
    for label, s_pymc, s_numpy in cases:
        rng = np.random.default_rng(0)
        t0 = time.perf_counter()
        pymc_model.sample(s_pymc, 10, rng)  # compile
        compile_s = time.perf_counter() - t0
        for n_draws in (1000, 10_000):
            r_pymc = _best_rate(lambda d: pymc_model.sample(s_pymc, d, rng), n_draws, repeats)
            r_numpy = _best_rate(lambda d: numpy_model.sample(s_numpy, d, rng), n_draws, repeats)
            rows.append({"case": label, "n_draws": n_draws, "pymc": r_pymc, "numpy": r_numpy,
                         "ratio": r_numpy / r_pymc, "compile_s": compile_s})
    # reference: PyMC's own prior predictive sampler, unconditional
    import pymc as pm

    model = pymc_model.pymc_model
    t0 = time.perf_counter()
    pm.sample_prior_predictive(draws=1000, model=model, random_seed=1)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    pm.sample_prior_predictive(draws=1000, model=model, random_seed=2)
    rows.append({"case": "pm.sample_prior_predictive (unconditional)", "n_draws": 1000,
                 "pymc": 1000 / (time.perf_counter() - t0), "numpy": float("nan"), "ratio": float("nan"),
                 "compile_s": first})
    return rows


def _hier_builder(n):
    import pymc as pm
    import pytensor.tensor as pt

    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        g = pm.Bernoulli("gender", p, shape=n)
        pm.Normal("height", pt.switch(pt.eq(g, 1), 64.0, 70.0), 3.0, shape=n)
    return m


def _numpy_hier(p: float, n_draws: int, n: int, rng, variant: int):
    """Plain NumPy sampler of the hierarchical model given p (three variants; the benchmark keeps the fastest)."""
    g = rng.random((n_draws, n)) < p
    if variant == 0:
        h = rng.standard_normal((n_draws, n))
        h *= 3.0
        h += np.where(g, 70.0, 64.0)
    elif variant == 1:
        h = rng.normal(np.where(g, 70.0, 64.0), 3.0)
    else:
        h = rng.standard_normal((n_draws, n))
        h *= 3.0
        h += 64.0
        h += 6.0 * g
    return g, h


def forward(repeats: int = 7, n: int = 100) -> list[dict]:
    """PyMCDataModel.sample vs the best plain NumPy, hierarchical model, 2 secrets × N draws."""
    import bayespriv as bp
    from bayespriv.datamodels.pymc import PyMCDataModel

    model = PyMCDataModel(_hier_builder, n_records=n, columns=["gender", "height"], parameters=["p"])
    secrets = [bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)]
    rng = np.random.default_rng(0)
    for s in secrets:
        model.sample(s, 10, rng)  # compile
    rows = []
    for n_draws in (10_000, 100_000):
        def run_pymc():
            for s in secrets:
                model.sample(s, n_draws, rng)

        def run_numpy(variant):
            for s in secrets:
                _numpy_hier(s.value, n_draws, n, rng, variant)

        t_pymc, t_numpy = np.inf, {v: np.inf for v in range(3)}
        for _ in range(repeats):  # interleaved, side by side
            t0 = time.perf_counter()
            run_pymc()
            t_pymc = min(t_pymc, time.perf_counter() - t0)
            for v in t_numpy:
                t0 = time.perf_counter()
                run_numpy(v)
                t_numpy[v] = min(t_numpy[v], time.perf_counter() - t0)
        best = min(t_numpy, key=t_numpy.get)
        rows.append({"n_draws": n_draws, "pymc_s": t_pymc, "numpy_s": t_numpy[best], "numpy_variant": best,
                     "ratio": t_pymc / t_numpy[best]})
    return rows


def _logit_builder(n):
    import pymc as pm

    with pm.Model() as m:
        z = pm.Normal("z", 0.0, 1.5)
        p = pm.Deterministic("p", pm.math.sigmoid(z))
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", 10.0 * p, 1.0, shape=n)
    return m


def cache_child(mode: str, path: str) -> dict:
    """One fresh process: calibrations of the logit model with MCMC secrets (see the module notes)."""
    import bayespriv as bp
    from bayespriv.datamodels import posterior_cache
    from bayespriv.datamodels.pymc import PyMCDataModel

    pair = bp.SecretPair(bp.DatasetSecret.proportion("gender", 1, 0.3), bp.DatasetSecret.proportion("gender", 1, 0.7))

    def run(rng=77, conjugate=False, reuse=None):
        model = PyMCDataModel(_logit_builder, n_records=20, columns=["gender", "score"], parameters=["z"],
                              conjugate=conjugate)
        t0 = time.perf_counter()
        cal = bp.calibrate(model, pair, bp.mean("score"), n_draws=2000, rng=rng,
                           execution=bp.calibration.ExecutionOptions(reuse=reuse))
        return time.perf_counter() - t0, cal

    out: dict = {"mode": mode}
    if mode == "memory":
        out["first_s"], cal = run()
        out["second_s"], again = run()
        out["identical"] = bool(np.array_equal(cal.samples.values, again.samples.values))
        out["warm_miss_s"], _ = run(rng=78)
        out["quadrature_first_s"], qcal = run(conjugate=True)
        out["quadrature_second_s"], _ = run(conjugate=True)
        out["quadrature_route"] = sorted({v["route"] for v in qcal.diagnostics["mcmc"].values()})
        out["sensitivity"] = cal.sensitivity(2)
        cal.to_netcdf(path)
    else:
        t0 = time.perf_counter()
        saved = bp.load_calibration(path, query=bp.mean("score"))
        out["load_s"] = time.perf_counter() - t0
        out["calibrate_s"], cal = run(reuse=saved)
        out["identical"] = bool(np.array_equal(cal.samples.values, saved.samples.values))
        out["sensitivity"] = cal.sensitivity(2)
    out["cache"] = posterior_cache.stats()
    return out


def cache(tmp: Path) -> list[dict]:
    rows = []
    path = tmp / "bench_pymc_cache.nc"
    for mode in ("memory", "disk"):
        res = subprocess.run([sys.executable, __file__, "--cache-child", mode, str(path)],
                             capture_output=True, text=True, check=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    return rows


def memory_child(kind: str, n_records: int, n_draws: int) -> dict:
    """Run one calibration in this (fresh) process and report memory and time."""
    import bayespriv as bp
    from bayespriv.calibration.engine import default_chunk_size
    from bayespriv.datamodels.pymc import PyMCDataModel

    model = PyMCDataModel(_hier_builder, n_records=n_records, columns=["gender", "height"], parameters=["p"])
    if kind == "distribution":
        pair = bp.SecretPair(bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7))
    else:
        pair = bp.SecretPair(bp.DatasetSecret.proportion("gender", 1, 0.3), bp.DatasetSecret.proportion("gender", 1, 0.7))
    model.sample(pair.a, 2, rng=0, columns=["height"])  # compile outside the measurement (same function)
    base = _rss_mib()
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    cal = bp.calibrate(model, pair, bp.mean("height"), n_draws=n_draws, rng=0)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    routes = {k: v["route"] for k, v in cal.diagnostics["mcmc"].items()}
    return {"kind": kind, "n_records": n_records, "n_draws": n_draws, "rss_before_mib": base,
            "peak_before_mib": peak_before, "peak_mib": peak, "growth_mib": peak - base, "seconds": seconds,
            "sensitivity": cal.sensitivity(2), "variance": float(cal.variance()[0]), "routes": routes,
            "chunk": default_chunk_size(model, bp.mean("height"), n_draws)}


def memory(n_records: int, n_draws: int) -> list[dict]:
    rows = []
    for kind in ("distribution", "dataset"):
        out = subprocess.run(
            [sys.executable, __file__, "--memory-child", kind, str(n_records), str(n_draws)],
            capture_output=True, text=True, check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


def _cache_lines(rows: list[dict]) -> list[str]:
    mem, disk = rows
    lines = [
        "## MCMC posterior cache: `calibrate` with MCMC secrets, repeated",
        "",
        "Logit model z ~ N(0, 1.5), p = sigmoid(z), gender ~ Bernoulli(p), score ~ N(10 p, 1), 20 records;",
        "secrets \"6 / 14 women of 20\", `mean(\"score\")`, 2000 draws per secret, MCMC forced",
        "(`conjugate=False`, 2 chains × (1000 + 1000) NUTS steps per secret). Each call builds a new",
        "`PyMCDataModel`; every row of one block in one fresh process.",
        "",
        "| call | seconds | vs second call |",
        "|---|---:|---:|",
        f"| first (cold: NUTS compiled, 2 MCMC runs) | {mem['first_s']:.2f} | {mem['first_s'] / mem['second_s']:.0f}× |",
        f"| second, same seed (posterior cache hit) | {mem['second_s']:.3f} | 1× |",
        f"| another seed (warm MCMC, cache miss) | {mem['warm_miss_s']:.2f} | {mem['warm_miss_s'] / mem['second_s']:.0f}× |",
        f"| new process: `load_calibration` of the saved file | {disk['load_s']:.3f} | — |",
        f"| new process: then `calibrate(..., execution=ExecutionOptions(reuse=loaded))` (posteriors from the file) | {disk['calibrate_s']:.3f} | "
        f"{disk['calibrate_s'] / mem['second_s']:.1f}× |",
        f"| default route (quadrature, no MCMC), first call | {mem['quadrature_first_s']:.2f} | "
        f"{mem['quadrature_first_s'] / mem['second_s']:.0f}× |",
        f"| default route (quadrature), second call | {mem['quadrature_second_s']:.3f} | "
        f"{mem['quadrature_second_s'] / mem['second_s']:.1f}× |",
        "",
        f"Second call bit-identical to the first: {mem['identical']}; the new process's calibration equals the "
        f"saved one bit for bit: {disk['identical']} (cache misses in that process: {disk['cache']['misses']}, "
        f"i.e. no `pm.sample`). Quadrature route used: {', '.join(mem['quadrature_route'])}.",
        "",
        f"Target: second call ≥ 20× faster — measured {mem['first_s'] / mem['second_s']:.0f}× against the cold first "
        f"call, {mem['warm_miss_s'] / mem['second_s']:.0f}× against a warm MCMC run.",
        "",
    ]
    return lines


def _forward_lines(rows: list[dict]) -> list[str]:
    lines = [
        "## Forward sampling: hierarchical model against the best plain NumPy",
        "",
        "p ~ Beta(2, 2), gender ~ Bernoulli(p), height | gender ~ N(64 or 70, 3), 100 records; the secrets",
        "p = 0.3 and p = 0.7, N draws each (2 × N datasets). `PyMCDataModel.sample` (compiled batch",
        "function; Bernoulli as `random() < p`, Normal as `μ + σ·standard_normal()`) against the fastest of",
        "three NumPy samplers (boolean gender; heights by in-place `standard_normal` scaling, by",
        "`normal(loc, 3)`, or by adding `6·gender`), interleaved in one run, best of 7.",
        "",
        "| N per secret | PyMC (s) | best NumPy (s) | PyMC / NumPy |",
        "|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['n_draws']:,} | {r['pymc_s']:.4f} | {r['numpy_s']:.4f} | {r['ratio']:.2f} |")
    worst = max(r["ratio"] for r in rows)
    lines += ["", f"Target: within 2× of NumPy — worst ratio measured {worst:.2f}×.", ""]
    return lines


def write(speed_rows: list[dict], mem_rows: list[dict], path: Path, forward_rows: list[dict] | None = None,
          cache_rows: list[dict] | None = None, command: str = "") -> str:
    lines = [
        "# PyMCDataModel benchmark",
        "",
        f"Run: `{command or 'benchmarks/bench_pymc.py'}` on {platform.machine()}, {os.cpu_count()} cores "
        f"(shared), Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M')}. Not a timed test.",
        "",
        *(_cache_lines(cache_rows) if cache_rows else []),
        *(_forward_lines(forward_rows) if forward_rows else []),
        "## Speed: hospital generator (§4.2), 50 records, datasets / s",
        "",
        "`PyMCDataModel.sample` (one compiled batched PyTensor function) vs the NumPy sampler of the same",
        "model (`bayespriv.models.hospital.hospital_model`), best of 5 after a warm-up call; all five columns drawn.",
        "",
        "| case | draws | PyMC (datasets/s) | NumPy (datasets/s) | NumPy / PyMC | first call (compile) s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in speed_rows:
        numpy = "—" if np.isnan(r["numpy"]) else f"{r['numpy']:,.0f}"
        ratio = "—" if np.isnan(r["ratio"]) else f"{r['ratio']:.2f}"
        lines.append(f"| {r['case']} | {r['n_draws']} | {r['pymc']:,.0f} | {numpy} | {ratio} | {r['compile_s']:.2f} |")
    worst = max(r["ratio"] for r in speed_rows if not np.isnan(r["ratio"]))
    lines += [
        "",
        f"Target: within 3× of NumPy — worst ratio measured {worst:.2f}×.",
        "",
        f"## Memory: `calibrate(mean(\"height\"))`, {mem_rows[0]['n_draws']} draws × {mem_rows[0]['n_records']:,} records per secret, 2 secrets",
        "",
        "Hierarchical model p ~ Beta(2, 2), gender ~ Bernoulli(p), height | gender ~ N(64 or 70, 3).",
        "Each row in a fresh process; growth = peak RSS (`ru_maxrss`) − RSS before `calibrate`",
        "(after compiling the sampler). The engine cuts the draws into tasks of",
        f"{mem_rows[0]['chunk']} draws (`default_chunk_size`: 64 MiB / (n_records × 16 bytes for the two model",
        "columns)); each task holds a few draws × n_records arrays (gender, its uniforms, the means, the heights).",
        "For the dataset secrets the route is `forward`: height depends on p only through gender, which the",
        "secret fixes, so no posterior of p is needed.",
        "",
        "| secrets | route | peak RSS growth (MiB) | peak RSS (MiB) | time (s) | sensitivity | variance |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in mem_rows:
        route = ", ".join(sorted(set(r["routes"].values())))
        label = "p = 0.3 vs 0.7" if r["kind"] == "distribution" else "share of women 0.3 vs 0.7"
        lines.append(f"| {label} | {route} | {r['growth_mib']:.0f} | {r['peak_mib']:.0f} | {r['seconds']:.1f} | "
                     f"{r['sensitivity']:.4f} | {r['variance']:.3g} |")
    ok = all(r["growth_mib"] < 1024 for r in mem_rows)
    lines += ["", f"Target: under 1 GiB — {'met' if ok else 'NOT met'}.", ""]
    text = "\n".join(lines)
    path.write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10^5 records in the memory run; do not write results")
    parser.add_argument("--memory-child", nargs=3, metavar=("KIND", "N_RECORDS", "N_DRAWS"))
    parser.add_argument("--cache-child", nargs=2, metavar=("MODE", "PATH"))
    args = parser.parse_args()
    if args.memory_child:
        kind, n_records, n_draws = args.memory_child
        print(json.dumps(memory_child(kind, int(n_records), int(n_draws))))
        return
    if args.cache_child:
        print(json.dumps(cache_child(*args.cache_child)))
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cache_rows = cache(Path(tmp))
    forward_rows = forward()
    speed_rows = speed()
    mem_rows = memory(10**5 if args.quick else 10**6, 1000)
    path = Path(__file__).with_name("RESULTS_pymc.md") if not args.quick else Path(os.devnull)
    command = ".venv/bin/python benchmarks/bench_pymc.py" + (" --quick" if args.quick else "")
    print(write(speed_rows, mem_rows, path, forward_rows, cache_rows, command))


if __name__ == "__main__":
    main()
