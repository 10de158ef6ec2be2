"""Candidate Markov quilts of large networks: deterministic, vectorised, each distinct separator computed once.

The candidate search of :func:`~bayespriv.networks.quilts.markov_quilts`
(``exhaustive=False``) works on boolean masks over node *positions* (never on
set iteration order, so the result does not depend on ``PYTHONHASHSEED``):

* the node's parents, children, both, and its Markov blanket;
* every breadth-first ring of the moral graph (a ring separates in the moral
  graph, hence d-separates), the part of each ring that borders the nodes
  beyond it, and the two minimal d-separators (one closest to the node, one
  closest to the nodes beyond) between the node and everything beyond the
  ring, searched among the nodes up to the ring;
* every breadth-first layer of the undirected skeleton;
* a minimal d-separator towards each non-adjacent node that no minimal
  separator found so far already separates (the old search called networkx
  once per node, ~200 calls per node for ~20 distinct quilts);
* with targets (APMQM's queried attributes): the targets, and at every ring
  of the moral graph the minimal d-separators between the node and the
  targets that are not adjacent to it (the adjacent ones included),
  searched among the nodes up to that ring — quilts at every distance that
  keep the targets out of the nearby set.

Minimal d-separators follow van der Zander, Liśkiewicz & Textor (2019,
*Separators and adjustment sets in causal graphs*, Algorithm FindMinSep):
in the moral graph of the ancestral set An(X ∪ Y ∪ I), Z₀ = R ∩ An − X − Y;
keep the nodes of Z₀ reachable from one side without crossing Z₀, then those
reachable from the other side; the first side sets which end the separator
is close to.

Every candidate's remote set is then computed by the vectorised Bayes-ball
of :class:`GraphIndex` (the largest remote set for that conditioning set).
The searches hold one bit per candidate row in 64-bit words per node, so a
step handles a node once for all the rows that reached it; the result is a
set per row, the same whatever the order of the steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

__all__ = ["GraphIndex", "Adjacency", "NodeLayout", "candidate_quilts", "candidate_rows"]


# -- sparse adjacency and breadth-first search over many rows at once ---------------------------------------------
@dataclass(frozen=True, eq=False)
class Adjacency:
    """Neighbour lists of every node as one CSR pair (``indices[indptr[v]:indptr[v + 1]]``, ascending).

    Attributes
    ----------
    indptr : ndarray of int64 (n + 1,)
    indices : ndarray of int64
    via : ndarray of int64 or None
        Per entry, a third node the edge goes through (the common child of two co-parents), else None.
    degree : ndarray of int64 (n,)
        Neighbours per node (``indptr[v + 1] - indptr[v]``).
    inward : tuple of ndarray
        The entries grouped by target: each one's source and ``via`` (or None), the targets that have
        entries, and where each target's entries start (for one ``reduceat`` over every entry).
    """

    indptr: np.ndarray
    indices: np.ndarray
    via: np.ndarray | None = None
    degree: np.ndarray = field(init=False, repr=False)
    inward: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        degree = np.diff(self.indptr)
        by_target = np.argsort(self.indices, kind="stable")
        sources = np.repeat(np.arange(degree.size, dtype=np.int64), degree)[by_target]
        targets, starts = np.unique(self.indices[by_target], return_index=True)
        object.__setattr__(self, "degree", _frozen(degree))
        object.__setattr__(self, "inward", (_frozen(sources), None if self.via is None else _frozen(self.via[by_target]),
                                            _frozen(targets), _frozen(starts)))

    @classmethod
    def from_pairs(cls, n: int, src: np.ndarray, dst: np.ndarray, via: np.ndarray | None = None) -> "Adjacency":
        """Lists from edge arrays ``src -> dst`` (sorted by source then target; duplicates kept only with ``via``)."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if via is None:
            key = np.unique(src * n + dst)
            src, dst = key // n, key % n
        else:
            order = np.lexsort((np.asarray(via, dtype=np.int64), dst, src))
            src, dst, via = src[order], dst[order], np.asarray(via, dtype=np.int64)[order]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        return cls(_frozen(indptr), _frozen(dst), None if via is None else _frozen(via))

    def of(self, v: int) -> np.ndarray:
        """The neighbours of node ``v`` (ascending positions)."""
        return self.indices[self.indptr[v]:self.indptr[v + 1]]

    def gather(self, flat: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Neighbours of many (row, node) states given as flat indices ``row * n + node``.

        Returns the neighbours as flat indices in the same rows, and each one's entry in ``indices``.
        """
        v = flat % n
        lo = self.indptr[v]
        count = self.degree[v]
        ends = np.cumsum(count)
        total = int(ends[-1]) if ends.size else 0
        if total == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        entry = np.repeat(lo - ends + count, count)
        entry += np.arange(total, dtype=np.int64)
        return np.repeat(flat - v, count) + self.indices[entry], entry

    def neighbours(self, nodes: np.ndarray) -> np.ndarray:
        """The neighbours of each of ``nodes`` (positions), concatenated in the order of ``nodes``
        (:meth:`gather` of rows 0, without the flat-index arithmetic)."""
        count = self.degree[nodes]
        entry = _entries(self.indptr[nodes], count)
        return self.indices[entry]


def _entries(starts: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The concatenated ranges ``starts[k]:starts[k] + count[k]`` (int64)."""
    ends = count.cumsum()
    total = int(ends[-1]) if ends.size else 0
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    entry = np.repeat(starts - ends + count, count)
    entry += np.arange(total, dtype=np.int64)
    return entry


def _frozen(a: np.ndarray) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=np.int64)
    out.setflags(write=False)
    return out


