"""The network over distribution parameters φ: :class:`ParameterNetwork` and what reads such networks.

This is the Θ side of the parameter-network pipeline (the max-influence and the quilts of
:mod:`bayespriv.calibration` are computed from it):

* :class:`ParameterNetwork` — a network (or a family) whose nodes are the parameters behind a dataset's
  attributes, with the record column(s) each parameter governs; it refuses a discrete network whose states
  are record values (a record-level network such as "asia");
* :class:`ParameterDensityLike` — what continuous parameters must offer (``names``, ``graph``, ``supports``,
  ``log_density``);
* the readers later stages call instead of touching pgmpy or PyMC objects: the kind of a network
  (:func:`network_kind`), its nodes and graph (:func:`member_nodes`, :func:`member_graph`), a PyMC model as
  its parameter density (:func:`as_density`), the CPD tables of a discrete member
  (:meth:`ParameterNetwork.tables`) and the joint covariance of a linear Gaussian network
  (:func:`linear_gaussian_covariance`).

pgmpy is imported lazily (only the user's networks are read here; none is built). A PyMC model is handed to
:func:`~bayespriv.datamodels.parameters.parameter_density`.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..._validation import described, fail
from ...errors import ParameterTypeError, ValidationError
from ..cpd_tables import CPDTables, cpds_by_node, network_states, read_cpd_tables
from ..network_tables import pgmpy_network_kind
from .density import parameter_density

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

__all__ = [
    "ParameterNetwork",
    "ParameterDensityLike",
    "as_density",
    "is_bare_pgmpy",
    "is_density",
    "linear_gaussian_covariance",
    "member_graph",
    "member_nodes",
    "network_kind",
    "network_list",
    "parameter_model_with_default_columns",
]


# -- network kinds ------------------------------------------------------------------------------------------------
@runtime_checkable
class ParameterDensityLike(Protocol):
    """What :func:`~bayespriv.networks.max_influence` needs of continuous parameters (duck-typed).

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


def is_density(obj: Any) -> bool:
    """Whether ``obj`` offers what :class:`ParameterDensityLike` asks (a callable ``log_density`` among them)."""
    return (all(hasattr(obj, a) for a in ("names", "graph", "supports", "log_density"))
            and callable(getattr(obj, "log_density")))


def _is_pymc(obj: Any) -> bool:
    """Whether ``obj`` is a PyMC model or a PyMCDataModel (a ``pm.Model`` exists only once pymc is imported,
    so this never imports pymc itself)."""
    from ..pymc import PyMCDataModel

    pymc = sys.modules.get("pymc")
    return isinstance(obj, PyMCDataModel) or (pymc is not None and isinstance(obj, pymc.Model))


def as_density(obj: Any) -> Any:
    """A PyMC model (or PyMCDataModel) as its ParameterDensity; anything else unchanged."""
    if _is_pymc(obj):
        return parameter_density(obj)
    return obj


def network_kind(network: Any) -> str:
    """``"density"``, ``"discrete"`` or ``"gaussian"``; a ParameterTypeError for anything else."""
    if is_density(network):
        return "density"
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


