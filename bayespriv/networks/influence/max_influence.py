"""The max-influence entry points: :class:`InfluenceEngine` (one network or a family, cached) and
:func:`max_influence`.

The engine reads the networks through the parameter side
(:mod:`bayespriv.datamodels.parameters.network`: kinds, nodes, graphs, CPD tables) and hands each e(Q | i)
to the kernel of its kind: exact for discrete (:mod:`.discrete`) and linear Gaussian (:mod:`.linear_gaussian`)
networks, a numerical estimate for continuous densities (:mod:`.continuous`). For a family it keeps every
member's value and names the worst member. :func:`network_structure` and :func:`network_tables` are the
calibration's views of a :class:`~bayespriv.datamodels.parameters.ParameterNetwork` (its graph index and its
elimination tables), built once and kept with the network.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import check_mapping, check_positive_int, check_real, fail
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.datamodels.cpd_tables import read_cpd_tables
from bayespriv.datamodels.parameters.network import (
    ParameterNetwork,
    as_density,
    is_density,
    member_graph,
    member_nodes,
    network_kind,
    network_list,
)
from ..elimination import MAX_FACTOR, DiscreteTables, _float_product
from ..quilt_search import GraphIndex
from .continuous import _density_influence
from .discrete import _discrete_influence
from .linear_gaussian import _gaussian_influence
from .grid import _MIN_RESOLUTION, MAX_GRID_POINTS, _resolution
from .influence_result import MaxInfluence

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

__all__ = ["InfluenceEngine", "max_influence", "network_structure", "network_tables"]


def network_structure(network: ParameterNetwork) -> GraphIndex:
    """The sparse index of the network's DAG (parents, children, moral graph, Bayes-ball), built on first use
    and kept with the network: every calibration and quilt search of it shares it."""
    return network.derived("structure", lambda: GraphIndex(network.graph(0)))


def network_tables(network: ParameterNetwork, j: int = 0) -> DiscreteTables:
    """Member ``j``'s CPD tables (:meth:`~bayespriv.datamodels.parameters.ParameterNetwork.tables`) in the form
    of the fixed-order elimination, built on first use and kept with the network."""
    cpds = network.tables(j)
    return network.derived(("discrete_tables", int(j)), lambda: DiscreteTables(cpds, network.nodes))


def _check_bounds(bounds: Any, nodes: Sequence[Hashable]) -> dict[Hashable, tuple[float, float]]:
    if bounds is None:
        return {}
    check_mapping(bounds, "bounds")
    out = {}
    for key, value in bounds.items():
        if key not in nodes:
            raise fail("bounds", f"keyed by parameters {sorted(map(str, nodes))!r}", key)
        try:
            lo, hi = value
        except (TypeError, ValueError):
            raise fail(f"bounds[{key!r}]", "a pair (lo, hi)", value) from None
        lo, hi = check_real(f"bounds[{key!r}]", lo), check_real(f"bounds[{key!r}]", hi)
        if not lo < hi:
            raise fail(f"bounds[{key!r}]", "a pair (lo, hi) with lo < hi", value)
        out[key] = (lo, hi)
    return out



class InfluenceEngine:
    """Max-influences for one network or a family, with cached inference.

    Parameters
    ----------
    networks : network, sequence of networks, or ParameterNetwork
        pgmpy networks over the same nodes, PyMC models, or parameter
        densities (see :func:`max_influence`); several form a family Θ. A
        :class:`ParameterNetwork` gives its member networks.
    members : sequence, optional
        A label per network (default: its index), reported as the worst member.
    resolution, bounds, max_points
        Continuous parameters only: see :func:`max_influence`.
    max_factor : int
        Discrete networks: the largest intermediate factor (entries) the
        variable elimination may build (default 2^22); a quilt whose plan
        needs more is refused (:meth:`refusal` gives the reason).

    Notes
    -----
    For discrete networks, the CPDs are read once per member into NumPy
    arrays (:class:`~bayespriv.networks.elimination.DiscreteTables`); every
    e(Q | i) costs one joint query of Q ∪ {i} over the ancestral set of
    Q ∪ {i}, eliminated in the greedy min-weight order with ties broken by
    node position — the same order, hence the same bits, for any
    ``PYTHONHASHSEED`` (pgmpy's ``VariableElimination`` picks its order from
    set iteration). The plan, and its largest factor, is known before any
    number is multiplied. For a family, every member's e_θ is kept
    (:attr:`MaxInfluence.per_member`).
    """

    def __init__(
        self,
        networks: Any,
        members: Sequence[Any] | None = None,
        *,
        resolution: int | None = None,
        bounds: Mapping[Hashable, tuple[float, float]] | None = None,
        max_points: int = MAX_GRID_POINTS,
        max_factor: int = MAX_FACTOR,
    ) -> None:
        nets = [as_density(n) for n in network_list(networks)]
        kinds = {network_kind(n) for n in nets}
        if len(kinds) > 1:
            raise ValidationError(f"networks of a family must all be of one kind (discrete, linear Gaussian or "
                                  f"continuous densities); got {sorted(kinds)}")
        self.kind = kinds.pop()
        node_lists = [member_nodes(n) for n in nets]
        nodes0 = set(node_lists[0])
        for j, nodes in enumerate(node_lists[1:], start=1):
            if set(nodes) != nodes0:
                raise ValidationError(
                    f"networks of a family must have the same nodes; member {j} has {sorted(map(str, nodes))}, "
                    f"member 0 has {sorted(map(str, nodes0))}"
                )
        self.networks = tuple(nets)
        self._declared = networks if isinstance(networks, ParameterNetwork) else None
        self.members = tuple(range(len(nets))) if members is None else tuple(members)
        self.nodes = node_lists[0]
        self._position = MappingProxyType({v: k for k, v in enumerate(self.nodes)})
        if self.kind != "density":
            for name, value in (("resolution", resolution), ("bounds", bounds)):
                if value is not None:
                    raise fail(name, "None for pgmpy networks (their max-influence is exact, without a grid)", value)
        self.resolution = None if resolution is None else check_positive_int(resolution, "resolution", minimum=_MIN_RESOLUTION)
        self.bounds = _check_bounds(bounds, self.nodes)
        self.max_points = check_positive_int(max_points, "max_points", minimum=(2 * _MIN_RESOLUTION) ** 2)
        self.max_factor = check_positive_int(max_factor, "max_factor", minimum=2)
        self._tables: list[Any] = [None] * len(nets)
        self._plans: dict[tuple[Hashable, tuple], Any] = {}
        self._cache: dict[tuple[Hashable, frozenset], MaxInfluence] = {}
        self._columns_seen: tuple | None = None

    def _discrete_tables(self, j: int) -> Any:
        if self._tables[j] is None:
            declared = self._declared
            self._tables[j] = (network_tables(declared, j) if declared is not None
                               else DiscreteTables(read_cpd_tables(self.networks[j], self.nodes)))
        return self._tables[j]

    def plan(self, node: Hashable, quilt: Iterable[Hashable]) -> Any:
        """Discrete networks: the elimination plan of P(φ_Q, φ_i) (shared by the members: same graph)."""
        ordered = self._in_order(_quilt_nodes(quilt))
        key = (node, ordered)
        hit = self._plans.get(key)
        if hit is None:
            tables = self._discrete_tables(0)
            hit = tables.plan([tables.index[v] for v in (*ordered, node)])
            self._plans[key] = hit
        return hit

    def _in_order(self, members: Iterable[Hashable]) -> tuple:
        """The distinct ``members`` that are nodes, in the nodes' order (a lookup per member, no scan of all
        nodes: a query costs time in the size of its quilt, not of the network)."""
        position = self._position
        return tuple(sorted({v for v in members if v in position}, key=position.__getitem__))

    def refusal(self, node: Hashable, quilt: Iterable[Hashable], max_states: float = math.inf) -> str | None:
        """Why e(Q | i) would not be computed (table above ``max_states``, plan above ``max_factor``, grid too
        large), or None when it will be."""
        q = _quilt_nodes(quilt)
        if not q:
            return None
        if self.kind == "discrete":
            size = self._discrete_size(node, q)
            if size > max_states:
                return _states_refusal(size, max_states, sorted(map(str, q)))
            plan = self.plan(node, q)
            if plan.largest > self.max_factor:
                return self._discrete_tables(0).refusal(plan, self.max_factor)
            return None
        if not self.feasible(node, q, max_states):
            return (f"grid for Q = {sorted(map(str, q))} above max_points={self.max_points} at a resolution of at "
                    f"least {_MIN_RESOLUTION} per parameter")
        return None

    def oversized(self, node: Hashable, rows: np.ndarray, columns: Sequence[Hashable],
                  max_states: float) -> dict[int, str]:
        """The rows whose joint table P(φ_Q, φ_i) has more than ``max_states`` states, with :meth:`refusal`'s
        reason, found for every row at once (discrete networks; empty for other kinds).

        ``rows`` are quilts as bool masks over ``columns`` (nodes of the network). A row is reported only when
        its log₂ size clears log₂ ``max_states`` by a margin far above rounding; the rows near the bound are
        left to :meth:`refusal`, which multiplies the cards exactly, and an empty quilt (no table) is never
        refused. The reason is :meth:`refusal`'s, word for word, built without a set of the quilt's nodes: a
        refused quilt of a large network holds hundreds.
        """
        over = self.oversized_rows(node, rows, columns, max_states)
        return {k: self.states_refusal(node, rows[k], columns, max_states) for k in over}

    def oversized_rows(self, node: Hashable, rows: np.ndarray, columns: Sequence[Hashable],
                       max_states: float) -> list[int]:
        """The indices of :meth:`oversized`'s rows, without their reasons (:meth:`states_refusal` writes one
        when it is read: a whole-network search refuses tens of thousands of quilts of hundreds of nodes)."""
        if self.kind != "discrete" or not len(rows) or not math.isfinite(max_states):
            return []
        tables = self._discrete_tables(0)
        log_cards = self._columns(columns)[1]
        node_card = tables.card_list[tables.index[node]]
        log_size = rows @ log_cards + math.log2(node_card)
        return np.flatnonzero((log_size > math.log2(max_states) + 1e-6) & rows.any(axis=1)).tolist()

    def states_refusal(self, node: Hashable, row: np.ndarray, columns: Sequence[Hashable], max_states: float) -> str:
        """:meth:`refusal`'s reason for a quilt, given as a bool mask over ``columns``, whose joint table is above
        ``max_states`` (discrete networks)."""
        tables = self._discrete_tables(0)
        cards, _, by_name, shown = self._columns(columns)
        size = _float_product(cards[row].tolist() + [tables.card_list[tables.index[node]]])
        return _states_refusal(size, max_states, shown[row[by_name]].tolist())

    def _columns(self, columns: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For :meth:`oversized`: the cards of ``columns``, their log₂, the columns in the order of their names
        as strings, and those names in that order (kept for the last ``columns`` seen: a search passes the
        same node tuple for every node)."""
        kept = self._columns_seen
        if kept is None or kept[0] is not columns:
            tables = self._discrete_tables(0)
            cards = np.array([tables.card_list[tables.index[v]] for v in columns], dtype=np.int64)
            names = [str(v) for v in columns]
            by_name = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
            kept = (columns, cards, np.log2(cards), by_name, np.array(names, dtype=object)[by_name])
            self._columns_seen = kept
        return kept[1:]

    def graph(self, j: int = 0) -> Any:
        """The graph of member ``j``: the pgmpy network itself, or the density's ``graph``."""
        return member_graph(self.networks[j])

    def _grid_dims(self, node: Hashable, quilt: Iterable[Hashable]) -> int:
        import networkx as nx
        graph = self.graph(0)
        targets = set(_quilt_nodes(quilt)) | {node}
        return len(targets.union(*(nx.ancestors(graph, v) for v in targets)))

    def table_size(self, node: Hashable, quilt: Iterable[Hashable]) -> float:
        """States of the joint table P(φ_Q, φ_i) (discrete), grid points at 2G (densities), or ``inf``."""
        if self.kind == "discrete":
            return self._discrete_size(node, _quilt_nodes(quilt))
        if self.kind == "density":
            d = self._grid_dims(node, quilt)
            g = _resolution(d, self.resolution, self.max_points, check=False)
            return float(2 * g) ** d
        return math.inf

    def _discrete_size(self, node: Hashable, q: tuple) -> float:
        """:meth:`table_size` of a discrete network, ``q`` given as distinct nodes."""
        tables = self._discrete_tables(0)
        cards, index = tables.card_list, tables.index
        return _float_product([cards[index[v]] for v in (*q, node)])

    def feasible(self, node: Hashable, quilt: Iterable[Hashable], max_states: float = math.inf) -> bool:
        """Whether e(Q | i) can be computed: a joint table within ``max_states`` (discrete), a grid within
        ``max_points`` at a resolution of at least 8 per dimension (densities); always for Gaussian networks."""
        import networkx as nx
        if self.kind == "discrete":
            q = _quilt_nodes(quilt)
            return not q or (self.table_size(node, q) <= max_states and self.plan(node, q).largest <= self.max_factor)
        if self.kind == "density":
            q = set(_quilt_nodes(quilt))
            if not q or nx.is_d_separator(self.graph(0), {node}, q, set()):
                return True  # 0 without a grid
            d = self._grid_dims(node, quilt)
            g = _resolution(d, self.resolution, self.max_points, check=False)
            return g >= _MIN_RESOLUTION and (2 * g) ** d <= self.max_points
        return True

    def __call__(self, node: Hashable, quilt: Iterable[Hashable]) -> MaxInfluence:
        q = _quilt_nodes(quilt)
        if not _hashable(node) or node not in self._position:
            raise fail("node", f"a node of the network {sorted(map(str, self.nodes))}", node)
        unknown = [v for v in q if v not in self._position]
        if unknown:
            raise fail("quilt", f"nodes of the network {sorted(map(str, self.nodes))}", unknown)
        if node in q:
            raise fail("quilt", f"a set of nodes not containing the node {node!r}", sorted(map(str, q)))
        key = (node, frozenset(q))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        ordered = self._in_order(key[1])
        results = [self._one(j, node, ordered) for j in range(len(self.networks))]
        worst = max(range(len(results)), key=lambda j: results[j].value)
        best = results[worst]
        if len(results) > 1:
            assumptions = tuple(dict.fromkeys(a for r in results for a in r.assumptions))
            best = replace(best, reason=f"{best.reason}; worst of {len(results)} members: {self.members[worst]!r}",
                           member=self.members[worst], exact=all(r.exact for r in results),
                           margin=max(r.margin for r in results), assumptions=assumptions,
                           per_member=tuple(float(r.value) for r in results))
        self._cache[key] = best
        return best

    def _one(self, j: int, node: Hashable, quilt: tuple) -> MaxInfluence:
        if not quilt:
            return MaxInfluence(0.0, node, frozenset(), {}, None, "empty quilt: no parameter to influence")
        if self.kind == "gaussian":
            return _gaussian_influence(self.networks[j], node, quilt)
        if self.kind == "density":
            return _density_influence(self.networks[j], node, quilt, self.resolution, self.bounds, self.max_points)
        return _discrete_influence(self._discrete_tables(j), self.plan(node, quilt), node, quilt, self.max_factor)



