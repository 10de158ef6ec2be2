"""Max-influence of a sensitive attribute's parameter on a set of parameters.

Definition 7 of Zhang, Ohrimenko, Yang & Cummings, *Attribute Privacy*
(FAccT 2022, §5.1)::

    e_Θ(X_Q | X_i) = sup_{θ ∈ Θ} max_{φ_i^a, φ_i^b ∈ Φ_i} max_{φ_Q ∈ Φ_Q}
                     log P(φ_Q | φ_i^a, θ) / P(φ_Q | φ_i^b, θ)

computed over the *parameters* φ of the attributes (a Bayesian network whose
nodes are the φ's), not over the attributes' values.

Four cases are supported:

* a pgmpy :class:`~pgmpy.models.DiscreteBayesianNetwork` whose parameters
  take finitely many values — **exact**: one variable-elimination query gives
  the joint table P(φ_Q, φ_i) and the maximum runs over the whole table at
  once (no query per assignment);
* a pgmpy :class:`~pgmpy.models.LinearGaussianBayesianNetwork` — **exact**:
  given φ_i = a, φ_Q is Gaussian with a mean linear in a and a covariance that
  does not depend on a, so the log-ratio is linear in φ_Q. It is unbounded
  (``math.inf``, with the reason) unless φ_Q does not depend on φ_i at all
  (then 0);
* continuous parameters with a joint density — a PyMC model (turned into a
  :class:`~bayespriv.datamodels.parameters.ParameterDensity` by
  :func:`~bayespriv.datamodels.parameters.parameter_density`) or any object with
  ``names``, ``graph``, ``supports`` and ``log_density`` (see
  :func:`max_influence`) — a **numerical estimate** on quadrature grids, with
  a refinement margin, and ``math.inf`` with the reason when a limit analysis
  shows the ratio unbounded. Its result has ``exact=False`` and the assumption
  ``"numerical_influence"``;
* a family Θ: a sequence of networks / densities / PyMC models, or
  ``builder`` + ``grid`` (all combinations), giving the supremum and naming
  the worst member.

:class:`ParameterNetwork` wraps any of these with the record column(s) each
parameter governs: it is what :func:`~bayespriv.calibration.quilts.calibrate_quilts`
takes, and it refuses a discrete network whose states are record values (a
record-level network such as "asia", where every record draws every node).
:func:`max_influence` and :class:`InfluenceEngine` accept it as well as the
bare network: e is a property of the network alone.

The result is a frozen :class:`MaxInfluence` (value, argmax assignment of φ_Q,
the pair of values of φ_i, the reason); ``float(result)`` is its value.

pgmpy is imported lazily here (this module only reads pgmpy networks the user
built; it never builds one). PyMC is never imported here: a PyMC model is
handed to :mod:`bayespriv.datamodels.pymc` (imported lazily, inside a function).
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import networkx as nx
import numpy as np

from .._validation import check_mapping, check_positive_int, check_real, described, fail
from ..errors import ParameterTypeError, ValidationError
from ..datamodels.cpd_tables import cpds_by_node, network_states
from .elimination import MAX_FACTOR, DiscreteTables
from .quilt_search import GraphIndex

__all__ = [
    "MaxInfluence",
    "max_influence",
    "InfluenceEngine",
    "ParameterDensityLike",
    "ParameterNetwork",
    "MAX_GRID_POINTS",
]

#: Tables with at least this many rows have their column sums accumulated row after row (same bits).
_TALL = 1024
#: Largest joint table P(φ_Q, φ_i) the exact discrete computation builds.
MAX_JOINT_STATES = 2**22

#: Relative tolerance below which a Gaussian cross-covariance counts as zero.
_GAUSSIAN_ZERO = 1e-12

#: Largest tensor grid (points at the finer resolution 2G) for continuous parameters.
MAX_GRID_POINTS = 4_000_000
#: Cap of the automatic resolution G per dimension, and the least resolution accepted.
_AUTO_RESOLUTION = 256
_MIN_RESOLUTION = 8


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
        empty Q, fewer than two possible values of φ_i, a Gaussian network, or
        — continuous parameters — a supremum reached only as a limit at an
        edge of a support).
    pair : tuple or None
        ``(a, b)``: the values of φ_i in the numerator and the denominator.
    reason : str
        How the value came about (in particular why it is infinite or 0).
    member : any
        For a family: the worst member (its index in the sequence, or its
        parameters for ``builder`` + ``grid``); None for a single network.
    exact : bool
        True when the value is computed exactly (discrete and linear Gaussian
        networks, and 0 for parameters d-separated from φ_i); False for a
        numerical estimate (continuous parameters).
    margin : float
        For a numerical estimate: the refinement margin already added to
        ``value`` (|grid maximum at 2G − grid maximum at G|); 0 otherwise.
    assumptions : tuple of str
        What a guarantee resting on this value assumes beyond the network:
        ``"numerical_influence"`` for a numerical estimate, plus
        ``"truncated_prior"`` when user ``bounds`` cut a parameter's support
        (Θ restricted to the bounds).
    per_member : tuple of float or None
        For a family: e_θ(X_Q | X_i) of every member θ, in the family's order
        (``value`` is their maximum); None for a single network. The quilt
        mechanisms use it to choose the best quilt per θ.
    """

    value: float
    node: Hashable
    quilt: frozenset = field(default_factory=frozenset)
    assignment: Mapping[Hashable, Any] | None = None
    pair: tuple[Any, Any] | None = None
    reason: str = ""
    member: Any = None
    exact: bool = True
    margin: float = 0.0
    assumptions: tuple[str, ...] = ()
    per_member: tuple[float, ...] | None = None

    def __float__(self) -> float:
        return float(self.value)

    @property
    def finite(self) -> bool:
        """Whether the max-influence is finite (an infinite one gives no quilt bound)."""
        return math.isfinite(self.value)

    def __str__(self) -> str:
        return f"e({sorted(map(str, self.quilt))} | {self.node}) = {self.value:.6g} ({self.reason})"

    def member_values(self, n_members: int = 1) -> np.ndarray:
        """e_θ for each of ``n_members`` members (a single network's value repeated when ``per_member`` is None)."""
        if self.per_member is None:
            return np.full(n_members, float(self.value))
        if len(self.per_member) != n_members:
            raise fail("n_members", f"the family size {len(self.per_member)}", n_members)
        return np.asarray(self.per_member, dtype=float)


# -- network kinds ------------------------------------------------------------------------------------------------
@runtime_checkable
class ParameterDensityLike(Protocol):
    """What :func:`max_influence` needs of continuous parameters (duck-typed).

    Attributes
    ----------
    names : tuple
        The parameters φ (nodes).
    graph : networkx.DiGraph
        The Bayesian network over ``names`` (u → v: φ_u is a parent of φ_v).
    supports : mapping
        name -> ``(lo, hi)``: where the parameter can have positive density
        (±inf allowed).
    log_density : callable
        ``log_density(points)``: ``points`` maps the names of an *ancestral*
        set S (every parent of a named parameter is named) to broadcastable
        arrays; returns log p(φ_S) — the sum of the named parameters'
        conditional log densities — with the broadcast shape (``-inf`` where
        the density is 0).
    typical : mapping, optional
        name -> ``(center, scale)``, to place grids on unbounded supports
        (default ``(0, 1)``).
    """

    names: tuple
    graph: Any
    supports: Mapping[Hashable, tuple[float, float]]

    def log_density(self, points: Mapping[Hashable, Any]) -> np.ndarray: ...


