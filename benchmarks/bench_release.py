"""Release speed: floating-point-safe grid plans vs NumPy's float samplers (one run, one table).

Run by hand (never as a timed test)::

    .venv/bin/python benchmarks/bench_release.py [--releases 5000] [--k 5]

Each row is the best of ``--repeats`` timings of ``--releases`` releases of a k-component
answer. "float" is what ``Mechanism._draw_noise`` did before issue 11 (``sample_gaussian`` /
``sample_laplace`` from a NumPy Generator, added in float64); "grid" is
``plan.release(answer, bits)`` with bits from the OS CSPRNG (``BitSource.system()``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bayespriv.mechanisms.exact_noise import (
    BitSource,
    plan_gaussian,
    plan_laplace,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from bayespriv.mechanisms.noise import sample_gaussian, sample_laplace


def best_rate(fn, n: int, repeats: int) -> float:
    """Largest calls/s over ``repeats`` runs of ``n`` calls (least disturbed by other load)."""
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = max(best, n / (time.perf_counter() - t0))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    k, n, rep = args.k, args.releases, args.repeats
    rng = np.random.default_rng(0)
    a = rng.normal(size=(k, k))
    cov = a @ a.T
    scale, basis = np.full(k, 2.0), np.eye(k)
    answer = rng.normal(size=k) * 30.0
    gen, bits = np.random.default_rng(), BitSource.system()
    gplan, lplan = plan_gaussian(cov), plan_laplace(scale, basis)
    giso = plan_gaussian(np.eye(k) * 4.0)
    rows = [
        ("Gaussian, general cov", lambda: answer + sample_gaussian(cov, gen), lambda: gplan.release(answer, bits)),
        ("Gaussian, isotropic", lambda: answer + sample_gaussian(np.eye(k) * 4.0, gen), lambda: giso.release(answer, bits)),
        ("Laplace, axis basis", lambda: answer + sample_laplace(scale, basis, gen), lambda: lplan.release(answer, bits)),
    ]
    print(f"k = {k}, {n} releases, best of {rep}\n")
    print("| release | float (releases/s) | grid (releases/s) | float / grid |")
    print("|---|---:|---:|---:|")
    for name, flt, grid in rows:
        f, g = best_rate(flt, n, rep), best_rate(grid, n, rep)
        print(f"| {name} | {f:,.0f} | {g:,.0f} | {f / g:.1f} |")
    m = 20_000
    print("\n| exact sampler (grid-plan sizes) | draws/s |")
    print("|---|---:|")
    for name, fn in [
        ("discrete Laplace, t = 2^60", lambda: sample_discrete_laplace(2**60, m, bits)),
        ("discrete Gaussian, σ² = 2^120", lambda: sample_discrete_gaussian(2**120, m, bits)),
        ("discrete Laplace, t = 3", lambda: sample_discrete_laplace(3, m, bits)),
        ("discrete Gaussian, σ² = 9", lambda: sample_discrete_gaussian(9, m, bits)),
    ]:
        print(f"| {name} | {best_rate(fn, 1, rep) * m:,.0f} |")


if __name__ == "__main__":
    main()
