"""OptimalGaussian: former corner SDP vs the closed form / S-procedure SDP (issue 13, item 4).

Two workloads, old and new side by side in one run (same calibration, same solver, Clarabel):

1. sampled bounds (confidence 0.95, three secrets, three pairs, k = 2..12, 3000 draws per
   secret): old = one LMI per pair and per corner of the 2^k box (``_solve_sdp_corners``),
   new = one S-procedure LMI of size k + k + 1 per pair (``_solve_sdp``); plus the whole
   ``OptimalGaussian(...)`` construction with the new path (certification included);
2. one pair with exact moments (``Calibration.from_moments``), k = 10..50: old = the
   corner SDP (one LMI), new = the closed form (ddᵀ/r² − Σ)₊.

Reported: seconds (best of ``--repeat``) and traces; the new trace is never below the old
one beyond the solver's tolerance (it is a relaxation for boxes, the same optimum for one pair).
Old sampled runs above ``--old-max-k`` (default 10; k = 12 takes minutes) are skipped.

    .venv/bin/python benchmarks/bench_optimal.py [--old-max-k 10] [--repeat 1] [--no-write]

Appends a section to benchmarks/RESULTS_optimal.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayespriv as bp  # noqa: E402
from bayespriv.calibration import calibration_from_samples  # noqa: E402
from bayespriv.mechanisms import gaussian_radius  # noqa: E402
from bayespriv.mechanisms import optimal as opt  # noqa: E402

EPS, DELTA = 1.0, 1e-5
SECRETS = tuple(bp.DistributionSecret("phi", float(i)) for i in range(3))


def timed(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def sampled_calibration(k: int, seed: int) -> bp.Calibration:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, k))
    chol = np.linalg.cholesky(A @ A.T + 0.2 * np.eye(k))
    samples = np.stack([rng.standard_normal((3000, k)) @ chol.T + rng.normal(0, 0.5, k) for _ in SECRETS])
    return calibration_from_samples(samples, SECRETS, bp.all_pairs(SECRETS), None, confidence=0.95)


def exact_pair(k: int, seed: int) -> bp.Calibration:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, k)) / np.sqrt(k)
    cov = A @ A.T
    d = rng.standard_normal(k) * 3.0
    a, b = SECRETS[:2]
    return bp.Calibration.from_moments({a: d, b: np.zeros(k)}, {a: cov, b: cov}, bp.SecretPair(a, b))


def row(kind: str, k: int, cal: bp.Calibration, run_old: bool, repeat: int) -> str:
    cons, radius = cal.pair_constraints(), gaussian_radius(EPS, DELTA)
    t_new, (S_new, status) = timed(lambda: opt._solve_sdp(cons, radius, "CLARABEL"), repeat)
    t_mech, mech = timed(lambda: opt.OptimalGaussian(cal, epsilon=EPS, delta=DELTA, covariance="equal"), repeat)
    if run_old:
        t_old, (S_old, _) = timed(lambda: opt._solve_sdp_corners(cons, radius, "CLARABEL"), repeat)
        old = f"{t_old:.3f} | {np.trace(S_old):.6g}"
        ratio = f"{np.trace(S_new) / np.trace(S_old):.4f}"
    else:
        old, ratio = "skipped | –", "–"
    line = (f"| {kind} | {k} | {old} | {t_new:.3f} | {np.trace(S_new):.6g} | {ratio} | {t_mech:.3f} | "
            f"{mech.trace:.6g} ({mech.source}) |")
    print(line, flush=True)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-max-k", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    header = ["| workload | k | old s | old trace | new s | new trace | new/old trace | OptimalGaussian s "
              "| released trace (source) |",
              "|---|---|---|---|---|---|---|---|---|"]
    opt._solve_sdp_box(exact_pair(3, 0).pair_constraints(), gaussian_radius(EPS, DELTA), "CLARABEL")  # warm-up (imports)
    print("\n".join(header))
    lines = [row("sampled 0.95, 3 pairs", k, sampled_calibration(k, k), k <= args.old_max_k, args.repeat)
             for k in range(2, 13)]
    lines += [row("one pair, exact", k, exact_pair(k, k), True, args.repeat) for k in (10, 20, 30, 40, 50)]
    if args.no_write:
        return
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n## {stamp} — {platform.python_version()}, {os.cpu_count()} cores, ε={EPS}, δ={DELTA}, "
            f"repeat={args.repeat}\n\n" + "\n".join(header + lines) + "\n")
    with open(ROOT / "benchmarks" / "RESULTS_optimal.md", "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
