"""OptimalGaussian: former corner SDP vs the closed form / S-procedure SDP.

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

3. beyond 12 uncertain components (no 2^k corners anywhere), k = 20, 30, 50:
   the constructors of OptimalGaussian, EigM and DauM (``covariance="equal"``) on (a) the sampled
   three-pair workload above (ε = 1; DauM does not apply there: the box's part orthogonal to v
   exceeds r*) and (b) one pair whose means differ along e1 (60,000 draws, ε = 4; DauM applies).
   The calibration's assumption checks (cached per calibration, ``check_assumptions``) are run
   once before timing and reported apart: at k = 50 with 60,000 draws the equal-covariance test
   of every covariance entry dominates everything else.

4. beyond 12 uncertain components, the SDP alone (three sampled pairs): the former cvxpy + Clarabel
   path against the structured interior point (``_solve_structured``) on the same program, side by
   side (the former run best of ``max(1, repeat // 3)``).

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
from bayespriv.calibration import calibration_from_samples, check_assumptions  # noqa: E402
from bayespriv.privacy import gaussian_radius  # noqa: E402
from bayespriv.mechanisms import optimal as opt  # noqa: E402
from bayespriv.mechanisms.expected_value import DauM, EigM  # noqa: E402

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


def along_e1(k: int, seed: int, n: int = 60000) -> bp.Calibration:
    """One pair, means 3·e1 apart, covariance I + AAᵀ (A small), sampled 0.95 bounds."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, k)) * 0.3
    chol = np.linalg.cholesky(np.eye(k) + A @ A.T)
    shift = np.zeros(k)
    shift[0] = 3.0
    samples = np.stack([rng.standard_normal((n, k)) @ chol.T + i * shift for i in range(2)])
    return calibration_from_samples(samples, SECRETS[:2], [bp.SecretPair(*SECRETS[:2])], None, confidence=0.95)


def large_row(kind: str, k: int, cal: bp.Calibration, eps: float, repeat: int) -> str:
    """Constructor seconds (best of ``repeat``) and traces of the three mechanisms, k > 12."""
    t_check, _ = timed(lambda: check_assumptions(cal, ("gaussian_query", "equal_covariance")), 1)
    cells = []
    for cls in (opt.OptimalGaussian, EigM, DauM):
        try:
            t, mech = timed(lambda: cls(cal, epsilon=eps, delta=DELTA, covariance="equal"), repeat)
            extra = f" ({mech.source})" if cls is opt.OptimalGaussian else ""
            cells.append(f"{t:.2f} | {np.trace(mech.noise_cov):.6g}{extra}")
        except bp.ValidationError as exc:
            cells.append(f"– | refused ({str(exc).split(';')[0][:40]}…)")
    line = (f"| {kind} | {k} | {cal.pair_constraints().uncertain_dims} | {eps:g} | {t_check:.2f} | "
            + " | ".join(cells) + " |")
    print(line, flush=True)
    return line


def sdp_row(k: int, cal: bp.Calibration, repeat: int) -> str:
    """k > 12: the SDP alone, cvxpy + Clarabel (the former path, forced by making the structured
    interior point report a failure) vs the structured interior point, side by side."""
    cons, radius = cal.pair_constraints(), gaussian_radius(EPS, DELTA)
    t_new, (S_new, st_new) = timed(lambda: opt._solve_sdp(cons, radius, "CLARABEL"), repeat)
    structured = opt._solve_structured
    opt._solve_structured = lambda *a, **kw: (None, "forced off")
    try:
        t_old, (S_old, st_old) = timed(lambda: opt._solve_sdp(cons, radius, "CLARABEL"), max(1, repeat // 3))
    finally:
        opt._solve_structured = structured
    tr_new, tr_old = np.trace(S_new), np.trace(S_old)
    line = (f"| {k} | {t_old:.2f} | {tr_old:.10g} | {t_new:.2f} | {tr_new:.10g} | {tr_new / tr_old - 1:+.2e} | "
            f"{t_old / t_new:.1f} | {st_new} |")
    print(line, flush=True)
    return line


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
    parser.add_argument("--large-k", type=int, nargs="*", default=[20, 30, 50])
    parser.add_argument("--skip-small", action="store_true", help="only the k > 12 table")
    parser.add_argument("--no-sdp-compare", action="store_true",
                        help="skip the k > 12 SDP table (cvxpy + Clarabel vs structured interior point)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    header = ["| workload | k | old s | old trace | new s | new trace | new/old trace | OptimalGaussian s "
              "| released trace (source) |",
              "|---|---|---|---|---|---|---|---|---|"]
    opt._solve_sdp_box(exact_pair(3, 0).pair_constraints(), gaussian_radius(EPS, DELTA), "CLARABEL")  # warm-up (imports)
    print("\n".join(header))
    lines = [] if args.skip_small else [
        row("sampled 0.95, 3 pairs", k, sampled_calibration(k, k), k <= args.old_max_k, args.repeat) for k in range(2, 13)]
    if not args.skip_small:
        lines += [row("one pair, exact", k, exact_pair(k, k), True, args.repeat) for k in (10, 20, 30, 40, 50)]
    large_header = ["| workload | k | uncertain | ε | assumption checks s | OptimalGaussian s | trace (source) "
                    "| EigM s | trace | DauM s | trace |",
                    "|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(large_header))
    large = [large_row("sampled 0.95, 3 pairs", k, sampled_calibration(k, k), EPS, args.repeat) for k in args.large_k]
    large += [large_row("sampled 0.95, 1 pair along e1", k, along_e1(k, k), 4.0, args.repeat) for k in args.large_k]
    sdp_header = ["| k (sampled, 3 pairs) | cvxpy+Clarabel s | trace | structured IPM s | trace | rel. diff | speed-up "
                  "| status |", "|---|---|---|---|---|---|---|---|"]
    print("\n".join(sdp_header))
    sdp = [] if args.no_sdp_compare else [sdp_row(k, sampled_calibration(k, k), args.repeat) for k in args.large_k]
    if args.no_write:
        return
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"\n## {stamp} — {platform.python_version()}, {os.cpu_count()} cores, ε={EPS}, δ={DELTA}, "
            f"repeat={args.repeat}\n\n`{' '.join(sys.argv)}`\n\n" + "\n".join(header + lines) + "\n\n"
            + "\n".join(large_header + large) + "\n\n" + "\n".join(sdp_header + sdp) + "\n")
    with open(ROOT / "benchmarks" / "RESULTS_optimal.md", "a", encoding="utf-8") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