def _is_density(obj: Any) -> bool:
    return (all(hasattr(obj, a) for a in ("names", "graph", "supports", "log_density"))
            and callable(getattr(obj, "log_density")))


def _is_pymc(obj: Any) -> bool:
    module = type(obj).__module__ or ""
    name = type(obj).__name__
    return (module.startswith("pymc") and name == "Model") or (module == "bayespriv.datamodels.pymc" and name == "PyMCDataModel")


def _as_density(obj: Any) -> Any:
    """A PyMC model (or PyMCDataModel) as its ParameterDensity; anything else unchanged."""
    if _is_pymc(obj):
        from ..datamodels.parameters import parameter_density  # an earlier stage; imports pymc lazily

        return parameter_density(obj)
    return obj


def _kind(network: Any) -> str:
    if _is_density(network):
        return "density"
    from ..datamodels.network_tables import pgmpy_network_kind  # an earlier stage: the one that knows pgmpy

    kind = pgmpy_network_kind(network)
    if kind is not None:
        return kind
    raise ParameterTypeError(
        "network must be a pgmpy DiscreteBayesianNetwork or LinearGaussianBayesianNetwork, a PyMC model, or a "
        "parameter density (names, graph, supports, log_density) (or a sequence of them); "
        f"got {type(network).__name__}"
    )


# -- the network over parameters, with the columns each parameter governs ----------------------------------------
def _is_parameter_value(state: Any) -> bool:
    """A number (not a bool), or a non-empty tuple/list of numbers: what a distribution parameter's value looks like."""
    if isinstance(state, (bool, np.bool_)):
        return False
    if isinstance(state, numbers.Real):
        return True
    if isinstance(state, (tuple, list)) and state:
        return all(isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)) for x in state)
    return False


def _member_nodes(net: Any) -> tuple:
    return tuple(net.names) if _is_density(net) else tuple(net.nodes())


def _discrete_states(net: Any, node: Hashable, states: Mapping[Hashable, Any] | None = None,
                     cpds: Mapping[Hashable, Any] | None = None) -> list:
    """The states of ``node``: from the network's ``states`` mapping, else from its CPD (``states`` and ``cpds``,
    when given, are those mappings read once for the whole network)."""
    states = network_states(net) if states is None else states
    if node in states:
        return list(states[node])
    cpd = net.get_cpds(node) if cpds is None else cpds.get(node)
    if cpd is None:
        raise fail("network", "a network with a CPD for every node (check_model passes)", described(f"no CPD for node {node!r}"))
    return list(cpd.state_names[node])


def _check_parameter_states(net: Any, member: int) -> None:
    """Refuse a discrete network whose states are record values (the signature of a record-level network)."""
    known, cpds = network_states(net), cpds_by_node(net)
    for v in net.nodes():
        states = _discrete_states(net, v, known, cpds)
        if not all(_is_parameter_value(s) for s in states):
            where = "" if member == 0 else f" (family member {member})"
            raise ValidationError(
                "network must be a network over distribution parameters, whose states are the values a parameter "
                "takes (numbers, e.g. a share 0.2 / 0.5 / 0.8 or a mean 64 / 66 / 68, or tuples of numbers); got "
                f"node {v!r}{where} with states {_show_states(states)}, which are record values. This looks like a "
                "record-level network (every record draws every node, like the classic 'asia'): its nodes are "
                "attributes of one record, not parameters shared by the dataset, and Theorem 3 of the attribute-"
                "privacy paper does not apply (APMQM would price one record's dependence on the secret as if it "
                "were the whole column's). For such data use BayesNetDataModel(network, n_records=...) with "
                "DatasetSecret.proportion / DistributionSecret('P(node=state)', p) and calibrate(...); for APMQM, "
                "build a network whose nodes are the parameters behind the attributes (see models/school.py)"
            )


def _show_states(states: Sequence[Any]) -> str:
    shown = [repr(s) for s in states[:6]]
    return "[" + ", ".join(shown) + (", ...]" if len(states) > 6 else "]")


def _column_names(node: Hashable, value: Any) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else None
    if names is None or not all(isinstance(c, str) and c for c in names):
        raise fail(f"columns[{node!r}]", "a column name, a sequence of column names, or () for a latent parameter",
                   value)
    if len(set(names)) != len(names):
        raise fail(f"columns[{node!r}]", "distinct column names", value)
    return names


