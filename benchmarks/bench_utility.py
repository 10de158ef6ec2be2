"""Utility: tight count tables and the order-statistic W∞ band against what they replace.

Run by hand (never as a timed test)::

    .venv/bin/python benchmarks/bench_utility.py [--reps 5] [--out benchmarks/RESULTS_utility.md]

Part 1 — count tables (Algorithm 1 of Tan): the exact cell variance of the tight calibration
(α = e^{−ε}, the default) against the paper's (α = e^{−ε/2}), their ratio, a simulated check of
both, and the empirical-ε audit of the exact release path (Clopper–Pearson lower bound, α = 1e-3,
20 000 releases of each of two neighbouring tables; test "g(0, 0) ≥ 30").

Part 2 — W∞ and δ-trimmed W∞ bounds from draws, as ``wasserstein_bounds`` computes them for a
calibration of two secrets at confidence 0.95 (failure 0.025 per distribution), with the DKW band
(``band="dkw"``, the previous default) and the order-statistic band (``band="order"``, the new
default), divided by the exact value (closed forms / exact discrete quantile coupling). Median
over ``--reps`` independent draws; the same draws feed both bands (side by side, one run). The
band-construction time is best-of-5 per band.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import time

import numpy as np
from scipy import stats

import bayespriv as bp
from bayespriv.ledger import cell_variance, subset_count_array
from bayespriv.mechanisms.subset_count import _exact_pair_draws, geometric_alpha, pair_noise
from bayespriv.audit.empirical_epsilon import epsilon_lower_bound
from bayespriv.calibration import calibration_from_samples
from bayespriv.calibration.w_distances import quantile_band, w_infinity_discrete, w_infinity_from_quantiles, wasserstein_bounds
from bayespriv.noise import BitSource

A = bp.DistributionSecret("theta", 0.0)
B = bp.DistributionSecret("theta", 1.0)
PAIR = bp.SecretPair(A, B)
QUERY = bp.Query(lambda b: b["x"][:, :1], ["x"], "F")

# (name, dist_a, dist_b, support or None, deltas)
WORKLOADS = [
    ("Binomial(100, 0.5) vs (100, 0.6) counts", stats.binom(100, 0.5), stats.binom(100, 0.6), (0, 100), [0.0]),
    ("BetaBinomial(20; 2,3) vs (20; 3,2) counts", stats.betabinom(20, 2, 3), stats.betabinom(20, 3, 2), (0, 20), [0.0]),
    ("Binomial(100, 0.5) vs (100, 0.6), trimmed", stats.binom(100, 0.5), stats.binom(100, 0.6), (0, 100), [0.01, 0.05]),
    ("N(0,1) vs N(0.5,1) (shift)", stats.norm(0, 1), stats.norm(0.5, 1), None, [0.01, 0.05, 0.1]),
    ("N(0,1) vs N(0,2²) (scale)", stats.norm(0, 1), stats.norm(0, 2), None, [0.01, 0.05, 0.1]),
]


def exact_w(dist_a, dist_b, support, delta: float) -> float:
    if support is not None:
        return w_infinity_discrete(dist_a, dist_b, delta=delta)
    return w_infinity_from_quantiles(dist_a.ppf, dist_b.ppf, delta=delta, n_grid=400_000)


def w_rows(sizes, reps: int) -> list[str]:
    rows = []
    for n in sizes:
        for name, da, db, support, deltas in WORKLOADS:
            draws = []
            for rep in range(reps):
                g = np.random.default_rng([n, rep, len(name)])
                arr = np.stack([da.rvs(n, random_state=g), db.rvs(n, random_state=g)]).astype(float)[:, :, None]
                draws.append(calibration_from_samples(arr, (A, B), (PAIR,), QUERY, confidence=0.95))
            for delta in deltas:
                truth = exact_w(da, db, support, delta)
                ratios = {}
                for band in ("dkw", "order"):
                    b = [wasserstein_bounds(c, delta=delta, support=support, band=band).bound for c in draws]
                    ratios[band] = float(np.median(b)) / truth
                gain = ratios["dkw"] / ratios["order"] if math.isfinite(ratios["order"]) else math.nan
                rows.append(f"| {name} | {delta:g} | {n:,} | {truth:.4g} | {fmt(ratios['dkw'])} | "
                            f"{fmt(ratios['order'])} | {fmt(gain)} |")
    return rows


def fmt(x: float) -> str:
    return "∞" if math.isinf(x) else ("—" if math.isnan(x) else f"{x:.2f}")


def band_times(sizes) -> list[str]:
    rows = []
    for n in sizes:
        t = {}
        for band in ("dkw", "order"):
            best = math.inf
            for _ in range(5):
                t0 = time.perf_counter()
                quantile_band(n, 0.025, band=band)
                best = min(best, time.perf_counter() - t0)
            t[band] = best
        rows.append(f"| {n:,} | {t['dkw'] * 1e3:.2f} | {t['order'] * 1e3:.2f} | {t['order'] / t['dkw']:.1f} |")
    return rows


def table_rows() -> list[str]:
    rows = []
    f = np.array([[30, 70, 5], [5, 5, 0]])
    for eps in (0.1, 0.5, 1.0, 2.0):
        vt = float(cell_variance(2, eps))
        vp = float(cell_variance(2, eps, geometric_calibration="paper"))
        sim_t = subset_count_array(f, eps, size=20_000, rng=1)[:, 0, 0].var(ddof=1) / 2
        sim_p = subset_count_array(f, eps, size=20_000, rng=2, geometric_calibration="paper")[:, 0, 0].var(ddof=1) / 2
        rows.append(f"| {eps:g} | {vt:.4g} | {vp:.4g} | {vt / vp:.3f} | {sim_t:.4g} | {sim_p:.4g} |")
    return rows


def audit(eps: float, calibration: str, seed: int, runs: int = 20_000) -> float:
    mask = np.ones((2, 2), dtype=bool)

    def releases(f, s):
        draw = _exact_pair_draws(eps, BitSource.from_rng(s), calibration)
        return f + pair_noise(mask, geometric_alpha(eps, calibration), None, runs, draw)

    tp = int((releases(np.array([[30, 70], [12, 5]]), seed)[:, 0, 0] >= 30).sum())
    fp = int((releases(np.array([[29, 71], [12, 5]]), seed + 1)[:, 0, 0] >= 30).sum())
    return epsilon_lower_bound(tp, runs, fp, runs, alpha=1e-3).epsilon


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    load0 = os.getloadavg()
    lines = [
        "# Utility: tight count tables and the order-statistic W∞ band",
        "",
        f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d (%H:%M UTC)} with "
        f"`benchmarks/bench_utility.py --reps {args.reps}`, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, {os.cpu_count()}-core {cpu_name()} VM, load average before "
        f"{tuple(round(x, 2) for x in load0)}.",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_utility.py --reps {args.reps}`",
        "",
        "## 1. Count tables: cell variance of a two-category row (Var Z = 2α/(1 − α)²)",
        "",
        "Simulated: sample variance of a cell of a 3-category row over 20 000 runs, ÷ 2 (its two pairs).",
        "",
        "| ε | tight (α = e^−ε) | paper (α = e^−ε/2) | tight / paper | simulated tight | simulated paper |",
        "|---:|---:|---:|---:|---:|---:|",
        *table_rows(),
        "",
        "Audit of the exact release path (20 000 releases per neighbour, Clopper–Pearson α = 1e-3, "
        "event g(0,0) ≥ 30, true loss = ln(1/α_noise)):",
        "",
        "| noise | claimed ε | empirical ε lower bound |",
        "|---|---:|---:|",
        f"| tight at ε = 0.5 (today's noise at ε = 1) | 0.5 | {audit(0.5, 'tight', 31):.3f} |",
        f"| paper at ε = 1 (same law) | 1 (true loss 0.5) | {audit(1.0, 'paper', 33):.3f} |",
        f"| twin: claims 0.5, noise of ε = 1 (half the noise) | 0.5 | {audit(1.0, 'tight', 35):.3f} |",
        "",
        "## 2. W∞ / δ-trimmed W∞: bound ÷ exact value (median over reps; confidence 0.95, 2 secrets)",
        "",
        "| workload | δ | draws per secret | exact | DKW (old) | order (new) | DKW ÷ order |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *w_rows(args.sizes, args.reps),
        "",
        "Band construction time (best of 5, failure 0.025):",
        "",
        "| n | DKW (ms) | order (ms) | order ÷ DKW |",
        "|---:|---:|---:|---:|",
        *band_times(args.sizes),
        "",
        f"Load average after: {tuple(round(x, 2) for x in os.getloadavg())}.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
