"""Markov quilts of a Bayesian network, and the calibration stage of the quilt mechanisms.

A **Markov quilt** of a node X_i (Definition 6 of Zhang, Ohrimenko, Yang &
Cummings, *Attribute Privacy*, FAccT 2022, after Song, Wang & Chaudhuri,
SIGMOD 2017) is a set of nodes X_Q whose deletion splits the others into a
*nearby* part X_N ∋ X_i and a *remote* part X_R with X_R ⊥ X_i | X_Q. For each
Q we take the largest remote set — every node d-separated from X_i by Q —
which gives the smallest nearby set, and so the least noise.

* :func:`markov_quilts` lists quilts of one node: every subset of the other
  nodes (exhaustive, small networks) or a candidate search (large networks).
* :class:`ParameterNetwork` (from :mod:`.influence`) declares the network APMQM
  takes: its nodes are the distribution *parameters* φ behind the attributes
  (drawn once per dataset), with the record columns each governs — not one
  record's attributes (a record-level network such as "asia" is refused, see
  :func:`calibrate_quilts`).
* :func:`calibrate_quilts` prepares APMQM (Algorithm 2 of the attribute-privacy
  paper): for each sensitive node, its quilts with the column sensitivity
  Δ_{A∩N} F of the query and the max-influence e_Θ(X_Q | X_i) — exact for
  discrete parameter networks, a numerical estimate (assumption
  ``"numerical_influence"``) for continuous parameters of PyMC models. It
  does not depend on ε; the mechanism picks the quilt for its ε.
* :func:`calibrate_chain` prepares MQM (Song et al. 2017) for one attribute
  observed along a finite-state Markov chain: the exact max-influence of every
  window quilt {X_{i−a}, X_{i+b}} of every position.

d-separation of all nodes from X_i given Q is computed for many Q at once by
a vectorised Bayes-ball (Shachter 1998; Koller & Friedman 2009, Algorithm 3.1):
sparse boolean products over (quilts × nodes) states until a fixed point
(:class:`~bayespriv.calibration.quilt_search.GraphIndex`). Exact discrete
max-influences use a fixed-order variable elimination with a bound on its
largest factor (:mod:`~bayespriv.calibration.elimination`); nothing depends
on ``PYTHONHASHSEED``. For a family Θ the per-member max-influences are kept,
so APMQM and MQM choose the quilt per θ.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import networkx as nx
import numpy as np

from .._validation import check_finite_array, check_positive_int, fail, seal_fields, sealed
from ..errors import ParameterTypeError, ValidationError
from ..queries import Query
from .elimination import MAX_FACTOR
from .quilt_search import GraphIndex, NodeLayout, candidate_quilts
from .signing import FileProvenance
from ..datamodels.parameters.network import is_bare_pgmpy, parameter_model_with_default_columns
from .influence import InfluenceEngine, MaxInfluence, ParameterNetwork, network_structure

__all__ = [
    "ParameterNetwork",
    "Quilt",
    "markov_quilts",
    "EXHAUSTIVE_MAX_NODES",
    "QuiltScore",
    "QuiltCalibration",
    "calibrate_quilts",
    "MarkovChain",
    "ChainCalibration",
    "calibrate_chain",
]

#: Default largest network (all nodes) for the exhaustive search: 2^15 = 32768 subsets.
EXHAUSTIVE_MAX_NODES = 16
#: Hard ceiling of ``max_nodes`` (2^19 = 524 288 subsets: several seconds and as many Quilt objects).
_EXHAUSTIVE_CEILING = 20
_CHUNK = 1 << 15


# -- quilts -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Quilt:
    """A Markov quilt (Q, N, R) of a node: ``node ∈ nearby``, R ⊥ node | Q.

    Attributes
    ----------
    quilt : frozenset
        X_Q, the conditioning set.
    nearby : frozenset
        X_N: the node itself and every node neither in Q nor d-separated from it.
    remote : frozenset
        X_R: every node d-separated from the node given Q.

    Examples
    --------
    >>> import bayespriv as bp
    >>> quilt = bp.Quilt(quilt={"b"}, nearby={"a"}, remote={"c"})  # in a → b → c, b cuts a off from c
    >>> str(quilt), sorted(quilt.nodes)
    ('Q={b} N={a} R={c}', ['a', 'b', 'c'])
    """

    quilt: frozenset
    nearby: frozenset
    remote: frozenset

    @classmethod
    def _from_mask(cls, layout: NodeLayout, quilt: frozenset, remote: np.ndarray) -> "Quilt":
        """A quilt from the search: Q as a set, R as a bit mask over ``layout``'s nodes (N = the rest).

        ``nearby`` and ``remote`` are built on first access: a whole-network calibration keeps thousands of
        quilts whose sets would each hold most of the network's nodes.
        """
        out = object.__new__(cls)
        object.__setattr__(out, "quilt", quilt)
        object.__setattr__(out, "_split", (layout, np.packbits(remote).tobytes()))
        return out

    def __getattr__(self, name: str) -> Any:
        split = self.__dict__.get("_split") if name in ("nearby", "remote") else None
        if split is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        layout, bits = split
        remote = layout.members(bits)
        object.__setattr__(self, "remote", remote)
        object.__setattr__(self, "nearby", layout.everything - self.quilt - remote)
        return self.__dict__[name]

    def roles(self, layout: NodeLayout) -> np.ndarray:
        """int8 per node of ``layout``: 0 nearby, 1 quilt, 2 remote (without building the sets when possible)."""
        split = self.__dict__.get("_split")
        out = np.zeros(len(layout.nodes), dtype=np.int8)
        if split is not None and split[0] is layout:
            out[layout.mask(split[1])] = 2
        else:
            out[[layout.index[v] for v in self.remote]] = 2
        out[[layout.index[v] for v in self.quilt]] = 1
        return out

    def __post_init__(self) -> None:
        for name in ("quilt", "nearby", "remote"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise ParameterTypeError(f"{name} must be a collection of nodes; got {type(value).__name__}")
            object.__setattr__(self, name, frozenset(value))
        if self.quilt & self.nearby or self.quilt & self.remote or self.nearby & self.remote:
            raise fail("Quilt", "three disjoint sets (quilt, nearby, remote)", (sorted(map(str, self.quilt)),
                                                                               sorted(map(str, self.nearby)),
                                                                               sorted(map(str, self.remote))))

    @property
    def nodes(self) -> frozenset:
        """Every node of the network: quilt ∪ nearby ∪ remote."""
        return self.quilt | self.nearby | self.remote

    def __str__(self) -> str:
        def show(s: frozenset) -> str:
            return "{" + ", ".join(sorted(map(str, s))) + "}"

        return f"Q={show(self.quilt)} N={show(self.nearby)} R={show(self.remote)}"


def as_digraph(dag: Any, name: str = "dag") -> nx.DiGraph:
    """A plain :class:`networkx.DiGraph` copy of a DAG (networkx or pgmpy network)."""
    if not isinstance(dag, nx.DiGraph) and not (hasattr(dag, "nodes") and hasattr(dag, "edges")):
        raise ParameterTypeError(
            f"{name} must be a networkx DiGraph or a pgmpy network; got {type(dag).__name__}"
        )
    if isinstance(dag, nx.MultiDiGraph) or (isinstance(dag, nx.Graph) and not isinstance(dag, nx.DiGraph)):
        raise ParameterTypeError(f"{name} must be a directed acyclic graph without parallel edges; got {type(dag).__name__}")
    graph = nx.DiGraph()
    graph.add_nodes_from(dag.nodes())
    graph.add_edges_from(dag.edges())
    if graph.number_of_nodes() == 0:
        raise fail(name, "a graph with at least one node", "an empty graph")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        raise fail(name, "acyclic", f"a graph with the cycle {cycle}")
    return graph


#: The DAG's index arrays and vectorised Bayes-ball (see :mod:`.quilt_search`).
_Structure = GraphIndex


def _exhaustive_rows(n: int, node: int, start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop`` of all subsets of the n − 1 other nodes, as a bool (rows × n) matrix."""
    masks = np.arange(start, stop, dtype=np.int64)
    bits = ((masks[:, None] >> np.arange(n - 1, dtype=np.int64)) & 1).astype(bool)
    return np.insert(bits, node, False, axis=1)


