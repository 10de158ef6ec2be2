"""Markov quilt search (candidate mode) + exact max-influence on a random sparse network (default 50 nodes).

Workload: a random sparse DAG of 50 nodes (each node j > 0 draws 1–2 parents
among the earlier nodes), every node a binary parameter with Dirichlet(1, 1)
CPD columns, as a pgmpy ``DiscreteBayesianNetwork``. For **every** node:

1. ``markov_quilts(network, node, exhaustive=False)`` — the candidate search
   (Markov blanket, moral / skeleton layers, minimal d-separators; every
   candidate validated with ``networkx.is_d_separator``);
2. the exact max-influence e(X_Q | X_i) of every candidate quilt whose joint
   table P(φ_Q, φ_i) has at most ``--max-states`` states (default 2^16, the
   default of ``calibrate_quilts``; one fixed-order variable-elimination joint
   query per quilt) and whose elimination plan builds no factor above
   ``--max-factor`` entries (default 2^22). Other quilts are skipped with a
   recorded reason, as ``calibrate_quilts`` skips them. A hash of the result
   is printed (run with different ``PYTHONHASHSEED`` values to compare).

Target: under 10 s in total. Run by hand (never as a timed unit test)::

    .venv/bin/python benchmarks/bench_quilts.py [--nodes 50] [--seed 0] [--max-states 65536] [--no-write]
    .venv/bin/python benchmarks/bench_quilts.py --quality 30   # candidate / exhaustive ratio table

Whole-network calibration scaling (``--scaling``): ``calibrate_quilts`` with
every node sensitive, candidate search without refinement, a stack of bounded
means over every ``n // 5``-th node, 100 records, on the same random network
at each size; each size in a fresh interpreter. ``--code PATH`` times the
package found at PATH instead (e.g. a worktree of an older commit), and
``--before FILE`` adds the figures of such a run (saved with ``--json FILE``)
as the "before" column::

    .venv/bin/python benchmarks/bench_quilts.py --scaling 100,1000,3200 --code /tmp/old --json before.json
    .venv/bin/python benchmarks/bench_quilts.py --scaling 100,1000,3200,5000 --before before.json
    .venv/bin/python benchmarks/bench_quilts.py --scaling 100,1000 --repeat 3   # fastest of 3 per size

``--defaults 100,1000,5000`` runs ``calibrate_quilts`` with its default arguments and with the fast settings
(``search=QuiltSearch(exhaustive=False, refine=0)``) side by side, each in a fresh interpreter, with CPU time, the child's peak
resident memory, the APMQM scales at several ε and the result hashes; ``--opt-in 100`` adds the opt-in
``QuiltSearch(refine=256)`` at 100 nodes::

    .venv/bin/python benchmarks/bench_quilts.py --defaults 100,1000,5000 --opt-in 100

``--work 100,1000`` measures, untimed, the arithmetic of the same workload's variable eliminations (what
any evaluation of the same plans with the same arithmetic must do) and, without the memo, that of a
min-fill order.

Appends a section to benchmarks/RESULTS_quilts.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import hashlib
import datetime as _dt
import json
import math
import os
import subprocess
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

from bayespriv.networks.influence import InfluenceEngine  # noqa: E402
from bayespriv.networks.quilts import markov_quilts  # noqa: E402

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


def quality(n_networks: int = 30) -> list[str]:
    """Candidate / exhaustive APMQM scale on small random networks: the candidate search, alone and refined."""
    sys.path.insert(0, str(ROOT / "tests"))
    import bayespriv as bp
    from _bn_oracles import random_network as small_network
    from bayespriv.networks.quilts import ParameterNetwork, QuiltSearch, calibrate_quilts
    from bayespriv.mechanisms import APMQM

    ratios: dict[str, list[float]] = {"refine=0 (default)": [], "refine=64": [], "refine=256": []}
    for seed in range(n_networks):
        rng = np.random.default_rng(1000 + seed)
        n_nodes = 8 + seed % 3
        bn, names, _ = small_network(1000 + seed, n_nodes, edge_prob=0.3, concentration=3.0)
        node = names[int(rng.integers(n_nodes))]
        queried = [v for v in names if v != node and rng.random() < 0.4] or [names[-1] if node != names[-1] else names[0]]
        query = bp.stack(*[bp.mean(v, bounds=(0.0, float(1 + rng.integers(4)))) for v in queried])
        net = ParameterNetwork(bn, columns={v: v for v in names})
        full = calibrate_quilts(net, node, query, n_records=10)
        cands = {key: calibrate_quilts(net, node, query, n_records=10,
                                       search=QuiltSearch(exhaustive=False, refine=r))
                 for key, r in zip(ratios, (0, 64, 256))}
        for eps in (0.3, 1.0, 3.0):
            exact = APMQM(full, epsilon=eps).scale
            got = {k: APMQM(c, epsilon=eps).scale for k, c in cands.items()}
            for k, v in got.items():
                ratios[k].append(1.0 if v == exact else (v / exact if exact > 0 else np.inf))
    out = [f"{n_networks} random networks (8–10 nodes, edge probability 0.3, Dirichlet(3) CPDs, 2–3 states), one "
           "sensitive node, a stack of bounded means over ~40% of the other nodes, ε ∈ {0.3, 1, 3}: "
           f"{3 * n_networks} (network, ε) cases; ratio = candidate-search APMQM scale / exhaustive scale",
           "", "| search | max ratio | median | mean | cases with ratio > 1 |", "|---|---|---|---|---|"]
    for k, r in ratios.items():
        if r:
            a = np.array(r)
            out.append(f"| {k} | {a.max():.4f} | {np.median(a):.4f} | {a.mean():.4f} | {(a > 1 + 1e-12).sum()} |")
    return out


_SCALING_SCRIPT = r"""
import hashlib, json, os, resource, sys, time, warnings
warnings.filterwarnings("ignore")
code, bench, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
settings = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {"exhaustive": False, "refine": 0}
sys.path[:0] = [code, bench]
import bayespriv as bp
from bench_quilts import random_network
from bayespriv.networks.quilts import ParameterNetwork, calibrate_quilts
try:
    from bayespriv.networks.quilts import QuiltSearch
    keywords = {"search": QuiltSearch(**settings)}
