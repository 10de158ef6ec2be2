"""Independent references for Bayesian-network tests (shared by the quilt and influence tests).

Written without the library's code paths: CPD products by enumeration,
max-influence by looping over assignments, d-separation by Lauritzen's
moralisation criterion (not networkx's d-separation).
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np


def tabular(node, card, table, parents=(), cards=()):
    from pgmpy.factors.discrete import TabularCPD

    return TabularCPD(node, card, np.asarray(table, dtype=float), evidence=list(parents) or None,
                      evidence_card=list(cards) or None)


def random_network(seed: int, n: int, *, max_card: int = 3, edge_prob: float = 0.45, concentration: float = 1.0,
                   zero_prob: float = 0.0):
    """A random discrete network v0..v{n-1} (edges only forward), Dirichlet CPD columns;
    with ``zero_prob`` some probabilities are set to 0."""
    from pgmpy.models import DiscreteBayesianNetwork

    rng = np.random.default_rng(seed)
    names = [f"v{i}" for i in range(n)]
    cards = {v: int(rng.integers(2, max_card + 1)) for v in names}
    edges = [(names[a], names[b]) for a in range(n) for b in range(a + 1, n) if rng.random() < edge_prob]
    bn = DiscreteBayesianNetwork(edges)
    bn.add_nodes_from(names)
    for v in names:
        parents = sorted(bn.get_parents(v), key=names.index)
        ncol = int(np.prod([cards[p] for p in parents]))
        cols = rng.dirichlet(np.full(cards[v], concentration), size=ncol)
        if zero_prob:
            cols = np.where(rng.random(cols.shape) < zero_prob, 0.0, cols)
            cols[cols.sum(axis=1) == 0, 0] = 1.0
            cols /= cols.sum(axis=1, keepdims=True)
        bn.add_cpds(tabular(v, cards[v], cols.T, parents, [cards[p] for p in parents]))
    bn.check_model()
    return bn, names, cards


def joint_table(bn, names, cards) -> np.ndarray:
    """P(all nodes) as an array indexed in the order of ``names``: product of CPDs over all assignments."""
    grids = np.indices([cards[v] for v in names]).reshape(len(names), -1).T
    p = np.ones(len(grids))
    for v in names:
        cpd = bn.get_cpds(v)
        table = cpd.get_values()  # rows: states of v; columns: parent configurations (last parent fastest)
        col = np.zeros(len(grids), dtype=int)
        for par in cpd.variables[1:]:
            col = col * cards[par] + grids[:, names.index(par)]
        p *= table[grids[:, names.index(v)], col]
    return p.reshape([cards[v] for v in names])


def influence_brute_force(joint: np.ndarray, names, quilt, node) -> float:
    """max over x_Q and pairs (a, b) of log P(x_Q | a)/P(x_Q | b), looping over assignments."""
    axes = [names.index(v) for v in quilt] + [names.index(node)]
    other = tuple(j for j in range(len(names)) if j not in axes)
    marg = joint.sum(axis=other) if other else joint
    order = sorted(axes)
    marg = np.transpose(marg, [order.index(a) for a in axes])
    flat = marg.reshape(-1, marg.shape[-1])
    p_node = flat.sum(axis=0)
    best = 0.0
    for a, b in itertools.permutations(range(flat.shape[1]), 2):
        if p_node[a] == 0 or p_node[b] == 0:
            continue
        for x in range(flat.shape[0]):
            pa, pb = flat[x, a] / p_node[a], flat[x, b] / p_node[b]
            if pa == 0:  # ratio 0 (or 0/0: impossible under both): never the maximum
                continue
            best = max(best, math.inf if pb == 0 else math.log(pa / pb))
    return best


def d_separated(edges, nodes, x, ys, zs) -> bool:
    """Lauritzen et al. (1990): moralise the ancestral graph of {x} ∪ Y ∪ Z, delete Z, test reachability."""
    ys, zs = set(ys), set(zs)
    parents = {v: [u for u, w in edges if w == v] for v in nodes}
    keep, stack = {x} | ys | zs, [x, *ys, *zs]
    while stack:
        for p in parents[stack.pop()]:
            if p not in keep:
                keep.add(p)
                stack.append(p)
    nbr = {v: set() for v in keep}
    for v in keep:
        for p in parents[v]:
            nbr[v].add(p)
            nbr[p].add(v)
        for p, q in itertools.combinations(parents[v], 2):
            nbr[p].add(q)
            nbr[q].add(p)
    seen, stack = {x}, [x]
    while stack:
        for w in nbr[stack.pop()]:
            if w not in seen and w not in zs:
                seen.add(w)
                stack.append(w)
    return not (seen & ys)


def random_dag(rng: np.random.Generator, n: int, p: float) -> nx.DiGraph:
    """A random DAG over x0 … x{n-1}: each pair joined with probability ``p``, in a random topological order."""
    order = rng.permutation(n)
    g = nx.DiGraph()
    g.add_nodes_from(f"x{i}" for i in range(n))
    for a in range(n):
        for b in range(a + 1, n):
            if rng.random() < p:
                g.add_edge(f"x{order[a]}", f"x{order[b]}")
    return g
