"""Markov quilt search (candidate mode) + exact max-influence on a random 50-node network.

Workload: a random sparse DAG of 50 nodes (each node j > 0 draws 1–2 parents
among the earlier nodes), every node a binary parameter with Dirichlet(1, 1)
CPD columns, as a pgmpy ``DiscreteBayesianNetwork``. For **every** node:

1. ``markov_quilts(network, node, exhaustive=False)`` — the candidate search
   (Markov blanket, moral / skeleton layers, minimal d-separators; every
   candidate validated with ``networkx.is_d_separator``);
2. the exact max-influence e(X_Q | X_i) of every candidate quilt whose joint
   table P(φ_Q, φ_i) has at most ``--max-states`` states (default 2^16, the
   default of ``calibrate_quilts``; one variable-elimination joint query per
   quilt). Larger quilts (whole breadth-first layers of 20+ nodes) are
   skipped, as ``calibrate_quilts`` skips them.

Target: under 10 s in total. Run by hand (never as a timed unit test)::

    .venv/bin/python benchmarks/bench_quilts.py [--nodes 50] [--seed 0] [--max-states 65536] [--no-write]

Appends a section to benchmarks/RESULTS_quilts.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

warnings.filterwarnings("ignore", category=FutureWarning, module="pgmpy")

from bayespriv.calibration.influence import InfluenceEngine  # noqa: E402
from bayespriv.calibration.quilts import markov_quilts  # noqa: E402

RESULTS = ROOT / "benchmarks" / "RESULTS_quilts.md"


def random_network(n_nodes: int, seed: int):
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    rng = np.random.default_rng(seed)
    names = [f"v{i:02d}" for i in range(n_nodes)]
    edges = []
    for j in range(1, n_nodes):
        k = int(rng.integers(1, 3))
        for p in rng.choice(j, size=min(k, j), replace=False):
            edges.append((names[int(p)], names[j]))
    bn = DiscreteBayesianNetwork(edges)
    bn.add_nodes_from(names)
    for v in names:
        parents = sorted(bn.get_parents(v))
        cols = rng.dirichlet([1.0, 1.0], size=2 ** len(parents)).T
        bn.add_cpds(TabularCPD(v, 2, cols, evidence=parents or None, evidence_card=[2] * len(parents) or None))
    bn.check_model()
    return bn


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-states", type=int, default=2**16,
                    help="skip quilts whose joint table P(φ_Q, φ_i) is larger (as calibrate_quilts does)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    bn = random_network(args.nodes, args.seed)
    t_build = time.perf_counter() - t0

    t0 = time.perf_counter()
    quilts = {v: markov_quilts(bn, v, exhaustive=False) for v in bn.nodes()}
    t_search = time.perf_counter() - t0

    t0 = time.perf_counter()
    engine = InfluenceEngine(bn)
    influences = {v: [engine(v, q.quilt) for q in qs if engine.table_size(v, q.quilt) <= args.max_states]
                  for v, qs in quilts.items()}
    t_infl = time.perf_counter() - t0
    n_scored = sum(len(r) for r in influences.values())

    n_quilts = sum(len(q) for q in quilts.values())
    sizes = [len(q.quilt) for qs in quilts.values() for q in qs]
    finite = [float(r) for rs in influences.values() for r in rs if r.finite]
    total = t_search + t_infl
    lines = [
        f"nodes: {args.nodes}, edges: {bn.number_of_edges()}, seed {args.seed}",
        f"network build (pgmpy CPDs, not timed in the total): {t_build:.3f} s",
        f"quilt search, candidate mode, all nodes: {t_search:.3f} s ({n_quilts} quilts, "
        f"{n_quilts / args.nodes:.1f} per node, quilt sizes {min(sizes)}–{max(sizes)})",
        f"exact max-influence of every quilt with a joint table of at most {args.max_states} states: "
        f"{t_infl:.3f} s ({n_scored} variable-elimination queries, {1e3 * t_infl / max(n_scored, 1):.2f} ms each; "
        f"{n_quilts - n_scored} larger quilts skipped; largest finite e = {max(finite):.3f})",
        f"**total: {total:.3f} s** (target < 10 s)",
    ]
    print("\n".join(lines))
    if not args.no_write:
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        header = "" if RESULTS.exists() else "# Benchmark results: Markov quilts\n\nRun by hand; figures from one machine.\n"
        text = (
            f"{header}\n## Quilt search + exact max-influence, {args.nodes}-node random binary network ({stamp})\n\n"
            f"`benchmarks/bench_quilts.py --nodes {args.nodes} --seed {args.seed}`; "
            f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs, "
            "`time.perf_counter`, one run.\n\n" + "".join(f"- {line}\n" for line in lines)
        )
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write(text)
        print(f"appended to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
