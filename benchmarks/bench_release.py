"""Release speed: floating-point-safe grid plans vs NumPy's float samplers (one run, one table).

Run by hand (never as a timed test)::

    .venv/bin/python benchmarks/bench_release.py [--releases 5000] [--k 5]

Each row is the best of ``--repeats`` timings of ``--releases`` releases of a k-component
answer. "float" is a float sampler (``sample_gaussian`` /
``sample_laplace`` from a NumPy Generator, added in float64); "grid" is
``plan.release(answer, bits)`` with bits from the OS CSPRNG (``BitSource.system()``).

The last row is a whole release, ``APGM.release_value(answer)`` without a ledger and without a
seed (fresh OS bits per release, as in production), k-component answer with a general
covariance; its "float" column is the same mechanism with the earlier float noise step
(``value + _draw_noise(gen)``, a subclass overriding ``_noisy``), so the ratio isolates the noise.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import bayespriv as bp
from bayespriv.mechanisms.apgm import APGM
from bayespriv.noise import BitSource, plan_gaussian, plan_laplace, sample_discrete_gaussian, sample_discrete_laplace
from bayespriv.noise.float_noise import sample_gaussian, sample_laplace


def best_rate(fn, n: int, repeats: int) -> float:
    """Largest calls/s over ``repeats`` runs of ``n`` calls (least disturbed by other load)."""
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = max(best, n / (time.perf_counter() - t0))
    return best


class FloatNoiseAPGM(APGM):
    """APGM with the earlier float noise step (NumPy float noise added in float64) (for the comparison only; leaks low bits)."""

    def _noisy(self, value: np.ndarray, rng) -> np.ndarray:
        return value + self._draw_noise(np.random.default_rng(rng))


def mechanism_pair(cov: np.ndarray) -> tuple[APGM, APGM]:
    """(grid, float) APGM with (ε, δ) = (1, 1e-5) whose F | secret has covariance ``cov``."""
    k = cov.shape[0]
    a, b = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    cal = bp.Calibration.from_moments({a: np.zeros(k), b: np.full(k, 0.5)}, {a: cov, b: cov}, [bp.SecretPair(a, b)],
                                      n_records=50)
    return APGM(cal, epsilon=1.0, delta=1e-5), FloatNoiseAPGM(cal, epsilon=1.0, delta=1e-5)


def floor_lines(mech: APGM, answer: np.ndarray, n: int, rep: int) -> str:
    """``release_value`` beside what a user writes by hand (``answer + L @ z``, NumPy floats) and beside
    its own sampling floor: the k exact discrete Gaussian draws of one release, and nothing else."""
    from bayespriv.noise.samplers import dgauss_with, gauss_constants

    chol = np.linalg.cholesky(mech.noise_cov)
    gen, bits = np.random.default_rng(), BitSource.for_release()
    units = mech.__dict__["_noise_plan"].sigma2_units
    constants = [gauss_constants(s2, 1) for s2 in units]  # what the plan computes once, at construction
    rates = {"release": best_rate(lambda: mech.release_value(answer), n, rep),
             "hand": best_rate(lambda: answer + chol @ gen.standard_normal(len(answer)), n, rep),
             "draws": best_rate(lambda: [dgauss_with(c, bits) for c in constants], n, rep)}
    return (f"\n| k = {len(answer)} | releases/s | `answer + L @ z` / it |\n|---|---:|---:|\n"
            f"| `answer + L @ z` (NumPy floats, by hand) | {rates['hand']:,.0f} | 1.0 |\n"
            f"| `APGM.release_value` (no ledger) | {rates['release']:,.0f} | {rates['hand'] / rates['release']:.1f} |\n"
            f"| its {len(units)} exact discrete Gaussian draws alone (σ² of {max(units).bit_length()} bits) | "
            f"{rates['draws']:,.0f} | {rates['hand'] / rates['draws']:.1f} |")


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
    grid_mech, float_mech = mechanism_pair(cov)
    rows.append((f"APGM.release_value, k = {k} (no ledger)", lambda: float_mech.release_value(answer),
                 lambda: grid_mech.release_value(answer)))
    print(f"k = {k}, {n} releases, best of {rep}; load average before: {os.getloadavg()}\n")
    print("| release | float (releases/s) | grid (releases/s) | float / grid |")
    print("|---|---:|---:|---:|")
    for name, flt, grid in rows:
        f, g = best_rate(flt, n, rep), best_rate(grid, n, rep)
        print(f"| {name} | {f:,.0f} | {g:,.0f} | {f / g:.1f} |")
    print(floor_lines(grid_mech, answer, n, rep))
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
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
