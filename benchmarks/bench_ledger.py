"""Ledger-backed releases per second: one connection kept per Ledger vs one opened and closed per operation.

Run by hand (never as a timed test)::

    .venv/bin/python benchmarks/bench_ledger.py [--releases 300] [--releases-one-dataset 100] [--repeats 7] [--k 5] [--dir DIR] [--out FILE]

and writes ``benchmarks/RESULTS_ledger.md`` (``--out``).

Both paths run side by side in one process, on the same mechanism and the same kind of file:

* "per operation" is a ``Ledger`` whose ``_persistent`` flag is False: every operation opens a new
  SQLite connection (busy timeout, ``synchronous=FULL``, foreign keys), checks the file's identity
  and schema, and closes it — closing the last connection of a WAL database checkpoints the log
  into the file and deletes it. That is what every operation did before the ledger kept its
  connection.
* "kept" is ``Ledger`` as it is: one connection per object and process, the same checks per
  operation.

Each repetition times ``--releases`` (one dataset: ``--releases-one-dataset``) calls of
``APGM.release_value(answer, ledger=...)`` (k components, general covariance, ε = 1e-3, δ = 1e-9, budget far from exhausted) on a fresh ledger
file per path, the two paths in alternating order. Two workloads: a new dataset name per release
(no earlier release on its data, so joint accounting reads an empty history and the ledger's own
cost dominates) and one dataset for all (joint accounting of the growing history, the same for
both paths). The durability settings of both paths are read back with PRAGMA queries on the
connection each uses and printed; the rates are medians over the repetitions.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import bayespriv as bp
from bayespriv.ledger import Ledger
from bayespriv.mechanisms.apgm import APGM

PRAGMAS = ("journal_mode", "synchronous", "busy_timeout", "foreign_keys")


class PerOperationLedger(Ledger):
    """The ledger with a connection opened and closed per operation (for the comparison only)."""

    _persistent = False


def make_mechanism(k: int) -> APGM:
    """APGM (ε = 1e-3, δ = 1e-9) on a k-component query with a general covariance, protecting ``p``."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(k, k))
    cov = a @ a.T
    s1, s2 = bp.DistributionSecret("p", 0.3), bp.DistributionSecret("p", 0.7)
    query = bp.stack(*(bp.mean(f"x{i}") for i in range(k)))  # one query: its releases are accounted together
    cal = bp.Calibration.from_moments({s1: np.zeros(k), s2: np.full(k, 0.5)}, {s1: cov, s2: cov},
                                      [bp.SecretPair(s1, s2)], query=query, n_records=50)
    return APGM(cal, epsilon=1e-3, delta=1e-9)


def new_ledger(cls: type, folder: Path, name: str) -> Ledger:
    ledger = cls(folder / f"{name}.sqlite")
    ledger.set_budget("p", 1e6, 0.5)
    return ledger


def durability(ledger: Ledger) -> dict[str, object]:
    """The settings of the connection ``ledger`` uses for an operation, read back with PRAGMA."""
    with ledger._connect() as con:
        return {p: con.execute(f"PRAGMA {p}").fetchone()[0] for p in PRAGMAS}


def rate(mech: APGM, ledger: Ledger | None, n: int, unique: bool, tag: str) -> float:
    """Releases per second over ``n`` calls of ``release_value`` (wall clock)."""
    answer = np.zeros(mech.k)
    t0 = time.perf_counter()
    for i in range(n):
        mech.release_value(answer, ledger=ledger, dataset_name=f"{tag}-{i}" if unique else tag)
    return n / (time.perf_counter() - t0)


def compare(mech: APGM, folder: Path, n: int, repeats: int, unique: bool) -> dict[str, list[float]]:
    """Rates per path over ``repeats`` repetitions, fresh files each time, alternating which path runs first."""
    paths = {"per operation": PerOperationLedger, "kept": Ledger}
    out: dict[str, list[float]] = {name: [] for name in paths}
    for rep in range(repeats):
        order = list(paths) if rep % 2 == 0 else list(reversed(paths))
        for name in order:
            ledger = new_ledger(paths[name], folder, f"{'u' if unique else 'o'}{rep}-{name.replace(' ', '_')}")
            out[name].append(rate(mech, ledger, n, unique, f"rep{rep}"))
            ledger.verify()
            ledger.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--releases-one-dataset", type=int, default=100,
                    help="releases per repetition on one dataset (its joint accounting grows with the history)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None, help="where the ledger files go (default: a temporary folder)")
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("RESULTS_ledger.md"))
    args = ap.parse_args()
    lines = ["# Ledger-backed releases per second: connection kept vs opened and closed per operation", "",
             f"`python benchmarks/bench_ledger.py --releases {args.releases} --releases-one-dataset "
             f"{args.releases_one_dataset} --repeats {args.repeats} --k {args.k}`: "
             f"`APGM.release_value` (k = {args.k}, general covariance, ε = 1e-3, δ = 1e-9) with a ledger, "
             f"{args.repeats} repetitions per path, the two paths "
             "alternating in one process on fresh files; rates are medians over the repetitions. "
             "Written by the script.", ""]

    def say(line: str = "") -> None:
        print(line)
        lines.append(line)

    mech = make_mechanism(args.k)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        say(f"Ledger files in a temporary folder ({os.statvfs(folder).f_bsize}-byte blocks); load average before "
            f"{tuple(round(x, 2) for x in os.getloadavg())}.")
        say()
        say("Durability of the connection each path uses, read back with PRAGMA:")
        say()
        for cls in (PerOperationLedger, Ledger):
            led = new_ledger(cls, folder, f"pragma-{cls.__name__}")
            say(f"- `{cls.__name__}`: `{durability(led)}`")
            led.close()
        without = [rate(mech, None, 20 * args.releases, True, "none") for _ in range(3)]
        say()
        say(f"Without a ledger: median {statistics.median(without):,.0f} releases/s.")
        say()
        say("| workload | per operation (releases/s) | kept (releases/s) | kept / per operation |")
        say("|---|---:|---:|---:|")
        details = []
        for unique in (True, False):
            n = args.releases if unique else args.releases_one_dataset
            rates = compare(mech, folder, n, args.repeats, unique)
            old, new = (statistics.median(rates[p]) for p in ("per operation", "kept"))
            ratios = [b / a for a, b in zip(rates["per operation"], rates["kept"])]
            label = f"a new dataset per release ({n} releases)" if unique else f"one dataset ({n} releases)"
            say(f"| {label} | {old:,.0f} | {new:,.0f} | {new / old:.2f} (per repetition: median "
                f"{statistics.median(ratios):.2f}, range {min(ratios):.2f}–{max(ratios):.2f}) |")
            details.append(f"- {label}: " + "; ".join(f"{p}: {[round(r) for r in v]}" for p, v in rates.items()))
        say()
        say("Every rate (releases/s, in repetition order):")
        say()
        for line in details:
            say(line)
        say()
        say(f"Load average after: {tuple(round(x, 2) for x in os.getloadavg())}.")
    args.out.write_text("\n".join(lines) + "\n")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
