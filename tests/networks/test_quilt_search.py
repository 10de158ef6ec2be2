"""Bit-word searches of the quilt search and the bounded bucket memo / equal-card plans of the variable
elimination, against independent references (networkx ancestors, Lauritzen's d-separation oracle, one-row
searches, the set-based plan, an unbounded memo)."""

from __future__ import annotations


import networkx as nx
import numpy as np

from tests._bn_oracles import d_separated, random_dag


def test_searches_over_many_rows_match_independent_references():
    """Ancestral closures, remote sets and minimal separators computed for 150 rows at once (three words of
    row bits) equal networkx's ancestors, the Lauritzen d-separation oracle and the one-row searches."""
    from bayespriv.networks.quilt_search import GraphIndex

    rng = np.random.default_rng(11)
    g = random_dag(rng, 30, 0.12)
    gi = GraphIndex(g)
    nodes, edges = list(gi.nodes), list(g.edges())
    rows = rng.random((150, gi.n)) < 0.15
    closure = gi.heights.closure(rows)
    for k in range(0, 150, 7):
        members = {nodes[j] for j in np.flatnonzero(rows[k])}
        expected = members.union(*(nx.ancestors(g, v) for v in members))
        assert {nodes[j] for j in np.flatnonzero(closure[k])} == expected
    x = 4
    z = rows.copy()
    z[:, x] = False
    remote = gi.remote(x, z)
    for k in range(0, 150, 5):
        assert (remote[k] == gi.remote(x, z[k][None, :])[0]).all()
        zs = {nodes[j] for j in np.flatnonzero(z[k])}
        for j in range(gi.n):
            if j != x and not z[k, j]:
                assert remote[k, j] == d_separated(edges, nodes, nodes[x], {nodes[j]}, zs)
    targets = rng.random((150, gi.n)) < 0.1
    targets[:, x] = False
    near = rng.random(150) < 0.5
    seps, ok = gi.minimal_separators(x, targets, near_source=near)
    for k in range(0, 150, 3):
        one = gi.minimal_separator(x, targets[k], near_source=bool(near[k]))
        assert ok[k] == (one is not None)
        if one is not None:
            assert (seps[k] == one).all()


def test_bucket_memo_bounded_in_bytes_gives_the_same_tables():
    """A memo that keeps almost nothing (a few hundred bytes, least recently used dropped first) gives the
    joint tables of an unbounded one bit for bit, and never holds more than its bound."""
    from bayespriv.networks.elimination import BucketMemo, DiscreteTables
    from tests._bn_oracles import random_network as small_network

    bn, names, _ = small_network(5, 16, max_card=3, edge_prob=0.3, concentration=2.0)
    roomy, tight = DiscreteTables(bn), DiscreteTables(bn)
    tight.buckets = BucketMemo(len(names), max_bytes=300)
    rng = np.random.default_rng(8)
    for _ in range(60):
        plan = roomy.plan(sorted(int(x) for x in rng.choice(len(names), size=int(rng.integers(1, 4)), replace=False)))
        assert roomy.joint(plan).tobytes() == tight.joint(plan).tobytes()
        assert tight.buckets.nbytes <= 300
    assert len(roomy.buckets) > len(tight.buckets) > 0


def test_equal_card_plans_match_the_set_based_plans_for_every_card():
    """The equal-card min-weight order (fewest neighbours first, ties by position) gives the set-based
    order and largest bucket with 1, 2 or 3 states per variable."""
    from bayespriv.networks import elimination
    from tests._bn_oracles import random_network as small_network

    bn, names, _ = small_network(9, 18, max_card=2, edge_prob=0.25, concentration=2.0)
    tables = elimination.DiscreteTables(bn)
    rng = np.random.default_rng(4)
    for _ in range(40):
        t = {int(x) for x in rng.choice(len(names), size=int(rng.integers(1, 5)), replace=False)}
        factors = tables.ancestral(sorted(t))
        for card in (1, 2, 3):
            assert (elimination._uniform_min_weight_order(factors, tables.scopes, card, t)
                    == elimination._set_min_weight_order(factors, tables.scopes, [card] * len(names), t))