def _states_refusal(size: float, max_states: float, names: list[str]) -> str:
    """Why a quilt is not scored: its joint table (``size`` states) is above ``max_states``; ``names``: the
    quilt's nodes as sorted strings."""
    return f"joint table P(φ_Q, φ_i) of {size:.0f} states above max_states={max_states:.0f} for Q = {names}"


def _hashable(value: Any) -> bool:
    """Whether ``value`` can be looked up in a mapping (an unhashable one is no node)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _quilt_nodes(quilt: Any) -> tuple:
    q = getattr(quilt, "quilt", quilt)  # a Quilt object gives its quilt set
    if isinstance(q, (str, bytes)) or not isinstance(q, Iterable):
        raise ParameterTypeError(f"quilt must be a collection of nodes (or a Quilt); got {type(q).__name__}")
    return tuple(dict.fromkeys(q))



def max_influence(
    network: Any,
    quilt: Iterable[Hashable] | Any,
    node: Hashable,
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    resolution: int | None = None,
    bounds: Mapping[Hashable, tuple[float, float]] | None = None,
    max_points: int = MAX_GRID_POINTS,
    max_factor: int = MAX_FACTOR,
) -> MaxInfluence:
    """Max-influence e_Θ(X_Q | X_i) of the parameter φ_i on the parameters φ_Q.

    Parameters
    ----------
    network : network, sequence of networks, ParameterNetwork, or callable
        A pgmpy ``DiscreteBayesianNetwork`` (parameters with finitely many
        values; exact) or ``LinearGaussianBayesianNetwork`` (exact: 0 or
        ``inf``) over the attributes' parameters; a PyMC model (or
        :class:`~bayespriv.PyMCDataModel`) whose scalar continuous free random
        variables are the parameters, or any object with ``names``, ``graph``,
        ``supports`` and ``log_density`` (:class:`ParameterDensityLike`, e.g.
        :func:`~bayespriv.datamodels.parameters.parameter_density` of a model) —
        a numerical estimate, see Notes; a sequence of them (a family Θ: the
        supremum, naming the worst member by its index); a
        :class:`ParameterNetwork` (its networks); or a callable
        ``builder(**params)`` returning one, with ``grid``. The nodes are read
        as parameters whatever the network: a bare record-level network gives
        a number with no privacy meaning (see :class:`ParameterNetwork`).
    quilt : collection of nodes, or a :class:`~bayespriv.networks.quilts.Quilt`
        The set Q (for a Quilt, its ``quilt`` set).
    node : hashable
        The sensitive parameter φ_i.
    grid : mapping, optional
        With a callable ``network``: parameter name -> list of values; every
        combination is a member of Θ, and the worst one is reported as a dict.
    resolution : int, optional
        Continuous parameters: G, the Gauss–Legendre nodes per parameter of
        the coarse grid (the fine grid has 2G). Default: as many as fit,
        ``(2G)^d <= max_points`` for the d parameters of Q ∪ {i} and their
        ancestors, at most 256.
    bounds : mapping, optional
        Continuous parameters: name -> ``(lo, hi)``, intersected with the
        parameter's support. For a parameter of Q or an integrated ancestor
        this **restricts Θ** to the prior conditioned on the bounds (e.g. makes
        a Normal(φ_i, 1) parameter a truncated normal); for φ_i it restricts the
        secrets to values in the bounds. Named in the reason and in the
        assumption ``"truncated_prior"``.
    max_points : int
        Continuous parameters: the largest grid, (2G)^d points (default
        4·10^6); a larger request is refused.
    max_factor : int
        Discrete networks: the largest intermediate factor of the variable
        elimination (entries, default 2^22), known before it runs (fixed
        min-weight order, ties by node position); a larger plan is refused.

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
        Unknown node, node inside the quilt, a joint table too large, an
        elimination plan above ``max_factor``, a grid above ``max_points``, bounds outside a parameter's support; for PyMC
        models, what :func:`~bayespriv.datamodels.parameters.parameter_density`
        refuses (non-scalar or discrete parameters, observed data or
        potentials on the parameters).

    Notes
    -----
    *Continuous parameters (numerical estimate).* Let A be Q ∪ {i} and their
    ancestors in ``graph``; every other parameter integrates out exactly (its
    conditional density integrates to 1), so only A is gridded, and
    R = A − Q − {i} is integrated.

    1. Each parameter's range (its support ∩ ``bounds``) is mapped from
       u ∈ (−1, 1): linearly when bounded, by u ↦ lo + s(1+u)/(1−u) (or the
       mirror, or c + s·u/(1−u²)) on unbounded sides, with (c, s) the density's
       ``typical`` (center, scale) when it has one (PyMC: median and IQR/1.349
       of seeded prior draws), else (0, 1). G Gauss–Legendre nodes per
       parameter, weights times the Jacobian.
    2. log p(φ_Q, φ_i) = logsumexp over the R nodes of log p(A) + log weights;
       log p(φ_i) = the same over the Q nodes; their difference is
       log p(φ_Q | φ_i) on the grid (Bayes' rule is implicit: Q may hold
       ancestors of i). Values a of φ_i with p(a) = 0 are not secrets.
    3. For every grid point x of φ_Q: max over a minus min over b (vectorised).
       A point with p(x | a) > 0 = p(x | b) gives ``inf`` (the support of φ_Q
       depends on φ_i).
    4. The same at 2G. Then *limits at the edges*: along points approaching
       each edge of each quilt parameter (finite edges: distances w·10^-j;
       infinite: c ± s·10^j), and of φ_i, the maximum log-ratio against the
       grid is followed; when its increments do not decay (logarithmic or
       faster growth — e.g. Normal(a, σ) vs Normal(b, σ), whose log-ratio is
       linear in φ_Q) the result is ``inf`` with the reason; otherwise the
       sequence's maximum plus its last increment is a candidate. Finally a
       bounded Powell search (SciPy) from the 2G maximiser, with the
       normaliser integrated at 2G.
    5. ``value`` = max(grid maxima, edge limits, local optimum) +
       |max at 2G − max at G| (the refinement ``margin``), with
       ``exact=False`` and the assumption ``"numerical_influence"``.

    *Limits.* This is an estimate, not a certified bound: a grid and a local
    search can miss a narrow peak of the ratio between nodes; the edge
    analysis is a numerical limit test (a ratio growing slower than
    logarithmically, e.g. like log log, may be reported finite, and one
    converging slower than geometrically may be reported ``inf``); the
    quadrature of p(φ_i) is inexact when the integrand is not smooth (e.g. a
    support depending on φ_i — that case is reported ``inf`` anyway). The
    margin covers grid error that halves or better from G to 2G. Every
    guarantee built on it carries ``"numerical_influence"`` for that reason.
    The cost is (2G)^d log-density evaluations plus the edge scans.

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
    options = {"resolution": resolution, "bounds": bounds, "max_points": max_points, "max_factor": max_factor}
    if callable(network) and not hasattr(network, "nodes") and not is_density(network):
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
        return InfluenceEngine(nets, members, **options)(node, quilt)
    if grid is not None:
        raise fail("grid", "None unless network is a callable builder", grid)
    return InfluenceEngine(network, **options)(node, quilt)

