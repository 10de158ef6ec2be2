"""``APGM.release_value`` per second (no ledger) of whichever bayespriv is first on sys.path (for comparing commits).

    PYTHONPATH=<worktree of a commit> .venv/bin/python benchmarks/release_rate_at.py

The mechanism of bench_release.py's last rows (k = 5, general covariance, ε = 1, δ = 1e-5, fresh OS bits):
5 × 5000 releases, the best rate printed (the least disturbed by other load).
"""

from __future__ import annotations

import time

import numpy as np

import bayespriv as bp
from bayespriv.mechanisms.apgm import APGM

K, RELEASES, REPEATS = 5, 5000, 5


def main() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(K, K))
    cov = a @ a.T
    answer = rng.normal(size=K) * 30.0
    s1, s2 = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    cal = bp.Calibration.from_moments({s1: np.zeros(K), s2: np.full(K, 0.5)}, {s1: cov, s2: cov},
                                      [bp.SecretPair(s1, s2)], n_records=50)
    mech = APGM(cal, epsilon=1.0, delta=1e-5)
    best = 0.0
    for _ in range(REPEATS):
        start = time.perf_counter()
        for _ in range(RELEASES):
            mech.release_value(answer)
        best = max(best, RELEASES / (time.perf_counter() - start))
    print(f"{best:.0f}")


if __name__ == "__main__":
    main()
