"""Setting up the test environment from nothing: ``pip install -e .[test]`` beside ``uv pip install -e .[test]``.

    .venv/bin/python benchmarks/bench_setup.py [--rounds 2] [--out benchmarks/RESULTS_setup.md]

What ``make venv`` does twice in CI (Python 3.11 and the next Python), on a fresh machine: a new virtual
environment of this interpreter, pip upgraded, then the project with its test extras. Both installers start
cold (pip with ``--no-cache-dir``, uv with ``UV_NO_CACHE=1``): every wheel is downloaded, as on a new
machine. The rounds interleave the two (ratio per round); the uv time includes installing uv itself with
pip, and uv compiles the bytecode as pip does (``--compile-bytecode``: without it every interpreter of
the suite would compile the libraries it imports). Both environments must end with the same releases of every
package (checked, or the run fails).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["--quiet"]


def _sh(args: list[str], env: dict[str, str] | None = None) -> None:
    subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True)


def _fresh_venv(where: Path) -> Path:
    _sh([sys.executable, "-m", "venv", str(where)])
    py = where / "bin" / "python"
    _sh([str(py), "-m", "pip", "install", *QUIET, "--no-cache-dir", "--upgrade", "pip"])
    return py


def _with_pip(where: Path) -> Path:
    py = _fresh_venv(where)
    _sh([str(py), "-m", "pip", "install", *QUIET, "--no-cache-dir", "-e", ".[test]"])
    return py


def _with_uv(where: Path) -> Path:
    py = _fresh_venv(where)
    _sh([str(py), "-m", "pip", "install", *QUIET, "--no-cache-dir", "uv"])
    env = {**os.environ, "UV_NO_CACHE": "1"}
    _sh([str(py), "-m", "uv", "pip", "install", *QUIET, "--compile-bytecode", "--python", str(py), "-e", ".[test]"],
        env=env)
    return py


def _releases(py: Path) -> dict[str, str]:
    """name -> version of every installed distribution but the installers and the project itself."""
    code = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): "
            "d.version for d in m.distributions()}))")
    out = subprocess.run([str(py), "-c", code], check=True, capture_output=True, text=True).stdout
    import json

    return {k: v for k, v in json.loads(out).items() if k not in {"pip", "uv", "bayespriv"}}


def _timed(install, where: Path) -> tuple[float, dict[str, str]]:
    t = time.perf_counter()
    py = install(where)
    return time.perf_counter() - t, _releases(py)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "RESULTS_setup.md")
    args = parser.parse_args(argv)
    pip_s, uv_s = [], []
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            tp, pip_set = _timed(_with_pip, Path(tmp) / "pip")
            tu, uv_set = _timed(_with_uv, Path(tmp) / "uv")
        if pip_set != uv_set:
            differ = sorted(k for k in pip_set.keys() | uv_set.keys() if pip_set.get(k) != uv_set.get(k))
            raise SystemExit(f"pip and uv installed different releases: {differ}")
        pip_s.append(tp)
        uv_s.append(tu)
        print(f"round {r + 1}: pip {tp:.1f} s, uv {tu:.1f} s, {len(pip_set)} packages, same releases", flush=True)
    ratios = np.array(pip_s) / np.array(uv_s)
    rows = ["# Test environment set-up, measured", "",
            f"`benchmarks/bench_setup.py`, {args.rounds} interleaved rounds, Python "
            f"{sys.version.split()[0]}, cold downloads (no cache), 2-core machine.", "",
            "| installer | median s | range s |", "|---|---|---|",
            f"| `pip install -e .[test]` | {np.median(pip_s):.1f} | {min(pip_s):.1f}–{max(pip_s):.1f} |",
            f"| `pip install uv` + `uv pip install -e .[test]` | {np.median(uv_s):.1f} | {min(uv_s):.1f}–{max(uv_s):.1f} |",
            "", f"pip / uv: **{np.median(ratios):.1f}×** [{ratios.min():.1f}–{ratios.max():.1f}]; both environments "
            f"hold the same releases of the same {len(pip_set)} packages. `make venv` uses uv, and pip alone when uv "
            "cannot be installed (`INSTALLER=pip` forces it).", ""]
    args.out.write_text("\n".join(rows))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
