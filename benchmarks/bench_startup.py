"""Start-up: `import bayespriv` and `bayespriv --help` beside `import numpy, scipy.stats, pandas`.

    .venv/bin/python benchmarks/bench_startup.py [--runs 9] [--out benchmarks/RESULTS_startup.md]

Each command runs in a fresh interpreter, interleaved with the baseline (ratio per round, median and range
over the rounds), after one warm-up run of each that writes the bytecode caches (as an installed package
has them; PYTHONDONTWRITEBYTECODE is unset for the runs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "import numpy, scipy.stats, pandas"
COMMANDS = {
    "import bayespriv": "import bayespriv",
    "bayespriv --help": "from bayespriv.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
}


def _run(code: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_startup.md")
    args = parser.parse_args(argv)
    for code in (BASELINE, *COMMANDS.values()):
        _run(code)  # warm-up: bytecode caches
    rows = ["# Start-up, measured", "", f"`benchmarks/bench_startup.py`, {args.runs} interleaved rounds, fresh "
            "interpreter per run (bytecode cached), 2-core machine shared with other jobs.", "",
            f"| command | median s | baseline `{BASELINE}` median s | ratio median [range] |", "|---|---|---|---|"]
    for label, code in COMMANDS.items():
        ours, base = [], []
        for _ in range(args.runs):
            ours.append(_run(code))
            base.append(_run(BASELINE))
        ratios = np.array(ours) / np.array(base)
        rows.append(f"| `{label}` | {np.median(ours):.3f} | {np.median(base):.3f} | **{np.median(ratios):.2f}×** "
                    f"[{ratios.min():.2f}–{ratios.max():.2f}] |")
        print(rows[-1], flush=True)
    rows += ["", "networkx, xarray, matplotlib, cvxpy, scipy.signal and the PyMC/pgmpy stack are imported where "
             "they are first used (tests/test_packaging.py checks that neither command imports them).", ""]
    args.out.write_text("\n".join(rows))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
