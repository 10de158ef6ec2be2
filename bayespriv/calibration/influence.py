"""Max-influence of a sensitive attribute's parameter on a set of parameters.

Definition 7 of Zhang, Ohrimenko, Yang & Cummings, *Attribute Privacy*
(FAccT 2022, §5.1)::

    e_Θ(X_Q | X_i) = sup_{θ ∈ Θ} max_{φ_i^a, φ_i^b ∈ Φ_i} max_{φ_Q ∈ Φ_Q}
                     log P(φ_Q | φ_i^a, θ) / P(φ_Q | φ_i^b, θ)

computed over the *parameters* φ of the attributes (a Bayesian network whose
nodes are the φ's), not over the attributes' values.

Three cases are supported:

* a pgmpy :class:`~pgmpy.models.DiscreteBayesianNetwork` whose parameters
  take finitely many values — **exact**: one variable-elimination query gives
  the joint table P(φ_Q, φ_i) and the maximum runs over the whole table at
  once (no query per assignment);
* a pgmpy :class:`~pgmpy.models.LinearGaussianBayesianNetwork` — **exact**:
  given φ_i = a, φ_Q is Gaussian with a mean linear in a and a covariance that
  does not depend on a, so the log-ratio is linear in φ_Q. It is unbounded
  (``math.inf``, with the reason) unless φ_Q does not depend on φ_i at all
  (then 0);
* a family Θ: a sequence of networks, or ``builder`` + ``grid`` (all
  combinations), giving the supremum and naming the worst member.

Continuous parameters in PyMC models are not supported: :func:`max_influence`
refuses a PyMC model with a :class:`~bayespriv.errors.ValidationError` that
says why (see its Notes).

The result is a frozen :class:`MaxInfluence` (value, argmax assignment of φ_Q,
the pair of values of φ_i, the reason); ``float(result)`` is its value.

pgmpy is imported lazily here (this module only reads pgmpy networks the user
built; it never builds one).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from .._validation import check_mapping, fail
from ..errors import ParameterTypeError, ValidationError

__all__ = ["MaxInfluence", "max_influence", "InfluenceEngine"]

#: Largest joint table P(φ_Q, φ_i) the exact discrete computation builds.
MAX_JOINT_STATES = 2**22

#: Relative tolerance below which a Gaussian cross-covariance counts as zero.
_GAUSSIAN_ZERO = 1e-12


@dataclass(frozen=True)
class MaxInfluence:
    """The max-influence e_Θ(X_Q | X_i) and where it is attained.

    Attributes
    ----------
    value : float
        e ≥ 0, or ``math.inf`` (see ``reason``).
    node : hashable
        The sensitive parameter φ_i.
    quilt : frozenset
        The set Q.
    assignment : mapping or None
        The values of φ_Q attaining the maximum (None when there is no maximiser:
        empty Q, fewer than two possible values of φ_i, or a Gaussian network).
    pair : tuple or None
        ``(a, b)``: the values of φ_i in the numerator and the denominator.
    reason : str
        How the value came about (in particular why it is infinite or 0).
    member : any
        For a family: the worst member (its index in the sequence, or its
        parameters for ``builder`` + ``grid``); None for a single network.
    exact : bool
        True when the value is computed exactly (every case of this module).
    """

    value: float
    node: Hashable
    quilt: frozenset = field(default_factory=frozenset)
    assignment: Mapping[Hashable, Any] | None = None
    pair: tuple[Any, Any] | None = None
    reason: str = ""
    member: Any = None
    exact: bool = True

    def __float__(self) -> float:
        return float(self.value)

    @property
    def finite(self) -> bool:
        return math.isfinite(self.value)

    def __str__(self) -> str:
        return f"e({sorted(map(str, self.quilt))} | {self.node}) = {self.value:.6g} ({self.reason})"


# -- network kinds ------------------------------------------------------------------------------------------------
def _kind(network: Any) -> str:
    try:
        from pgmpy.models import DiscreteBayesianNetwork, LinearGaussianBayesianNetwork
    except ImportError:  # pragma: no cover - pgmpy is a dependency
        DiscreteBayesianNetwork = LinearGaussianBayesianNetwork = ()  # type: ignore[assignment]
    if isinstance(network, LinearGaussianBayesianNetwork):
        return "gaussian"
    if isinstance(network, DiscreteBayesianNetwork):
        return "discrete"
    module = type(network).__module__ or ""
    if module.startswith("pymc") or type(network).__name__ == "Model":
        raise ValidationError(
            "network must be a pgmpy DiscreteBayesianNetwork or LinearGaussianBayesianNetwork for an exact "
            "max-influence; got a PyMC model. Continuous parameters in PyMC models are not supported: a sound bound "
            "of sup log p(φ_Q | a) / p(φ_Q | b) needs the conditional densities' ratio over the whole support, which "
            "a grid cannot certify. Discretise the parameters (a DiscreteBayesianNetwork over their values) or use a "
            "LinearGaussianBayesianNetwork"
        )
    raise ParameterTypeError(
        "network must be a pgmpy DiscreteBayesianNetwork or LinearGaussianBayesianNetwork "
        f"(or a sequence of them); got {type(network).__name__}"
    )


class InfluenceEngine:
    """Exact max-influences for one network or a family, with cached inference.

    Parameters
    ----------
    networks : network or sequence of networks
        pgmpy networks over the same nodes (a family Θ).
    members : sequence, optional
        A label per network (default: its index), reported as the worst member.

    Notes
    -----
    For discrete networks, one :class:`pgmpy.inference.VariableElimination`
    object is built per network and reused; every e(Q | i) costs one joint
    query of Q ∪ {i} (pgmpy prunes the barren nodes first).
    """

    def __init__(self, networks: Any, members: Sequence[Any] | None = None) -> None:
        nets = _as_network_list(networks)
        kinds = {_kind(n) for n in nets}
        if len(kinds) > 1:
            raise ValidationError(f"networks of a family must all be discrete or all linear Gaussian; got {sorted(kinds)}")
        nodes0 = set(nets[0].nodes())
        for j, net in enumerate(nets[1:], start=1):
            if set(net.nodes()) != nodes0:
                raise ValidationError(
                    f"networks of a family must have the same nodes; member {j} has {sorted(map(str, net.nodes()))}, "
                    f"member 0 has {sorted(map(str, nodes0))}"
                )
        self.networks = tuple(nets)
        self.kind = kinds.pop()
        self.members = tuple(range(len(nets))) if members is None else tuple(members)
        self.nodes = tuple(nets[0].nodes())
        self._engines: list[Any] = [None] * len(nets)
        self._cache: dict[tuple[Hashable, frozenset], MaxInfluence] = {}

    def table_size(self, node: Hashable, quilt: Iterable[Hashable]) -> float:
        """States of the joint table P(φ_Q, φ_i) (``inf`` for continuous parameters)."""
        if self.kind != "discrete":
            return math.inf
        net = self.networks[0]
        return float(np.prod([float(net.get_cardinality(v)) for v in (*_quilt_nodes(quilt), node)]))

    def __call__(self, node: Hashable, quilt: Iterable[Hashable]) -> MaxInfluence:
        q = _quilt_nodes(quilt)
        if node not in self.nodes:
            raise fail("node", f"a node of the network {sorted(map(str, self.nodes))}", node)
        unknown = [v for v in q if v not in self.nodes]
        if unknown:
            raise fail("quilt", f"nodes of the network {sorted(map(str, self.nodes))}", unknown)
        if node in q:
            raise fail("quilt", f"a set of nodes not containing the node {node!r}", sorted(map(str, q)))
        key = (node, frozenset(q))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        ordered = tuple(v for v in self.nodes if v in key[1])
        results = [self._one(j, node, ordered) for j in range(len(self.networks))]
        worst = max(range(len(results)), key=lambda j: results[j].value)
        best = results[worst]
        if len(results) > 1:
            best = MaxInfluence(best.value, best.node, best.quilt, best.assignment, best.pair,
                                f"{best.reason}; worst of {len(results)} members: {self.members[worst]!r}",
                                self.members[worst], best.exact)
        self._cache[key] = best
        return best

    def _one(self, j: int, node: Hashable, quilt: tuple) -> MaxInfluence:
        if not quilt:
            return MaxInfluence(0.0, node, frozenset(), {}, None, "empty quilt: no parameter to influence")
        if self.kind == "gaussian":
            return _gaussian_influence(self.networks[j], node, quilt)
        if self._engines[j] is None:
            with warnings.catch_warnings():  # pgmpy's own deprecation notice about its estimators package
                warnings.filterwarnings("ignore", category=FutureWarning, module=r"pgmpy\..*")
                from pgmpy.inference import VariableElimination

            self._engines[j] = VariableElimination(self.networks[j])
        return _discrete_influence(self._engines[j], self.networks[j], node, quilt)


def _as_network_list(networks: Any) -> list[Any]:
    if isinstance(networks, (list, tuple)):
        if not networks:
            raise fail("network", "a network or a non-empty sequence of networks", networks)
        return list(networks)
    return [networks]


def _quilt_nodes(quilt: Any) -> tuple:
    q = getattr(quilt, "quilt", quilt)  # a Quilt object gives its quilt set
    if isinstance(q, (str, bytes)) or not isinstance(q, Iterable):
        raise ParameterTypeError(f"quilt must be a collection of nodes (or a Quilt); got {type(q).__name__}")
    return tuple(dict.fromkeys(q))


def _discrete_influence(engine: Any, network: Any, node: Hashable, quilt: tuple) -> MaxInfluence:
    """e(Q | i) of one discrete network from the joint table P(φ_Q, φ_i)."""
    cards = {v: int(network.get_cardinality(v)) for v in (*quilt, node)}
    size = int(np.prod([cards[v] for v in (*quilt, node)], dtype=float))
    if size > MAX_JOINT_STATES:
        raise ValidationError(
            f"quilt must have a joint table P(φ_Q, φ_i) of at most {MAX_JOINT_STATES} states for the exact "
            f"max-influence; got {size} states for Q = {sorted(map(str, quilt))}"
        )
    factor = engine.query(list(quilt) + [node], joint=True, show_progress=False)
    variables = list(factor.variables)
    perm = [variables.index(v) for v in quilt] + [variables.index(node)]
    joint = np.transpose(np.asarray(factor.values, dtype=float), perm).reshape(-1, cards[node])
    states = factor.state_names
    p_node = joint.sum(axis=0)
    possible = np.flatnonzero(p_node > 0)
    frozen_q = frozenset(quilt)
    if possible.size < 2:
        return MaxInfluence(0.0, node, frozen_q, None, None,
                            f"φ_{node} has fewer than two values of positive probability: no pair of secrets")
    cond = joint[:, possible] / p_node[possible]  # P(φ_Q = x | φ_i = a), rows x, columns a
    positive = cond > 0
    any_pos, all_pos = positive.any(axis=1), positive.all(axis=1)
    mixed = np.flatnonzero(any_pos & ~all_pos)

    def assignment(row: int) -> dict:
        idx = np.unravel_index(row, [cards[v] for v in quilt])
        return {v: states[v][int(k)] for v, k in zip(quilt, idx)}

    if mixed.size:
        row = int(mixed[0])
        a = int(possible[np.flatnonzero(positive[row])[0]])
        b = int(possible[np.flatnonzero(~positive[row])[0]])
        pair = (states[node][a], states[node][b])
        return MaxInfluence(math.inf, node, frozen_q, assignment(row), pair,
                            f"P(φ_Q = x | φ_{node} = {pair[1]!r}) = 0 < P(φ_Q = x | φ_{node} = {pair[0]!r}): "
                            "the ratio is unbounded")
    rows = np.flatnonzero(all_pos)
    logc = np.log(cond[rows])
    spread = logc.max(axis=1) - logc.min(axis=1)
    r = int(np.argmax(spread))
    a = int(possible[int(np.argmax(logc[r]))])
    b = int(possible[int(np.argmin(logc[r]))])
    value = float(spread[r])
    reason = "exact (variable elimination over the joint table)" if value > 0 else "φ_Q does not depend on φ_i"
    return MaxInfluence(value, node, frozen_q, assignment(int(rows[r])), (states[node][a], states[node][b]), reason)


def _gaussian_influence(network: Any, node: Hashable, quilt: tuple) -> MaxInfluence:
    """e(Q | i) of a linear Gaussian network: 0 if φ_Q ⊥ φ_i, else unbounded.

    Given φ_i = a, φ_Q ~ N(μ_Q + Σ_Qi (a − μ_i)/Σ_ii, Σ_Q|i), so
    log p(x | a) − log p(x | b) = (a − b) cᵀ Σ_Q|i⁻¹ (x − ·) with c = Σ_Qi/Σ_ii:
    linear in x, hence unbounded over ℝ^|Q| unless c = 0.
    """
    order = list(nx.topological_sort(network))
    index = {v: j for j, v in enumerate(order)}
    b = np.zeros((len(order), len(order)))
    omega = np.zeros(len(order))
    for v in order:  # the joint covariance (I − B)^-T Ω (I − B)^-1, unrounded (pgmpy rounds to 8 decimals)
        cpd = network.get_cpds(node=v)
        for j, parent in enumerate(cpd.evidence):
            b[index[parent], index[v]] = cpd.beta[j + 1]
        omega[index[v]] = float(cpd.std) ** 2
    inv = np.linalg.inv(np.eye(len(order)) - b)
    cov = inv.T @ (omega[:, None] * inv)
    qi = [order.index(v) for v in quilt]
    ii = order.index(node)
    c = np.asarray(cov, dtype=float)[qi, ii]
    scale = math.sqrt(float(cov[ii, ii]) * float(np.max(np.diag(cov)[qi]))) if cov[ii, ii] > 0 else 0.0
    frozen_q = frozenset(quilt)
    if cov[ii, ii] <= 0:
        return MaxInfluence(0.0, node, frozen_q, None, None, f"φ_{node} is deterministic: no pair of secrets")
    if np.all(np.abs(c) <= _GAUSSIAN_ZERO * max(scale, 1e-300)):
        return MaxInfluence(0.0, node, frozen_q, None, None, "φ_Q is independent of φ_i (zero cross-covariance)")
    return MaxInfluence(math.inf, node, frozen_q, None, None,
                        "linear Gaussian: the conditional mean of φ_Q moves with φ_i over an unbounded support, "
                        "so the log density ratio is unbounded")


# -- public entry point --------------------------------------------------------------------------------------------
def max_influence(
    network: Any,
    quilt: Iterable[Hashable] | Any,
    node: Hashable,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
) -> MaxInfluence:
    """Max-influence e_Θ(X_Q | X_i) of the parameter φ_i on the parameters φ_Q.

    Parameters
    ----------
    network : network, sequence of networks, or callable
        A pgmpy ``DiscreteBayesianNetwork`` (parameters with finitely many
        values; exact) or ``LinearGaussianBayesianNetwork`` (exact: 0 or
        ``inf``) over the attributes' parameters; a sequence of them (a family
        Θ: the supremum, naming the worst member by its index); or a callable
        ``builder(**params)`` returning a network, with ``grid``.
    quilt : collection of nodes, or a :class:`~bayespriv.calibration.quilts.Quilt`
        The set Q (for a Quilt, its ``quilt`` set).
    node : hashable
        The sensitive parameter φ_i.
    grid : mapping, optional
        With a callable ``network``: parameter name -> list of values; every
        combination is a member of Θ, and the worst one is reported as a dict.

    Returns
    -------
    MaxInfluence
        ``float(result)`` is the value. Pairs (a, b) run over the values of
        φ_i with positive probability (Pufferfish only constrains secrets of
        positive probability); assignments x with P(x | a) = P(x | b) = 0 are
        impossible under both and skipped; P(x | b) = 0 < P(x | a) gives
        ``math.inf`` with that reason.

    Raises
    ------
    ValidationError
        Unknown node, node inside the quilt, a joint table too large, or a
        PyMC model (continuous parameters are not supported — see below).

    Notes
    -----
    *PyMC models.* For continuous parameters an estimate on a grid can miss
    where the density ratio is largest (near the edges of the support, or
    between grid points) and gives no bound that holds with a stated
    probability, so a PyMC model is refused with an explanation instead of
    returning a number a guarantee could not rest on. Discretise the
    parameters' prior into a ``DiscreteBayesianNetwork`` (exact), or use a
    linear Gaussian network.

    Examples
    --------
    >>> from pgmpy.models import DiscreteBayesianNetwork
    >>> from pgmpy.factors.discrete import TabularCPD
    >>> bn = DiscreteBayesianNetwork([("i", "q")])
    >>> bn.add_cpds(TabularCPD("i", 2, [[0.5], [0.5]]),
    ...             TabularCPD("q", 2, [[0.8, 0.4], [0.2, 0.6]], evidence=["i"], evidence_card=[2]))
    >>> round(float(max_influence(bn, {"q"}, "i")), 6)  # log(0.6 / 0.2)
    1.098612
    """
    if callable(network) and not hasattr(network, "nodes"):
        grid = check_mapping(grid, "grid") if grid is not None else None
        if not grid:
            raise fail("grid", "a non-empty mapping of parameter name -> values when network is a callable", grid)
        names = list(grid)
        members, nets = [], []
        for combo in itertools.product(*(list(grid[k]) for k in names)):
            params = dict(zip(names, combo))
            members.append(params)
            nets.append(network(**params))
        if not nets:
            raise fail("grid", "a mapping whose value lists are non-empty", grid)
        return InfluenceEngine(nets, members)(node, quilt)
    if grid is not None:
        raise fail("grid", "None unless network is a callable builder", grid)
    return InfluenceEngine(network)(node, quilt)