@dataclass(frozen=True, eq=False)
class ParameterNetwork:
    """A Bayesian network whose nodes are the distribution parameters φ behind a dataset's attributes.

    This is the Θ of distributional attribute privacy (Definition 5 of Zhang,
    Ohrimenko, Yang & Cummings, *Attribute Privacy*, FAccT 2022, §5): each
    node is a parameter φ_j (a share, a mean, a probability vector) drawn
    **once per dataset**; given all the φ's, every record's attribute j is
    drawn from a law indexed by φ_j alone, independently of the other
    attributes and records (the paper's "naive" conditional independence).
    ``columns`` says which record column(s) each parameter governs. It is
    *not* a network over one record's attributes (like the classic "asia",
    where every record draws every node): for that, use
    :class:`~bayespriv.BayesNetDataModel` and :func:`~bayespriv.calibrate`.

    Parameters
    ----------
    network : network or sequence of networks
        A pgmpy ``DiscreteBayesianNetwork`` whose states are the parameter's
        values (numbers or tuples of numbers — e.g. φ_income ∈ {0.2, 0.5,
        0.8}; integer codes are accepted as labels of values), a
        ``LinearGaussianBayesianNetwork`` over real parameters, a PyMC model
        (its scalar continuous free random variables) or a parameter density
        (:class:`ParameterDensityLike`); a sequence of them with the same
        nodes is a family Θ.
    columns : mapping
        Every node -> the record column it governs, a sequence of columns,
        or ``()`` for a latent parameter governing no column (e.g. a
        hyper-parameter). Required and complete: the mapping is the
        declaration that the nodes are parameters. A column belongs to at
        most one node.

    Attributes
    ----------
    networks : tuple
        The member networks (PyMC models turned into their parameter densities).
    nodes : tuple
        The parameters, in the first member's order.
    columns : mapping
        Read-only: node -> tuple of column names.
    kind : str
        ``"discrete"``, ``"gaussian"`` or ``"density"``.

    Raises
    ------
    ParameterTypeError
        ``network`` of an unsupported type (or itself a ParameterNetwork), ``columns`` not a mapping.
    ValidationError
        A node without a ``columns`` entry, a key that is no node, a column given to two nodes, no column at
        all, members with different nodes, or a discrete node whose states are record values (strings or
        booleans such as ``'yes'`` / ``'no'``: the signature of a record-level network).

    Notes
    -----
    The state check catches record-level networks whose states name record
    values (asia's ``'yes'`` / ``'no'``). A record-level network coded with
    integer states cannot be told apart from a parameter network by its
    tables: wrapping a network in ``ParameterNetwork`` is the user's
    statement that its nodes are parameters, and every guarantee built on it
    names the assumption ``"parameters_bayes_net"``.

    Examples
    --------
    >>> from pgmpy.models import DiscreteBayesianNetwork
    >>> from pgmpy.factors.discrete import TabularCPD
    >>> bn = DiscreteBayesianNetwork([("p_high_income", "mean_sat")])
    >>> bn.add_cpds(TabularCPD("p_high_income", 2, [[0.5], [0.5]], state_names={"p_high_income": [0.2, 0.8]}),
    ...             TabularCPD("mean_sat", 2, [[0.7, 0.3], [0.3, 0.7]], evidence=["p_high_income"],
    ...                        evidence_card=[2], state_names={"mean_sat": [1100.0, 1300.0],
    ...                                                        "p_high_income": [0.2, 0.8]}))
    >>> net = ParameterNetwork(bn, columns={"p_high_income": "income", "mean_sat": "sat"})
    >>> net.columns["mean_sat"]
    ('sat',)
    """

    network: Any
    columns: Mapping[Hashable, Any]
    networks: tuple[Any, ...] = field(init=False, repr=False)
    nodes: tuple[Hashable, ...] = field(init=False, repr=False)
    kind: str = field(init=False)
    _derived: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_derived", {})
        members = [self.network] if isinstance(self.network, ParameterNetwork) else _as_network_list(self.network)
        if any(isinstance(m, ParameterNetwork) for m in members):
            raise ParameterTypeError("network must be a network (or a sequence of them), not a ParameterNetwork; "
                                     "got a ParameterNetwork inside a ParameterNetwork")
        nets = tuple(_as_density(m) for m in members)
        kinds = {_kind(m) for m in nets}
        if len(kinds) > 1:
            raise fail("network", "a family of networks of one kind (discrete, linear Gaussian or densities)",
                       sorted(kinds))
        nodes = _member_nodes(nets[0])
        for j, net in enumerate(nets[1:], start=1):
            if set(_member_nodes(net)) != set(nodes):
                raise fail("network", "a family whose members have the same nodes",
                           described(f"member {j} with nodes {sorted(map(str, _member_nodes(net)))}"))
        kind = kinds.pop()
        if kind == "discrete":
            for j, net in enumerate(nets):
                _check_parameter_states(net, j)
        object.__setattr__(self, "networks", nets)
        object.__setattr__(self, "nodes", nodes)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "columns", MappingProxyType(self._checked_columns(self.columns, nodes)))

    @staticmethod
    def _checked_columns(columns: Any, nodes: tuple) -> dict[Hashable, tuple[str, ...]]:
        if not isinstance(columns, Mapping):
            raise ParameterTypeError(
                f"columns must be a mapping parameter node -> record column(s); got {type(columns).__name__}")
        unknown = [k for k in columns if k not in nodes]
        if unknown:
            raise fail("columns", f"keyed by parameter nodes of the network {sorted(map(str, nodes))}", unknown)
        missing = [v for v in nodes if v not in columns]
        if missing:
            raise fail("columns", "a mapping with an entry for every parameter node (the column(s) its parameter "
                       "governs, or () for a latent parameter)", described(f"no entry for {sorted(map(str, missing))}"))
        out = {v: _column_names(v, columns[v]) for v in nodes}
        owner: dict[str, Hashable] = {}
        for v, names in out.items():
            for c in names:
                if c in owner:
                    raise fail("columns", "a mapping giving each column to one parameter node",
                               described(f"{c!r} given to {owner[c]!r} and {v!r}"))
                owner[c] = v
        if not owner:
            raise fail("columns", "a mapping giving at least one record column to a parameter node", dict(columns))
        return out

    def graph(self, j: int = 0) -> nx.DiGraph:
        """The DAG of member ``j`` (u → v: φ_u is a parent of φ_v), as a networkx copy."""
        net = self.networks[j]
        src = net.graph if self.kind == "density" else net
        g = nx.DiGraph()
        g.add_nodes_from(src.nodes())
        g.add_edges_from(src.edges())
        return g

    @property
    def structure(self) -> GraphIndex:
        """The sparse index of the DAG (parents, children, moral graph, Bayes-ball), built on first use and kept:
        every calibration and quilt search of this network shares it."""
        return self._derive("structure", lambda: GraphIndex(self.graph(0)))

    def discrete_tables(self, j: int = 0) -> DiscreteTables:
        """Member ``j``'s CPDs as arrays over node positions (discrete networks), read on first use and kept.

        The tables are a snapshot: a later edit of the pgmpy network's CPDs is not seen by this
        ParameterNetwork (wrap the edited network in a new one).
        """
        if self.kind != "discrete":
            raise fail("kind", "'discrete' for CPD tables", self.kind)
        if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < len(self.networks):
            raise fail("j", f"a member index in [0, {len(self.networks) - 1}]", j)
        return self._derive(("tables", int(j)), lambda: DiscreteTables(self.networks[int(j)], self.nodes))

    def _derive(self, key: Any, build: Any) -> Any:
        hit = self._derived.get(key)
        if hit is None:
            hit = self._derived.setdefault(key, build())
        return hit

    def owner(self, column: str) -> Hashable | None:
        """The parameter node governing ``column`` (None if none does)."""
        for v, names in self.columns.items():
            if column in names:
                return v
        return None

    def __repr__(self) -> str:
        shown = ", ".join(f"{v!r}: {list(c)!r}" for v, c in self.columns.items())
        fam = f"{len(self.networks)} members, " if len(self.networks) > 1 else ""
        return f"ParameterNetwork({fam}{self.kind}, columns={{{shown}}})"


def _is_bare_pgmpy(network: Any) -> bool:
    """Whether ``network`` (or a member of a sequence) is a bare pgmpy network — ambiguous between records and parameters."""
    try:
        members = _as_network_list(network)
    except ValidationError:
        return False
    from ..datamodels.network_tables import pgmpy_network_kind

    return any(pgmpy_network_kind(m) is not None for m in members)


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
    arrays (:class:`~bayespriv.calibration.elimination.DiscreteTables`); every
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
        nets = [_as_density(n) for n in _as_network_list(networks)]
        kinds = {_kind(n) for n in nets}
        if len(kinds) > 1:
            raise ValidationError(f"networks of a family must all be of one kind (discrete, linear Gaussian or "
                                  f"continuous densities); got {sorted(kinds)}")
        self.kind = kinds.pop()
        node_lists = [tuple(n.names) if self.kind == "density" else tuple(n.nodes()) for n in nets]
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

    def _discrete_tables(self, j: int) -> Any:
        if self._tables[j] is None:
            declared = self._declared
            self._tables[j] = (declared.discrete_tables(j) if declared is not None
                               else DiscreteTables(self.networks[j], self.nodes))
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
            size = self.table_size(node, q)
            if size > max_states:
                return (f"joint table P(φ_Q, φ_i) of {size:.0f} states above max_states={max_states:.0f} for "
                        f"Q = {sorted(map(str, q))}")
            plan = self.plan(node, q)
            if plan.largest > self.max_factor:
                return self._discrete_tables(0).refusal(plan, self.max_factor)
            return None
        if not self.feasible(node, q, max_states):
            return (f"grid for Q = {sorted(map(str, q))} above max_points={self.max_points} at a resolution of at "
                    f"least {_MIN_RESOLUTION} per parameter")
        return None

    def graph(self, j: int = 0) -> Any:
        """The graph of member ``j``: the pgmpy network itself, or the density's ``graph``."""
        net = self.networks[j]
        return net.graph if self.kind == "density" else net

    def _grid_dims(self, node: Hashable, quilt: Iterable[Hashable]) -> int:
        graph = self.graph(0)
        targets = set(_quilt_nodes(quilt)) | {node}
        return len(targets.union(*(nx.ancestors(graph, v) for v in targets)))

    def table_size(self, node: Hashable, quilt: Iterable[Hashable]) -> float:
        """States of the joint table P(φ_Q, φ_i) (discrete), grid points at 2G (densities), or ``inf``."""
        if self.kind == "discrete":
            tables = self._discrete_tables(0)
            cards, index = tables.card_list, tables.index
            return float(np.prod([float(cards[index[v]]) for v in (*_quilt_nodes(quilt), node)]))
        if self.kind == "density":
            d = self._grid_dims(node, quilt)
            g = _resolution(d, self.resolution, self.max_points, check=False)
            return float(2 * g) ** d
        return math.inf

    def feasible(self, node: Hashable, quilt: Iterable[Hashable], max_states: float = math.inf) -> bool:
        """Whether e(Q | i) can be computed: a joint table within ``max_states`` (discrete), a grid within
        ``max_points`` at a resolution of at least 8 per dimension (densities); always for Gaussian networks."""
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