except ImportError:  # a package that predates QuiltSearch (--code): the settings as keywords of their own
    keywords = settings
bn = random_network(n, 0)
names = list(bn.nodes())
t0, c0 = time.perf_counter(), time.process_time()
net = ParameterNetwork(bn, columns={v: v for v in names})
query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0)) for v in names[::max(1, n // 5)]])
cal = calibrate_quilts(net, names, query, n_records=100, **keywords)
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
rows = [(str(v), sorted(map(str, c.quilt.quilt)), c.sensitivity.hex(), float(c.influence.value).hex())
        for v in cal.sensitive for c in cal.candidates[v]]
from bayespriv.mechanisms import APMQM
scales = {str(e): APMQM(cal, epsilon=e).scale.hex() for e in (0.1, 0.3, 1.0, 3.0, 10.0)}
print(json.dumps({"nodes": n, "edges": bn.number_of_edges(), "seconds": seconds, "cpu": cpu,
                  "sensitivity": cal.sensitivity.hex(), "scales": scales, "settings": settings,
                  "scored": len(rows), "skipped": sum(cal.skipped.values()),
                  "hash": hashlib.sha256(repr(rows).encode()).hexdigest()[:16], "load": os.getloadavg()[0],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

#: ``calibrate_quilts`` settings compared by ``--defaults`` (the fields of its ``search=QuiltSearch(...)``): the
#: defaults, the fast settings, and the opt-in refinement.
SETTINGS = {"defaults": {}, "fast": {"exhaustive": False, "refine": 0}, "refine=256": {"refine": 256}}


def _child(code: Path, n: int, settings: dict | None = None) -> dict:
    """One whole-network ``calibrate_quilts`` at ``n`` nodes in a fresh interpreter (its figures as a dict; the
    peak resident memory is the child's own)."""
    argv = [sys.executable, "-c", _SCALING_SCRIPT, str(code), str(ROOT / "benchmarks"), str(n)]
    done = subprocess.run(argv + ([] if settings is None else [json.dumps(settings)]), capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"run at {n} nodes failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    print(out, flush=True)
    return out


def scaling(sizes: list[int], code: Path, repeat: int = 1) -> list[dict]:
    """Whole-network ``calibrate_quilts`` at each size, each run in a fresh interpreter running the package at
    ``code``; with ``repeat`` > 1 the sizes are run in turn that many times and each size keeps its fastest run
    (``runs``: every run's seconds), so a passing load weighs on both sizes alike."""
    runs: dict[int, list[dict]] = {n: [] for n in sizes}
    for _ in range(repeat):
        for n in sizes:
            runs[n].append(_child(code, n))
    out = []
    for n in sizes:
        if len({r["hash"] for r in runs[n]}) != 1:
            raise RuntimeError(f"runs at {n} nodes gave different results: {[r['hash'] for r in runs[n]]}")
        best = dict(min(runs[n], key=lambda r: r["seconds"]))
        best["runs"] = [r["seconds"] for r in runs[n]]
        out.append(best)
    return out


def defaults(sizes: list[int], opt_in: list[int], code: Path) -> dict[str, list[dict]]:
    """The defaults and the fast settings side by side at each size (in turn, each in a fresh interpreter),
    and the opt-in refinement at the sizes ``opt_in``."""
    out: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for n in sizes:
        for name in ("defaults", "fast"):
            out[name].append(_child(code, n, SETTINGS[name]))
    for n in opt_in:
        out["refine=256"].append(_child(code, n, SETTINGS["refine=256"]))
    return out


def defaults_lines(runs: dict[str, list[dict]]) -> list[str]:
    """The defaults / fast settings table (CPU time, peak RSS, sensitivity, APMQM scales, result hashes) and
    the opt-in refinement's, in Markdown."""
    lines = ["| nodes (edges) | defaults CPU (s) | fast CPU (s) | defaults / fast | peak RSS defaults / fast (MB) | "
             "Δ_A F defaults / fast | APMQM scales (ε = 0.1, 0.3, 1, 3, 10) | result hash defaults / fast |",
             "|---|---|---|---|---|---|---|---|"]
    for d, f in zip(runs["defaults"], runs["fast"]):
        same = "same" if d["scales"] == f["scales"] else "DIFFERENT"
        lines.append(f"| {d['nodes']} ({d['edges']}) | {d['cpu']:.2f} | {f['cpu']:.2f} | {d['cpu'] / f['cpu']:.2f}× | "
                     f"{d['peak_rss_mb']:.0f} / {f['peak_rss_mb']:.0f} | {float.fromhex(d['sensitivity']):g} / "
                     f"{float.fromhex(f['sensitivity']):g} | {_scales(d)} ({same} bits) | {d['hash']} / {f['hash']} |")
    fast = {r["nodes"]: r for r in runs["fast"]}
    for r in runs["refine=256"]:
        f = fast.get(r["nodes"])
        ratio = "" if f is None else f", {r['cpu'] / f['cpu']:.1f}× the fast settings"
        lines.append(f"\nOpt-in `refine=256` at {r['nodes']} nodes: {r['cpu']:.2f} s CPU{ratio}, peak RSS "
                     f"{r['peak_rss_mb']:.0f} MB, APMQM scales {_scales(r)}"
                     + ("" if f is None else f" against {_scales(f)} without refinement") + ".")
    return lines


def _scales(run: dict) -> str:
    return " / ".join(f"{float.fromhex(v):.4g}" for v in run["scales"].values())


def elimination_work(n_nodes: int) -> dict:
    """The arithmetic of the whole-network calibration's variable eliminations at one size (untimed).

    Runs the ``--scaling`` workload with the elimination watched: for every joint query, its ancestral set;
    for every bucket the memo computes, the entries of the bucket's product (what one einsum call iterates
    over) times its factors; for every final product, the same. Also, without the memo, the same sum for each
    query's plan (the greedy min-weight order of the package) and for a min-fill order (ties by position),
    to see whether another order would change how the work grows.
    """
    import bayespriv as bp
    import bayespriv.networks.elimination as el
    from bayespriv.networks.quilts import ParameterNetwork, QuiltSearch, calibrate_quilts

    counts = {"joints": 0, "ancestral": 0, "bucket_work": 0, "final_work": 0}
    plans: list = []
    add, joint = el.BucketMemo._add, el.DiscreteTables.joint

    def watched_add(self, name, x, bucket):
        cards = {v: c for f in bucket for v, c in zip(f.scope, f.values.shape)}
        counts["bucket_work"] += len(bucket) * math.prod(cards.values())
        return add(self, name, x, bucket)

    def watched_joint(self, plan, max_factor=el.MAX_FACTOR):
        counts["joints"] += 1
        counts["ancestral"] += len(plan.factors)
        plans.append((self, plan))
        counts["final_work"] += _final_work(self, plan)
        return joint(self, plan, max_factor)

    el.BucketMemo._add, el.DiscreteTables.joint = watched_add, watched_joint
    try:
        bn = random_network(n_nodes, 0)
        names = list(bn.nodes())
        net = ParameterNetwork(bn, columns={v: v for v in names})
        query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0)) for v in names[::max(1, n_nodes // 5)]])
        calibrate_quilts(net, names, query, n_records=100, search=QuiltSearch(exhaustive=False, refine=0))
    finally:
        el.BucketMemo._add, el.DiscreteTables.joint = add, joint
    plain = sum(_plan_work(t, p, p.order) for t, p in plans)
    fill = sum(_plan_work(t, p, _min_fill_order(t, p)) for t, p in plans)
    return dict(counts, nodes=n_nodes, plain_work=plain, min_fill_work=fill)


def _eliminate(tables, plan, order) -> tuple[list[set], int]:
    """Symbolic bucket elimination of ``plan``'s factors in ``order``: the factors left and the work done
    (per bucket, the entries of its product times its factors)."""
    cards = tables.card_list
    pool = [set(tables.scopes[k]) for k in plan.factors]
    work = 0
    for x in order:
        bucket = [f for f in pool if x in f]
        pool = [f for f in pool if x not in f]
        union = set().union(*bucket)
        work += len(bucket) * math.prod(cards[v] for v in union)
        pool.append(union - {x})
    return pool, work


def _final_work(tables, plan) -> int:
    """The final product of a query: its remaining factors times the entries of the targets' table."""
    pool, _ = _eliminate(tables, plan, plan.order)
    return len([f for f in pool if f]) * math.prod(tables.card_list[v] for v in plan.targets)


def _plan_work(tables, plan, order) -> int:
    """All the work of one query eliminated in ``order``, without a memo."""
    pool, work = _eliminate(tables, plan, order)
    return work + len([f for f in pool if f]) * math.prod(tables.card_list[v] for v in plan.targets)


def _min_fill_order(tables, plan) -> list[int]:
    """A greedy min-fill order of ``plan``'s non-targets (fewest new edges, then fewest neighbours, then
    position)."""
    targets = set(plan.targets)
    nb = {v: set() for v in plan.factors}
    for k in plan.factors:
        for v in tables.scopes[k]:
            nb[v] |= set(tables.scopes[k])
    for v in nb:
        nb[v].discard(v)

    def fill(v: int) -> int:
        ns = sorted(nb[v])
        return sum(1 for i, a in enumerate(ns) for b in ns[i + 1:] if b not in nb[a])

    alive, order = [v for v in plan.factors if v not in targets], []
    while alive:
        best = min(alive, key=lambda v: (fill(v), len(nb[v]), v))
        order.append(best)
        alive.remove(best)
        around = nb.pop(best)
        for a in around:
            nb[a] |= around
            nb[a].discard(a)
            nb[a].discard(best)
    return order


def work_lines(rows: list[dict]) -> list[str]:
    """The elimination-work table of :func:`elimination_work` at each size, in Markdown."""
    first = rows[0]
    total = {r["nodes"]: r["bucket_work"] + r["final_work"] for r in rows}
    lines = ["| nodes | joint queries | mean ancestral set | work with the memo (buckets + final) | × first size | "
             "without memo, package order | × | without memo, min-fill order | × |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n = r["nodes"]
        lines.append(f"| {n} | {r['joints']} | {r['ancestral'] / max(r['joints'], 1):.1f} | {total[n]:.3g} "
                     f"({r['bucket_work']:.3g} + {r['final_work']:.3g}) | {total[n] / total[first['nodes']]:.1f}× | "
                     f"{r['plain_work']:.3g} | {r['plain_work'] / first['plain_work']:.1f}× | {r['min_fill_work']:.3g} | "
                     f"{r['min_fill_work'] / first['min_fill_work']:.1f}× |")
    lines.append("\nWork: per bucket product (one einsum call), its entries times its factors; per final product, the "
                 "targets' table times the factors left. It is what any evaluation of the same plans with the same "
                 "arithmetic must do.")
    return lines


def scaling_lines(after: list[dict], before: list[dict]) -> list[str]:
    """The scaling table (before / after per size) and the targets, in Markdown."""
    old = {r["nodes"]: r for r in before}
    first = after[0]
    lines = ["| nodes (edges) | before (s) | after (s) | after / after at "
             f"{first['nodes']} nodes | load average (1 min) at the end | quilts scored (skipped) | "
             "result hash before / after |", "|---|---|---|---|---|---|---|"]
    for r in after:
        b = old.get(r["nodes"])
        lines.append(f"| {r['nodes']} ({r['edges']}) | {'–' if b is None else format(b['seconds'], '.1f')} | "
                     f"{r['seconds']:.1f} | {r['seconds'] / first['seconds']:.1f}× | "
                     f"{'–' if r.get('load') is None else format(r['load'], '.1f')} | {r['scored']} ({r['skipped']}) | "
                     f"{'–' if b is None else b['hash']} / {r['hash']} |")
    by = {r["nodes"]: r for r in after}
    if any(len(r.get("runs", [])) > 1 for r in after):
        lines.append("\nFastest of " + ", ".join(f"{r['nodes']} nodes: " + " / ".join(f"{t:.2f}" for t in r["runs"])
                                                + " s" for r in after) + " (sizes run in turn).")
    if 1000 in by and 100 in by:
        t, ratio = by[1000]["seconds"], by[1000]["seconds"] / by[100]["seconds"]
        lines.append(f"\n1 000 nodes: {t:.1f} s (target < 120 s: {'met' if t < 120 else 'NOT met'}), "
                     f"{ratio:.1f}× the 100-node time (target ≤ 15×: {'met' if ratio <= 15 else 'NOT met'}).")
    if 5000 in by:
        t = by[5000]["seconds"]
        lines.append(f"5 000 nodes: {t:.1f} s (target < 600 s: {'met' if t < 600 else 'NOT met'}).")
    if old:
        same = [n for n in old if n in by and old[n]["hash"] == by[n]["hash"]]
        lines.append(f"Identical quilts, sensitivities and max-influence bits before and after at {same or 'no size'}.")
    return lines


def _write_section(title: str, command: str, lines: list[str], bullets: bool = True, runs: str = "one run",
                   clock: str = "`time.perf_counter`") -> None:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = (f"\n## {title} ({stamp})\n\n`{command}`; {platform.python_implementation()} {platform.python_version()}, "
            f"{os.cpu_count()} CPUs (load average {load:.1f} at the end), {clock}, {runs}.\n\n"
            + "".join((f"- {line}\n" if bullets else f"{line}\n") for line in lines))
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write(text)
    print(f"appended to {RESULTS}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-states", type=int, default=2**16,
                    help="skip quilts whose joint table P(φ_Q, φ_i) is larger (as calibrate_quilts does)")
    ap.add_argument("--max-factor", type=int, default=2**22,
                    help="skip quilts whose elimination plan builds a larger intermediate factor")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--quality", type=int, default=0, metavar="N",
                    help="instead: the candidate / exhaustive APMQM scale table on N small random networks")
    ap.add_argument("--scaling", default="", metavar="N,N,...",
                    help="instead: whole-network calibrate_quilts at these sizes (each in a fresh interpreter)")
    ap.add_argument("--code", default=str(ROOT), help="with --scaling: the package root to time")
    ap.add_argument("--json", default="", help="with --scaling: also save the figures to this file")
    ap.add_argument("--before", default="", help="with --scaling: figures of an older package (from --json)")
    ap.add_argument("--note", default="", help="with --scaling: a sentence added under the table")
    ap.add_argument("--measured", default="", help="with --scaling or --defaults: write the section from figures "
                                                   "saved by --json instead of measuring again")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --scaling: run the sizes in turn this many times and keep each size's fastest run")
    ap.add_argument("--defaults", default="", metavar="N,N,...",
                    help="instead: calibrate_quilts with its defaults and with the fast settings at these sizes")
    ap.add_argument("--opt-in", default="", metavar="N,N,...",
                    help="with --defaults: also the opt-in refine=256 at these sizes")
    ap.add_argument("--work", default="", metavar="N,N,...",
                    help="instead: the elimination arithmetic of the --scaling workload at these sizes (untimed)")
    args = ap.parse_args(argv)
    if args.work:
        lines = work_lines([elimination_work(int(x)) for x in args.work.split(",")])
        print("\n".join(lines))
        if not args.no_write:
            _write_section("Elimination work of the whole-network calibration", f"benchmarks/bench_quilts.py --work "
                           f"{args.work}", lines, bullets=False)
        return 0
    if args.defaults:
        opt_in = [int(x) for x in args.opt_in.split(",") if x]
        runs = (json.loads(Path(args.measured).read_text()) if args.measured
                else defaults([int(x) for x in args.defaults.split(",")], opt_in, Path(args.code)))
        if args.json:
            Path(args.json).write_text(json.dumps(runs))
        lines = defaults_lines(runs) + ([args.note] if args.note else [])
        print("\n".join(lines))
        if not args.no_write:
            _write_section("CURRENT — calibrate_quilts with its defaults against the fast settings, random sparse "
                           "binary network", f"benchmarks/bench_quilts.py --defaults {args.defaults}"
                           + (f" --opt-in {args.opt_in}" if opt_in else ""), lines, bullets=False,
                           runs="one run per size and settings, in a fresh interpreter each",
                           clock="CPU time (`time.process_time`) and peak RSS (`getrusage` in each child)")
        return 0
    if args.scaling:
        if args.measured:
            after = json.loads(Path(args.measured).read_text())
        else:
            after = scaling([int(x) for x in args.scaling.split(",")], Path(args.code), args.repeat)
        if args.json:
            Path(args.json).write_text(json.dumps(after))
        before = json.loads(Path(args.before).read_text()) if args.before else []
        lines = scaling_lines(after, before) + ([args.note] if args.note else [])
        print("\n".join(lines))
        if not args.no_write:
            repeat = max(len(r.get("runs", [])) for r in after) if after else 1
            _write_section("Whole-network calibrate_quilts, random sparse binary network",
                           f"benchmarks/bench_quilts.py --scaling {args.scaling}"
                           + (f" --repeat {repeat}" if repeat > 1 else ""), lines, bullets=False,
                           runs="one run per size" if repeat == 1 else f"the fastest of {repeat} runs per size")
        return 0
    if args.quality:
        print("\n".join(quality(args.quality)))
        return 0

    t0 = time.perf_counter()
    bn = random_network(args.nodes, args.seed)
    t_build = time.perf_counter() - t0

    t0 = time.perf_counter()
    quilts = {v: markov_quilts(bn, v, exhaustive=False) for v in bn.nodes()}
    t_search = time.perf_counter() - t0

    t0 = time.perf_counter()
    engine = InfluenceEngine(bn, max_factor=args.max_factor)
    influences, reasons = {}, []
    for v, qs in quilts.items():
        influences[v] = []
        for q in qs:
            why = engine.refusal(v, q.quilt, args.max_states)
            if why is None:
                influences[v].append(engine(v, q.quilt))
            else:
                reasons.append(why)
    t_infl = time.perf_counter() - t0
    n_scored = sum(len(r) for r in influences.values())
    digest = hashlib.sha256(repr([(str(v), sorted(map(str, r.quilt)), r.value.hex())
                                  for v, rs in influences.items() for r in rs]).encode()).hexdigest()[:16]
    by_table = sum("max_states" in w for w in reasons)
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
        f"{n_quilts - n_scored} quilts skipped with a recorded reason: {by_table} joint tables above max_states, "
        f"{len(reasons) - by_table} elimination plans above max_factor={args.max_factor}; largest finite e = "
        f"{max(finite):.3f})",
        f"result hash (quilts and e bits; compare across PYTHONHASHSEED): {digest}",
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
