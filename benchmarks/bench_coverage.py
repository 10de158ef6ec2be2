"""Coverage of the accountant's confidence statement, measured: repeated calibrations against laws whose true δ is known.

    .venv/bin/python benchmarks/bench_coverage.py [--runs 100] [--big-runs 30] [--out benchmarks/RESULTS_coverage.md]

For each law (``bayespriv.audit.coverage``), ``runs`` calibrations with independent seeds (``bp.calibrate`` on a
FunctionDataModel drawing the law), APGM with its default accountant at ε = 1, and the true δ(ε) of the noise
built, computed from the law with no code of ``bayespriv.mechanisms``. Reported: how many were established,
refused (and how many draws the refusals asked for), and failed (established, true δ above the request); the
largest true δ over the request; the half-noise twin's failures (the harness must flag it). The threshold is the
count a Binomial(runs, 0.05) exceeds with probability 1e-3.

Part 1 re-measures the settings of the independent coverage audit (their draws); part 2
gives every law the draws that let it be established (the long harness of ``tests/audit/test_coverage.py``);
part 3 the exact route of a hypergeometric count (no randomness: one evaluation per δ).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np

import bayespriv as bp
from bayespriv.audit.coverage import (
    CalibrationRuns,
    binomial_law,
    coverage_by_noise,
    failure_threshold,
    gaussian_2d_law,
    gaussian_mean_law,
    hypergeometric_law,
    rare_far_2d_law,
    rare_far_law,
    student_t_law,
)

ROOT = Path(__file__).resolve().parents[1]
FALSE_ALARM = 1e-3

#: The audit's settings: (law, draws per secret, δ).
AUDIT = [
    (gaussian_mean_law(), 2000, 1e-3),
    (hypergeometric_law(), 2000, 1e-3),
    (rare_far_law(2e-3, 31.0), 500, 1e-3),
    (rare_far_law(5e-3, 31.0), 500, 1e-3),
    (rare_far_law(1e-3, 31.0), 2000, 1e-3),
    (rare_far_law(5e-4, 60.0), 2000, 1e-5),
    (student_t_law(3.0), 2000, 1e-3),
]
#: Every law with draws that let it be established.
ESTABLISHED = [
    (gaussian_mean_law(), 20_000, 1e-3),
    (binomial_law(), 20_000, 1e-3),
    (hypergeometric_law(), 20_000, 1e-3),
    (rare_far_law(2e-3, 31.0), 10_000, 1e-3),
    (rare_far_law(5e-4, 60.0), 20_000, 1e-3),
    (rare_far_law(1e-3, 31.0), 20_000, 1e-3),
    (student_t_law(3.0), 20_000, 1e-3),
    (gaussian_2d_law(), 20_000, 1e-3),
    (rare_far_2d_law(2e-3), 10_000, 1e-3),
]
#: δ = 1e-5 at the draws its refusal asks for (each calibration ~10 s: fewer runs).
BIG = [
    (rare_far_law(2e-3, 31.0), 1_551_360, 1e-5),
    (rare_far_law(5e-4, 60.0), 1_551_360, 1e-5),
]


def row(law, n_draws: int, delta: float, runs: int, seed: int) -> str:
    t = time.perf_counter()
    r, twin, quarter = coverage_by_noise(law, n_draws=n_draws, delta=delta,
                                         calibrations=CalibrationRuns(runs=runs, seed=seed),
                                         noise_factors=(1.0, 0.5, 0.25))
    limit = failure_threshold(runs, 0.95, FALSE_ALARM)
    asked = sorted(set(r.draws_asked))
    asked_text = ", ".join(f"{a:,}" for a in asked[:3]) + (" …" if len(asked) > 3 else "") if asked else "–"
    verdict = "ok" if r.failures <= limit else "FLAGGED"
    if twin.established == 0:
        twin_verdict = "refused (nothing to flag)"
    else:
        twin_verdict = "flagged" if twin.failures > limit else "NOT FLAGGED"
    if twin.established and twin.failures <= limit:  # δ carried by a far region: half the variance hardly moves it
        twin_verdict += (f"; ¼ variance: {quarter.failures}/{quarter.established} "
                         f"{'flagged' if quarter.failures > limit else 'NOT FLAGGED'}")
    print(f"  {law.name}, {n_draws} draws, δ={delta:g}: {r.failures}/{runs} failures, {time.perf_counter() - t:.0f} s",
          flush=True)
    return (f"| {law.name} | {n_draws:,} | {delta:g} | {runs} | {r.established} | {r.refused} | {asked_text} | "
            f"{r.failures} ({r.failures / runs:.0%}) | {r.worst_ratio:.3g} | {limit} | {verdict} | "
            f"{twin.failures}/{twin.established} {twin_verdict} | {time.perf_counter() - t:.0f} |")


HEADER = ["| law of F (a vs b) | draws per secret | δ asked | calibrations | established | refused | draws the "
          "refusals ask for | failures (true δ > request) | worst true δ / request | threshold | verdict | "
          "half-noise twin: failures / established | s |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]


def exact_route() -> list[str]:
    """The hypergeometric count's exact route: the calibration holds the finite laws, δ is computed exactly."""
    law = hypergeometric_law()
    support = np.arange(101.0)
    from scipy import stats

    pa = stats.hypergeom.pmf(support, 1000, 400, 100)
    pb = stats.hypergeom.pmf(support, 1000, 300, 100)
    a, b = bp.DistributionSecret("secret", 0.0), bp.DistributionSecret("secret", 1.0)
    from bayespriv.calibration.laws import FiniteLaw

    cal = bp.Calibration.from_laws({a: FiniteLaw(support, pa), b: FiniteLaw(support, pb)}, bp.SecretPair(a, b),
                                   bp.mean("x"))
    lines = ["| δ asked | established | true δ (oracle) | true δ / request |", "|---|---|---|---|"]
    for delta in (1e-3, 1e-5, 1e-6):
        mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=delta)
        lo, hi = law.true_delta(np.atleast_2d(mech.noise_cov), 1.0)
        lines.append(f"| {delta:g} | {mech.guarantee.established} | [{lo:.4g}, {hi:.4g}] | {hi / delta:.4f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--big-runs", type=int, default=30)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_coverage.md")
    args = ap.parse_args()
    start = time.perf_counter()
    lines = ["# Coverage of the accountant's confidence statement, measured", "",
             f"`benchmarks/bench_coverage.py --runs {args.runs} --big-runs {args.big_runs}`, one run; APGM with its "
             f"default accountant at ε = 1, confidence 0.95; {platform.python_version()}, bayespriv "
             f"{bp.__version__}, 2 cores. A failure is an established guarantee whose true δ (the oracle's lower "
             "end) exceeds the request; a refusal is safe. Threshold: the failures a Binomial(runs, 0.05) exceeds "
             "with probability 1e-3.", ""]
    print("1. the audit's settings", flush=True)
    lines += ["## 1. The audit's settings (their draws)", "", *HEADER]
    lines += [row(law, n, d, args.runs, seed=1) for law, n, d in AUDIT]
    print("2. every law with the draws it needs", flush=True)
    lines += ["", "## 2. Every law with draws that let it be established", "", *HEADER]
    lines += [row(law, n, d, args.runs, seed=2) for law, n, d in ESTABLISHED]
    lines += [row(law, n, d, args.big_runs, seed=3) for law, n, d in BIG]
    print("3. the exact route", flush=True)
    lines += ["", "## 3. The exact route (hypergeometric count, finite laws held by the calibration)", "",
              *exact_route()]
    lines += ["", f"Whole run: {time.perf_counter() - start:.0f} s."]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