def _as_network_list(networks: Any) -> list[Any]:
    if isinstance(networks, ParameterNetwork):
        return list(networks.networks)
    if isinstance(networks, (list, tuple)):
        if not networks:
            raise fail("network", "a network or a non-empty sequence of networks", networks)
        return list(networks)
    return [networks]


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


def _discrete_influence(tables: DiscreteTables, plan: Any, node: Hashable, quilt: tuple,
                        max_factor: int = MAX_FACTOR) -> MaxInfluence:
    """e(Q | i) of one discrete network from the joint table P(φ_Q, φ_i) (fixed-order variable elimination)."""
    cards = {v: int(tables.cards[tables.index[v]]) for v in (*quilt, node)}
    size = int(np.prod([cards[v] for v in (*quilt, node)], dtype=float))
    if size > MAX_JOINT_STATES:
        raise ValidationError(
            f"quilt must have a joint table P(φ_Q, φ_i) of at most {MAX_JOINT_STATES} states for the exact "
            f"max-influence; got {size} states for Q = {sorted(map(str, quilt))}"
        )
    joint = tables.joint(plan, max_factor).reshape(-1, cards[node])
    states = {v: tables.states[tables.index[v]] for v in (*quilt, node)}
    p_node = _column_sums(joint)
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
    spread = _row_max(logc) - _row_min(logc)
    r = int(np.argmax(spread))
    a = int(possible[int(np.argmax(logc[r]))])
    b = int(possible[int(np.argmin(logc[r]))])
    value = float(spread[r])
    reason = "exact (variable elimination over the joint table)" if value > 0 else "φ_Q does not depend on φ_i"
    return MaxInfluence(value, node, frozen_q, assignment(int(rows[r])), (states[node][a], states[node][b]), reason)


def _column_sums(joint: np.ndarray) -> np.ndarray:
    """``joint.sum(axis=0)``, bit for bit: NumPy adds the rows of a C-ordered table one after the other, as
    ``add.accumulate`` does, which is faster on tall tables than the strided reduction."""
    if joint.ndim != 2 or joint.shape[0] < _TALL or joint.shape[1] < 2 or not joint.flags.c_contiguous:
        return joint.sum(axis=0)
    return np.add.accumulate(joint, axis=0)[-1]


def _row_max(table: np.ndarray) -> np.ndarray:
    """``table.max(axis=1)`` of a 2-D table without NaN, one elementwise maximum per column (exact, and
    faster than a reduction over short rows)."""
    return functools.reduce(np.maximum, table.T) if table.shape[1] else table.max(axis=1)


def _row_min(table: np.ndarray) -> np.ndarray:
    """``table.min(axis=1)`` of a 2-D table without NaN, one elementwise minimum per column (exact)."""
    return functools.reduce(np.minimum, table.T) if table.shape[1] else table.min(axis=1)


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


# -- continuous parameters: numerical estimate on quadrature grids -------------------------------------------------
def _resolution(d: int, resolution: int | None, max_points: int, *, check: bool = True) -> int:
    """G per dimension for a d-dimensional grid whose finer level (2G)^d fits in ``max_points``."""
    if resolution is None:
        g = min(_AUTO_RESOLUTION, int(math.floor(max_points ** (1.0 / d) / 2.0)))
        while g > 1 and (2 * g) ** d > max_points:
            g -= 1
    else:
        g = resolution
    if check:
        if (2 * g) ** d > max_points:
            raise ValidationError(
                f"resolution must keep the grid within max_points={max_points}: the estimate evaluates (2G)^d points "
                f"for the d={d} parameters of Q ∪ {{i}} and their ancestors; got G={g}, i.e. {(2 * g) ** d:.4g} points. "
                "Lower resolution, raise max_points, or use a smaller quilt"
            )
        if g < _MIN_RESOLUTION:
            raise ValidationError(
                f"max_points must allow at least {_MIN_RESOLUTION} grid points per parameter; got max_points={max_points} "
                f"for d={d} parameters of Q ∪ {{i}} and their ancestors (G={g}, needs "
                f"(2·{_MIN_RESOLUTION})^{d} = {(2 * _MIN_RESOLUTION) ** d:.4g} points). Raise max_points or use a "
                "smaller quilt"
            )
    return g


class _Axis:
    """One parameter's range, mapped from u ∈ (−1, 1): linearly (bounded), rationally (unbounded sides)."""

    def __init__(self, name: Hashable, lo: float, hi: float, center: float, scale: float) -> None:
        self.name, self.lo, self.hi = name, lo, hi
        self.kind = ("finite" if math.isfinite(lo) and math.isfinite(hi) else
                     "upper" if math.isfinite(lo) else "lower" if math.isfinite(hi) else "both")
        scale = scale if (math.isfinite(scale) and scale > 0) else 1.0
        if self.kind == "upper":  # (lo, inf): u = 0 ↦ the typical value
            scale = center - lo if center > lo else scale
        elif self.kind == "lower":
            scale = hi - center if center < hi else scale
        self.center = center if math.isfinite(center) else 0.0
        self.scale = scale

    def x(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.kind == "finite":
                return self.lo + (u + 1.0) * 0.5 * (self.hi - self.lo)
            if self.kind == "upper":
                return self.lo + self.scale * (1.0 + u) / (1.0 - u)
            if self.kind == "lower":
                return self.hi - self.scale * (1.0 - u) / (1.0 + u)
            return self.center + self.scale * u / (1.0 - u * u)

    def u(self, x: float) -> float:
        if self.kind == "finite":
            return 2.0 * (x - self.lo) / (self.hi - self.lo) - 1.0
        if self.kind == "upper":
            y = (x - self.lo) / self.scale
            return (y - 1.0) / (y + 1.0)
        if self.kind == "lower":
            y = (self.hi - x) / self.scale
            return (1.0 - y) / (1.0 + y)
        y = (x - self.center) / self.scale
        return 0.0 if y == 0 else (-1.0 + math.sqrt(1.0 + 4.0 * y * y)) / (2.0 * y)

    def log_jacobian(self, u: np.ndarray) -> np.ndarray:
        u = np.asarray(u, dtype=float)
        if self.kind == "finite":
            return np.full(u.shape, math.log(0.5 * (self.hi - self.lo)))
        if self.kind == "upper":
            return math.log(2.0 * self.scale) - 2.0 * np.log1p(-u)
        if self.kind == "lower":
            return math.log(2.0 * self.scale) - 2.0 * np.log1p(u)
        return math.log(self.scale) + np.log1p(u * u) - 2.0 * np.log1p(-u * u)

    def nodes(self, g: int) -> tuple[np.ndarray, np.ndarray]:
        """Gauss–Legendre nodes in x and log(weight · dx/du)."""
        u, w = np.polynomial.legendre.leggauss(g)
        return self.x(u), np.log(w) + self.log_jacobian(u)

    def edge(self, side: str) -> tuple[np.ndarray, str]:
        """Points approaching the lower / upper edge, and the edge as text."""
        if side == "lo":
            edge, sign = self.lo, 1.0
        else:
            edge, sign = self.hi, -1.0
        if math.isfinite(edge):
            width = (self.hi - self.lo) if self.kind == "finite" else self.scale
            floor = 256.0 * np.finfo(float).eps * max(abs(edge), width)
            steps = width * 10.0 ** -np.arange(1, 16)
            steps = steps[steps > floor]
            return edge + sign * steps, f"{edge:g}"
        base = self.lo if self.kind == "upper" else self.hi if self.kind == "lower" else self.center
        return base - sign * self.scale * 10.0 ** np.arange(0, 13), ("-∞" if side == "lo" else "+∞")


def _logsumexp(a: np.ndarray, axis: Any) -> np.ndarray:
    """log Σ exp over ``axis``; −inf where every term is −inf (no warning)."""
    if axis == () or axis is None and a.ndim == 0:
        return a
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis)


