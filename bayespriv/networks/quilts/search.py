"""The scored search of Markov quilts behind :func:`~bayespriv.networks.calibrate_quilts`.

Stages 2 and 3 of the calibration for APMQM (Algorithm 2 of Zhang,
Ohrimenko, Yang & Cummings, FAccT 2022): :func:`_search_inputs` validates
the network and the sensitive nodes, with the checked :class:`QuiltSearch`, into a :class:`_SearchInputs`;
:func:`_score_quilts` enumerates the quilts of every sensitive node
(:mod:`~bayespriv.networks.quilts.enumeration`), keeps those not dominated
by a sub-quilt, scores them with the column sensitivity Δ_{A∩N} F and the
max-influence e_Θ(X_Q | X_i), refines the (Δ, e_θ) Pareto front by one-node
moves in candidate mode when asked (``refine`` > 0), and returns the named
results as :class:`_ScoredQuilts`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail
from bayespriv.errors import ValidationError
from bayespriv.queries import Query
from ..quilt_search import GraphIndex
from ..influence import InfluenceEngine, ParameterNetwork, network_structure
from .enumeration import (
    Quilt,
    _quilt_rows,
    _quilt_set,
    _search_mode,
    _search_note,
    _Structure,
    as_digraph,
)
from .scores import QuiltScore, _pareto_front, _undominated
from .search_options import QuiltSearch

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx

__all__: list[str] = []


@dataclass
class _Scored:
    """The quilts of one sensitive node scored so far (masks, Δ, e) and what was skipped."""

    z: list[np.ndarray]
    r: list[np.ndarray]
    sens: list[float]
    scores: list[QuiltScore]
    seen: set[bytes]
    reasons: list[str | bytes]


class _SkipReasons(Sequence):
    """Why each quilt of a sensitive node was not scored, in search order: a read-only sequence of str.

    A quilt refused for the size of its joint table is kept as its packed bit mask (bytes), and its reason,
    which names every node of the quilt, is written when read: a whole-network search refuses tens of
    thousands of quilts of hundreds of nodes. Other reasons are kept as written.
    """

    __slots__ = ("_items", "_write")

    def __init__(self, items: Sequence[str | bytes], write: Callable[[bytes], str]) -> None:
        self._items = tuple(items)
        self._write = write

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, k: Any) -> Any:
        if isinstance(k, slice):
            return tuple(self[j] for j in range(*k.indices(len(self._items))))
        item = self._items[k]
        return self._write(item) if isinstance(item, bytes) else item

    def __iter__(self) -> Iterator[str]:
        for item in self._items:
            yield self._write(item) if isinstance(item, bytes) else item

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (str, bytes)) or not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} skip reasons>"


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


@dataclass(frozen=True, eq=False)
class _SearchInputs:
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


def _search_inputs(pnet: ParameterNetwork, sensitive: Any, query: Query, n: int, options: QuiltSearch,
                   influence_options: Mapping[str, Any] | None) -> _SearchInputs:
    """Stage 2: the engine and graph index of ``pnet``, the sensitive and queried nodes, and the search mode
    (``options`` is checked by :class:`QuiltSearch` itself)."""
    extra = {} if pnet.kind != "discrete" else {"max_factor": options.max_factor}
    engine = InfluenceEngine(pnet, **dict(influence_options or {}), **extra)
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
    kq = query.k if options.k is None else options.k
    if kq is None:
        raise ValidationError(f"k must be given for query {query.name!r}, whose number of components is unknown; "
                              "got None")
    exhaustive = _search_mode(options.exhaustive, structure.n, options.max_nodes)
    return _SearchInputs(pnet, engine, structure, sens_nodes, tuple(sens_idx),
                         frozenset(pnet.owner(c) for c in query.columns), n, int(kq), exhaustive, options.max_nodes,
                         options.max_states, options.refine,
                         _search_note(exhaustive, options.exhaustive, structure.n, options.max_nodes, options.refine),
                         graph)


@dataclass(frozen=True)
class _ScoredQuilts:
    """Stage 3's result: the scored quilts of every sensitive node and what the search counted.

    Attributes
    ----------
    candidates : dict
        Sensitive node -> tuple of :class:`QuiltScore` (the undominated quilts that were scored).
    n_quilts : dict
        Sensitive node -> number of quilts searched.
    skipped : dict
        Sensitive node -> number of quilts not scored.
    skip_reasons : dict
        Sensitive node -> the reason each skipped quilt was not scored (a sequence of str).
    sensitivity : float
        Δ_A F over every queried node (the trivial quilt's score numerator).
    """

    candidates: dict[Hashable, tuple[QuiltScore, ...]]
    n_quilts: dict[Hashable, int]
    skipped: dict[Hashable, int]
    skip_reasons: dict[Hashable, Sequence[str]]
    sensitivity: float


def _score_quilts(s: _SearchInputs, query: Query) -> _ScoredQuilts:
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
    reasons: dict[Hashable, Sequence[str]] = {}
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
        reasons[v] = _SkipReasons(state.reasons, _size_reason(s, v))
    return _ScoredQuilts(candidates, counts, skipped, reasons, float(full))


def _row_sensitivities(s: _SearchInputs, z: np.ndarray, r: np.ndarray, delta: Any) -> np.ndarray:
    """Δ_{A∩N} F of each row (computed once per distinct pattern A ∩ N)."""
    if len(z) == 0:
        return np.zeros(0)
    cols = np.array(sorted(s.structure.index[u] for u in s.queried), dtype=np.int64)
    patterns, inverse = np.unique(~z[:, cols] & ~r[:, cols], axis=0, return_inverse=True)
    nodes = s.structure.nodes
    pattern_sens = np.array([delta(frozenset(nodes[j] for j in cols[p])) for p in patterns])
    return pattern_sens[np.asarray(inverse).reshape(-1)]


def _size_reason(s: _SearchInputs, v: Hashable) -> Callable[[bytes], str]:
    """The writer of :class:`_SkipReasons` for node ``v``: the engine's reason for a quilt (packed bits over
    the search's nodes) whose joint table is above ``s.max_states``."""
    nodes = s.structure.nodes

    def write(bits: bytes) -> str:
        row = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), count=len(nodes)).astype(bool)
        return s.engine.states_refusal(v, row, nodes, s.max_states)

    return write


def _score_rows(s: _SearchInputs, v: Hashable, z: np.ndarray, r: np.ndarray, sens: np.ndarray, state: _Scored) -> int:
    """Score rows (e(X_Q | X_i) per member); rows refused by the engine are recorded with the reason."""
    added = 0
    oversized = set(s.engine.oversized_rows(v, z, s.structure.nodes, s.max_states))
    for row in range(len(z)):
        if row in oversized:
            state.reasons.append(np.packbits(z[row]).tobytes())  # its reason is written when read
            continue
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


def _refine(s: _SearchInputs, v: Hashable, idx: int, state: _Scored, delta: Any) -> None:
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