def _check_node(structure: _Structure, node: Hashable) -> int:
    try:
        return structure.index[node]
    except (KeyError, TypeError):
        shown = sorted(map(str, structure.nodes))
        raise fail("node", f"a node of the network {shown if len(shown) <= 12 else shown[:12] + ['...']}", node) from None


def _check_max_nodes(max_nodes: Any) -> int:
    m = check_positive_int(max_nodes, "max_nodes", minimum=1)
    if m > _EXHAUSTIVE_CEILING:
        raise fail("max_nodes", f"at most {_EXHAUSTIVE_CEILING} (2^{_EXHAUSTIVE_CEILING - 1} subsets)", max_nodes)
    return m


def _check_exhaustive(exhaustive: Any) -> bool | None:
    if exhaustive is not None and not isinstance(exhaustive, bool):
        raise ParameterTypeError(f"exhaustive must be True, False or None (automatic); got {exhaustive!r}")
    return exhaustive


def _search_mode(exhaustive: bool | None, n: int, max_nodes: int) -> bool:
    """Whether to enumerate every subset: as asked, or (None) when the network has at most ``max_nodes`` nodes."""
    return n <= max_nodes if exhaustive is None else exhaustive


def _search_note(exhaustive: bool, asked: bool | None, n: int, max_nodes: int, refine: int) -> str:
    """How the quilts were searched, in words (kept on the calibration)."""
    if exhaustive:
        return f"exhaustive: every subset of the other {n - 1} nodes ({1 << (n - 1)} quilts per node)"
    note = ("candidate search: parents, children, Markov blanket, moral rings and skeleton layers, minimal "
            "d-separators (towards every node and the queried ones), "
            + (f"refined by up to {refine} one-node moves per node" if refine else "no refinement"))
    if asked is None:
        note += (f"; chosen automatically: exhaustive enumeration above max_nodes={max_nodes} nodes is infeasible "
                 f"(this network has {n}, 2^{n - 1} subsets per node)")
    return note


