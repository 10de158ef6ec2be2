"""Markov quilts of a node of a Bayesian network, and their enumeration.

A **Markov quilt** of a node X_i (Definition 6 of Zhang, Ohrimenko, Yang &
Cummings, *Attribute Privacy*, FAccT 2022, after Song, Wang & Chaudhuri,
SIGMOD 2017) is a set of nodes X_Q whose deletion splits the others into a
*nearby* part X_N ∋ X_i and a *remote* part X_R with X_R ⊥ X_i | X_Q. For each
Q we take the largest remote set — every node d-separated from X_i by Q —
which gives the smallest nearby set, and so the least noise.

This module holds :class:`Quilt`, :func:`markov_quilts` (every subset of the
other nodes, or the candidate search of
:mod:`~bayespriv.networks.quilt_search` for large networks) and the
row-level enumeration (quilt and remote membership as boolean masks) that the
calibration of :mod:`~bayespriv.networks.quilts.search` scores.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail
from bayespriv.errors import ParameterTypeError, ValidationError
from ..quilt_search import GraphIndex, NodeLayout, candidate_quilts
from ..influence import ParameterNetwork, network_structure
from .search_options import EXHAUSTIVE_MAX_NODES, _check_exhaustive, _check_max_nodes

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

__all__ = ["Quilt", "markov_quilts", "as_digraph"]

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
    import networkx as nx
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


#: The DAG's index arrays and vectorised Bayes-ball (see :mod:`bayespriv.networks.quilt_search`).
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
    return frozenset(map(structure.nodes.__getitem__, np.flatnonzero(row).tolist()))


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
        search for large networks (:mod:`~bayespriv.networks.quilt_search`)
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
