"""Markov quilts: validity against an independent d-separation check.

The reference check (``_bn_oracles.d_separated``) is Lauritzen's criterion, written
here without networkx's d-separation code: Y ⊥ x | Z iff x and Y are
disconnected in the moral graph of the ancestral set of {x} ∪ Y ∪ Z after
deleting Z. Every quilt must have its remote set d-separated from the node,
and every other nearby node d-connected (the remote set is the largest).
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.networks.quilts import (
    EXHAUSTIVE_MAX_NODES,
    ParameterNetwork,
    Quilt,
    QuiltSearch,
    calibrate_quilts,
    markov_quilts,
)

import sys
from pathlib import Path

from tests._bn_oracles import d_separated, random_dag


def check_quilt(g: nx.DiGraph, node, quilt: Quilt) -> None:
    edges, nodes = list(g.edges()), list(g.nodes())
    assert quilt.nodes == set(nodes)
    assert node in quilt.nearby and node not in quilt.quilt
    for y in quilt.remote:
        assert d_separated(edges, nodes, node, {y}, set(quilt.quilt)), (node, y, quilt)
    for y in quilt.nearby - {node}:
        assert not d_separated(edges, nodes, node, {y}, set(quilt.quilt)), (node, y, quilt)


DAGS = [(seed, n, p) for seed, (n, p) in enumerate([(5, 0.5), (6, 0.3), (7, 0.4), (8, 0.25), (9, 0.3), (10, 0.2)])]


@pytest.mark.parametrize("seed, n, p", DAGS)
def test_exhaustive_quilts_are_valid_and_complete(seed, n, p):
    rng = np.random.default_rng(seed)
    g = random_dag(rng, n, p)
    for node in rng.choice(list(g.nodes()), size=2, replace=False):
        quilts = markov_quilts(g, node)
        assert len(quilts) == 2 ** (n - 1)
        assert len({q.quilt for q in quilts}) == len(quilts)
        assert quilts[0].quilt == frozenset()
        for q in quilts:
            check_quilt(g, node, q)


@pytest.mark.parametrize("seed, n, p", DAGS)
def test_candidate_quilts_are_valid(seed, n, p):
    rng = np.random.default_rng(100 + seed)
    g = random_dag(rng, n, p)
    for node in g.nodes():
        quilts = markov_quilts(g, node, exhaustive=False)
        assert len({q.quilt for q in quilts}) == len(quilts)  # deduplicated
        assert quilts[0].quilt == frozenset()
        blanket = set(g.predecessors(node)) | set(g.successors(node))
        blanket |= {p for c in g.successors(node) for p in g.predecessors(c)} - {node}
        assert frozenset(blanket) in {q.quilt for q in quilts}
        for q in quilts:
            check_quilt(g, node, q)


def test_candidate_mode_on_a_large_network():
    rng = np.random.default_rng(7)
    g = random_dag(rng, 40, 0.06)
    node = "x3"
    quilts = markov_quilts(g, node, exhaustive=False)
    assert 2 <= len(quilts) < 200
    for q in quilts:
        check_quilt(g, node, q)


def test_chain_example_by_hand():
    """a -> b -> c: conditioning on b separates c; conditioning on c separates nothing."""
    g = nx.DiGraph([("a", "b"), ("b", "c")])
    got = {q.quilt: (q.nearby, q.remote) for q in markov_quilts(g, "a")}
    assert got == {
        frozenset(): (frozenset("abc"), frozenset()),
        frozenset("b"): (frozenset("a"), frozenset("c")),
        frozenset("c"): (frozenset("ab"), frozenset()),
        frozenset("bc"): (frozenset("a"), frozenset()),
    }


def test_collider_opens_when_conditioned():
    """a -> c <- b: b is remote from a given ∅, but not given {c} or a descendant {d} of c."""
    g = nx.DiGraph([("a", "c"), ("b", "c"), ("c", "d")])
    got = {q.quilt: q.remote for q in markov_quilts(g, "a")}
    assert got[frozenset()] == {"b"}
    assert got[frozenset("d")] == frozenset()
    assert got[frozenset("c")] == {"d"}


def test_pgmpy_networks_are_read_through_their_graph():
    from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork

    for cls in (DiscreteBayesianNetwork, LinearGaussianBayesianNetwork):
        net = cls([("a", "b"), ("b", "c")])
        assert [q.quilt for q in markov_quilts(net, "a")] == [q.quilt for q in markov_quilts(nx.DiGraph(net.edges()), "a")]


def test_exhaustive_limit_and_bad_input():
    g = nx.path_graph(EXHAUSTIVE_MAX_NODES + 1, create_using=nx.DiGraph)
    with pytest.raises(bp.ValidationError, match=rf"max_nodes={EXHAUSTIVE_MAX_NODES}.*got {EXHAUSTIVE_MAX_NODES + 1} nodes.*exhaustive=False"):
        markov_quilts(g, 0)
    assert len(markov_quilts(g, 0, exhaustive=False)) >= 2
    with pytest.raises(bp.ValidationError, match="node must be a node of the network"):
        markov_quilts(nx.DiGraph([("a", "b")]), "zz")
    with pytest.raises(bp.ValidationError, match="acyclic"):
        markov_quilts(nx.DiGraph([("a", "b"), ("b", "a")]), "a")
    with pytest.raises(bp.ParameterTypeError, match="dag must be a networkx DiGraph"):
        markov_quilts([("a", "b")], "a")
    with pytest.raises(bp.ValidationError, match="max_nodes must be at most"):
        markov_quilts(nx.DiGraph([("a", "b")]), "a", max_nodes=40)
    with pytest.raises(bp.ValidationError, match="disjoint"):
        Quilt({"a"}, {"a", "b"}, set())


def test_calibrate_quilts_refuses_bad_queries():
    from pgmpy.factors.discrete import TabularCPD
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_cpds(TabularCPD("i", 2, [[0.5], [0.5]]),
                TabularCPD("q", 2, [[0.8, 0.4], [0.2, 0.6]], evidence=["i"], evidence_card=[2]))
    net = ParameterNetwork(bn, columns={"i": "i", "q": "q"})
    with pytest.raises(bp.ValidationError, match=r"columns governed by the network's parameters \['i', 'q'\]; got \['z'\]"):
        calibrate_quilts(net, "i", bp.count(lambda b: b["z"] > 0, "z"), n_records=10)
    custom = bp.Query(lambda b: b["q"][:, :1].astype(float), ["q"], "first q")
    with pytest.raises(bp.ValidationError, match="must declare a column sensitivity"):
        calibrate_quilts(net, "i", custom, n_records=10, search=QuiltSearch(k=1))
    with pytest.raises(bp.ValidationError, match="sensitive must be nodes of the network"):
        calibrate_quilts(net, "nope", bp.count(lambda b: b["q"] > 0, "q"), n_records=10)
    cal = calibrate_quilts(net, "i", bp.count(lambda b: b["q"] > 0, "q"), n_records=10)
    # q's quilt {q}: A ∩ N = ∅; the trivial quilt: Δ = n; {q} is not dominated (smaller Δ).
    got = {c.quilt.quilt: (c.sensitivity, c.max_influence) for c in cal.candidates["i"]}
    assert got[frozenset()] == (10.0, 0.0)
    assert got[frozenset("q")][0] == 0.0
    assert math.isclose(got[frozenset("q")][1], math.log(3.0), rel_tol=1e-12)


def test_candidate_targets_add_quilts_that_keep_them_out_of_the_nearby_set():
    g = nx.DiGraph([("i", "a"), ("a", "b"), ("i", "c"), ("c", "d"), ("b", "t"), ("d", "t"), ("i", "u")])
    quilts = markov_quilts(g, "i", exhaustive=False, targets=["t", "u"])
    outside = [q for q in quilts if not q.nearby & {"t", "u"}]
    assert outside
    for q in quilts:
        check_quilt(g, "i", q)
    assert frozenset({"t", "u"}) in {q.quilt for q in quilts}
    with pytest.raises(bp.ValidationError, match="targets must be nodes of the network"):
        markov_quilts(g, "i", exhaustive=False, targets=["zz"])


# -- determinism, the factor bound, candidate quality ------------------------------------------------------------
_HASH_SCRIPT = r"""
import warnings
warnings.filterwarnings("ignore")
import numpy as np
import bayespriv as bp
from tests._bn_oracles import random_network
from bayespriv.networks.quilts import ParameterNetwork, QuiltSearch, calibrate_quilts
bn, names, _ = random_network(7, 24, edge_prob=0.1, concentration=2.0)
net = ParameterNetwork(bn, columns={v: v for v in names})
query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0 + k % 3)) for k, v in enumerate(names[16:])])
cal = calibrate_quilts(net, names, query, n_records=10, search=QuiltSearch(refine=8))
print(cal.sensitivity.hex(), cal.search)
for v in cal.sensitive:
    for c in cal.candidates[v]:
        print(v, sorted(c.quilt.quilt), sorted(c.quilt.remote), c.sensitivity.hex(), c.max_influence.hex())
