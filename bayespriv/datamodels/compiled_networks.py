"""pgmpy networks compiled to NumPy: discrete networks (CPD arrays, ancestral sampling, exact joint
tables) and linear Gaussian networks (their joint Gaussian).

:func:`_compile_discrete` reads a ``DiscreteBayesianNetwork`` once into a
:class:`_DiscreteNet` that :class:`~bayespriv.datamodels.BayesNetDataModel`
samples and conditions with NumPy only; :func:`_compile_gaussian` computes the
joint ``N(μ, Σ)`` of a ``LinearGaussianBayesianNetwork``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import fail
from .network_elimination import EliminationPlan, Factor, eliminate, plan_elimination

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

#: Largest factor (entries) variable elimination builds, for conditioning on a dataset secret and for
#: closed-form moments and exact laws (~32 MB of float64).
MAX_JOINT_ENTRIES = 2**22


def _column_values(states: Sequence[Any]) -> np.ndarray:
    """State index -> column value: float for numeric states, bool for booleans, else str."""
    if all(isinstance(s, (bool, np.bool_)) for s in states):
        return np.array(states, dtype=bool)
    if all(isinstance(s, numbers.Real) and not isinstance(s, (bool, np.bool_)) for s in states):
        return np.array(states, dtype=np.float64)
    return np.array([str(s) for s in states], dtype=str)


@dataclass(frozen=True, eq=False)
class _DiscreteNet:
    """A compiled discrete network (nodes in topological order).

    ``probs[i]`` has axes ``(*parents[i], i)``: P(node i = last index | parents);
    ``cdfT[i]`` is its cumulative sum over the last axis, reshaped to
    ``(card_i, prod parent cards)`` (row j: P(node ≤ j | parent configuration),
    the last row exactly 1).
    """

    nodes: tuple[str, ...]
    parents: tuple[tuple[int, ...], ...]
    cards: tuple[int, ...]
    states: tuple[tuple[Any, ...], ...]
    probs: tuple[np.ndarray, ...]
    cdfT: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]
    cache: dict = field(default_factory=dict, repr=False)

    def index(self, node: str) -> int:
        return self.nodes.index(node)

    def closure(self, idx: Sequence[int]) -> list[int]:
        """The ancestral closure of ``idx``, in topological order."""
        todo, seen = list(idx), set(idx)
        while todo:
            for p in self.parents[todo.pop()]:
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        return sorted(seen)

    def ancestors(self, i: int) -> list[int]:
        return [j for j in self.closure([i]) if j != i]

    def factors(self, nodes: Sequence[int]) -> list[Factor]:
        """The CPDs of ``nodes`` as factors over (parents, node)."""
        return [Factor(self.parents[j] + (j,), self.probs[j]) for j in nodes]

    def joint(self, subset: Sequence[int]) -> np.ndarray:
        """Exact joint table over ``subset`` (axes in the order given).

        The product of the CPDs over the ancestral closure of ``subset`` with the closure's other
        nodes summed out by variable elimination (:mod:`.network_elimination`): its cost follows the
        network's width, not the size of the ancestral set.
        """
        closed = self.closure(subset)
        what = f"the joint law of {[self.nodes[j] for j in subset]!r}"
        return eliminate(self.factors(closed), list(subset), self.cards, MAX_JOINT_ENTRIES, what)

    def ancestor_plan(self, i: int) -> EliminationPlan:
        """Node ``i``'s ancestors eliminated from the product of their CPDs and i's (cached): what drawing them
        jointly given i's state needs (:func:`~.network_elimination.sample_eliminated`)."""
        key = ("ancestor plan", i)
        if key not in self.cache:
            closed = self.closure([i])
            what = f"the ancestors of {self.nodes[i]!r} given its state"
            self.cache[key] = plan_elimination(self.factors(closed), self.ancestors(i), self.cards,
                                               MAX_JOINT_ENTRIES, what)
        return self.cache[key]

    def marginal(self, i: int) -> np.ndarray:
        key = ("marginal", i)
        if key not in self.cache:
            p = self.joint([i])
            self.cache[key] = p / p.sum()
        return self.cache[key]

    def draw_node(self, i: int, idx: Mapping[int, np.ndarray], u: np.ndarray) -> np.ndarray:
        """State indices of node ``i`` given its parents' (inverse CDF, one uniform each).

        State j is drawn iff P(node < j | pa) ≤ u < P(node ≤ j | pa): count the
        cumulative probabilities at most ``u`` among the first ``card − 1``
        (the last is exactly 1 > u). The loop runs over the node's states, not
        over records.
        """
        cdfT = self.cdfT[i]
        if not self.parents[i]:
            return np.searchsorted(cdfT[:, 0], u, side="right").astype(np.intp)
        pidx = np.zeros(u.shape, dtype=np.intp)
        for p in self.parents[i]:
            pidx *= self.cards[p]
            pidx += idx[p]
        state = np.zeros(u.shape, dtype=np.intp)
        for j in range(self.cards[i] - 1):
            state += u >= cdfT[j][pidx]
        return state

    def forward(self, needed: Sequence[int], idx: dict[int, np.ndarray], shape: tuple[int, ...], rng: np.random.Generator) -> None:
        """Forward-sample every node of ``needed`` (topological order) not yet in ``idx``."""
        for i in needed:
            if i not in idx:
                idx[i] = self.draw_node(i, idx, rng.random(shape))


