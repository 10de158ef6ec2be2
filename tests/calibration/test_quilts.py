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
from bayespriv.calibration.quilts import EXHAUSTIVE_MAX_NODES, ParameterNetwork, Quilt, calibrate_quilts, markov_quilts

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _bn_oracles import d_separated  # noqa: E402


def random_dag(rng: np.random.Generator, n: int, p: float) -> nx.DiGraph:
    order = rng.permutation(n)
    g = nx.DiGraph()
    g.add_nodes_from(f"x{i}" for i in range(n))
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < p:
                g.add_edge(f"x{order[a]}", f"x{order[b]}")
    return g


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
        calibrate_quilts(net, "i", custom, n_records=10, k=1)
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
