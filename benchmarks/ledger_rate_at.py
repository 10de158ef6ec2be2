"""Ledger-backed APGM.release_value per second of whichever bayespriv is first on sys.path (for comparing commits).

    PYTHONPATH=<worktree of a commit> .venv/bin/python benchmarks/ledger_rate_at.py

Same mechanism as bench_ledger.py (k = 5, general covariance, ε = 1e-3, δ = 1e-9), 300 releases on a fresh
ledger, a new dataset name per release where the code takes one; five repetitions, median.
"""
import sys, time, tempfile, statistics
from pathlib import Path
import numpy as np
import bayespriv as bp
print(bp.__file__)
from bayespriv.mechanisms.apgm import APGM
k = 5
rng = np.random.default_rng(0); a = rng.normal(size=(k, k)); cov = a @ a.T
s1, s2 = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
query = bp.stack(*(bp.mean(f"x{i}") for i in range(k)))
cal = bp.Calibration.from_moments({s1: np.zeros(k), s2: np.full(k, 0.5)}, {s1: cov, s2: cov}, [bp.SecretPair(s1, s2)], query=query, n_records=50)
mech = APGM(cal, epsilon=1e-3, delta=1e-9)
ans = np.zeros(k)
rates = []
for rep in range(5):
    led = bp.Ledger(Path(tempfile.mkdtemp()) / "l.sqlite"); led.set_budget("p", 1e6, 0.5)
    t = time.perf_counter()
    for i in range(300):
        try:
            mech.release_value(ans, ledger=led, dataset=f"r{rep}-{i}")
        except TypeError:
            mech.release_value(ans, ledger=led)
    rates.append(300 / (time.perf_counter() - t))
print("rates", [round(r) for r in rates], "median", round(statistics.median(rates)))