"""


@pytest.mark.subprocess
def test_same_quilts_and_influences_for_any_hash_seed(tmp_path):
    """A whole-network calibration (every node sensitive; candidate search, refinement and variable
    elimination) run in two interpreters with PYTHONHASHSEED 0 and 12345 gives the same quilts and the same
    bits of every Δ and e."""
    import os
    import subprocess

    script = tmp_path / "run.py"
    script.write_text(_HASH_SCRIPT)
    root = str(Path(__file__).resolve().parents[2])
    procs = []
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": root}
        procs.append(subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    assert outs[0][0] == outs[1][0] and outs[0][0].count("\n") > 24 * 5
    assert "candidate search" in outs[0][0].splitlines()[0]


def _saved_whole_network() -> dict:
    import json

    saved = Path(__file__).resolve().parents[1] / "files" / "data" / "quilts_whole_network.json"
    return json.loads(saved.read_text())


def test_whole_network_calibration_matches_the_saved_fixture_bit_for_bit():
    """Every quilt, remote set and Δ of a 20-node whole-network calibration equals, bit for bit, the result saved
    from the code before the shared graph index, CPD tables and bucket memo
    (tests/files/data/quilts_whole_network.json, generated by make_quilts_whole_network.py there), and every
    max-influence equals it to 8 units in the last place: a max-influence is the log of a ratio of sums, whose
    last bits move with the NumPy build (NumPy 2.4 moves two of the 60 by one or two ulps; the code computing them
    is the same). The default exhaustive=None takes the candidate search there (20 > 16 nodes), as the saved run
    asked explicitly."""
    from benchmarks.bench_quilts import random_network as bench_network

    saved = _saved_whole_network()
    assert "02631be" in saved["generated"]
    bn = bench_network(20, 3)
    names = list(bn.nodes())
    net = ParameterNetwork(bn, columns={v: v for v in names})
    query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0 + k % 3)) for k, v in enumerate(names[::4])])
    cal = calibrate_quilts(net, names, query, n_records=50, search=QuiltSearch(refine=8))
    got = {str(v): [[sorted(map(str, c.quilt.quilt)), sorted(map(str, c.quilt.remote)), c.sensitivity.hex()]
                    for c in cal.candidates[v]] for v in cal.sensitive}
    assert got == {v: [row[:3] for row in rows] for v, rows in saved["candidates"].items()}
    influences = np.array([float(c.influence.value) for v in cal.sensitive for c in cal.candidates[v]])
    expected = np.array([float.fromhex(row[3]) for v in cal.sensitive for row in saved["candidates"][str(v)]])
    np.testing.assert_allclose(influences, expected, rtol=8 * np.finfo(float).eps, atol=0.0)
    assert cal.sensitivity.hex() == saved["sensitivity"]
    assert {str(v): k for v, k in cal.n_quilts.items()} == saved["n_quilts"]
    assert {str(v): k for v, k in cal.skipped.items()} == saved["skipped"]
    assert not cal.exhaustive and "exhaustive" in cal.search and "max_nodes=16" in cal.search


def test_automatic_search_mode_follows_the_exhaustive_limit():
    """exhaustive=None enumerates every subset up to max_nodes nodes and takes the candidate search beyond,
    saying so; True beyond the limit still refuses, naming max_nodes."""
    chain = nx.DiGraph([(f"x{i}", f"x{i + 1}") for i in range(5)])
    assert len(markov_quilts(chain, "x0", exhaustive=None, max_nodes=6)) == 2 ** 5
    assert ([q.quilt for q in markov_quilts(chain, "x0", exhaustive=None, max_nodes=5)]
            == [q.quilt for q in markov_quilts(chain, "x0", exhaustive=False)])
    with pytest.raises(bp.ValidationError, match="max_nodes=5"):
        markov_quilts(chain, "x0", exhaustive=True, max_nodes=5)
    bn, names, _ = _two_param_chain()
    net = ParameterNetwork(bn, columns={v: v for v in names})
    query = bp.mean(names[-1], bounds=(0.0, 1.0))
    small = calibrate_quilts(net, names[0], query, n_records=5, search=QuiltSearch(max_nodes=len(names)))
    large = calibrate_quilts(net, names[0], query, n_records=5, search=QuiltSearch(max_nodes=len(names) - 1))
    assert small.exhaustive and small.search.startswith("exhaustive") and small.n_quilts[names[0]] == 2 ** (len(names) - 1)
    assert not large.exhaustive and large.search.startswith("candidate search")
    assert f"max_nodes={len(names) - 1}" in large.search and "infeasible" in large.search
    forced = calibrate_quilts(net, names[0], query, n_records=5,
                              search=QuiltSearch(exhaustive=False, max_nodes=len(names)))
    assert not forced.exhaustive and "chosen automatically" not in forced.search
    with pytest.raises(bp.ParameterTypeError, match="exhaustive must be True, False or None"):
        calibrate_quilts(net, names[0], query, n_records=5, search=QuiltSearch(exhaustive="auto"))


def _two_param_chain():
    from tests._bn_oracles import random_network as rn

    return rn(2, 5, edge_prob=0.5, concentration=2.0)


def test_largest_factor_bound_skips_the_quilt_with_its_reason():
    """A quilt whose elimination plan builds a factor above max_factor is not scored, the reason names
    the bound and the plan's size, and the trivial quilt still gives every node a score."""
    from bayespriv.networks.elimination import DiscreteTables
    from bayespriv.networks.influence import max_influence
    from tests._bn_oracles import random_network as rn
    from bayespriv.mechanisms import APMQM

    bn, names, cards = rn(3, 9, max_card=3, edge_prob=0.6)
    tables = DiscreteTables(bn)
    plans = {v: tables.plan([tables.index[u] for u in (names[:4] + [v])]) for v in names[4:]}
    node, plan = max(plans.items(), key=lambda kv: (kv[1].largest, names.index(kv[0])))
    bound = plan.largest - 1
    assert bound >= 2
    with pytest.raises(bp.ValidationError, match=rf"max_factor must bound .*got max_factor={bound} .* has "
                                                 rf"{plan.largest} entries"):
        max_influence(bn, names[:4], node, max_factor=bound)
    assert float(max_influence(bn, names[:4], node, max_factor=plan.largest)) >= 0.0
    net = ParameterNetwork(bn, columns={v: v for v in names})
    query = bp.mean(names[0], bounds=(0.0, 1.0))
    small = calibrate_quilts(net, node, query, n_records=5, search=QuiltSearch(max_factor=8))
    assert small.skipped[node] == len(small.skip_reasons[node]) > 0
    assert all("max_factor=8" in why or "max_states" in why for why in small.skip_reasons[node])
    assert any("max_factor=8" in why for why in small.skip_reasons[node])
    assert frozenset() in {c.quilt.quilt for c in small.candidates[node]}
    assert APMQM(small, epsilon=1.0).scale <= 1.0 / 1.0 + 1e-12  # never above the trivial quilt's Δ_A F / ε