def member_nodes(net: Any) -> tuple:
    """The nodes of one member network: a density's ``names``, a pgmpy network's ``nodes()``."""
    return tuple(net.names) if is_density(net) else tuple(net.nodes())


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
        members = [self.network] if isinstance(self.network, ParameterNetwork) else network_list(self.network)
        if any(isinstance(m, ParameterNetwork) for m in members):
            raise ParameterTypeError("network must be a network (or a sequence of them), not a ParameterNetwork; "
                                     "got a ParameterNetwork inside a ParameterNetwork")
        nets = tuple(as_density(m) for m in members)
        kinds = {network_kind(m) for m in nets}
        if len(kinds) > 1:
            raise fail("network", "a family of networks of one kind (discrete, linear Gaussian or densities)",
                       sorted(kinds))
        nodes = member_nodes(nets[0])
        for j, net in enumerate(nets[1:], start=1):
            if set(member_nodes(net)) != set(nodes):
                raise fail("network", "a family whose members have the same nodes",
                           described(f"member {j} with nodes {sorted(map(str, member_nodes(net)))}"))
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
        import networkx as nx
        net = self.networks[j]
        src = net.graph if self.kind == "density" else net
        g = nx.DiGraph()
        g.add_nodes_from(src.nodes())
        g.add_edges_from(src.edges())
        return g

    def tables(self, j: int = 0) -> CPDTables:
        """Member ``j``'s CPDs as arrays over node positions (discrete networks), read on first use and kept.

        The tables are a snapshot: a later edit of the pgmpy network's CPDs is not seen by this
        ParameterNetwork (wrap the edited network in a new one).
        """
        if self.kind != "discrete":
            raise fail("kind", "'discrete' for CPD tables", self.kind)
        if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < len(self.networks):
            raise fail("j", f"a member index in [0, {len(self.networks) - 1}]", j)
        return self.derived(("tables", int(j)), lambda: read_cpd_tables(self.networks[int(j)], self.nodes))

    def derived(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """The value kept under ``key``, built by ``build()`` on first use.

        What a later stage derives from the network (an index of its graph, its tables in the form an
        elimination needs) is kept here, so that every calibration and quilt search of this network shares it.
        """
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


def is_bare_pgmpy(network: Any) -> bool:
    """Whether ``network`` (or a member of a sequence) is a bare pgmpy network — ambiguous between records and parameters."""
    try:
        members = network_list(network)
    except ValidationError:
        return False
    return any(pgmpy_network_kind(m) is not None for m in members)


def network_list(networks: Any) -> list[Any]:
    """The member networks: a ParameterNetwork's, a non-empty sequence's, or ``[networks]``."""
    if isinstance(networks, ParameterNetwork):
        return list(networks.networks)
    if isinstance(networks, (list, tuple)):
        if not networks:
            raise fail("network", "a network or a non-empty sequence of networks", networks)
        return list(networks)
    return [networks]



def member_graph(net: Any) -> Any:
    """The graph of one member network: the pgmpy network itself, or the density's ``graph``."""
    return net.graph if is_density(net) else net


def linear_gaussian_covariance(network: Any) -> tuple[list, np.ndarray]:
    """The nodes of a linear Gaussian network in topological order and their joint covariance.

    The covariance is (I − B)^-T Ω (I − B)^-1, with B the regression weights and Ω the noise variances,
    unrounded (pgmpy rounds its own to 8 decimals); its rows and columns follow the returned order.
    """
    import networkx as nx
    order = list(nx.topological_sort(network))
    index = {v: j for j, v in enumerate(order)}
    b = np.zeros((len(order), len(order)))
    omega = np.zeros(len(order))
    for v in order:
        cpd = network.get_cpds(node=v)
        for j, parent in enumerate(cpd.evidence):
            b[index[parent], index[v]] = cpd.beta[j + 1]
        omega[index[v]] = float(cpd.std) ** 2
    inv = np.linalg.inv(np.eye(len(order)) - b)
    return order, inv.T @ (omega[:, None] * inv)


def parameter_model_with_default_columns(network: Any, columns: Any) -> ParameterNetwork:
    """A PyMC model / parameter density (or a family) as a ParameterNetwork; unnamed nodes govern their namesake column.

    Such models are over parameters by construction (their free random variables; observed data on the
    parameters is refused by :func:`~bayespriv.datamodels.parameters.parameter_density`), so no wrapper is asked of them.
    """
    members = [as_density(m) for m in network_list(network)]
    for m in members:
        network_kind(m)  # the uniform ParameterTypeError for anything else
    given = {} if columns is None else columns
    if not isinstance(given, Mapping):
        raise ParameterTypeError(f"columns must be a mapping parameter node -> record column(s); got {type(given).__name__}")
    nodes = member_nodes(members[0])
    full = {v: given[v] if v in given else (v if isinstance(v, str) else str(v)) for v in nodes}
    full.update({k: v for k, v in given.items() if k not in full})  # unknown keys: refused by ParameterNetwork
    return ParameterNetwork(members if len(members) > 1 else members[0], full)