def _spread(lc: np.ndarray) -> tuple[float, int, int, int]:
    """max over rows x of max_a L[x, a] − min_b L[x, b] for a table of log-conditionals.

    Returns (value, row, a column, b column): ``inf`` when a row has a zero
    density under some b and not under some a; ``-inf`` when no row has a
    positive density (no information).
    """
    if lc.size == 0 or lc.shape[1] < 1:
        return -math.inf, -1, -1, -1
    fin = np.isfinite(lc)
    any_pos, all_pos = fin.any(axis=1), fin.all(axis=1)
    mixed = np.flatnonzero(any_pos & ~all_pos)
    if mixed.size:
        r = int(mixed[0])
        return math.inf, r, int(np.flatnonzero(fin[r])[0]), int(np.flatnonzero(~fin[r])[0])
    rows = np.flatnonzero(all_pos)
    if rows.size == 0:
        return -math.inf, -1, -1, -1
    sub = lc[rows]
    sp = sub.max(axis=1) - sub.min(axis=1)
    k = int(np.argmax(sp))
    return float(sp[k]), int(rows[k]), int(np.argmax(sub[k])), int(np.argmin(sub[k]))


def _limit(f: np.ndarray) -> tuple[str, float]:
    """Classify a sequence of maxima along points approaching an edge.

    ``("unbounded", last)`` when its increments stay positive and do not decay
    (the last three each at least half the previous one: logarithmic or faster
    growth, e.g. a log-density ratio linear in φ at infinity, or with a log
    singularity at a finite edge); ``("bounded", bound)`` with bound = the
    largest value plus the last positive increment (the remaining tail of an
    increment sequence decaying at least geometrically by 1/2); ``("none", -inf)``
    with fewer than 4 finite values.
    """
    f = np.asarray(f, dtype=float)
    if np.any(np.isposinf(f)):
        return "unbounded", math.inf
    f = f[np.isfinite(f)]
    if f.size < 4:
        return "none", -math.inf
    d = np.diff(f)
    tol = 1e-9 * max(1.0, abs(float(f[-1])))
    last = d[-3:]
    if np.all(last > tol) and last[1] >= 0.5 * last[0] and last[2] >= 0.5 * last[1]:
        return "unbounded", float(f[-1])
    return "bounded", float(f.max() + max(0.0, float(d[-1])))


