"""Max-influence (Definition 7) against brute force and hand computations.

The reference (``_bn_oracles.influence_brute_force``) multiplies the CPD tables of a discrete
network over every joint assignment with NumPy (no pgmpy inference), sums out
everything but (φ_Q, φ_i), and takes the largest log-ratio of the conditionals
over all assignments and ordered pairs by explicit loops.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.networks.influence import MaxInfluence, max_influence
from bayespriv.networks.quilts import Quilt


from tests._bn_oracles import influence_brute_force, joint_table, random_network, tabular


def two_node():
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_cpds(tabular("i", 2, [[0.5], [0.5]]), tabular("q", 2, [[0.8, 0.4], [0.2, 0.6]], ["i"], [2]))
    return bn


def test_hand_computed_two_node_network():
    """P(q | i): columns (0.8, 0.2) and (0.4, 0.6). e(q | i) = ln(0.6/0.2) = ln 3, at q = 1, pair (1, 0).

    Reversed: P(i = 0 | q = 0) = 0.4/0.6 = 2/3, P(i = 0 | q = 1) = 0.1/0.4 = 1/4, so
    e(i | q) = ln((2/3)/(1/4)) = ln(8/3) at i = 0.
    """
    bn = two_node()
    r = max_influence(bn, {"q"}, "i")
    assert isinstance(r, MaxInfluence)
    assert float(r) == pytest.approx(math.log(3.0), rel=1e-12)
    assert r.assignment == {"q": 1} and r.pair == (1, 0) and r.exact and r.finite
    r2 = max_influence(bn, ["i"], "q")
    assert float(r2) == pytest.approx(math.log(8.0 / 3.0), rel=1e-12)
    assert r2.assignment == {"i": 0} and r2.pair == (0, 1)
    assert float(max_influence(bn, [], "i")) == 0.0
    assert float(max_influence(bn, Quilt({"q"}, {"i"}, set()), "i")) == pytest.approx(math.log(3.0))


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_brute_force_on_random_networks(seed):
    bn, names, cards = random_network(seed, 6, zero_prob=0.15 if seed % 2 else 0.0)
    joint = joint_table(bn, names, cards)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        node = names[int(rng.integers(len(names)))]
        others = [v for v in names if v != node]
        quilt = list(rng.choice(others, size=int(rng.integers(1, 4)), replace=False))
        got = max_influence(bn, quilt, node)
        want = influence_brute_force(joint, names, quilt, node)
        if math.isinf(want):
            assert math.isinf(got.value) and "unbounded" in got.reason
        else:
            assert got.value == pytest.approx(want, rel=1e-9, abs=1e-12)
            if want > 0:  # the reported argmax attains the value
                a, b = (bn.get_cpds(node).state_names[node].index(s) for s in got.pair)
                x = tuple(bn.get_cpds(v).state_names[v].index(got.assignment[v]) for v in quilt)
                margq = brute_force_conditional(joint, names, quilt, node)
                assert math.log(margq[x + (a,)] / margq[x + (b,)]) == pytest.approx(want, rel=1e-9)


def brute_force_conditional(joint, names, quilt, node):
    axes = [names.index(v) for v in quilt] + [names.index(node)]
    other = tuple(j for j in range(len(names)) if j not in axes)
    marg = joint.sum(axis=other)
    order = sorted(axes)
    marg = np.transpose(marg, [order.index(a) for a in axes])
    with np.errstate(invalid="ignore", divide="ignore"):
        return marg / marg.sum(axis=tuple(range(len(quilt))), keepdims=True)


def test_zero_probabilities():
    """P(q = 2 | i = 0) = 0 < P(q = 2 | i = 1): infinite, with the reason. A value of i with
    probability 0 is not a secret of positive probability and is left out of the pairs; q = 1,
    impossible under both, is skipped."""
    from pgmpy.models import DiscreteBayesianNetwork

    bn = DiscreteBayesianNetwork([("i", "q")])
    bn.add_cpds(tabular("i", 3, [[0.5], [0.5], [0.0]]),
                tabular("q", 3, [[1.0, 0.5, 0.2], [0.0, 0.0, 0.3], [0.0, 0.5, 0.5]], ["i"], [3]))
    r = max_influence(bn, ["q"], "i")
    assert r.value == math.inf and r.pair == (1, 0) and r.assignment == {"q": 2}
    assert "= 0 <" in r.reason and "unbounded" in r.reason
    # Without the zero: q in {0, 1} only, i in {0, 1} possible.
    bn2 = DiscreteBayesianNetwork([("i", "q")])
    bn2.add_cpds(tabular("i", 3, [[0.5], [0.5], [0.0]]),
                 tabular("q", 3, [[0.5, 0.25, 1.0], [0.0, 0.0, 0.0], [0.5, 0.75, 0.0]], ["i"], [3]))
    r2 = max_influence(bn2, ["q"], "i")
    assert r2.value == pytest.approx(math.log(2.0))  # q = 0: 0.5 / 0.25 (i = 2 has probability 0)
    bn3 = DiscreteBayesianNetwork([("i", "q")])
    bn3.add_cpds(tabular("i", 2, [[1.0], [0.0]]), tabular("q", 2, [[0.5, 0.1], [0.5, 0.9]], ["i"], [2]))
    r3 = max_influence(bn3, ["q"], "i")
    assert r3.value == 0.0 and "fewer than two values" in r3.reason


def test_family_supremum_names_the_worst_member():
    def build(p_hi: float):
        from pgmpy.models import DiscreteBayesianNetwork

        bn = DiscreteBayesianNetwork([("i", "q")])
        bn.add_cpds(tabular("i", 2, [[0.5], [0.5]]),
                    tabular("q", 2, [[1 - p_hi, 0.5], [p_hi, 0.5]], ["i"], [2]))
        return bn

    # e = max(ln((1-p)/0.5), ln(0.5/(1-p)), ln(p/0.5), ln(0.5/p)) = |ln(2p)| ∨ |ln(2(1-p))|
    family = [build(0.5), build(0.9), build(0.3)]
    r = max_influence(family, ["q"], "i")
    assert r.value == pytest.approx(math.log(0.5 / 0.1)) and r.member == 1
    r2 = max_influence(build, ["q"], "i", grid={"p_hi": [0.4, 0.2, 0.6]})
    assert r2.value == pytest.approx(math.log(0.5 / 0.2)) and r2.member == {"p_hi": 0.2}
    assert "worst of 3 members" in r2.reason
    with pytest.raises(bp.ValidationError, match="grid must be a non-empty mapping"):
        max_influence(build, ["q"], "i")


def test_linear_gaussian_is_zero_or_infinite():
    from pgmpy.factors.continuous import LinearGaussianCPD
    from pgmpy.models import LinearGaussianBayesianNetwork

    net = LinearGaussianBayesianNetwork([("i", "q")])
    net.add_nodes_from(["z"])
    net.add_cpds(LinearGaussianCPD("i", [0.0], 1.0), LinearGaussianCPD("q", [1.0, 0.5], 2.0, ["i"]),
                 LinearGaussianCPD("z", [3.0], 1.0))
    r = max_influence(net, ["q"], "i")
    assert r.value == math.inf and "unbounded" in r.reason
    r0 = max_influence(net, ["z"], "i")
    assert r0.value == 0.0 and "independent" in r0.reason


def test_bad_input():
    bn = two_node()
    with pytest.raises(bp.ValidationError, match="node must be a node of the network"):
        max_influence(bn, ["q"], "nope")
    with pytest.raises(bp.ValidationError, match="quilt must be a set of nodes not containing the node"):
        max_influence(bn, ["q", "i"], "i")
    with pytest.raises(bp.ValidationError, match="quilt must be nodes of the network"):
        max_influence(bn, ["zz"], "i")
    with pytest.raises(bp.ParameterTypeError, match="pgmpy DiscreteBayesianNetwork"):
        max_influence(nx.DiGraph([("i", "q")]), ["q"], "i")
    with pytest.raises(bp.ParameterTypeError, match="quilt must be a collection"):
        max_influence(bn, "q", "i")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oversized_rows_match_the_single_refusal(seed):
    """``InfluenceEngine.oversized`` (every row at once) reports exactly the rows ``refusal`` refuses for their
    table size, with the same reason word for word; bounds equal to a row's exact size (mixed cards) are not
    refused, nor is an empty quilt (it needs no table)."""
    from bayespriv.networks.influence import InfluenceEngine

    bn, names, cards = random_network(200 + seed, 9, max_card=3, edge_prob=0.3)
    engine = InfluenceEngine(bn)
    rng = np.random.default_rng(seed)
    nodes = tuple(engine.nodes)
    node = nodes[int(rng.integers(len(nodes)))]
    rows = rng.random((60, len(nodes))) < rng.uniform(0.1, 0.9, size=(60, 1))
    rows[:, nodes.index(node)] = False
    sizes = [math.prod(cards[v] for v, on in zip(nodes, row) if on) * cards[node] for row in rows]
    for max_states in sorted(set(sizes))[::7] + [2, 1e9]:
        got = engine.oversized(node, rows, nodes, max_states)
        for k, row in enumerate(rows):
            quilt = [v for v, on in zip(nodes, row) if on]
            why = engine.refusal(node, quilt, max_states)
            size_refused = why is not None and why.startswith("joint table")
            assert (k in got) == size_refused == (bool(quilt) and sizes[k] > max_states), (k, max_states)
            if k in got:
                assert got[k] == why
    assert engine.oversized(node, rows, nodes, math.inf) == {}