def _quilt_rows(
    structure: _Structure, node: int, exhaustive: bool, max_nodes: int, targets: Iterable[Hashable] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """``(Z, R)``: quilt and remote membership (bool S × n), sorted by quilt size then node order."""
    n = len(structure.nodes)
    if exhaustive:
        if n > max_nodes:
            raise ValidationError(
                f"dag must have at most max_nodes={max_nodes} nodes for an exhaustive quilt search "
                f"(it enumerates all 2^(nodes − 1) subsets of the other nodes); got {n} nodes. "
                "Pass exhaustive=False for the candidate search (Markov blanket, minimal d-separators, "
                "breadth-first layers), or raise max_nodes"
            )
        total = 1 << (n - 1)
        zs, rs = [], []
        for start in range(0, total, _CHUNK):
            z = _exhaustive_rows(n, node, start, min(total, start + _CHUNK))
            conn = structure.d_connected(node, z)
            zs.append(z)
            rs.append(~conn & ~z)
        z, r = np.concatenate(zs), np.concatenate(rs)
        r[:, node] = False
    else:
        z, r = candidate_quilts(structure, node, targets)
    sizes = z.sum(axis=1)
    # Sort by size, then lexicographically by the sorted member indices (weights 2^-j favour low indices).
    weights = np.exp2(-np.arange(n, dtype=float))
    order = np.lexsort((-(z * weights).sum(axis=1), sizes))
    return z[order], r[order]


def _quilt_set(structure: _Structure, row: np.ndarray) -> frozenset:
    """The nodes of a bool row."""
    nodes = structure.nodes
    return frozenset(nodes[j] for j in np.flatnonzero(row))


def _to_quilts(structure: _Structure, z: np.ndarray, r: np.ndarray) -> list[Quilt]:
    """Quilt objects of the rows (built without re-validation: the rows are disjoint by construction)."""
    return [Quilt._from_mask(structure.layout, _quilt_set(structure, zr), rr) for zr, rr in zip(z, r)]


def markov_quilts(
    dag: Any,
    node: Hashable,
    *,
    exhaustive: bool | None = True,
    max_nodes: int = EXHAUSTIVE_MAX_NODES,
    targets: Iterable[Hashable] = (),
) -> list[Quilt]:
    """Markov quilts of ``node`` in a Bayesian network.

    Parameters
    ----------
    dag : networkx.DiGraph, pgmpy network or ParameterNetwork
        A ``DiscreteBayesianNetwork`` / ``LinearGaussianBayesianNetwork`` is
        read through its nodes and edges, a ParameterNetwork through its
        first member's graph (its index is built once and kept on it).
        Quilts are a property of the graph alone.
    node : hashable
        The node X_i.
    exhaustive : bool or None
        True: every subset Q of the other nodes (2^(m−1) quilts for m nodes),
        allowed for networks of at most ``max_nodes`` nodes. None: the
        exhaustive search up to ``max_nodes`` nodes, the candidate search
        beyond. False: a candidate
        search for large networks (:mod:`~bayespriv.calibration.quilt_search`)
        — the empty quilt, the parents, the children, both, the Markov
        blanket, every breadth-first ring of the moral graph (and its border
        with the nodes beyond), the two minimal d-separators between the node
        and everything beyond each ring, every layer of the undirected
        skeleton, and a minimal d-separator towards each non-adjacent node
        not yet separated by one found before (each distinct separator is
        computed once). Masks over node positions throughout: the same
        quilts for any ``PYTHONHASHSEED``. Remote sets come from a
        breadth-first Bayes-ball over sparse neighbour lists, every quilt
        at once (tested against Lauritzen's criterion).
    max_nodes : int
        Largest network (counting every node) for the exhaustive search;
        default 16 (32 768 subsets), at most 20.
    targets : collection of nodes, optional
        Candidate mode only: nodes to keep out of the nearby set (APMQM
        passes the queried attributes). Adds the quilt Q = targets and, at
        every moral ring, the minimal d-separators (both ends) made of the
        targets adjacent to ``node`` plus nodes up to that ring separating
        the other targets.

    Returns
    -------
    list of Quilt
        Deduplicated, sorted by quilt size then by the nodes' order in the
        graph; the first is always the trivial quilt (Q = ∅, N = the node and
        every node d-connected to it, R = the nodes independent of it). R is
        every node d-separated from ``node`` given Q (the largest valid remote
        set), so N = all nodes − Q − R.

    Raises
    ------
    ValidationError
        Unknown node, a cyclic graph, or a network larger than ``max_nodes``
        with ``exhaustive=True``.

    Examples
    --------
    >>> import networkx as nx
    >>> chain = nx.DiGraph([("a", "b"), ("b", "c")])
    >>> [str(q) for q in markov_quilts(chain, "a")]
    ['Q={} N={a, b, c} R={}', 'Q={b} N={a} R={c}', 'Q={c} N={a, b} R={}', 'Q={b, c} N={a} R={}']
    """
    structure = network_structure(dag) if isinstance(dag, ParameterNetwork) else _Structure(as_digraph(dag))
    idx = _check_node(structure, node)
    asked = _check_exhaustive(exhaustive)
    aims = list(targets) if not isinstance(targets, (str, bytes)) else [targets]
    unknown = [u for u in aims if u not in structure.index]
    if unknown:
        raise fail("targets", "nodes of the network", unknown)
    limit = _check_max_nodes(max_nodes)
    z, r = _quilt_rows(structure, idx, _search_mode(asked, structure.n, limit), limit, aims)
    return _to_quilts(structure, z, r)


# -- calibration for APMQM --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QuiltScore:
    """One quilt of a sensitive node with what Algorithm 2 needs.

    Attributes
    ----------
    quilt : Quilt
    sensitivity : float
        Δ_{A∩N} F: the query's column sensitivity over the queried attributes
        in the nearby set (0 when none is nearby).
    influence : MaxInfluence
        e_Θ(X_Q | X_i).
    """

    quilt: Quilt
    sensitivity: float
    influence: MaxInfluence

    @property
    def max_influence(self) -> float:
        """The max-influence of the quilt on the node (``influence.value``)."""
        return float(self.influence.value)

    def score(self, epsilon: float) -> float:
        """σ(Q) = Δ_{A∩N} F / (ε − e), or ``inf`` when e ≥ ε (not usable)."""
        e = self.max_influence
        if not e < epsilon:
            return math.inf
        return 0.0 if self.sensitivity == 0 else self.sensitivity / (epsilon - e)


@seal_fields
@dataclass(frozen=True, eq=False)
class QuiltCalibration:
    """What APMQM needs, before ε and before any data (built by :func:`calibrate_quilts`).

    Attributes
    ----------
    networks : tuple
        The network(s) over the attributes' parameters (several: a family Θ).
    graph : networkx.DiGraph
        The DAG over the parameters.
    sensitive : tuple
        Sensitive nodes C.
    query : Query
    n_records : int
    columns : mapping
        Parameter node -> tuple of the record columns it governs (``()``:
        a latent parameter).
    queried : frozenset
        Nodes A whose columns the query reads.
    sensitivity : float
        Δ_A F (the trivial quilt's score numerator).
    candidates : mapping
        Sensitive node -> tuple of :class:`QuiltScore` (every quilt searched
        except those dominated by a sub-quilt with no larger Δ, which can never
        score lower since e only grows with Q).
    n_quilts : mapping
        Sensitive node -> number of quilts searched.
    skipped : mapping
        Sensitive node -> number of quilts not scored (joint table above
        ``max_states``, elimination plan above ``max_factor``, grid too large).
    exhaustive : bool
        Whether every subset of the other nodes was searched (see ``search``).
    confidence : float or None
        1.0: every max-influence is exact; None when some are numerical
        estimates (continuous parameters; assumption ``"numerical_influence"``).
    k : int
        Number of components of F.
    component_names : tuple of str
    assumptions : tuple of str
        ``"parameters_bayes_net"`` (the data arise from a network over
        parameters in Θ, see :class:`ParameterNetwork`) and those of the
        max-influences (``"numerical_influence"``, ``"truncated_prior"``).
    engine : InfluenceEngine
    parameter_network : ParameterNetwork
        The declared network over parameters, with its columns.
    skip_reasons : mapping
        Sensitive node -> the reason each skipped quilt was not scored.
    provenance : FileProvenance or None
        The file it was loaded from and whether it verified (None when
        computed in this process); see :attr:`Calibration.provenance
        <bayespriv.Calibration.provenance>`.
    search : str
        How the quilts were searched, in words: exhaustive, or the candidate
        search with its refinement, and whether it was chosen automatically
        because the network has more than ``max_nodes`` nodes.

    Notes
    -----
    For a family Θ each :class:`QuiltScore` keeps e_θ of every member
    (``influence.per_member``): APMQM chooses the best quilt per θ
    (:meth:`best` with ``member``; :meth:`member_scores`).
    """

    networks: tuple[Any, ...]
    graph: nx.DiGraph = field(repr=False)
    sensitive: tuple[Hashable, ...]
    query: Query
    n_records: int
    columns: Mapping[Hashable, tuple[str, ...]]
    queried: frozenset
    sensitivity: float
    candidates: Mapping[Hashable, tuple[QuiltScore, ...]] = field(repr=False)
    n_quilts: Mapping[Hashable, int]
    skipped: Mapping[Hashable, int]
    exhaustive: bool
    confidence: float | None
    k: int
    component_names: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    engine: InfluenceEngine | None = field(default=None, repr=False)
    parameter_network: ParameterNetwork | None = field(default=None, repr=False)
    skip_reasons: Mapping[Hashable, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    provenance: FileProvenance | None = field(default=None, repr=False)
    search: str = ""

    @property
    def content_hash(self) -> str | None:
        """The verified SHA-256 content digest of the file this calibration was loaded from (see
        :attr:`Calibration.content_hash <bayespriv.Calibration.content_hash>`); None otherwise."""
        p = self.provenance
        return p.content_hash if p is not None and p.verified else None

    def roles(self, node: Hashable) -> np.ndarray:
        """The candidates of a sensitive ``node`` as an int8 array (candidates × network nodes, in the
        graph's node order): 0 nearby, 1 quilt, 2 remote. Read from the search's masks, without building
        the nearby and remote sets."""
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        layout = self._layout()
        rows = [c.quilt.roles(layout) for c in self.candidates[node]]
        return np.array(rows, dtype=np.int8).reshape(len(rows), len(layout.nodes))

    def _layout(self) -> NodeLayout:
        pnet = self.parameter_network
        if pnet is not None and tuple(network_structure(pnet).nodes) == tuple(self.graph.nodes()):
            return network_structure(pnet).layout
        return NodeLayout(tuple(self.graph.nodes()))

    @property
    def n_members(self) -> int:
        """Number of members θ of Θ (1 for a single network)."""
        return len(self.networks)

    @property
    def member_labels(self) -> tuple[Any, ...]:
        """A label per member θ (the engine's member labels, else indices)."""
        labels = getattr(self.engine, "members", None)
        return tuple(labels) if labels is not None and len(labels) == self.n_members else tuple(range(self.n_members))

    def member_scores(self, node: Hashable, epsilon: float) -> np.ndarray:
        """σ(Q, θ) = Δ_{A∩N} F / (ε − e_θ(X_Q | X_i)) for every member θ and candidate (array members × candidates;
        ``inf`` where e_θ ≥ ε, 0 where Δ = 0 and e_θ < ε)."""
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        return _scores(self.candidates[node], self.n_members, epsilon)[0]

    def evaluate(self, node: Hashable, quilt: Any) -> QuiltScore:
        """The :class:`QuiltScore` of any set Q (or :class:`Quilt`) for a sensitive ``node``.

        The remote set is recomputed (every node d-separated from ``node`` given
        Q, checked with :func:`networkx.is_d_separator`), so a Quilt passed in
        with a different split is refused rather than trusted.
        """
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        members = getattr(quilt, "quilt", quilt)
        if isinstance(members, (str, bytes)) or not isinstance(members, Iterable):
            raise ParameterTypeError(f"quilt must be a collection of nodes or a Quilt; got {type(quilt).__name__}")
        q = frozenset(members)
        structure = self._structure()
        unknown = [v for v in q if v not in structure.index]
        if unknown or node in q:
            raise fail("quilt", f"nodes of the network other than {node!r}", sorted(map(str, q)))
        z = np.zeros((1, len(structure.nodes)), dtype=bool)
        z[0, [structure.index[v] for v in q]] = True
        conn = structure.d_connected(structure.index[node], z)[0]
        remote = frozenset(v for j, v in enumerate(structure.nodes) if not conn[j] and not z[0, j])
        if remote and not nx.is_d_separator(self.graph, {node}, set(remote), set(q)):  # pragma: no cover - safety net
            raise ValidationError(f"internal check failed: {sorted(map(str, remote))} not d-separated from {node!r}")
        full = Quilt(q, frozenset(structure.nodes) - q - remote, remote)
        if isinstance(quilt, Quilt) and quilt != full:
            raise fail("quilt", f"the Markov quilt of {node!r} with the largest remote set, {full}", str(quilt))
        near_queried = full.nearby & self.queried
        cols = [c for v in near_queried for c in self.columns[v]]
        sens = self.query.column_sensitivity(cols, self.n_records, ord=1) if cols else 0.0
        engine = self.engine if self.engine is not None else InfluenceEngine(list(self.networks))
        return QuiltScore(full, float(sens), engine(node, q))

    def _structure(self) -> _Structure:
        """The graph index: the declared network's (built once per network), else one of ``graph``."""
        pnet = self.parameter_network
        if pnet is not None and tuple(network_structure(pnet).nodes) == tuple(self.graph.nodes()):
            return network_structure(pnet)
        return _Structure(self.graph)

    def to_netcdf(self, path: Any, *, seed: int | None = None, key: bytes | None = None) -> Any:
        """Save to a netCDF file, signed with ``key`` (default: the owner's key;
        :func:`~bayespriv.calibration.persist.save_calibration`).

        Only calibrations of discrete parameter networks (pgmpy
        ``DiscreteBayesianNetwork``) can be saved: the file holds each
        network's structure and CPD tables (float64, exact) and every scored
        quilt; :func:`~bayespriv.calibration.persist.load_calibration` (with the
        query) rebuilds an equal calibration, on which APMQM has the same noise
        and guarantee bit for bit.
        """
        from ._hooks import call as call_registered

        return call_registered("save_calibration", self, path, seed=seed, key=key)

    def best(self, node: Hashable, epsilon: float, member: int | None = None) -> QuiltScore | None:
        """Algorithm 2's choice for ``node`` at ε: the least score among quilts with e < ε.

        ``member=None`` uses e_Θ = sup over θ (one quilt for all of Θ); an
        index θ uses e_θ of that member (the per-θ choice of APMQM). Ties go to
        the smaller max-influence (equal scores give equal noise, and a
        smaller e is the stronger statement: with no noise, i.e. A ∩ N = ∅,
        the privacy loss is at most e), then the smaller quilt. None when no
        quilt has e < ε (cannot happen with the trivial quilt, e = 0).
        """
        if node not in self.candidates:
            raise fail("node", f"a sensitive node {list(self.sensitive)!r}", node)
        cands = self.candidates[node]
        if member is None:
            usable = [(c.score(epsilon), c.max_influence, len(c.quilt.quilt), k, c)
                      for k, c in enumerate(cands) if c.max_influence < epsilon]
            return min(usable, key=lambda t: t[:4])[4] if usable else None
        if isinstance(member, bool) or not isinstance(member, (int, np.integer)) or not 0 <= member < self.n_members:
            raise fail("member", f"None or an integer in [0, {self.n_members - 1}]", member)
        pick = _best_per_member(cands, self.n_members, epsilon)[int(member)]
        return None if pick < 0 else cands[pick]

    def __repr__(self) -> str:
        from .._display import view

        return view("quilt_calibration_repr", self)

    def _repr_html_(self) -> str:
        from .._display import view

        return view("quilt_calibration_html", self)


def _undominated(z: np.ndarray, sens: np.ndarray, exhaustive: bool, n: int, node: int) -> np.ndarray:
    """Quilts not dominated by a strict sub-quilt with Δ no larger (bool mask).

    e(Q) ≤ e(Q') for Q ⊆ Q' (marginalising cannot increase a max-ratio), so a
    quilt with a sub-quilt of no larger Δ never scores lower at any ε.
    """
    if exhaustive:
        # Rows are all subsets; index them by their bitmask over the other nodes, then
        # min over strict subsets by a sum-over-subsets DP.
        others = [j for j in range(n) if j != node]
        masks = (z[:, others].astype(np.int64) << np.arange(len(others), dtype=np.int64)).sum(axis=1)
        by_mask = np.empty(1 << len(others))
        by_mask[masks] = sens
        sub = by_mask.copy()
        full = np.arange(1 << len(others))
        for b in range(len(others)):
            has = full[(full >> b) & 1 == 1]
            sub[has] = np.minimum(sub[has], sub[has ^ (1 << b)])
        strict = np.full(1 << len(others), np.inf)
        for b in range(len(others)):
            has = full[(full >> b) & 1 == 1]
            strict[has] = np.minimum(strict[has], sub[has ^ (1 << b)])
        return sens < strict[masks]
    return ~(_strict_subsets(z) & (sens[:, None] <= sens[None, :])).any(axis=0)


def _strict_subsets(z: np.ndarray) -> np.ndarray:
    """``out[a, b]``: row a is a strict subset of row b (bool S × S), on the bits of the columns in use."""
    used = z[:, z.any(axis=0)]
    packed = np.packbits(used, axis=1)  # S × words
    sizes = z.sum(axis=1)
    inside = ~(packed[:, None, :] & ~packed[None, :, :]).any(axis=2)  # a ⊆ b
    return inside & (sizes[:, None] < sizes[None, :])


def _scores(cands: Sequence[QuiltScore], n_members: int, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """(σ(θ, Q) as members × candidates, e_θ(Q) as members × candidates)."""
    if not cands:
        return np.full((n_members, 0), np.inf), np.full((n_members, 0), np.inf)
    e = np.stack([c.influence.member_values(n_members) for c in cands], axis=1)
    d = np.array([c.sensitivity for c in cands], dtype=float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = np.where(d == 0, 0.0, d / (epsilon - e))
    return np.where(e < epsilon, sigma, np.inf), e


def _best_per_member(cands: Sequence[QuiltScore], n_members: int, epsilon: float) -> np.ndarray:
    """Index of the best candidate for each member θ (−1: none usable), with :meth:`QuiltCalibration.best`'s ties."""
    sigma, e = _scores(cands, n_members, epsilon)
    if sigma.shape[1] == 0:
        return np.full(n_members, -1)
    size = np.array([len(c.quilt.quilt) for c in cands])
    out = np.empty(n_members, dtype=np.int64)
    for m in range(n_members):
        order = np.lexsort((np.arange(len(cands)), size, e[m], sigma[m]))
        out[m] = order[0] if np.isfinite(sigma[m, order[0]]) else -1
    return out


def _pareto_front(sens: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Entries not dominated in (Δ, e_θ for every θ) by an earlier-or-better entry (bool mask).

    ``e`` is members × entries. Entry j is dominated by k when Δ_k ≤ Δ_j and e_k ≤ e_j for every θ, strictly
    somewhere (or equal everywhere and k < j): at every ε and for every θ, k scores no worse than j.
    """
    le = (sens[:, None] <= sens[None, :]) & (e[:, :, None] <= e[:, None, :]).all(axis=0)  # le[k, j]: k ≤ j
    eq = le & le.T
    idx = np.arange(len(sens))
    dominates = (le & ~eq) | (eq & (idx[:, None] < idx[None, :]))
    return ~dominates.any(axis=0)


@dataclass
class _Scored:
    """The quilts of one sensitive node scored so far (masks, Δ, e) and what was skipped."""

    z: list[np.ndarray]
    r: list[np.ndarray]
    sens: list[float]
    scores: list[QuiltScore]
    seen: set[bytes]
    reasons: list[str]


def _neighbours(g: GraphIndex, node: int, z: np.ndarray) -> list[np.ndarray]:
    """Quilts one move from ``z``: remove a node, add a moral neighbour of Z ∪ {node}, or move a node of Z to one
    of its moral neighbours (in node-position order: deterministic)."""
    out = []
    members = np.flatnonzero(z)
    for u in members:
        w = z.copy()
        w[u] = False
        out.append(w)
    around = g.neighbours_of(g.moral, g.mask(np.append(members, node))) & ~z
    around[node] = False
    for u in np.flatnonzero(around):
        w = z.copy()
        w[u] = True
        out.append(w)
    for u in members:
        near = g.moral.of(u)
        for t in near[~z[near]]:
            if t != node:
                w = z.copy()
                w[u] = False
                w[t] = True
                out.append(w)
    return out


def _bare_network_error(network: Any) -> ParameterTypeError:
    """The error for a bare pgmpy network passed where a network over parameters is meant."""
    members = network if isinstance(network, (list, tuple)) else [network]
    kind = ", ".join(dict.fromkeys(type(m).__name__ for m in members))
    return ParameterTypeError(
        "network must be a ParameterNetwork — a Bayesian network whose nodes are the distribution parameters φ "
        "behind the attributes (e.g. the share of smokers), drawn once per dataset, with columns= naming the record "
        "column(s) each parameter governs — or a PyMC model / parameter density over parameters; got a bare "
        f"{kind}. A pgmpy network usually describes one record (every record draws every node, like the classic "
        "'asia'): its nodes are attributes, not parameters, and APMQM's Theorem 3 does not cover it (it can then "
        "release an exact count as private). If the nodes really are parameters, wrap the network: "
        "calibrate_quilts(ParameterNetwork(network, columns={node: column, ...}), ...). For a record-level network "
        "use BayesNetDataModel(network, n_records=...) with calibrate(...) and a Gaussian or Wasserstein mechanism"
    )


def _parameter_network(network: Any, columns: Any) -> ParameterNetwork:
    """Stage 1 of :func:`calibrate_quilts`: the network over parameters, with the columns each governs."""
    if isinstance(network, ParameterNetwork):
        if columns is not None:
            raise fail("columns", "None when network is a ParameterNetwork (it carries its columns)", columns)
        return network
    if is_bare_pgmpy(network):
        raise _bare_network_error(network)
    return parameter_model_with_default_columns(network, columns)


@dataclass(frozen=True, eq=False)
class _QuiltSearch:
    """Stage 2 of :func:`calibrate_quilts`: validated inputs of the search."""

    pnet: ParameterNetwork
    engine: InfluenceEngine
    structure: _Structure
    sensitive: tuple[Hashable, ...]
    sens_idx: tuple[int, ...]
    queried: frozenset
    n: int
    k: int
    exhaustive: bool
    max_nodes: int
    max_states: int
    refine: int = 0
    note: str = ""
    graph: nx.DiGraph | None = None


def _search_inputs(pnet: ParameterNetwork, sensitive: Any, query: Query, n: int, options: Mapping[str, Any]) -> _QuiltSearch:
    extra = {} if pnet.kind != "discrete" else {"max_factor": check_positive_int(options["max_factor"], "max_factor",
                                                                                 minimum=2)}
    engine = InfluenceEngine(pnet, **dict(options["influence_options"] or {}), **extra)
    graph = as_digraph(engine.graph(0), "network")
    for j in range(1, len(engine.networks)):
        if set(engine.graph(j).edges()) != set(graph.edges()):
            raise ValidationError(f"networks of a family must share one graph; member {j} has different edges")
    structure = network_structure(pnet)
    sens_nodes = (sensitive,) if not isinstance(sensitive, (list, tuple)) else tuple(sensitive)
    if not sens_nodes:
        raise fail("sensitive", "a node or a non-empty sequence of nodes", sensitive)
    sens_idx = []
    for v in sens_nodes:
        try:
            sens_idx.append(structure.index[v])
        except (KeyError, TypeError):
            raise fail("sensitive", f"nodes of the network {sorted(map(str, structure.nodes))}", v) from None
    stray = [c for c in query.columns if pnet.owner(c) is None]
    if stray:
        governed = sorted(c for names in pnet.columns.values() for c in names)
        raise ValidationError(
            f"query must read only columns governed by the network's parameters {governed!r}; got {stray!r} "
            "(declare the parameter of each column in ParameterNetwork(network, columns=...))"
        )
    asked = _check_exhaustive(options["exhaustive"])
    kq = query.k if options["k"] is None else check_positive_int(options["k"], "k")
    if kq is None:
        raise ValidationError(f"k must be given for query {query.name!r}, whose number of components is unknown; got None")
    limit = _check_max_nodes(options["max_nodes"])
    refine = check_positive_int(options["refine"], "refine", minimum=0)
    exhaustive = _search_mode(asked, structure.n, limit)
    return _QuiltSearch(pnet, engine, structure, sens_nodes, tuple(sens_idx),
                        frozenset(pnet.owner(c) for c in query.columns), n, int(kq), exhaustive, limit,
                        check_positive_int(options["max_states"], "max_states", minimum=2), refine,
                        _search_note(exhaustive, asked, structure.n, limit, refine), graph)


def _score_quilts(s: _QuiltSearch, query: Query) -> tuple[dict, dict, dict, dict, float]:
    """Stage 3: the undominated quilts of every sensitive node with Δ_{A∩N} F and e(X_Q | X_i)."""
    sens_cache: dict[frozenset, float] = {}

    def delta(nodes_near: frozenset) -> float:
        key = nodes_near & s.queried
        if key not in sens_cache:
            cols = [c for v in sorted(key, key=s.structure.index.__getitem__) for c in s.pnet.columns[v]]
            sens_cache[key] = query.column_sensitivity(cols, s.n, ord=1) if cols else 0.0
        return sens_cache[key]

    full = delta(s.queried)
    candidates: dict[Hashable, tuple[QuiltScore, ...]] = {}
    counts: dict[Hashable, int] = {}
    skipped: dict[Hashable, int] = {}
    reasons: dict[Hashable, tuple[str, ...]] = {}
    for v, idx in zip(s.sensitive, s.sens_idx):
        z, r = _quilt_rows(s.structure, idx, s.exhaustive, s.max_nodes, s.queried)
        sens = _row_sensitivities(s, z, r, delta)
        keep = _undominated(z, sens, s.exhaustive, len(s.structure.nodes), idx)
        state = _Scored([], [], [], [], {row.tobytes() for row in z}, [])
        _score_rows(s, v, z[keep], r[keep], sens[keep], state)
        initial = len(state.scores) + len(state.reasons)
        if s.refine and not s.exhaustive:
            _refine(s, v, idx, state, delta)
        counts[v] = len(z) + len(state.scores) + len(state.reasons) - initial
        candidates[v] = tuple(state.scores)
        skipped[v] = len(state.reasons)
        reasons[v] = tuple(state.reasons)
    return candidates, counts, skipped, reasons, float(full)


def _row_sensitivities(s: _QuiltSearch, z: np.ndarray, r: np.ndarray, delta: Any) -> np.ndarray:
    """Δ_{A∩N} F of each row (computed once per distinct pattern A ∩ N)."""
    if len(z) == 0:
        return np.zeros(0)
    cols = np.array(sorted(s.structure.index[u] for u in s.queried), dtype=np.int64)
    patterns, inverse = np.unique(~z[:, cols] & ~r[:, cols], axis=0, return_inverse=True)
    nodes = s.structure.nodes
    pattern_sens = np.array([delta(frozenset(nodes[j] for j in cols[p])) for p in patterns])
    return pattern_sens[np.asarray(inverse).reshape(-1)]


def _score_rows(s: _QuiltSearch, v: Hashable, z: np.ndarray, r: np.ndarray, sens: np.ndarray, state: _Scored) -> int:
    """Score rows (e(X_Q | X_i) per member); rows refused by the engine are recorded with the reason."""
    added = 0
    for row in range(len(z)):
        q = _quilt_set(s.structure, z[row])
        why = s.engine.refusal(v, q, s.max_states) if q else None
        if why is not None:
            state.reasons.append(why)
            continue
        state.z.append(z[row])
        state.r.append(r[row])
        state.sens.append(float(sens[row]))
        quilt = Quilt._from_mask(s.structure.layout, q, r[row])
        state.scores.append(QuiltScore(quilt, float(sens[row]), s.engine(v, q)))
        added += 1
    return added


def _refine(s: _QuiltSearch, v: Hashable, idx: int, state: _Scored, delta: Any) -> None:
    """Greedy local improvement of the (Δ, e_θ) Pareto front: one-node moves until no move joins the front.

    The front holds the minimiser of Δ/(ε − e_θ) for every ε and θ, so improving it is independent of ε.
    At most ``s.refine`` new quilts are scored per sensitive node; moves are taken in a deterministic order.
    """
    m = len(s.engine.networks)
    budget = s.refine
    while budget > 0:
        e = np.stack([c.influence.member_values(m) for c in state.scores], axis=1)
        front = np.flatnonzero(_pareto_front(np.array(state.sens), e))
        fresh = []
        for j in front:
            for w in _neighbours(s.structure, idx, state.z[j]):
                key = w.tobytes()
                if key not in state.seen:
                    state.seen.add(key)
                    fresh.append(w)
        if not fresh:
            return
        z = np.array(fresh)
        r = s.structure.remote(idx, z)
        sens = _row_sensitivities(s, z, r, delta)
        order = np.lexsort((z.sum(axis=1), sens))[:budget]
        before = len(state.scores)
        budget -= len(order)
        _score_rows(s, v, z[order], r[order], sens[order], state)
        e = np.stack([c.influence.member_values(m) for c in state.scores], axis=1)
        if not _pareto_front(np.array(state.sens), e)[before:].any():
            return


def calibrate_quilts(
    network: ParameterNetwork | Any,
    sensitive: Hashable | Sequence[Hashable],
    query: Query,
    *,
    n_records: int,
    columns: Mapping[Hashable, str | Sequence[str]] | None = None,
    exhaustive: bool | None = None,
    max_nodes: int = EXHAUSTIVE_MAX_NODES,
    k: int | None = None,
    max_states: int = 2**16,
    influence_options: Mapping[str, Any] | None = None,
    max_factor: int = MAX_FACTOR,
    refine: int = 256,
) -> QuiltCalibration:
    """Quilts, column sensitivities and max-influences for APMQM (independent of ε).

    Parameters
    ----------
    network : ParameterNetwork, PyMC model, parameter density, or sequence of the latter
        The Bayesian network over the attributes' **distribution parameters**
        φ (Definition 5 of the attribute-privacy paper: φ_j governs attribute
        j, the φ's are drawn once per dataset, and given them every record's
        attributes are drawn independently). A pgmpy network must be wrapped
        in :class:`~bayespriv.calibration.influence.ParameterNetwork`, which
        names the record column(s) each parameter governs; a bare pgmpy
        network is refused (it usually describes one record, like "asia",
        and APMQM's theorem does not cover that). A ``DiscreteBayesianNetwork``
        gives exact max-influences; a PyMC model (its scalar continuous free
        random variables, graph read from the model) or a parameter density
        gives numerical estimates (see
        :func:`~bayespriv.calibration.influence.max_influence`), and the
        calibration then carries the assumption ``"numerical_influence"`` and
        confidence None; a sequence (same graph) is a family Θ and the
        supremum is taken.
    sensitive : node or sequence of nodes
        The parameters of the sensitive attributes C.
    query : Query
        F; it must read only columns governed by parameters of the network
        and give :meth:`~bayespriv.Query.column_sensitivity` (ready-made
        counts, shares and bounded means do; a user query declares
        ``column_sensitivities``).
    n_records : int
        Rows of the dataset the mechanism will release on.
    columns : mapping, optional
        Only with a PyMC model or parameter density: node -> dataset
        column(s) of its attribute; default: the node's name. A
        ParameterNetwork carries its own (passing both is refused).
    exhaustive : bool or None
        None (default): the exhaustive search for networks of at most
        ``max_nodes`` nodes, the candidate search beyond (enumerating 2^(m−1)
        subsets per node is infeasible there); the calibration's ``search``
        says which ran and why. True / False force one (True refuses a
        network above ``max_nodes``); see :func:`markov_quilts`.
    max_nodes : int
        Largest network for the exhaustive search (default 16, at most 20).
    k : int, optional
        Number of components of F, when the query cannot tell without data.
    max_states : int
        Quilts of a discrete network whose joint table P(φ_Q, φ_i) has more
        states are not scored (counted in ``skipped``). Leaving quilts out only
        removes options from Algorithm 2's minimum: the guarantee is unchanged
        (the trivial quilt is always scored). For continuous parameters,
        quilts whose grid does not fit (see ``influence_options``) are skipped
        likewise.
    influence_options : mapping, optional
        Continuous parameters: ``resolution``, ``bounds`` and ``max_points``
        of :func:`~bayespriv.calibration.influence.max_influence`.
    max_factor : int
        Discrete networks: quilts whose variable-elimination plan (fixed
        min-weight order, ties by node position, the same for any hash seed)
        builds a factor of more entries are not scored; the reason is kept
        in ``skip_reasons`` (default 2^22). Like ``max_states``, this only
        removes options: the trivial quilt is always scored.
    refine : int
        Candidate mode only: at most this many extra quilts scored per
        sensitive node by a greedy local improvement of the (Δ_{A∩N} F,
        e_θ) Pareto front — one-node moves (remove, add a moral neighbour,
        move a node to a moral neighbour) from every front quilt, repeated
        while a move joins the front. The front holds Algorithm 2's choice
        at every ε and θ, so this is independent of ε and deterministic.
        0 disables it (default 256).

    Returns
    -------
    QuiltCalibration

    Raises
    ------
    ParameterTypeError
        A bare pgmpy network (wrap it in ``ParameterNetwork`` if its nodes
        are parameters; use ``BayesNetDataModel`` and
        :func:`~bayespriv.calibrate` if it describes records).
    ValidationError
        What ``ParameterNetwork`` refuses (e.g. states that are record
        values), ``columns`` together with a ParameterNetwork, unknown
        sensitive node, a query reading columns that no parameter governs, a
        query without column sensitivity, a network above ``max_nodes``
        with ``exhaustive=True``.

    Privacy
    -------
    The calibration holds what Theorem 3 of Zhang, Ohrimenko, Yang & Cummings
    (FAccT 2022, Appendix D) needs for Algorithm 2: ε-distributional
    attribute privacy (Definition 5) of the sensitive parameters, with Θ the
    network(s) over parameters. Assumption ``"parameters_bayes_net"``: the
    φ's are drawn once per dataset from a network in Θ and, given them, the
    attributes are independent with attribute j depending on φ_j alone. It
    is the user's declaration (wrapping in ``ParameterNetwork``) and cannot
    be tested on the network's tables, except that a discrete node whose
    states are record values (strings, booleans) is refused. Bound: exact
    for discrete networks (confidence 1), numerical estimates otherwise.
    On a record-level network the same numbers would mean nothing: asia's
    quilt {dysp} of smoke has e = 0.548 < 1 and Δ_{A∩N} F = 0, yet the exact
    count of dysp among 500 records has δ ≈ 0.49 at ε = 1 between shares of
    smokers 0.4 and 0.6 (``tests/calibration/test_parameter_network.py``).

    Examples
    --------
    Two parameters — the share of high incomes and the mean SAT score — with the score depending on the
    share; the secret is the share, the query reads both columns:

    >>> import bayespriv as bp
    >>> from pgmpy.models import DiscreteBayesianNetwork
    >>> from pgmpy.factors.discrete import TabularCPD
    >>> bn = DiscreteBayesianNetwork([("p_high_income", "mean_sat")])
    >>> bn.add_cpds(TabularCPD("p_high_income", 2, [[0.5], [0.5]], state_names={"p_high_income": [0.2, 0.8]}),
    ...             TabularCPD("mean_sat", 2, [[0.7, 0.3], [0.3, 0.7]], evidence=["p_high_income"],
    ...                        evidence_card=[2], state_names={"mean_sat": [1100.0, 1300.0],
    ...                                                        "p_high_income": [0.2, 0.8]}))
    >>> net = bp.ParameterNetwork(bn, columns={"p_high_income": "income", "mean_sat": "sat"})
    >>> query = bp.stack(bp.mean("income", bounds=(0, 1)), bp.mean("sat", bounds=(400, 1600)))
    >>> cal = bp.calibrate_quilts(net, "p_high_income", query, n_records=100)
    >>> mech = bp.mechanisms.APMQM(cal, epsilon=1.0)

    Without a quilt the Laplace scale would be the query's whole sensitivity over both columns,
    1 + 1200 = 1201. The quilt {mean_sat} leaves only the income mean (sensitivity 1) to cover, at
    ε minus the max-influence of mean_sat on the share (0.847): the scale is 1 / (1 − 0.847).

    >>> [round(float(scale), 2) for scale in mech.noise_scale]
    [6.55, 6.55]
    """
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    n = check_positive_int(n_records, "n_records")
    if influence_options is not None and not isinstance(influence_options, Mapping):
        raise ParameterTypeError(f"influence_options must be a mapping; got {type(influence_options).__name__}")
    pnet = _parameter_network(network, columns)
    search = _search_inputs(pnet, sensitive, query, n, {
        "influence_options": influence_options, "exhaustive": exhaustive, "max_nodes": max_nodes, "k": k,
        "max_states": max_states, "max_factor": max_factor, "refine": refine})
    candidates, counts, skipped, reasons, full = _score_quilts(search, query)
    numerical = any(not c.influence.exact for scores in candidates.values() for c in scores)
    extra = tuple(dict.fromkeys(a for scores in candidates.values() for c in scores for a in c.influence.assumptions))
    return QuiltCalibration(
        networks=search.engine.networks,
        graph=search.graph,
        sensitive=search.sensitive,
        query=query,
        n_records=n,
        columns=pnet.columns,
        queried=search.queried,
        sensitivity=full,
        candidates=MappingProxyType(candidates),
        n_quilts=MappingProxyType(counts),
        skipped=MappingProxyType(skipped),
        skip_reasons=MappingProxyType(reasons),
        exhaustive=search.exhaustive,
        confidence=None if numerical else 1.0,
        k=search.k,
        component_names=query.component_names(search.k),
        assumptions=("parameters_bayes_net",) + extra,
        engine=search.engine,
        parameter_network=pnet,
        search=search.note,
    )


# -- Markov chains (MQM of Song, Wang & Chaudhuri 2017) -----------------------------------------------------------
@dataclass(frozen=True, eq=False)
class MarkovChain:
    """A finite-state Markov chain X_1 → X_2 → … → X_T.

    Parameters
    ----------
    transition : array (k, k)
        Row-stochastic: ``transition[s, t] = P(X_{j+1} = t | X_j = s)``.
    initial : array (k,)
        Distribution of X_1.
    states : sequence, optional
        Labels of the states (default 0..k−1), as they appear in the data.

    Examples
    --------
    >>> import bayespriv as bp
    >>> weather = bp.MarkovChain([[0.9, 0.1], [0.2, 0.8]], initial=[0.5, 0.5], states=["dry", "rain"])
    >>> weather.k, weather.states
    (2, ('dry', 'rain'))
    >>> bp.MarkovChain.stationary([[0.9, 0.1], [0.2, 0.8]]).initial.round(4).tolist()  # started in equilibrium
    [0.6667, 0.3333]
    """

    transition: np.ndarray
    initial: np.ndarray
    states: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        p = check_finite_array(self.transition, "transition", ndim=2)
        if p.shape[0] != p.shape[1] or p.shape[0] < 2:
            raise fail("transition", "a square matrix with at least 2 states", f"shape {p.shape}")
        if np.any(p < 0) or not np.allclose(p.sum(axis=1), 1.0, atol=1e-12):
            raise fail("transition", "row-stochastic (non-negative rows summing to 1)", p.tolist())
        q = check_finite_array(self.initial, "initial", ndim=1)
        if q.shape != (p.shape[0],) or np.any(q < 0) or not math.isclose(q.sum(), 1.0, abs_tol=1e-12):
            raise fail("initial", f"a probability vector of length {p.shape[0]}", q.tolist())
        p = p / p.sum(axis=1, keepdims=True)
        q = q / q.sum()
        object.__setattr__(self, "transition", sealed(p))
        object.__setattr__(self, "initial", sealed(q))
        states = tuple(range(p.shape[0])) if self.states is None else tuple(self.states)
        if len(states) != p.shape[0] or len(set(states)) != len(states):
            raise fail("states", f"{p.shape[0]} distinct labels", self.states)
        object.__setattr__(self, "states", states)

    @property
    def k(self) -> int:
        """Number of states of the chain."""
        return int(self.transition.shape[0])

    @classmethod
    def stationary(cls, transition: Any, states: Sequence[Any] | None = None) -> "MarkovChain":
        """The chain started from a stationary distribution of ``transition``."""
        p = check_finite_array(transition, "transition", ndim=2)
        w, vecs = np.linalg.eig(p.T)
        j = int(np.argmin(np.abs(w - 1.0)))
        pi = np.abs(np.real(vecs[:, j]))
        return cls(p, pi / pi.sum(), None if states is None else tuple(states))


def _log_ratio_table(cond: np.ndarray) -> np.ndarray:
    """max over outcomes of log cond[s, x] − log cond[s', x] for every (s, s'): (k, k).

    ``cond[s, x] = P(outcome x | X_i = s)``; outcomes impossible under both are
    skipped; one impossible under s' only gives +inf.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        logc = np.log(cond)
        diff = logc[:, None, :] - logc[None, :, :]  # (s, s', x)
    both_zero = (cond[:, None, :] == 0) & (cond[None, :, :] == 0)
    diff = np.where(both_zero, -np.inf, diff)
    out = diff.max(axis=2)
    return np.where(np.isnan(out), -np.inf, out)


def _chain_influences(chain: MarkovChain, length: int, window: int) -> np.ndarray:
    """e[i, a, b]: max-influence of the quilt {X_{i−a}, X_{i+b}} on X_i (0-based i).

    a = 0 / b = 0 means no quilt node on that side; entries whose node falls
    outside the chain are ``nan``. Exact: given X_i, the past and the future
    are independent, so the log-ratio is the sum of a backward and a forward
    term, maximised jointly over the pair (s, s') of values of X_i.
    """
    k = chain.k
    p, q = chain.transition, chain.initial
    powers = np.empty((window + 1, k, k))
    powers[0] = np.eye(k)
    for d in range(1, window + 1):
        powers[d] = powers[d - 1] @ p
    marg = np.empty((length, k))
    marg[0] = q
    for t in range(1, length):
        marg[t] = marg[t - 1] @ p
    fwd = np.full((window + 1, k, k), -np.inf)
    fwd[0] = 0.0
    for b in range(1, window + 1):
        fwd[b] = _log_ratio_table(powers[b])  # P(X_{i+b} = y | X_i = s) = P^b[s, y]
    out = np.full((length, window + 1, window + 1), np.nan)
    for i in range(length):
        possible = marg[i] > 0
        pair_ok = possible[:, None] & possible[None, :] & ~np.eye(k, dtype=bool)
        if not pair_ok.any():
            out[i] = 0.0
            continue
        back = np.full((window + 1, k, k), -np.inf)
        back[0] = 0.0
        for a in range(1, min(window, i) + 1):
            # P(X_{i−a} = x | X_i = s) = m_{i−a}[x] P^a[x, s] / m_i[s]
            with np.errstate(divide="ignore", invalid="ignore"):
                cond = (marg[i - a][:, None] * powers[a]).T / marg[i][:, None]
            cond = np.where(possible[:, None], cond, 0.0)
            back[a] = _log_ratio_table(cond)
        nb = min(window, length - 1 - i)
        na = min(window, i)
        total = back[: na + 1, None, :, :] + fwd[None, : nb + 1, :, :]  # (a, b, s, s')
        total = np.where(pair_ok, total, -np.inf)
        out[i, : na + 1, : nb + 1] = np.maximum(total.max(axis=(2, 3)), 0.0)
    return out


@seal_fields
@dataclass(frozen=True, eq=False)
class ChainCalibration:
    """What MQM needs (built by :func:`calibrate_chain`), independent of ε.

    Attributes
    ----------
    chains : tuple of MarkovChain
        Θ (the supremum of the max-influence is taken over them).
    length : int
        T, the number of entries (rows of the dataset).
    column : str
        The column holding the chain's states.
    query : Query
    lipschitz : float
        L: the largest change of F when one entry changes.
    window : int
        Largest distance of a quilt node from X_i searched.
    influence : ndarray (T, window + 1, window + 1)
        e_Θ({X_{i−a}, X_{i+b}} | X_i) (a or b = 0: no node on that side;
        ``nan`` where a node falls outside the chain): the max over chains.
    member_influence : ndarray (chains, T, window + 1, window + 1) or None
        e_θ of every chain θ (None: a single chain, equal to ``influence``).
    provenance : FileProvenance or None
        The file it was loaded from and whether it verified (None when
        computed in this process).
    """

    chains: tuple[MarkovChain, ...]
    length: int
    column: str
    query: Query
    lipschitz: float
    window: int
    influence: np.ndarray = field(repr=False)
    k: int = 1
    component_names: tuple[str, ...] = ()
    confidence: float = 1.0
    assumptions: tuple[str, ...] = ("markov_chain",)
    member_influence: np.ndarray | None = field(default=None, repr=False)
    provenance: FileProvenance | None = field(default=None, repr=False)

    @property
    def content_hash(self) -> str | None:
        """The verified SHA-256 content digest of the file this calibration was loaded from (see
        :attr:`Calibration.content_hash <bayespriv.Calibration.content_hash>`); None otherwise."""
        p = self.provenance
        return p.content_hash if p is not None and p.verified else None

    @property
    def n_members(self) -> int:
        """Number of chains θ in Θ."""
        return len(self.chains)

    def member_influence_array(self) -> np.ndarray:
        """e_θ per chain: (chains, T, window + 1, window + 1)."""
        if self.member_influence is not None:
            return self.member_influence
        return np.broadcast_to(self.influence, (self.n_members, *self.influence.shape))

    def member_scores(self, epsilon: float) -> np.ndarray:
        """σ_θ(i, a, b) = card(N) / (ε − e_θ) per chain θ: (chains, T, window + 1, window + 1)."""
        e = self.member_influence_array()
        with np.errstate(divide="ignore", invalid="ignore"):
            s = self.nearby_counts()[None] / (epsilon - e)
        return np.where(np.isfinite(e) & (e < epsilon), s, np.inf)

    def to_netcdf(self, path: Any, *, seed: int | None = None, key: bytes | None = None) -> Any:
        """Save to a netCDF file, signed with ``key`` (default: the owner's key;
        :func:`~bayespriv.calibration.persist.save_calibration`)."""
        from ._hooks import call as call_registered

        return call_registered("save_calibration", self, path, seed=seed, key=key)

    def nearby_counts(self) -> np.ndarray:
        """card(N) for every (i, a, b): the entries strictly between the quilt nodes."""
        t, w = self.length, self.window
        i = np.arange(t)[:, None, None]
        a = np.arange(w + 1)[None, :, None]
        b = np.arange(w + 1)[None, None, :]
        left = np.where(a == 0, i, a - 1)  # entries before X_i in N
        right = np.where(b == 0, t - 1 - i, b - 1)
        return (left + 1 + right).astype(float)

    def scores(self, epsilon: float) -> np.ndarray:
        """σ(i, a, b) = card(N) / (ε − e), inf where e ≥ ε or the quilt leaves the chain."""
        e = self.influence
        with np.errstate(divide="ignore", invalid="ignore"):
            s = self.nearby_counts() / (epsilon - e)
        return np.where(np.isfinite(e) & (e < epsilon), s, np.inf)

    def __repr__(self) -> str:
        from .._display import view

        return view("chain_calibration_repr", self)

    def _repr_html_(self) -> str:
        from .._display import view

        return view("chain_calibration_html", self)


def calibrate_chain(
    chain: MarkovChain | Sequence[MarkovChain],
    query: Query,
    *,
    length: int,
    column: str | None = None,
    lipschitz: float | None = None,
    max_window: int | None = None,
) -> ChainCalibration:
    """Exact max-influences of every window quilt of a Markov chain (for MQM).

    Parameters
    ----------
    chain : MarkovChain or sequence of them
        Θ; a sequence is a family (each chain's max-influences are kept; MQM
        chooses the quilt per chain).
    query : Query
        F over the chain's column.
    length : int
        T, the number of entries.
    column : str, optional
        The column of the states (default: the query's only column).
    lipschitz : float, optional
        L (default: the L1 norm of :meth:`~bayespriv.Query.record_sensitivity`,
        available for counts, shares and bounded means).
    max_window : int, optional
        Largest a, b searched (default T − 1: every quilt). The search costs
        O(T · window² · k²); a smaller window only removes quilts, so the
        guarantee still holds (the trivial quilt is always kept).

    Returns
    -------
    ChainCalibration

    Notes
    -----
    Song, Wang & Chaudhuri (2017, §4, MQM for Markov chains) search quilts of
    the form {X_{i−a}, X_{i+b}} (and one-sided ones): any other quilt contains
    one of them with the same or a larger nearby set and, since marginalising
    cannot increase a max-ratio, no smaller max-influence.

    Examples
    --------
    The share of rainy days over 24 days of a two-state chain, for MQM:

    >>> import bayespriv as bp
    >>> chain = bp.MarkovChain([[0.9, 0.1], [0.2, 0.8]], [0.5, 0.5])
    >>> cal = bp.calibrate_chain(chain, bp.mean("rain", bounds=(0, 1)), length=24)
    >>> cal.length, cal.column, round(cal.lipschitz, 5)
    (24, 'rain', 0.04167)
    >>> mech = bp.mechanisms.MQM(cal, epsilon=1.0)
    >>> bool(mech.noise_scale[0] < 24 * cal.lipschitz / 1.0)  # less than treating all 24 days as one group
    True
    """
    chains = (chain,) if isinstance(chain, MarkovChain) else tuple(chain) if isinstance(chain, (list, tuple)) else None
    if not chains or not all(isinstance(c, MarkovChain) for c in chains):
        raise ParameterTypeError(f"chain must be a MarkovChain or a non-empty sequence of them; got {chain!r}")
    if len({c.states for c in chains}) != 1:
        raise ValidationError("chains of a family must share their states; got different state labels")
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    t = check_positive_int(length, "length", minimum=2)
    if column is None:
        if len(query.columns) != 1:
            raise fail("column", f"given when the query reads several columns {list(query.columns)!r}", None)
        column = query.columns[0]
    if column not in query.columns:
        raise fail("column", f"a column the query reads {list(query.columns)!r}", column)
    if len(query.columns) != 1:
        raise fail("query", "a query over the chain's column only", list(query.columns))
    if lipschitz is None:
        lip = float(np.abs(query.record_sensitivity(t)).sum())
    else:
        lip = float(lipschitz)
        if not (math.isfinite(lip) and lip >= 0):
            raise fail("lipschitz", "a finite number >= 0", lipschitz)
    w = t - 1 if max_window is None else min(check_positive_int(max_window, "max_window"), t - 1)
    if t * (w + 1) ** 2 * chains[0].k ** 2 > 5e8:
        raise fail("max_window", f"small enough that length·(window+1)²·k² ≤ 5e8 (length {t})", max_window)
    members = np.stack([_chain_influences(c, t, w) for c in chains])
    infl = sealed(members.max(axis=0))
    members = sealed(members)
    kq = query.k or 1
    return ChainCalibration(chains, t, column, query, lip, w, infl, kq, query.component_names(kq),
                            member_influence=members if len(chains) > 1 else None)
