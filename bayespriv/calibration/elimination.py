"""Exact joint tables of a discrete Bayesian network by variable elimination with a fixed order.

pgmpy's ``VariableElimination`` chooses its elimination order from set
iteration, which depends on ``PYTHONHASHSEED``: the same query took 2 s or
70 s, and floating-point results may differ in their last bits. Here:

* the query P(X_T) keeps only the ancestral set of T (every other node is
  barren: it sums to 1);
* the order is the greedy *min-weight* order (eliminate next the variable
  whose bucket — the product of the factors that mention it — has the fewest
  entries), ties broken by the variables' **positions** in the network (never
  by hashes), computed symbolically *before* any number is multiplied;
* that plan gives the largest intermediate factor exactly, so a query whose
  plan exceeds ``max_factor`` entries is refused with the reason, before it
  runs;
* each bucket is one :func:`numpy.einsum` call over the CPD arrays.

The result is bit-for-bit the same for any hash seed (same order, same
arithmetic).
"""

from __future__ import annotations

import string
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ValidationError

__all__ = ["DiscreteTables", "EliminationPlan", "MAX_FACTOR"]

#: Default bound on the largest intermediate factor (entries) of one query.
MAX_FACTOR = 2**22
_LETTERS = string.ascii_letters  # einsum labels: at most 52 distinct variables in one bucket


@dataclass(frozen=True)
class EliminationPlan:
    """A symbolic elimination for the joint table of ``targets``.

    Attributes
    ----------
    targets : tuple of int
        Positions of the query variables, in the order of the result's axes.
    factors : tuple of int
        Positions of the nodes whose CPDs enter (the ancestral set of the targets).
    order : tuple of int
        Positions eliminated, in order.
    largest : int
        Entries of the largest factor built (a bucket's product, or the final product over the targets).
    """

    targets: tuple[int, ...]
    factors: tuple[int, ...]
    order: tuple[int, ...]
    largest: int


class DiscreteTables:
    """The CPDs of a pgmpy ``DiscreteBayesianNetwork`` as NumPy arrays indexed by node positions.

    Parameters
    ----------
    network : pgmpy.models.DiscreteBayesianNetwork
    nodes : sequence, optional
        The node order (positions); default ``network.nodes()``.

    Notes
    -----
    The states of a node are those of its own CPD; a child's CPD listing a
    parent's states in another order is permuted to the parent's order.
    """

    def __init__(self, network: Any, nodes: Sequence[Hashable] | None = None) -> None:
        self.nodes = tuple(network.nodes()) if nodes is None else tuple(nodes)
        self.index = {v: k for k, v in enumerate(self.nodes)}
        n = len(self.nodes)
        cpds = {v: network.get_cpds(v) for v in self.nodes}
        self.states = tuple(tuple(cpds[v].state_names[v]) for v in self.nodes)
        self.cards = np.array([len(s) for s in self.states], dtype=np.int64)
        scopes, tables = [], []
        for v in self.nodes:
            cpd = cpds[v]
            variables = list(cpd.variables)
            values = np.asarray(cpd.values, dtype=np.float64)
            for ax, u in enumerate(variables):  # align every axis with the node's own state order
                own = self.states[self.index[u]]
                listed = tuple(cpd.state_names[u])
                if listed != own:
                    values = np.take(values, [listed.index(s) for s in own], axis=ax)
            scopes.append(tuple(self.index[u] for u in variables))
            tables.append(values)
        self.scopes = tuple(scopes)
        self.tables = tuple(tables)
        parent = np.zeros((n, n), dtype=bool)
        for k, scope in enumerate(scopes):
            parent[list(scope[1:]), k] = True
        # anc[v, u]: u is v or an ancestor of v (closure by repeated squaring).
        anc = np.eye(n, dtype=bool) | parent.T
        while True:
            nxt = anc | ((anc.astype(np.float32) @ anc.astype(np.float32)) > 0)
            if np.array_equal(nxt, anc):
                break
            anc = nxt
        self.ancestors = anc

    def plan(self, targets: Sequence[int]) -> EliminationPlan:
        """The greedy min-weight plan for P(X_targets), ties broken by position, and its largest factor."""
        t = tuple(int(x) for x in targets)
        keep = self.ancestors[list(t)].any(axis=0)
        factors = tuple(int(k) for k in np.flatnonzero(keep))
        cards = self.cards
        tset = set(t)
        neighbours: dict[int, set[int]] = {v: set() for v in factors}
        for k in factors:
            scope = self.scopes[k]
            for v in scope:
                neighbours[v].update(scope)
        for v in factors:
            neighbours[v].discard(v)
        remaining = [v for v in factors if v not in tset]
        weight = {v: _size(cards, neighbours[v]) * int(cards[v]) for v in remaining}
        order, largest = [], 0
        while remaining:
            x = min(remaining, key=lambda v: (weight[v], v))
            remaining.remove(x)
            order.append(x)
            largest = max(largest, weight[x])
            nb = neighbours.pop(x)
            for y in nb:
                neighbours[y] |= nb
                neighbours[y].discard(y)
                neighbours[y].discard(x)
                if y in weight:
                    weight[y] = _size(cards, neighbours[y]) * int(cards[y])
            del weight[x]
        largest = max(largest, _size(cards, tset))
        return EliminationPlan(t, factors, tuple(order), int(largest))

    def joint(self, plan: EliminationPlan, max_factor: int = MAX_FACTOR) -> np.ndarray:
        """P(X_targets) with axes in ``plan.targets`` order (refused beyond ``max_factor`` entries)."""
        if plan.largest > max_factor:
            raise ValidationError(self.refusal(plan, max_factor))
        pool: list[tuple[tuple[int, ...], np.ndarray]] = [(self.scopes[k], self.tables[k]) for k in plan.factors]
        for x in plan.order:
            bucket = [f for f in pool if x in f[0]]
            pool = [f for f in pool if x not in f[0]]
            union = sorted(set().union(*(f[0] for f in bucket)))
            out = tuple(v for v in union if v != x)
            pool.append((out, _contract(bucket, out)))
        return _contract(pool, plan.targets)

    def refusal(self, plan: EliminationPlan, max_factor: int) -> str:
        """The reason a plan is refused: its largest factor against the bound."""
        shown = [str(self.nodes[v]) for v in plan.targets]
        return (f"max_factor must bound the largest intermediate factor of the variable elimination for "
                f"P({', '.join(shown)}); got max_factor={max_factor} and a plan (min-weight order over "
                f"{len(plan.factors)} ancestral nodes) whose largest factor has {plan.largest} entries")


def _size(cards: np.ndarray, scope: Any) -> int:
    out = 1
    for v in scope:
        out *= int(cards[v])
    return out


def _contract(factors: list[tuple[tuple[int, ...], np.ndarray]], out: tuple[int, ...]) -> np.ndarray:
    """Product of ``factors`` summed onto the variables ``out`` (one einsum, local labels)."""
    variables = sorted(set().union(*(f[0] for f in factors), out))
    if len(variables) > len(_LETTERS):
        raise ValidationError(f"a bucket of the variable elimination must involve at most {len(_LETTERS)} variables; "
                              f"got {len(variables)}")
    label = {v: _LETTERS[j] for j, v in enumerate(variables)}
    spec = ",".join("".join(label[v] for v in scope) for scope, _ in factors)
    spec += "->" + "".join(label[v] for v in out)
    return np.einsum(spec, *(values for _, values in factors))
