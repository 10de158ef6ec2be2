"""Releases on the same data, accounted together: what the ledger charges, measured.

    .venv/bin/python benchmarks/bench_joint.py [--adult-dir DIR] [--out benchmarks/RESULTS_joint.md]

Four sections, each from one run (``--only-timing``: section 4 alone, put in place of the file's):

1. The reproduction (mean(x) + mean(y), then mean(y), on one Gaussian dataset): what the summing ledger
   charged, what the joint ledger charges (default mechanisms), and the refusal of the papers' noiseless
   route; the likelihood-ratio attack on the accepted pair against the charged total.
2. Ten releases of one Gaussian query (exact moments) on the same data: charged vs summed.
3. The census study's five statistics (UCI Adult, 100-record subsets, income 0.45 vs 0.55) released one at
   a time on the same subset, each by APGM at (ε, δ) = (1, 2e-4), charged jointly; against the same five
   noises released as one 5-D query (one release, the same law), and against a plan of the five at once.
4. Timing: a ledger-backed release on a dataset with ten earlier releases, for Gaussian laws, draws in one
   dimension and draws in five (one query, or five queries in turn: a stacked calibration per release).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv.audit import accuracy_bound, sequence_attack

ROOT = Path(__file__).resolve().parents[1]


def reproduction(tmp: Path) -> list[str]:
    model = bp.GaussianDataModel([0, 0], [[1, 0], [0, 400]], ["x", "y"], n_records=50)
    pair = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
    qa = bp.Query(lambda b: (b["x"].mean(axis=1) + b["y"].mean(axis=1))[:, None], ["x", "y"], "x_plus_y",
                  output_names=["x_plus_y"])
    data = pd.DataFrame({c: v[0] for c, v in model.sample(None, 1, rng=7).items()})
    out = ["## 1. Two releases that reveal the secret together", ""]
    for route in ("gaussian", "auto"):
        ma = bp.mechanisms.APGM(bp.calibrate(model, pair, qa, n_draws=20_000, rng=1), epsilon=1.0, delta=1e-3,
                                accountant=route)
        mb = bp.mechanisms.APGM(bp.calibrate(model, pair, bp.mean("y"), n_draws=20_000, rng=2), epsilon=1.0,
                                delta=1e-3, accountant=route)
        led = bp.Ledger(tmp / f"repro-{route}.sqlite")
        led.set_budget("x", 20.0, 0.5)
        ma.release(data, ledger=led)
        t = time.perf_counter()
        try:
            mb.release(data, ledger=led)
            verdict = f"granted, joint ε charged {led.spent('x')[0]:.3f} at δ = {led.spent('x')[1]:g}"
        except bp.ledger.JointLeakError:
            verdict = "refused before any noise: the two together reveal the secret"
        took = time.perf_counter() - t
        summed = bp.Ledger(tmp / f"sum-{route}.sqlite")
        summed.set_budget("x", 20.0, 0.5)
        ma.release(data, ledger=summed)
        mb.release(data, ledger=summed, options=bp.ReleaseOptions(independent=True))
        res = sequence_attack([ma, mb], model, pair, claimed=summed.spent("x"), n_trials=2000, n_draws=2000, rng=5)
        out.append(f"* `accountant=\"{route}\"` (noise variances {float(ma.noise_cov[0, 0]):.4g}, "
                   f"{float(mb.noise_cov[0, 0]):.4g}): B after A — {verdict} ({took:.1f} s). Summed instead "
                   f"(declared independent, what the ledger did before): ε = {summed.spent('x')[0]:g}; the "
                   f"likelihood-ratio attack on the pair is right {res.accuracy:.3f} of the time, where "
                   f"ε = {summed.spent('x')[0]:g} allows {accuracy_bound(*summed.spent('x')):.3f}.")
    return out + [""]


def ten_releases(tmp: Path) -> list[str]:
    a, b = bp.DistributionSecret("m", 0.0), bp.DistributionSecret("m", 1.0)
    cal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: [[4.0]], b: [[4.0]]}, bp.SecretPair(a, b),
                                      query=bp.mean("v"), n_records=5)
    mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-4)
    led = bp.Ledger(tmp / "ten.sqlite")
    led.set_budget("m", 100.0, 0.5)
    t = time.perf_counter()
    for _ in range(10):
        mech.release_value([0.3], ledger=led, dataset_name="survey")
    took = time.perf_counter() - t
    joint = [j["m"]["epsilon"] for j in led.releases()["joint"]]
    return ["## 2. Ten releases of one Gaussian query on the same data", "",
            "F | a ~ N(0, 4), F | b ~ N(1, 4) (exact moments), APGM at (ε, δ) = (1, 1e-4) each "
            f"(noise variance {float(mech.noise_cov[0, 0]):.4g}). Joint ε after each release (at δ = m·1e-4): "
            + ", ".join(f"{e:.4f}" for e in joint) + f". Charged in all: **ε = {led.spent('m')[0]:.4f}** "
            f"(the largest joint ε reached) at δ = {led.spent('m')[1]:g}, against **10** summed. "
            f"Ten charges took {took:.2f} s.", ""]


def census_setup(adult_dir: Path, delta: float) -> tuple:
    """The census study's model, pair, five single-statistic queries, one APGM per statistic at (1, ``delta``)
    on 20 000 draws, and one 100-record subset."""
    from bayespriv.models.census import census_model, census_query, income_pairs, load_adult

    table = load_adult(adult_dir)
    model, query, pairs = census_model(table, 100), census_query(), income_pairs(0.1)
    names = list(query.component_names(5))
    singles = [bp.Query(lambda bt, j=j: query(bt)[:, j:j + 1], list(query.columns), names[j], output_names=[names[j]])
               for j in range(5)]
    mechs = [bp.mechanisms.APGM(bp.calibrate(model, pairs, q, n_draws=20_000, rng=10 + j), epsilon=1.0, delta=delta)
             for j, q in enumerate(singles)]
    data = pd.DataFrame({c: v[0] for c, v in model.sample(pairs.a, 1, rng=3).items()})
    return model, pairs, singles, mechs, data


def census(adult_dir: Path, tmp: Path) -> list[str]:
    model, pairs, singles, mechs, data = census_setup(adult_dir, 2e-4)
    led = bp.Ledger(tmp / "census.sqlite")
    led.set_budget("income", 100.0, 0.5)
    t = time.perf_counter()
    for m in mechs:
        m.release(data, ledger=led)
    took = time.perf_counter() - t
    seq = led.spent("income")
    records = [j["income"] for j in led.releases()["joint"]]
    joint_path = [r["epsilon"] for r in records]
    stacked = bp.stack(*singles)
    # Released together as one 5-D query (JointGaussian, the same five noises): on the stacked draws the ledger
    # drew for its last charge (the seed is on the row), and on three independent sets of draws — their spread is
    # the Monte-Carlo error of any estimate of the joint ε from 20 000 draws.
    same = bp.JointGaussian(mechs, bp.calibrate(model, pairs, stacked, n_draws=20_000, rng=records[-1]["seed"]))
    spread = [bp.JointGaussian(mechs, bp.calibrate(model, pairs, stacked, n_draws=20_000, rng=seed)).epsilon
              for seed in (20, 21, 22)]
    plan = bp.ledger.plan_releases(model, pairs, singles, epsilon=same.epsilon, delta=1e-3, n_draws=20_000,
                                       rng=21)
    err = lambda cov: float(np.sqrt(np.trace(np.asarray(cov))))  # noqa: E731
    seq_noise = err(same.noise_cov)
    return ["## 3. The census study's five statistics, one at a time or together", "",
            "Five APGM releases at (ε, δ) = (1, 2e-4) each, one per statistic, on the same 100-record subset:",
            "",
            f"* charged jointly by the ledger: **ε = {seq[0]:.3f}** at δ = {seq[1]:g} (joint ε after each release: "
            + ", ".join(f"{e:.3f}" for e in joint_path) + f"; {took:.1f} s for the five charges), against 5 summed;",
            f"* the same five noises released together as one 5-D query (`JointGaussian`), on the same stacked "
            f"draws as the ledger's last charge (its seed is on the row): **ε = {same.epsilon:.3f}** at δ = "
            f"{same.delta:g} — one at a time costs {'exactly' if abs(same.epsilon - seq[0]) <= 1e-6 else 'not'} what "
            f"the joint release costs; on three independent 20 000-draw stacked calibrations the same joint ε "
            f"reads {min(spread):.3f}–{max(spread):.3f} (the Monte-Carlo error of the estimate, whichever way the "
            "five are released);",
            f"* planned together (`plan_releases`, OptimalGaussian on the stacked query) at that ε: √tr(noise) "
            f"{err(plan.mechanism.noise_cov):.2f} against {seq_noise:.2f} for the five APGMs.", ""]


def _sequence(path: Path, mechs: list, release, n: int) -> tuple[list[float], list[float]]:
    """``n`` releases on one dataset (the mechanisms in turn): seconds per release, joint ε per row."""
    led = bp.Ledger(path)
    for budget in ("p", "income"):
        led.set_budget(budget, 1e6, 0.5)
    took = []
    for i in range(n):
        t = time.perf_counter()
        release(mechs[i % len(mechs)], led)
        took.append(time.perf_counter() - t)
    joint = [next(iter(j.values()))["epsilon"] for j in led.releases()["joint"]]
    led.close()
    return took, joint


def _workloads(adult_dir: Path) -> list[tuple[str, list, Any, int, int]]:
    """(label, mechanisms, release, sequences, releases per sequence): the last three releases of a sequence
    of 13 are timed when there is one sequence, the 11th of each when there are several."""
    from bench_ledger import make_mechanism

    out = [("Gaussian laws (exact moments, k = 5; `bench_ledger.py`'s mechanism)", [make_mechanism(5)],
            lambda m, led: m.release_value(np.zeros(5), ledger=led, dataset_name="one"), 7, 11)]
    if (adult_dir / "adult.data").exists():
        from bayespriv.models.census import census_query

        model, pairs, _, mechs, data = census_setup(adult_dir, 1e-3)
        five = bp.mechanisms.APGM(bp.calibrate(model, pairs, census_query(), n_draws=20_000, rng=10), epsilon=1.0,
                                  delta=1e-3)
        go = lambda m, led: m.release(data, ledger=led)  # noqa: E731
        out += [("census, one statistic (draws in one dimension), the same query each time", mechs[:1], go, 7, 11),
                ("census, the five statistics as one query (draws in five dimensions), the same query each time",
                 [five], go, 1, 13),
                ("census, the five statistics one at a time in turn (a stacked calibration per release)", mechs, go,
                 1, 13)]
    return out


def release_timing(adult_dir: Path, tmp: Path) -> list[str]:
    """A ledger-backed release on a dataset with ten (or more) earlier releases, per workload (medians)."""
    out = ["## 4. A release with ten earlier releases on the same dataset", "",
           "`python benchmarks/bench_joint.py --only-timing`. Each workload runs its sequences of releases on fresh "
           "ledgers; times are wall-clock per ledger-backed release with at least ten earlier releases on the dataset "
           "(APGM at ε = 1 and δ = 1e-3 for the census), medians. Load average before: "
           f"{tuple(round(x, 2) for x in os.getloadavg())}.", "",
           "| workload | ms per release (median) | releases timed |", "|---|---:|---:|"]
    for label, mechs, release, runs, n in _workloads(adult_dir):
        took: list[float] = []
        for run in range(runs):
            took += _sequence(tmp / f"t{len(out)}-{run}.sqlite", mechs, release, n)[0][10:]
        out.append(f"| {label} | {1000 * statistics.median(took):,.1f} | {len(took)} |")
    return out + ["", f"Load average after: {tuple(round(x, 2) for x in os.getloadavg())}.", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adult-dir", type=Path, default=Path(os.environ.get(
        "BAYESPRIV_ADULT_DIR", ROOT.parent / "shared" / "data" / "adult")))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_joint.md")
    parser.add_argument("--only-timing", action="store_true",
                        help="run section 4 only and put it in place of the file's section 4")
    args = parser.parse_args()
    if args.only_timing:
        with tempfile.TemporaryDirectory() as d:
            lines = release_timing(args.adult_dir, Path(d))
        kept = args.out.read_text().split("\n## 4.")[0].rstrip("\n") if args.out.exists() else ""
        args.out.write_text(kept + "\n\n" + "\n".join(lines))
        print("\n".join(lines))
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        lines = ["# Releases on the same data, accounted together", "",
                 "Measured by `benchmarks/bench_joint.py` (one run; figures, not timings, except where said).", ""]
        lines += reproduction(tmp) + ten_releases(tmp)
        if (args.adult_dir / "adult.data").exists():
            lines += census(args.adult_dir, tmp)
        else:
            lines += ["## 3. Census", "", f"Skipped: UCI Adult data not found in {args.adult_dir}.", ""]
        lines += release_timing(args.adult_dir, tmp)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
