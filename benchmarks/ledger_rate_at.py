"""Ledger-backed APGM.release_value per second of whichever bayespriv is first on sys.path (for comparing commits).

    PYTHONPATH=<worktree of a commit> .venv/bin/python benchmarks/ledger_rate_at.py

Same mechanism as bench_ledger.py (k = 5, general covariance, ε = 1e-3, δ = 1e-9), 300 releases on a fresh
ledger, a new dataset name per release where the code takes one; five repetitions, median.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import bayespriv as bp
from bayespriv.mechanisms.apgm import APGM

K, RELEASES, REPEATS = 5, 300, 5


def mechanism() -> APGM:
    a = np.random.default_rng(0).normal(size=(K, K))
    cov = a @ a.T
    s1, s2 = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    query = bp.stack(*(bp.mean(f"x{i}") for i in range(K)))
    cal = bp.Calibration.from_moments({s1: np.zeros(K), s2: np.full(K, 0.5)}, {s1: cov, s2: cov},
                                      [bp.SecretPair(s1, s2)], query=query, n_records=50)
    return APGM(cal, epsilon=1e-3, delta=1e-9)


def rate(mech: APGM, rep: int) -> float:
    ledger = bp.Ledger(Path(tempfile.mkdtemp()) / "ledger.sqlite")
    ledger.set_budget("p", 1e6, 0.5)
    answer = np.zeros(K)
    t = time.perf_counter()
    for i in range(RELEASES):
        try:
            mech.release_value(answer, ledger=ledger, dataset_name=f"r{rep}-{i}")
        except TypeError:  # code from before release_value took a dataset name
            mech.release_value(answer, ledger=ledger)
    return RELEASES / (time.perf_counter() - t)


def main() -> None:
    mech = mechanism()
    rates = [rate(mech, rep) for rep in range(REPEATS)]
    print(f"bayespriv from {bp.__file__}")
    print("releases/s", [round(r) for r in rates], "median", round(statistics.median(rates)))


if __name__ == "__main__":
    main()