def _ratio_cases(refine: int) -> list[float]:
    """Candidate-search APMQM scale / exhaustive scale on 12 fixed small networks × 3 ε (exact, deterministic)."""
    from tests._bn_oracles import random_network as rn
    from bayespriv.mechanisms import APMQM

    out = []
    for seed in range(12):
        rng = np.random.default_rng(1000 + seed)
        n_nodes = 8 + seed % 3
        bn, names, _ = rn(1000 + seed, n_nodes, edge_prob=0.3, concentration=3.0)
        node = names[int(rng.integers(n_nodes))]
        queried = [v for v in names if v != node and rng.random() < 0.4] or [names[-1] if node != names[-1] else names[0]]
        query = bp.stack(*[bp.mean(v, bounds=(0.0, float(1 + rng.integers(4)))) for v in queried])
        net = ParameterNetwork(bn, columns={v: v for v in names})
        full = calibrate_quilts(net, node, query, n_records=10)
        cand = calibrate_quilts(net, node, query, n_records=10, search=QuiltSearch(exhaustive=False, refine=refine))
        for eps in (0.3, 1.0, 3.0):
            exact, got = APMQM(full, epsilon=eps).scale, APMQM(cand, epsilon=eps).scale
            assert got >= exact * (1 - 1e-12)  # the exhaustive minimum is a lower bound
            out.append(1.0 if got == exact else got / exact)
    return out