def _fresh(targets: np.ndarray, seen: np.ndarray, stamp: np.ndarray) -> np.ndarray:
    """The distinct ``targets`` not yet ``seen`` (in no particular order), now marked seen.

    ``stamp`` is scratch space as large as ``seen``: each target writes its rank there and keeps itself
    only if its own rank survived, which keeps one copy of each value without sorting.
    """
    new = targets[~seen[targets]]
    rank = np.arange(new.size)
    stamp[new] = rank
    new = new[stamp[new] == rank]
    seen[new] = True
    return new


def _pack(rows: np.ndarray) -> np.ndarray:
    """Bool rows (S × n) as bit words (W × n uint64, W = ⌈S / 64⌉): bit k % 64 of word k // 64 is row k."""
    s, n = rows.shape
    w = max(1, -(-s // 64))
    padded = np.zeros((n, 64 * w), dtype=bool)
    padded[:, :s] = rows.T
    # per node, bit j of byte b is row 8b + j; eight bytes in little-endian order make a word
    return np.ascontiguousarray(np.packbits(padded, axis=1, bitorder="little").view("<u8").T, dtype=np.uint64)


def _unpack(bits: np.ndarray, s: int) -> np.ndarray:
    """The bool rows (S × n) of :func:`_pack`'s words."""
    by = np.ascontiguousarray(bits.T, dtype="<u8").view(np.uint8)  # per node, its words' bytes
    return np.ascontiguousarray(np.unpackbits(by, axis=1, count=s, bitorder="little").T).view(bool)


def _row_bits(flags: np.ndarray) -> np.ndarray:
    """A per-row flag (S,) as bit words (W, 1)."""
    return _pack(np.asarray(flags, dtype=bool)[:, None])


def _any_per_row(bits: np.ndarray, s: int) -> np.ndarray:
    """Per row, whether some node has its bit (bool S,)."""
    return _unpack(np.bitwise_or.reduce(bits, axis=1)[:, None], s)[:, 0]


def _spread(step: Adjacency, bits: np.ndarray, gate: np.ndarray | None = None) -> np.ndarray:
    """Bit words of every node: the OR of the words of its neighbours along ``step`` (``bits`` W × n); with
    ``gate`` (W × n), an entry passes only the bits its ``via`` node has in ``gate``."""
    w, n = bits.shape
    active = (bits[0] if w == 1 else np.bitwise_or.reduce(bits, axis=0)).nonzero()[0]
    out = np.zeros((w, n), dtype=bits.dtype)
    if not active.size:
        return out
    if 8 * active.size > n:  # a large frontier: one pass over every entry, grouped by target
        sources, via, targets, starts = step.inward
        if not sources.size:
            return out
        if w == 1:  # one word per node: 1-D gathers and reductions (same bits, less indexing overhead)
            vals = bits[0][sources]
            if gate is not None:
                vals &= gate[0][via]
            out[0][targets] = np.bitwise_or.reduceat(vals, starts)
            return out
        vals = bits[:, sources]
        if gate is not None:
            vals &= gate[:, via]
        out[:, targets] = np.bitwise_or.reduceat(vals, starts, axis=1)
        return out
    count = step.degree[active]
    entry = _entries(step.indptr[active], count)
    targets, src = step.indices[entry], np.repeat(active, count)
    via = None if gate is None else step.via[entry]
    for k in range(w):
        vals = bits[k, src]
        if via is not None:
            vals &= gate[k, via]
        np.bitwise_or.at(out[k], targets, vals)
    return out


@dataclass(frozen=True, eq=False)
class _Heights:
    """The nodes of a DAG by height (0: no child; else one more than the highest child), for the ancestral
    closure of many rows at once: a node is an ancestor-or-self of a set iff it is in the set or one of its
    children is, so one pass up the heights settles every node after all its children.

    Attributes
    ----------
    levels : tuple of (nodes, children, starts)
        Per height from 1: the nodes, their children concatenated, and where each node's children start.
    """

    levels: tuple

    @classmethod
    def of(cls, children: Adjacency, n: int) -> "_Heights":
        height = np.zeros(n, dtype=np.int64)
        inner = np.flatnonzero(children.degree)  # nodes with a child; their child lists tile ``indices``
        starts = children.indptr[inner]
        while inner.size:
            new = np.maximum.reduceat(height[children.indices], starts) + 1
            if np.array_equal(new, height[inner]):
                break
            height[inner] = new
        levels = []
        for h in range(1, int(height.max(initial=0)) + 1):
            nodes = np.flatnonzero(height == h)
            count = children.degree[nodes]
            kids = children.gather(nodes, n)[0]
            levels.append((_frozen(nodes), _frozen(kids), _frozen(np.cumsum(count) - count)))
        return cls(tuple(levels))

    def closure(self, start: np.ndarray) -> np.ndarray:
        """Per row of ``start`` (bool rows × n), the nodes with a descendant-or-self in the row."""
        return _unpack(self.closure_bits(_pack(start)), start.shape[0])

    def closure_bits(self, bits: np.ndarray) -> np.ndarray:
        """:meth:`closure` on bit words (W × n, see :func:`_pack`); ``bits`` is updated and returned."""
        for nodes, kids, starts in self.levels:
            bits[:, nodes] |= np.bitwise_or.reduceat(bits[:, kids], starts, axis=1)
        return bits


@dataclass(frozen=True, eq=False)
class NodeLayout:
    """The nodes of a network in position order: what a bit mask over positions means.

    Attributes
    ----------
    nodes : tuple
    everything : frozenset
    index : mapping
        Node -> position.
    """

    nodes: tuple
    everything: frozenset = field(init=False, repr=False)
    index: Mapping[Any, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "everything", frozenset(self.nodes))
        object.__setattr__(self, "index", MappingProxyType({v: k for k, v in enumerate(self.nodes)}))

    def mask(self, bits: bytes) -> np.ndarray:
        """The bool mask over the nodes packed (``numpy.packbits``) in ``bits``."""
        return np.unpackbits(np.frombuffer(bits, dtype=np.uint8), count=len(self.nodes)).astype(bool)

    def members(self, bits: bytes) -> frozenset:
        """The nodes whose bit is set."""
        nodes = self.nodes
        return frozenset(nodes[j] for j in np.flatnonzero(self.mask(bits)))


# -- the graph ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class GraphIndex:
    """Sparse index arrays of a DAG and the searches over them, built once per graph.

    Everything is stored as neighbour lists (memory and time in the number of
    edges, no n × n table); the searches run over many rows — one per
    conditioning set — at once, with one bit per row in a node's words (see
    :func:`_pack`): a breadth-first round visits each node once for every row
    that reached it, and an ancestral closure is one pass up the node heights.

    Parameters
    ----------
    graph : networkx.DiGraph
        The DAG (u → v: u is a parent of v); a frozen copy is kept.

    Attributes
    ----------
    nodes : tuple
        The nodes in the graph's order (positions).
    index : mapping
        Node -> position.
    layout : NodeLayout
        The nodes and their positions (what the search's bit masks mean).
    parents, children, skeleton, moral : Adjacency
        Parents, children, both, and the moral graph (the skeleton plus an
        edge between every two parents of a child).
    coparents : Adjacency
        Co-parent pairs with their common child in ``via`` (a pair appears
        once per common child): the moral graph of an ancestral set A is the
        skeleton inside A plus the pairs whose child is in A.
    gated_moral : Adjacency
        The skeleton's edges and the co-parent pairs in one list, each with
        the node whose membership of A lets it into the moral graph of an
        ancestral set A in ``via`` (its target for a skeleton edge, the common
        child for a pair): one gather per step of :meth:`moral_reach`.
    heights : _Heights
        The nodes by height, for ancestral closures of many rows at once
        (one bit per row, one pass up the heights).
    ball : Adjacency
        The moves of the Bayes-ball over 2n states (a node's up state ``v``,
        its down state ``n + v``): from ``v`` to each parent's up state, from
        ``n + v`` to each child's down state; one step of :meth:`d_connected`
        is one spread along it.
    """

    graph: nx.DiGraph
    nodes: tuple = field(init=False, repr=False)
    index: Mapping[Any, int] = field(init=False, repr=False)
    layout: NodeLayout = field(init=False, repr=False)
    parents: Adjacency = field(init=False, repr=False)
    children: Adjacency = field(init=False, repr=False)
    skeleton: Adjacency = field(init=False, repr=False)
    moral: Adjacency = field(init=False, repr=False)
    coparents: Adjacency = field(init=False, repr=False)
    gated_moral: Adjacency = field(init=False, repr=False)
    heights: _Heights = field(init=False, repr=False)
    ball: Adjacency = field(init=False, repr=False)

    def __post_init__(self) -> None:
        import networkx as nx
        graph = nx.freeze(nx.DiGraph(self.graph))
        layout = NodeLayout(tuple(graph.nodes()))
        nodes, index = layout.nodes, layout.index
        n = len(nodes)
        edges = np.array([(index[u], index[v]) for u, v in graph.edges()], dtype=np.int64).reshape(-1, 2)
        u, v = edges[:, 0], edges[:, 1]
        children = Adjacency.from_pairs(n, u, v)
        parents = Adjacency.from_pairs(n, v, u)
        a, b, c = _coparent_triples(parents, n)
        setter = object.__setattr__
        setter(self, "graph", graph)
        setter(self, "nodes", nodes)
        setter(self, "index", index)
        setter(self, "layout", layout)
        setter(self, "parents", parents)
        setter(self, "children", children)
        setter(self, "skeleton", Adjacency.from_pairs(n, np.concatenate([u, v]), np.concatenate([v, u])))
        setter(self, "moral", Adjacency.from_pairs(n, np.concatenate([u, v, a, b]), np.concatenate([v, u, b, a])))
        setter(self, "coparents", Adjacency.from_pairs(n, np.concatenate([a, b]), np.concatenate([b, a]),
                                                       np.concatenate([c, c])))
        setter(self, "gated_moral", Adjacency.from_pairs(n, np.concatenate([u, v, a, b]), np.concatenate([v, u, b, a]),
                                                         np.concatenate([v, u, c, c])))
        setter(self, "heights", _Heights.of(children, n))
        setter(self, "ball", Adjacency.from_pairs(2 * n, np.concatenate([v, u + n]), np.concatenate([u, v + n])))

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.nodes)

    def mask(self, positions: Any) -> np.ndarray:
        """A bool mask over the nodes, true at ``positions``."""
        out = np.zeros(self.n, dtype=bool)
        out[np.asarray(positions, dtype=np.int64)] = True
        return out

    def neighbours_of(self, adjacency: Adjacency, members: np.ndarray) -> np.ndarray:
        """Nodes adjacent (in ``adjacency``) to some node of the bool mask ``members`` (a bool mask)."""
        return self.mask(adjacency.neighbours(np.flatnonzero(members)))

    def distances(self, adjacency: Adjacency, source: int) -> np.ndarray:
        """Breadth-first distances from ``source`` (−1: unreachable)."""
        dist = np.full(self.n, -1, dtype=np.int64)
        dist[source] = 0
        seen = dist == 0
        stamp = np.empty(self.n, dtype=np.int64)
        frontier = np.array([source], dtype=np.int64)
        d = 0
        while frontier.size:
            d += 1
            frontier = _fresh(adjacency.neighbours(frontier), seen, stamp)
            dist[frontier] = d
        return dist

    def d_connected(self, node: int, conditioned: np.ndarray) -> np.ndarray:
        """Nodes d-connected to ``node`` given each row of ``conditioned`` (bool S × V).

        Bayes-ball over (node, direction) states: ``up`` = reached from a child,
        ``down`` = reached from a parent. A node outside Z passes a ball from a
        child to its parents and children, and from a parent to its children;
        a node in Z or with a descendant in Z (an open collider) passes a ball
        from a parent up to its parents. Breadth-first from the new states of
        each round, all rows at once.
        """
        z = np.asarray(conditioned, dtype=bool)
        s, n = z.shape
        zb = _pack(z)
        every = _row_bits(np.ones(s, dtype=bool))[:, 0]
        free = ~zb & every[:, None]
        opens = self.heights.closure_bits(zb.copy())  # v in Z or an ancestor of a node of Z
        seen = np.zeros((zb.shape[0], 2 * n), dtype=zb.dtype)  # up states, then down states
        seen[:, node] = every
        new = seen.copy()
        while new.any():
            new_up, new_down = new[:, :n], new[:, n:]
            passing = new_up & free
            sent = np.concatenate((passing | (new_down & opens), passing | (new_down & free)), axis=1)
            new = _spread(self.ball, sent)
            new &= ~seen
            seen |= new
        return _unpack((seen[:, :n] | seen[:, n:]) & free, s)

    def remote(self, node: int, conditioned: np.ndarray) -> np.ndarray:
        """Remote sets (bool S × V): nodes d-separated from ``node`` given each row, outside the row."""
        r = ~self.d_connected(node, conditioned) & ~conditioned
        r[:, node] = False
        return r

    def moral_reach(self, start: np.ndarray, blocked: np.ndarray, within: np.ndarray) -> np.ndarray:
        """Per row, nodes reached from ``start`` in the moral graph of the ancestral set ``within`` without
        passing through ``blocked`` (blocked nodes are reached, not crossed). All arguments bool S × V."""
        return _unpack(self.moral_reach_bits(_pack(start), _pack(blocked), _pack(within)), start.shape[0])

    def moral_reach_bits(self, start: np.ndarray, blocked: np.ndarray, within: np.ndarray) -> np.ndarray:
        """:meth:`moral_reach` on bit words (W × n each, see :func:`_pack`)."""
        seen = start.copy()
        frontier = seen & ~blocked
        while frontier.any():
            new = _spread(self.gated_moral, frontier, within) & ~seen
            seen |= new
            frontier = new & ~blocked
        return seen

    def minimal_separators(self, x: int, targets: np.ndarray, *, included: np.ndarray | None = None,
                           restricted: np.ndarray | None = None, near_source: np.ndarray | bool = True
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Minimal d-separators Z with I ⊆ Z ⊆ R between ``x`` and each row of ``targets`` (bool S × V).

        ``near_source`` (per row or one value): prune first from the targets' side, which leaves the
        separator bordering ``x``'s component (close to ``x``); False gives one close to the targets.
        Returns the separators (S × V) and, per row, whether one exists.
        """
        n = self.n
        given = [np.asarray(a, dtype=bool) for a in (targets, included, restricted) if a is not None]
        near = np.asarray(near_source, dtype=bool)
        s = max([len(a) for a in given if a.ndim == 2] + [near.size if near.ndim else 1])
        t = _pack(np.broadcast_to(np.asarray(targets, dtype=bool), (s, n)))
        every = _row_bits(np.ones(s, dtype=bool))
        inc = np.zeros_like(t) if included is None else _pack(np.broadcast_to(included, (s, n)))
        res = every if restricted is None else _pack(np.broadcast_to(restricted, (s, n)))
        near = _row_bits(np.broadcast_to(near, (s,)))
        src = np.zeros_like(t)
        src[:, x] = every[:, 0]
        an = self.heights.closure_bits(src | t | inc)
        z0 = res & an & ~src & ~t
        ok = ~_any_per_row(inc & ~z0, s)
        ok &= ~_any_per_row(self.moral_reach_bits(src, z0, an) & t, s)
        first = (t & near) | (src & ~near)
        second = (src & near) | (t & ~near)
        z1 = inc | (z0 & self.moral_reach_bits(first, z0, an))
        return _unpack(inc | (z1 & self.moral_reach_bits(second, z1, an)), s), ok

    def minimal_separator(self, x: int, targets: np.ndarray, *, included: np.ndarray | None = None,
                          restricted: np.ndarray | None = None, near_source: bool = True) -> np.ndarray | None:
        """A minimal d-separator Z (bool mask) with I ⊆ Z ⊆ R between ``x`` and ``targets``, or None."""
        seps, ok = self.minimal_separators(x, targets[None, :], included=None if included is None else included[None],
                                           restricted=None if restricted is None else restricted[None],
                                           near_source=near_source)
        return seps[0] if ok[0] else None


def _coparent_triples(parents: Adjacency, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c): every pair a < b (in the child's parent order) of parents of a child c."""
    out = []
    for c in range(n):
        pa = parents.of(c)
        if pa.size > 1:
            i, j = np.triu_indices(pa.size, k=1)
            out.append(np.stack([pa[i], pa[j], np.full(i.size, c)], axis=1))
    arr = np.concatenate(out) if out else np.zeros((0, 3), dtype=np.int64)
    return arr[:, 0], arr[:, 1], arr[:, 2]


class _Rows:
    """Distinct candidate masks in insertion order (keys are the mask bytes: no hashing of nodes)."""

    def __init__(self, n: int, node: int) -> None:
        self.n, self.node = n, node
        self.rows: list[np.ndarray] = []
        self.seen: set[bytes] = set()

    @staticmethod
    def normal(mask: np.ndarray, node: int) -> np.ndarray:
        """A bool copy of ``mask`` without ``node`` (a quilt never holds its own node)."""
        m = np.asarray(mask, dtype=bool).copy()
        m[node] = False
        return m

    def add(self, mask: np.ndarray | None) -> bool:
        if mask is None:
            return False
        m = self.normal(mask, self.node)
        key = m.tobytes()
        if key in self.seen:
            return False
        self.seen.add(key)
        self.rows.append(m)
        return True


def _local_rows(g: GraphIndex, v: int, rows: _Rows) -> np.ndarray:
    """Parents, children, both and the Markov blanket; returns the adjacency mask."""
    parents, children = g.mask(g.parents.of(v)), g.mask(g.children.of(v))
    spouses = g.neighbours_of(g.parents, children)
    rows.add(np.zeros(rows.n, dtype=bool))
    rows.add(parents)
    rows.add(children)
    rows.add(parents | children)
    rows.add(parents | children | spouses)
    return parents | children


@dataclass(frozen=True, eq=False)
class _SeparatorBatch:
    """Minimal d-separator problems of one node, one per row (the arguments of
    :meth:`GraphIndex.minimal_separators`): the ring problems and the target problems are solved together,
    in one pass of each search over all their rows.

    Attributes
    ----------
    targets, included, restricted : ndarray of bool (rows, n)
    near : ndarray of bool (rows,)
    """

    targets: np.ndarray
    included: np.ndarray
    restricted: np.ndarray
    near: np.ndarray

    def __len__(self) -> int:
        return len(self.near)

    @staticmethod
    def solve(g: GraphIndex, v: int, batches: list["_SeparatorBatch"]) -> list[list[np.ndarray | None]]:
        """Per batch, each row's separator (None where none exists), from one call over all rows."""
        stack = [np.concatenate([getattr(b, name) for b in batches]) for name in ("targets", "included",
                                                                                    "restricted", "near")]
        seps, ok = g.minimal_separators(v, stack[0], included=stack[1], restricted=stack[2], near_source=stack[3])
        found = [seps[k] if ok[k] else None for k in range(len(ok))]
        edges = np.cumsum([0] + [len(b) for b in batches])
        return [found[a:b] for a, b in zip(edges[:-1], edges[1:])]


def _ring_batch(dist: np.ndarray) -> _SeparatorBatch:
    """Both minimal separators (close to the node, close to the far side) between the node and everything
    beyond each moral ring that has nodes beyond it, searched among the nodes up to the ring."""
    n = dist.size
    levels = np.arange(1, int(dist.max()) + 1)
    beyond = dist[None, :] > levels[:, None]  # (rings, n)
    within = (dist[None, :] > 0) & (dist[None, :] <= levels[:, None])
    pairs = np.repeat(np.flatnonzero(beyond.any(axis=1)), 2)
    return _SeparatorBatch(beyond[pairs], np.zeros((pairs.size, n), dtype=bool), within[pairs],
                           np.tile([True, False], pairs.size // 2))


def _ring_rows(g: GraphIndex, v: int, dist: np.ndarray, rows: _Rows, found: list[np.ndarray | None]) -> None:
    """Moral rings, their borders with the nodes beyond, minimal separators from everything beyond each ring
    (``found``: those of :func:`_ring_batch`, solved), then the skeleton's layers."""
    levels = np.arange(1, int(dist.max()) + 1)
    # the farthest moral neighbour of each node: a ring node borders the nodes beyond its ring iff it is beyond
    farthest = np.full(g.n, -1, dtype=np.int64)
    moral = g.moral
    inner = np.flatnonzero(moral.degree)
    if inner.size:
        farthest[inner] = np.maximum.reduceat(dist[moral.indices], moral.indptr[inner])
    k = 0
    for d in levels:
        ring = dist == d
        rows.add(ring)
        beyond = dist > d
        if not beyond.any():
            continue
        rows.add(ring & (farthest > d))
        rows.add(found[k])
        rows.add(found[k + 1])
        k += 2
    skel = g.distances(g.skeleton, v)
    for d in range(1, int(skel.max()) + 1):
        rows.add(skel == d)


def _separators_towards_nodes(g: GraphIndex, v: int, dist: np.ndarray, adjacent: np.ndarray, rows: _Rows,
                              covered: np.ndarray, known: dict[bytes, np.ndarray]) -> None:
    """A minimal d-separator towards each non-adjacent node not yet separated by one found before, in order of
    moral distance (then position). ``covered``: the nodes remote for some row so far (updated); ``known``:
    remote sets by row bytes (each new separator's is added)."""
    n = g.n
    order = np.lexsort((np.arange(n), np.where(dist < 0, n + 1, dist)))
    skip = adjacent.copy()
    skip[v] = True
    start = 0
    while True:
        pending = np.flatnonzero(~(skip | covered)[order[start:]])
        if not pending.size:
            return
        start += int(pending[0])
        u = int(order[start])
        start += 1
        sep = g.minimal_separator(v, g.mask([u]), near_source=False)
        if sep is None:  # pragma: no cover - a non-adjacent node always has a separator
            continue
        rows.add(sep)
        key = sep.tobytes()
        if key not in known:
            known[key] = g.remote(v, sep[None, :])[0]
        covered |= known[key]


def _target_batch(v: int, dist: np.ndarray, adjacent: np.ndarray, aims: np.ndarray) -> _SeparatorBatch | None:
    """At every moral ring (then among every allowed node) both minimal separators keeping the targets not
    adjacent to the node remote, made of the adjacent targets and nodes up to the ring; None without such
    targets."""
    near_aims, far_aims = aims & adjacent, aims & ~adjacent
    if not far_aims.any():
        return None
    allowed = ~far_aims
    allowed[v] = False
    top = int(dist.max())
    levels = np.arange(1, top + 1)[:, None]
    within = allowed & (dist > 0) & (dist <= levels) | near_aims  # (rings, n), then every allowed node
    restricted = np.repeat(np.concatenate([within, allowed[None, :]]), 2, axis=0)
    shape = restricted.shape
    return _SeparatorBatch(np.broadcast_to(far_aims, shape), np.broadcast_to(near_aims, shape), restricted,
                           np.tile([True, False], top + 1))


def _separator_rows(g: GraphIndex, v: int, dist: np.ndarray, adjacent: np.ndarray, aims: np.ndarray,
                    rows: _Rows) -> list[np.ndarray | None]:
    """The ring rows (added to ``rows``), and the target candidates in the order they join the candidates:
    the targets, then the separators of :func:`_target_batch` (None where none exists)."""
    ring = _ring_batch(dist)
    target = _target_batch(v, dist, adjacent, aims) if aims.any() else None
    solved = _SeparatorBatch.solve(g, v, [ring] + ([] if target is None else [target]))
    _ring_rows(g, v, dist, rows, solved[0])
    if not aims.any():
        return []
    return [aims] + ([] if target is None else solved[1])


def candidate_quilts(g: GraphIndex, node: int, targets: Iterable[Any] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Candidate quilts of ``node`` and their remote sets (bool rows × n each, deduplicated, in a
    deterministic order).

    The remote sets of the local, ring and target candidates come from one Bayes-ball over all of them;
    each separator towards a node adds its own (it decides which nodes are still to be separated).
    """
    n = g.n
    rows = _Rows(n, node)
    adjacent = _local_rows(g, node, rows)
    dist = g.distances(g.moral, node)
    aims = np.zeros(n, dtype=bool)
    for u in targets:
        aims[g.index[u]] = True
    aims[node] = False
    extra = _separator_rows(g, node, dist, adjacent, aims, rows)
    base = len(rows.rows)
    batch = rows.rows + [_Rows.normal(m, node) for m in extra if m is not None]
    remote = g.remote(node, np.array(batch, dtype=bool).reshape(-1, n))
    known = {row.tobytes(): r for row, r in zip(batch, remote)}
    _separators_towards_nodes(g, node, dist, adjacent, rows, remote[:base].any(axis=0), known)
    for m in extra:
        rows.add(m)
    z = np.array(rows.rows, dtype=bool).reshape(-1, n)
    r = np.array([known[row.tobytes()] for row in rows.rows], dtype=bool).reshape(-1, n)
    return z, r


def candidate_rows(g: GraphIndex, node: int, targets: Iterable[Any] = ()) -> np.ndarray:
    """Candidate quilts of ``node`` (bool rows × n, deduplicated, in a deterministic order)."""
    return candidate_quilts(g, node, targets)[0]