class _Grid:
    """log p(φ_Q = x, φ_i = a) with the other ancestors integrated on a Gauss–Legendre grid of G nodes each."""

    def __init__(self, density: Any, quilt: tuple, node: Hashable, rest: tuple, axes: Mapping[Hashable, _Axis],
                 g: int) -> None:
        self.density, self.quilt, self.node, self.rest, self.axes, self.g = density, quilt, node, rest, axes, g
        self.r_nodes = [axes[v].nodes(g) for v in rest]
        self.q_nodes = [axes[v].nodes(g) for v in quilt]
        self.a_nodes = axes[node].nodes(g)[0]
        k = len(quilt)
        lw = np.zeros((g,) * k)
        for j, (_, w) in enumerate(self.q_nodes):
            lw = lw + w.reshape([g if m == j else 1 for m in range(k)])
        self.q_logw = lw

    def joint(self, qvals: Sequence[np.ndarray], avals: np.ndarray) -> np.ndarray:
        """Array (len(q_1), …, len(q_k), len(a)) of log ∫ p(x, a, r) dr."""
        k, m = len(self.quilt), len(self.rest)
        d = k + 1 + m
        points: dict[Hashable, np.ndarray] = {}

        def on_axis(values: np.ndarray, j: int) -> np.ndarray:
            return np.asarray(values, dtype=float).reshape([-1 if t == j else 1 for t in range(d)])

        for j, v in enumerate(self.quilt):
            points[v] = on_axis(qvals[j], j)
        points[self.node] = on_axis(avals, k)
        logw = 0.0
        for j, v in enumerate(self.rest):
            x, w = self.r_nodes[j]
            points[v] = on_axis(x, k + 1 + j)
            logw = logw + on_axis(w, k + 1 + j)
        shape = tuple(len(np.atleast_1d(qvals[j])) for j in range(k)) + (len(np.atleast_1d(avals)),) + (self.g,) * m
        lp = np.asarray(self.density.log_density(points), dtype=float)
        lp = np.broadcast_to(np.where(np.isnan(lp), -np.inf, lp), shape)
        if not m:
            return np.array(lp)
        return _logsumexp(lp + logw, axis=tuple(range(k + 1, d)))

    def normalizer(self, joint_at_nodes: np.ndarray) -> np.ndarray:
        """log p(a) = log ∫ p(x, a) dx from :meth:`joint` at the quilt's nodes (last axis: a)."""
        k = len(self.quilt)
        return _logsumexp(joint_at_nodes + self.q_logw[..., None], axis=tuple(range(k)))

    def conditional(self, avals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(log p(x | a) at the quilt's nodes, flattened to rows (G^k, len(a)); log p(a))."""
        lj = self.joint([x for x, _ in self.q_nodes], avals)
        la = self.normalizer(lj)
        with np.errstate(invalid="ignore"):
            lc = lj - la
        return lc.reshape(-1, len(np.atleast_1d(avals))), la


class _Verdict(Exception):
    """Raised by a stage of :func:`_density_influence` that settles the value (unbounded, or no pair): its result."""

    def __init__(self, result: "MaxInfluence") -> None:
        super().__init__(result.reason)
        self.result = result


@dataclass(frozen=True, eq=False)
class _DensityProblem:
    """What every stage of :func:`_density_influence` reads: the parameters, their axes and grid size, and what the
    bounds cut from Θ (named in every verdict)."""

    density: Any
    node: Hashable
    quilt: tuple
    rest: tuple
    order: tuple
    axes: Mapping[Hashable, _Axis]
    g: int
    assumptions: tuple[str, ...]
    truncation: str

    def result(self, value: float, why: str, assignment: Any = None, pair: Any = None, margin: float = 0.0) -> MaxInfluence:
        return MaxInfluence(value, self.node, frozenset(self.quilt), assignment, pair, why + self.truncation, None,
                            False, margin, self.assumptions)

    def infinite(self, why: str, assignment: Any = None, pair: Any = None) -> _Verdict:
        return _Verdict(self.result(math.inf, why, assignment, pair))

    def support_moves(self, where: str, assignment: Any = None, pair: Any = None) -> _Verdict:
        """φ_Q has positive density for some values of φ_i and not for others: the ratio is unbounded."""
        return self.infinite(f"P(φ_Q = x | φ_{self.node}) vanishes for some but not all values of φ_{self.node} "
                             f"{where}: the support of φ_Q depends on φ_{self.node}, so the ratio is unbounded",
                             assignment, pair)


@dataclass(frozen=True, eq=False)
class _GridMaximum:
    """The largest log-ratio on one grid: its value, where (φ_Q and the pair), and the conditionals it came from."""

    value: float
    at: Any
    pair: Any
    lc: np.ndarray
    la: np.ndarray
    valid: np.ndarray


def _density_axes(density: Any, order: tuple, bounds: Mapping[Hashable, tuple[float, float]]) -> tuple[dict, list[str]]:
    """An axis per parameter over its support cut by ``bounds``, and the cuts (text)."""
    axes: dict[Hashable, _Axis] = {}
    cut: list[str] = []
    for v in order:
        lo, hi = (float(b) for b in density.supports[v])
        if v in bounds:
            blo, bhi = bounds[v]
            if blo > lo or bhi < hi:
                cut.append(f"{v}∈[{max(lo, blo):g}, {min(hi, bhi):g}]")
            lo, hi = max(lo, blo), min(hi, bhi)
            if not lo < hi:
                raise fail(f"bounds[{v!r}]", f"an interval overlapping the support {density.supports[v]}", bounds[v])
        center, scale = 0.0, 1.0
        if not (math.isfinite(lo) and math.isfinite(hi)):
            typical = getattr(density, "typical", None)  # may be computed on first access (prior draws)
            if typical is not None and v in typical:
                center, scale = (float(t) for t in typical[v])
        axes[v] = _Axis(v, lo, hi, center, scale)
    return axes, cut


def _density_problem(density: Any, node: Hashable, quilt: tuple, resolution: int | None,
                     bounds: Mapping[Hashable, tuple[float, float]], max_points: int) -> _DensityProblem:
    """Q, φ_i and their ancestors (integrated out), the grid size and the axes."""
    graph = density.graph
    targets = set(quilt) | {node}
    ancestral = targets.union(*(nx.ancestors(graph, v) for v in targets))
    rest = tuple(v for v in density.names if v in ancestral and v not in targets)
    order = (*quilt, node, *rest)
    g = _resolution(len(order), resolution, max_points)
    axes, cut = _density_axes(density, order, bounds)
    assumptions = ("numerical_influence",) + (("truncated_prior",) if cut else ())
    truncation = (f"; Θ restricted to the bounds {', '.join(cut)} (the prior conditioned on them; for φ_i: only "
                  "secrets in the bounds)") if cut else ""
    return _DensityProblem(density, node, quilt, rest, order, axes, g, assumptions, truncation)


def _grid_maximum(prob: _DensityProblem, grid: _Grid) -> _GridMaximum:
    """The largest log-ratio over the grid's φ_Q × pairs of φ_i nodes (a verdict when φ_i has no pair, or when
    the support of φ_Q moves with φ_i)."""
    node, quilt = prob.node, prob.quilt
    lc, la = grid.conditional(grid.a_nodes)
    valid = np.flatnonzero(np.isfinite(la))
    if valid.size < 2:
        raise _Verdict(prob.result(0.0, f"φ_{node} has fewer than two grid values of positive density: no pair of "
                                        "secrets"))
    value, row, ca, cb = _spread(lc[:, valid])
    xs = None
    if row >= 0:
        idx = np.unravel_index(row, (grid.g,) * len(quilt))
        xs = {v: float(grid.q_nodes[j][0][idx[j]]) for j, v in enumerate(quilt)}
    pair = None if row < 0 else (float(grid.a_nodes[valid[ca]]), float(grid.a_nodes[valid[cb]]))
    if value == math.inf:
        raise prob.infinite(
            f"P(φ_Q = x | φ_{node} = {pair[1]:.6g}) = 0 < P(φ_Q = x | φ_{node} = {pair[0]:.6g}) at x = {xs}: the "
            f"support of φ_Q depends on φ_{node}, so the ratio is unbounded", xs, pair)
    return _GridMaximum(value, xs, pair, lc, la, valid)


def _edge_limit(prob: _DensityProblem, f: np.ndarray, unbounded: Callable[[str], str]) -> float | None:
    """The verdict on maxima ``f`` along points approaching an edge: a verdict when they grow without bound
    (``unbounded(last)`` says where, given the last finite maximum as text), the bounded limit, or None."""
    kind, lim = _limit(f)
    if kind == "unbounded":
        finite = f[np.isfinite(f)]
        raise prob.infinite(unbounded(f"{finite[-1]:.4g}" if finite.size else "inf"))
    return lim if kind == "bounded" else None


def _unbounded_hint(prob: _DensityProblem, v: Hashable, side: str, advice: str) -> str:
    axis = prob.axes[v]
    unbounded_support = not math.isfinite(axis.lo if side == "lo" else axis.hi)
    return advice if unbounded_support else " (at the edge of its support)"


def _quilt_edge_limits(prob: _DensityProblem, coarse: _Grid, first: _GridMaximum) -> list[tuple[str, float]]:
    """Limits at the edges (finite or infinite) of each quilt parameter, pairs (a, b) on the grid of φ_i."""
    node, quilt, k = prob.node, prob.quilt, len(prob.quilt)
    out = []
    for j, v in enumerate(quilt):
        for side in ("lo", "hi"):
            seq, where = prob.axes[v].edge(side)
            if seq.size == 0:
                continue
            qvals = [coarse.q_nodes[t][0] if t != j else seq for t in range(k)]
            lj = coarse.joint(qvals, coarse.a_nodes)
            with np.errstate(invalid="ignore"):
                lcp = np.moveaxis(lj - first.la, j, 0)[..., first.valid]  # (J, other nodes..., a)
            f = np.empty(len(seq))
            for t in range(len(seq)):
                val, _, ca, cb = _spread(lcp[t].reshape(-1, first.valid.size))
                if val == math.inf:
                    pair = (float(coarse.a_nodes[first.valid[ca]]), float(coarse.a_nodes[first.valid[cb]]))
                    raise prob.infinite(
                        f"P(φ_Q | φ_{node} = {pair[1]:.6g}) = 0 < P(φ_Q | φ_{node} = {pair[0]:.6g}) near φ_{v} = "
                        f"{seq[t]:.6g}: the support of φ_Q depends on φ_{node}, so the ratio is unbounded",
                        {v: float(seq[t])}, pair)
                f[t] = val
            hint = _unbounded_hint(prob, v, side, f" (unbounded support, e.g. Normal(a, σ) vs Normal(b, σ)); pass "
                                                  f"bounds={{{v!r}: (lo, hi)}} to restrict Θ to a bounded range")
            last = int(np.flatnonzero(np.isfinite(f))[-1]) if np.isfinite(f).any() else len(f) - 1
            message = (f"log P(φ_Q | φ_{node} = a) / P(φ_Q | φ_{node} = b) grows without bound as φ_{v} → {where}"
                       f"{hint}: e.g. {f[last]:.4g} at φ_{v} = {seq[last]:.4g}")
            lim = _edge_limit(prob, f, lambda _last, message=message: message)
            if lim is not None:
                out.append((f"φ_{v}→{where}", lim))
    return out


def _node_edge_ratios(prob: _DensityProblem, lct: np.ndarray, lat: np.ndarray, lg: np.ndarray,
                      seq: np.ndarray) -> np.ndarray:
    """Per point of φ_i's edge sequence: the largest |log-ratio| against every grid value b, over the quilt's grid."""
    f = np.full(len(seq), -np.inf)
    for t in range(len(seq)):
        if not math.isfinite(lat[t]):
            continue
        table = np.concatenate([lct[:, t:t + 1], lg], axis=1)
        fin = np.isfinite(table)
        rows = fin.all(axis=1)
        if (fin.any(axis=1) & ~rows).any():
            raise prob.support_moves(f"near φ_{prob.node} = {seq[t]:.6g}")
        if rows.any():
            sub = table[rows]
            f[t] = float(np.max(np.maximum(sub[:, 0] - sub[:, 1:].min(axis=1), sub[:, 1:].max(axis=1) - sub[:, 0])))
    return f


def _node_edge_limits(prob: _DensityProblem, coarse: _Grid,
                      first: _GridMaximum) -> tuple[list[tuple[str, float]], dict[str, tuple]]:
    """Limits at the edges of φ_i, against every grid value b (both orders), over the quilt's grid; and each
    edge's sequence, its text and log p(a) along it (for the corners)."""
    node = prob.node
    lg = first.lc[:, first.valid]
    out, i_edges = [], {}
    for side in ("lo", "hi"):
        seq, where = prob.axes[node].edge(side)
        if seq.size == 0:
            continue
        lct, lat = coarse.conditional(seq)
        i_edges[side] = (seq, where, lat)
        f = _node_edge_ratios(prob, lct, lat, lg, seq)
        hint = _unbounded_hint(prob, node, side, f" (unbounded support); pass bounds={{{node!r}: (lo, hi)}} to "
                                                 "protect only secrets in a bounded range")
        lim = _edge_limit(prob, f, lambda last, where=where, hint=hint: (
            f"log P(φ_Q | φ_{node} = a) / P(φ_Q | φ_{node} = b) grows without bound as φ_{node} → {where}{hint}: "
            f"e.g. {last}"))
        if lim is not None:
            out.append((f"φ_{node}→{where}", lim))
    return out, i_edges


def _corner_ratios(prob: _DensityProblem, coarse: _Grid, first: _GridMaximum, seqs: list[np.ndarray],
                   aseq: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Along step j of every sequence together: the largest |log-ratio| of φ_i = aseq[j] against every grid b."""
    n = min(13, len(aseq), *(len(sq) for sq in seqs))
    f = np.full(n, -np.inf)
    for j in range(n):
        if not math.isfinite(lat[j]):
            continue
        xj = [np.array([sq[j]]) for sq in seqs]
        la_num = float(coarse.joint(xj, aseq[j:j + 1]).reshape(-1)[0] - lat[j])
        lb = coarse.joint(xj, coarse.a_nodes[first.valid]).reshape(-1) - first.la[first.valid]
        fin_b = np.isfinite(lb)
        if not math.isfinite(la_num) and not fin_b.any():
            continue
        if not math.isfinite(la_num) or not fin_b.all():
            point = {v: float(sq[j]) for v, sq in zip(prob.quilt, seqs)}
            raise prob.support_moves(f"at x = {point}, φ_{prob.node} = {aseq[j]:.6g}", point)
        f[j] = max(la_num - float(lb.min()), float(lb.max()) - la_num)
    return f


def _corner_limits(prob: _DensityProblem, coarse: _Grid, first: _GridMaximum, i_edges: Mapping[str, tuple],
                   best: float) -> list[tuple[str, float]]:
    """Every quilt parameter and φ_i approaching an edge together (step j of each sequence), against every grid
    value b — catches a ratio unbounded only jointly (e.g. (x − 1)·a + log a for x → 1, a → ∞). A bounded limit is
    kept only when it exceeds the running best (starting at ``best``), which it then becomes."""
    node, quilt = prob.node, prob.quilt
    q_edges = [{side: prob.axes[v].edge(side) for side in ("lo", "hi")} for v in quilt]
    out = []
    for sides in itertools.product(("lo", "hi"), repeat=len(quilt)):
        for aseq, where_i, lat in i_edges.values():
            seqs = [q_edges[t][sd][0] for t, sd in enumerate(sides)]
            if any(sq.size == 0 for sq in seqs):
                continue
            f = _corner_ratios(prob, coarse, first, seqs, aseq, lat)
            where = ", ".join(f"φ_{v} → {q_edges[t][sd][1]}" for t, (v, sd) in enumerate(zip(quilt, sides)))
            lim = _edge_limit(prob, f, lambda last, where=where, where_i=where_i: (
                f"log P(φ_Q | φ_{node} = a) / P(φ_Q | φ_{node} = b) grows without bound as {where} and "
                f"φ_{node} → {where_i} together: e.g. {last}"))
            if lim is not None and lim > best:
                out.append((f"corner {where}, φ_{node}→{where_i}", lim))
                best = lim
    return out


def _quadrature_gap(prob: _DensityProblem, coarse: _Grid, fine: _Grid, xo: Any, po: Any) -> float:
    """|log-ratio at G − at 2G| at the maximiser, the integrals included (a verdict when it does not converge)."""
    if xo is None or po is None:
        return 0.0
    r_coarse = _point_ratio(coarse, prob.quilt, xo, po)
    r_fine = _point_ratio(fine, prob.quilt, xo, po)
    quad = abs(r_fine - r_coarse) if math.isfinite(r_fine) and math.isfinite(r_coarse) else math.inf
    if not quad <= 0.01 * max(1.0, abs(r_fine)):
        raise prob.infinite(
            f"the quadrature did not converge: the log-ratio at x = {xo}, (a, b) = {po} is {r_coarse:.6g} with "
            f"G={prob.g} nodes and {r_fine:.6g} with 2G={2 * prob.g} — an integrand too peaked for the grid (e.g. a "
            "density unbounded at an interior point, such as a scale parameter near 0); treated as unbounded. "
            "Restrict the integrated parameters with bounds=..., or raise resolution / max_points", xo, po)
    return quad


def _density_reason(prob: _DensityProblem, g1: float, g2: float, edges: list[tuple[str, float]], opt: float,
                    margin: float, quad: float) -> str:
    g = prob.g
    return (f"numerical estimate (Gauss–Legendre grid G={g} and 2G={2 * g} per parameter over "
            f"{[str(v) for v in prob.order]}"
            + (f", integrating {[str(v) for v in prob.rest]}" if prob.rest else "")
            + f"; grid maxima {g1:.6g} (G), {g2:.6g} (2G)"
            + (f"; edge limits {', '.join(f'{w}: {lim:.6g}' for w, lim in edges)}" if edges else "")
            + (f"; local optimum {opt:.6g}" if math.isfinite(opt) else "")
            + f"; refinement margin {margin:.3g} added: grid {abs(g2 - g1):.3g} + quadrature {quad:.3g})")


def _density_influence(
    density: Any,
    node: Hashable,
    quilt: tuple,
    resolution: int | None,
    bounds: Mapping[Hashable, tuple[float, float]],
    max_points: int,
) -> MaxInfluence:
    """e(Q | i) for continuous parameters: grids at G and 2G, edge limits, a local optimum and a margin.

    Stages: the problem (:func:`_density_problem`), the grid maxima at G and 2G (:func:`_grid_maximum`), the
    limits at the edges of φ_Q, of φ_i and at their corners, a local refinement from the finer grid's maximiser
    (:func:`_refine`) and the quadrature check at it (:func:`_quadrature_gap`); the value is the largest of
    them plus the margin |max at 2G − max at G| + the quadrature gap. A stage that finds the ratio unbounded
    (or no pair of secrets) settles the value (:class:`_Verdict`).
    """
    if nx.is_d_separator(density.graph, {node}, set(quilt), set()):
        return MaxInfluence(0.0, node, frozenset(quilt), None, None,
                            "φ_Q is d-separated from φ_i in the parameters' graph: independent, so the ratio is 1")
    prob = _density_problem(density, node, quilt, resolution, bounds, max_points)
    coarse = _Grid(density, quilt, node, prob.rest, prob.axes, prob.g)
    fine = _Grid(density, quilt, node, prob.rest, prob.axes, 2 * prob.g)
    try:
        first, second = _grid_maximum(prob, coarse), _grid_maximum(prob, fine)
        if not math.isfinite(second.value):
            return prob.result(0.0, "no value of φ_Q has positive density")
        best = (second.value, second.at, second.pair)
        edges = _quilt_edge_limits(prob, coarse, first)
        node_edges, i_edges = _node_edge_limits(prob, coarse, first)
        edges += node_edges
        for _, lim in edges:
            if lim > best[0]:
                best = (lim, None, None)
        edges += _corner_limits(prob, coarse, first, i_edges, best[0])
        if edges and edges[-1][1] > best[0]:
            best = (edges[-1][1], None, None)
        opt, xo, po = -math.inf, second.at, second.pair
        if second.at is not None and second.pair is not None:
            opt, xo_, po_ = _refine(fine, quilt, node, prob.axes, second.at, second.pair)
            if opt > best[0]:
                best = (opt, xo_, po_)
            if opt >= second.value:
                xo, po = xo_, po_
        quad = _quadrature_gap(prob, coarse, fine, xo, po)
    except _Verdict as verdict:
        return verdict.result
    margin = abs(second.value - first.value) + quad
    reason = _density_reason(prob, first.value, second.value, edges, opt, margin, quad)
    return prob.result(max(0.0, best[0] + margin), reason, best[1], best[2], margin)


def _point_ratio(grid: _Grid, quilt: tuple, x: Mapping[Hashable, float], pair: tuple[float, float]) -> float:
    """log p(x | a) − log p(x | b) at one point, with the grid's integrals."""
    ab = np.array(pair, dtype=float)
    norm = grid.normalizer(grid.joint([x for x, _ in grid.q_nodes], ab))
    lj = grid.joint([np.array([x[v]]) for v in quilt], ab).reshape(-1)
    with np.errstate(invalid="ignore"):
        return float((lj[0] - norm[0]) - (lj[1] - norm[1]))


def _refine(grid: _Grid, quilt: tuple, node: Hashable, axes: Mapping[Hashable, _Axis], x0: Mapping[Hashable, float],
            pair0: tuple[float, float]) -> tuple[float, Any, Any]:
    """Maximise log p(x | a) − log p(x | b) locally (scipy Powell, bounded) from a grid maximiser."""
    from scipy.optimize import minimize

    k = len(quilt)
    ax = [axes[v] for v in quilt] + [axes[node], axes[node]]
    start = np.array([axes[v].u(x0[v]) for v in quilt] + [axes[node].u(pair0[0]), axes[node].u(pair0[1])])
    lim = 1.0 - 1e-12
    start = np.clip(start, -lim, lim)
    cache: dict[float, float] = {}

    def log_norm(a: float) -> float:
        hit = cache.get(a)
        if hit is None:
            lj = grid.joint([x for x, _ in grid.q_nodes], np.array([a]))
            hit = float(grid.normalizer(lj)[0])
            cache[a] = hit
        return hit

    def ratio(u: np.ndarray) -> float:
        xs = [float(a.x(t)) for a, t in zip(ax, u)]
        a, b = xs[k], xs[k + 1]
        na, nb = log_norm(a), log_norm(b)
        if not (math.isfinite(na) and math.isfinite(nb)):
            return -math.inf
        lj = grid.joint([np.array([x]) for x in xs[:k]], np.array([a, b])).reshape(-1)
        val = (lj[0] - na) - (lj[1] - nb)
        return float(val) if math.isfinite(val) else -math.inf

    def objective(u: np.ndarray) -> float:
        r = ratio(u)
        return -r if math.isfinite(r) else 1e300

    res = minimize(objective, start, method="Powell", bounds=[(-lim, lim)] * len(start),
                   options={"xtol": 1e-9, "ftol": 1e-12, "maxfev": 600})
    u = res.x if res.fun < objective(start) else start
    val = ratio(u)
    xs = [float(a.x(t)) for a, t in zip(ax, u)]
    return val, {v: xs[j] for j, v in enumerate(quilt)}, (xs[k], xs[k + 1])


# -- public entry point --------------------------------------------------------------------------------------------
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
    quilt : collection of nodes, or a :class:`~bayespriv.calibration.quilts.Quilt`
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
    if callable(network) and not hasattr(network, "nodes") and not _is_density(network):
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


def _parameter_model_with_default_columns(network: Any, columns: Any) -> ParameterNetwork:
    """A PyMC model / parameter density (or a family) as a ParameterNetwork; unnamed nodes govern their namesake column.

    Such models are over parameters by construction (their free random variables; observed data on the
    parameters is refused by :func:`~bayespriv.datamodels.parameters.parameter_density`), so no wrapper is asked of them.
    """
    members = [_as_density(m) for m in _as_network_list(network)]
    for m in members:
        _kind(m)  # the uniform ParameterTypeError for anything else
    given = {} if columns is None else columns
    if not isinstance(given, Mapping):
        raise ParameterTypeError(f"columns must be a mapping parameter node -> record column(s); got {type(given).__name__}")
    nodes = _member_nodes(members[0])
    full = {v: given[v] if v in given else (v if isinstance(v, str) else str(v)) for v in nodes}
    full.update({k: v for k, v in given.items() if k not in full})  # unknown keys: refused by ParameterNetwork
    return ParameterNetwork(members if len(members) > 1 else members[0], full)