def test_candidate_to_exhaustive_ratio_does_not_regress():
    """Measured (benchmarks/RESULTS_quilts.md): with the opt-in refinement (refine=256) the candidate search
    attains the exhaustive minimum on these 36 cases (max ratio 1.0); without it (refine=0, the default) the
    max ratio is 1.70 — the twin that shows the check has teeth."""
    assert max(_ratio_cases(256)) <= 1.0 + 1e-12
    assert max(_ratio_cases(0)) > 1.5


def _bench_network(n_nodes: int, seed: int):
    """The random sparse binary network of benchmarks/bench_quilts.py, as a ParameterNetwork, with its nodes and
    a stack of bounded means over every 4th node."""
    from benchmarks.bench_quilts import random_network as bench_network

    bn = bench_network(n_nodes, seed)
    names = list(bn.nodes())
    query = bp.stack(*[bp.mean(v, bounds=(0.0, 1.0 + k % 3)) for k, v in enumerate(names[::4])])
    return ParameterNetwork(bn, columns={v: v for v in names}), names, query


def test_defaults_are_the_fast_settings_and_refinement_only_lowers_the_noise():
    """Beyond max_nodes the defaults are the candidate search without refinement: the same quilts and the same
    bits of Δ and e as exhaustive=False, refine=0. The opt-in refinement keeps every one of those candidates as
    it is and only adds scored quilts, so the APMQM scale never grows (and here it falls at some ε)."""
    from bayespriv.mechanisms import APMQM

    net, names, query = _bench_network(24, 5)
    sensitive = names[::3]

    def rows(cal):
        return {v: [(c.quilt.quilt, c.quilt.remote, c.sensitivity.hex(), float(c.influence.value).hex())
                    for c in cal.candidates[v]] for v in cal.sensitive}

    default = calibrate_quilts(net, sensitive, query, n_records=20)
    fast = calibrate_quilts(net, sensitive, query, n_records=20, search=QuiltSearch(exhaustive=False, refine=0))
    refined = calibrate_quilts(net, sensitive, query, n_records=20, search=QuiltSearch(refine=32))
    assert not default.exhaustive and "no refinement" in default.search
    assert rows(default) == rows(fast)
    got, more = rows(default), rows(refined)
    assert all(more[v][:len(got[v])] == got[v] for v in sensitive)
    assert sum(len(more[v]) - len(got[v]) for v in sensitive) > 0
    lower = 0
    for eps in (0.3, 1.0, 3.0):
        plain, better = APMQM(default, epsilon=eps).scale, APMQM(refined, epsilon=eps).scale
        assert better <= plain
        lower += better < plain
    assert lower > 0