def _compile_discrete(network: Any) -> _DiscreteNet:
    import networkx as nx
    order = list(nx.topological_sort(network))
    pos = {v: i for i, v in enumerate(order)}
    cpds = {v: network.get_cpds(v) for v in order}
    states = {v: list(cpds[v].state_names[v]) for v in order}
    parents, probs, cdfT, values = [], [], [], []
    for v in order:
        cpd = cpds[v]
        ev = list(cpd.variables[1:])
        if set(ev) != set(network.get_parents(v)):
            raise fail("network", f"a network whose CPD of {v!r} is conditioned on its parents {list(network.get_parents(v))!r}", ev)
        for p in ev:
            if list(cpd.state_names[p]) != states[p]:
                raise fail("network", f"a network with the same state names of {p!r} in every CPD", cpd.state_names[p])
        table = np.moveaxis(np.asarray(cpd.values, dtype=float), 0, -1)
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            raise fail("network", f"a network with finite non-negative probabilities in the CPD of {v!r}", table)
        total = table.sum(axis=-1, keepdims=True)
        if np.any(np.abs(total - 1.0) > 1e-6):
            raise fail("network", f"a network whose CPD of {v!r} sums to 1 in every parent configuration", total.ravel())
        table = table / total
        card = table.shape[-1]
        cdf = np.cumsum(table.reshape(-1, card), axis=1)
        cdf = cdf / cdf[:, -1:]  # last column exactly 1
        parents.append(tuple(pos[p] for p in ev))
        probs.append(table)
        cdfT.append(np.ascontiguousarray(cdf.T))
        values.append(_column_values(states[v]))
    return _DiscreteNet(
        nodes=tuple(order),
        parents=tuple(parents),
        cards=tuple(len(states[v]) for v in order),
        states=tuple(tuple(states[v]) for v in order),
        probs=tuple(probs),
        cdfT=tuple(cdfT),
        values=tuple(values),
    )


def _match_state(states: Sequence[Any], wanted: Any, *, text: bool) -> list[int]:
    """Indices of the states equal to ``wanted`` (by value; or by text when ``text``)."""
    hits = []
    for j, s in enumerate(states):
        try:
            equal = bool(s == wanted)
        except Exception:  # noqa: BLE001 - exotic state objects
            equal = False
        if not equal and text and isinstance(wanted, str):
            equal = str(s) == wanted
            if not equal and isinstance(s, numbers.Real) and not isinstance(s, (bool, np.bool_)):
                try:
                    equal = float(wanted) == float(s)
                except ValueError:
                    equal = False
        if equal:
            hits.append(j)
    if not hits and not text and isinstance(wanted, str):
        hits = [j for j, s in enumerate(states) if str(s) == wanted]
    return hits


@dataclass(frozen=True, eq=False)
class _GaussianNet:
    """The joint Gaussian of a linear Gaussian network (columns in the model's order)."""

    columns: tuple[str, ...]
    mean: np.ndarray
    cov: np.ndarray


def _compile_gaussian(network: Any, columns: tuple[str, ...]) -> _GaussianNet:
    """Joint N(μ, Σ) of x = c + W x + D ε: μ = L c, Σ = L D² Lᵀ with L = (I − W)⁻¹.

    Computed here (not with pgmpy's ``to_joint_gaussian``, which rounds its
    result to 8 decimals); nodes in topological order make W strictly lower
    triangular.
    """
    import networkx as nx
    order = list(nx.topological_sort(network))
    pos = {v: i for i, v in enumerate(order)}
    m = len(order)
    c, W, d = np.zeros(m), np.zeros((m, m)), np.zeros(m)
    for v in order:
        cpd = network.get_cpds(v)
        if cpd is None:
            raise fail("network", "a network with a CPD for every node", f"no CPD for {v!r}")
        beta = np.asarray(cpd.beta, dtype=float).ravel()
        ev = list(cpd.evidence)
        if set(ev) != set(network.get_parents(v)) or beta.size != len(ev) + 1:
            raise fail(
                "network",
                f"a network whose CPD of {v!r} has an intercept and one coefficient per parent {list(network.get_parents(v))!r}",
                {"evidence": ev, "beta": beta.tolist()},
            )
        std = float(cpd.std)
        if not (np.all(np.isfinite(beta)) and math.isfinite(std) and std >= 0):
            raise fail("network", f"a network with finite coefficients and a standard deviation >= 0 for {v!r}", (beta.tolist(), std))
        i = pos[v]
        c[i] = beta[0]
        for p, b in zip(ev, beta[1:]):
            W[i, pos[p]] = b
        d[i] = std
    L = np.linalg.solve(np.eye(m) - W, np.eye(m))
    mu = L @ c
    LD = L * d
    cov = LD @ LD.T
    perm = [pos[col] for col in columns]
    cov = cov[np.ix_(perm, perm)]
    return _GaussianNet(columns, mu[perm], 0.5 * (cov + cov.T))
