"""GaussianDataModel sampling at 10⁶ records: the 3-D batched product it used vs the 2-D blocked product it uses.

Run by hand (never as a timed test)::

    .venv/bin/python benchmarks/bench_gaussian_model.py [--repeats 7] [--records 1000000] [--out benchmarks/RESULTS_gaussian_model.md]

Two samplers of the same law, side by side in one run, on the same model, seed and secret:

* **old**: what ``GaussianDataModel._sample`` did — Z of shape ``(n_draws, n_records, m)``
  drawn at once, ``X = μ + Z @ Lᵀ`` (a 3-D batched matmul: one tiny ``(n_records, m) @ (m, m)``
  product per dataset, each one BLAS call large enough for OpenBLAS's thread pool), the mean
  shift on the strided column,
  and the columns returned as strided views of X;
* **new**: ``GaussianDataModel.sample`` — Z drawn in the same order in blocks of records into one
  reused buffer, one 2-D BLAS product ``L_rows @ Z_blockᵀ`` per block (blocks small enough for
  OpenBLAS to stay on the calling thread) written straight into a column-major output (each column contiguous) and μ
  added while the block is in cache, only the requested columns (and the secret's) computed.

Each case is timed interleaved (old, new and the normals alone, in rotating order) and the best of
``--repeats`` is reported, with the median; peak traced memory (``tracemalloc``: NumPy's
buffers) of one call of each is measured apart. Everything is measured twice: as the machine is,
then with one core kept busy by a spinning process the benchmark starts (and stops), the
condition of a shared machine reproduced on purpose. The last column, old ÷ normals alone, is
the largest speed-up any sampler of the same numbers can reach: it must draw the same standard
normals from the same generator, and that alone takes the "normals alone" time. The numbers the two return agree to
floating-point rounding (checked here on every case, as in ``tests/datamodels/test_gaussian.py``).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import bayespriv as bp  # noqa: E402
from bayespriv.datamodels import gaussian  # noqa: E402


def old_sample(model: bp.GaussianDataModel, secret, n_draws: int, rng: np.random.Generator, columns):
    """The sampler as it was (see the module docstring)."""
    z = rng.standard_normal((n_draws, model.n_records, len(model.columns)))
    x = model.mean + z @ model._factor.T
    if secret is not None:
        i = model.columns.index(secret.column)
        shift = secret.value - x[:, :, i].mean(axis=1)
        x += shift[:, None, None] * (model.cov[:, i] / model.cov[i, i])
    return {c: x[:, :, model.columns.index(c)] for c in columns}


def new_sample(model, secret, n_draws, rng, columns):
    return model.sample(secret, n_draws, rng, columns=columns)


def covariance(m: int) -> np.ndarray:
    a = np.random.default_rng(m).normal(size=(m, m))
    return a @ a.T + 0.5 * np.eye(m)


def peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del out
    return peak / 2**20


def floor_sample(model, secret, n_draws, rng, columns):
    """The standard normals alone (what both samplers must draw, the same stream): the floor."""
    return rng.standard_normal((n_draws, model.n_records, len(model.columns)))


def measure(cases, n: int, repeats: int) -> list[tuple]:
    rows = []
    for m, draws, with_secret, read in cases:
        names = [f"c{i}" for i in range(m)]
        model = bp.GaussianDataModel(np.arange(float(m)), covariance(m), names, n)
        secret = bp.DatasetSecret.mean("c0", 0.5) if with_secret else None
        columns = names if read == "all" else ["c1"]
        a = old_sample(model, secret, draws, np.random.default_rng(1), columns)
        b = new_sample(model, secret, draws, np.random.default_rng(1), columns)
        err = max(float(np.max(np.abs(a[c] - b[c]) / (1.0 + np.abs(a[c])))) for c in columns)
        assert err < 1e-12, err
        del a, b
        fns = {"old": old_sample, "new": new_sample, "floor": floor_sample}
        times: dict[str, list[float]] = {name: [] for name in fns}
        order = list(fns)
        for r in range(repeats):
            for name in order[r % 3:] + order[:r % 3]:  # each first, second and third in turn
                t0 = time.perf_counter()
                out = fns[name](model, secret, draws, np.random.default_rng(r), columns)
                times[name].append(time.perf_counter() - t0)
                del out
        peaks = {name: peak_mib(lambda f=fns[name]: f(model, secret, draws, np.random.default_rng(0), columns))
                 for name in ("old", "new")}
        best = {k: min(v) for k, v in times.items()}
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((m, draws, with_secret, read, best, med, peaks, err))
        print(f"  m={m} draws={draws} secret={with_secret} read={read}: best old {best['old']:.3f} s, new "
              f"{best['new']:.3f} s ({best['old'] / best['new']:.1f}x), floor {best['floor']:.3f} s (bound {best['old'] / best['floor']:.1f}x); median "
              f"{med['old']:.3f} vs {med['new']:.3f} ({med['old'] / med['new']:.1f}x); peak {peaks['old']:.0f} vs "
              f"{peaks['new']:.0f} MiB; max rel. difference {err:.1e}", flush=True)
    return rows


def table(rows) -> list[str]:
    lines = [
        "| columns | datasets | mean secret | columns read | old best (s) | new best (s) | speed-up (best) "
        "| old median (s) | new median (s) | speed-up (median) | normals alone, best (s) | old peak (MiB) "
        "| new peak (MiB) | max rel. diff. | bound: old ÷ normals alone (best) |",
        "| ---: | ---: | :---: | :---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m, draws, with_secret, read, best, med, peaks, err in rows:
        lines.append(
            f"| {m} | {draws} | {'yes' if with_secret else 'no'} | {read} | {best['old']:.3f} | {best['new']:.3f} | "
            f"**{best['old'] / best['new']:.1f}×** | {med['old']:.3f} | {med['new']:.3f} | "
            f"**{med['old'] / med['new']:.1f}×** | {best['floor']:.3f} | {peaks['old']:.0f} | {peaks['new']:.0f} | "
            f"{err:.0e} | {best['old'] / best['floor']:.1f}× |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_gaussian_model.md")
    args = parser.parse_args()
    n = args.records
    cases = [  # (columns m, datasets, mean secret?, columns read)
        (3, 8, False, "all"),
        (3, 8, True, "all"),
        (5, 4, True, "all"),
        (5, 4, True, "one"),
    ]
    print("as the machine is:", flush=True)
    as_is = measure(cases, n, args.repeats)
    print("with one core kept busy by a spinning process of this benchmark:", flush=True)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = measure(cases, n, args.repeats)
    finally:
        spinner.terminate()
        spinner.wait()

    lines = [
        "# GaussianDataModel sampling: 3-D batched product (old) vs 2-D blocked product (new)",
        "",
        f"`benchmarks/bench_gaussian_model.py`, {n:,} records per dataset, {args.repeats} interleaved calls of "
        f"each sampler per case (rotating order), {platform.machine()}, Python {platform.python_version()}, "
        f"NumPy {np.__version__} (OpenBLAS), 2 cores shared with other work. Peak = traced NumPy memory of one "
        "call. Same seed, same numbers (largest relative difference in the last column). \"normals alone\" "
        "is drawing the standard normals both samplers need (the same stream), the floor of either.",
        "",
        "## As the machine is (other engineers' jobs may be running)",
        "",
        *table(as_is),
        "",
        "## One core kept busy (a spinning process started by the benchmark)",
        "",
        *table(busy),
        "",
        "Reading. The old sampler's cost beyond the normals is the 3-D batched product (a multi-threaded "
        "BLAS call per dataset, whose thread pool waits for a free core when the machine is busy) and three "
        "full-size arrays (Z, Z Lᵀ and μ + Z Lᵀ, each freshly page-faulted). The new one makes the small "
        "product per block of records by one-thread BLAS from a reused buffer and writes the output "
        "once, so it stays within a small margin of drawing the normals alone, busy machine or not. That floor "
        "caps the speed-up on an idle machine (drawing the normals is most of the new sampler's time, and "
        "cannot change without changing the numbers a seed gives); once another process holds a core, the "
        "usual state of this shared machine, the old sampler's BLAS calls stall and the gap opens. The last "
        "column bounds the speed-up of any sampler giving the same numbers for the same seed: where it is "
        "below 2×, a 2× speed-up over the old sampler is out of reach without changing the stream of normals.",
        "",
        f"The new sampler's memory is the returned columns plus one block of at most `BLOCK_ELEMENTS` = "
        f"{gaussian.BLOCK_ELEMENTS:,} standard normals (whole records); only the requested columns and the "
        "secret's are computed.",
        "",
    ]
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
