"""Ledger releases of one census statistic on the same data, and a privacy curve, timed with whichever bayespriv is
first on sys.path (for comparing commits).

    PYTHONPATH=<worktree of a commit> .venv/bin/python benchmarks/joint_rate_at.py

The first workload of bench_joint.py's section 4 known through draws: APGM at (1, 1e-3) on one census statistic
(20 000 draws per secret), 13 releases on one dataset of a fresh ledger, three ledgers; the 11th to 13th release of
each are timed (each is charged the increase of the joint ε of all the releases on the dataset). Then the mechanism's
``privacy_curve`` at 30 ε. Printed: the median ms per release, the curve's seconds, and a SHA-256 of every joint ε
charged and every δ of the curve (the same digest on two commits: the same charges and curve, bit for bit).
"""

from __future__ import annotations

import hashlib
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import bayespriv as bp
from bench_joint import census_setup

ADULT = Path(os.environ.get("BAYESPRIV_ADULT_DIR", Path(__file__).resolve().parents[2] / "shared" / "data" / "adult"))
LEDGERS, RELEASES, TIMED_FROM = 3, 13, 10


def main() -> None:
    _, _, _, mechs, data = census_setup(ADULT, 1e-3)
    mech, digest, took = mechs[0], hashlib.sha256(), []
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(LEDGERS):
            ledger = bp.Ledger(Path(tmp) / f"l{run}.sqlite")
            ledger.set_budget("income", 1e6, 0.5)
            for i in range(RELEASES):
                start = time.perf_counter()
                mech.release(data, ledger=ledger)
                if i >= TIMED_FROM:
                    took.append(time.perf_counter() - start)
            digest.update(np.array([r["income"]["epsilon"] for r in ledger.releases()["joint"]]).tobytes())
            ledger.close()
    start = time.perf_counter()
    curve = mech.privacy_curve(np.linspace(0.2, 3.0, 30))
    curve_s = time.perf_counter() - start
    digest.update(curve.tobytes())
    print(f"{bp.__file__}: {1000 * statistics.median(took):.1f} ms per release (median of {len(took)}), "
          f"privacy_curve at 30 ε {curve_s:.3f} s, sha256 {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