def test_skip_reasons_read_like_the_engines_refusals():
    """A quilt refused for the size of its joint table keeps its reason unwritten until it is read; read, every
    reason is the engine's refusal of that quilt word for word, in the search's order, and the sequence behaves
    as a tuple of str."""
    net, names, query = _bench_network(40, 2)
    node, max_states = names[7], 2**4
    cal = calibrate_quilts(net, node, query, n_records=20, search=QuiltSearch(max_states=max_states))
    reasons = cal.skip_reasons[node]
    assert len(reasons) == cal.skipped[node] > 2
    assert any(isinstance(item, bytes) for item in reasons._items)  # written when read
    expected = [why for q in markov_quilts(net, node, exhaustive=False, targets=sorted(cal.queried, key=names.index))
                if (why := cal.engine.refusal(node, q.quilt, max_states)) is not None]
    it = iter(expected)
    assert all(any(why == e for e in it) for why in reasons)  # a subsequence: same words, same order
    assert any(why.startswith("joint table") for why in reasons)
    listed = list(reasons)
    assert reasons == tuple(listed) and tuple(listed) == reasons and reasons != tuple(listed[1:])
    assert reasons[1:3] == tuple(listed[1:3]) and reasons[-1] == listed[-1]


def test_fast_paths_of_the_elimination_and_the_influence_give_the_same_bits():
    """The bit-set min-weight order (every card equal) gives the plans of the set-based one, and the joint
    table's column sums and row extremes equal NumPy's reductions bit for bit."""
    from bayespriv.networks import elimination
    from bayespriv.networks.influence import discrete, network_tables
    from tests._bn_oracles import random_network as small_network

    bn, names, _ = small_network(7, 14, max_card=2, edge_prob=0.3, concentration=2.0)
    tables = network_tables(ParameterNetwork(bn, columns={v: v for v in names}), 0)
    rng = np.random.default_rng(3)
    for _ in range(40):
        t = {int(x) for x in rng.choice(len(names), size=int(rng.integers(1, 5)), replace=False)}
        factors = tables.ancestral(sorted(t))
        assert (elimination._uniform_min_weight_order(factors, tables.scopes, 2, t)
                == elimination._set_min_weight_order(factors, tables.scopes, tables.card_list, t))
    for rows, cols in ((3, 2), (5000, 2), (4096, 3), (2048, 1)):
        table = rng.random((rows, cols)) ** 3
        assert discrete._column_sums(table).tobytes() == table.sum(axis=0).tobytes()
        assert discrete._row_max(table).tobytes() == table.max(axis=1).tobytes()
        assert discrete._row_min(table).tobytes() == table.min(axis=1).tobytes()
