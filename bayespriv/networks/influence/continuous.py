"""Numerical max-influence of continuous parameters with a joint density, stage by stage.

:func:`_density_influence` runs the stages: the problem (:func:`_density_problem`: the parameters, their axes,
the grid size, what the bounds cut from Θ), the grid maxima at G and 2G (:func:`_grid_maximum`), the limits at
the edges of φ_Q, of φ_i and at their corners (:func:`_quilt_edge_limits`, :func:`_node_edge_limits`,
:func:`_corner_limits`), a local refinement (:func:`_refine`) and the quadrature check at its maximiser
(:func:`_quadrature_gap`). A stage that finds the ratio unbounded settles the value (:class:`_Verdict`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail
from .grid import _Axis, _Grid, _resolution
from .influence_result import MaxInfluence

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import networkx as nx


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

    def result(self, value: float, why: str, assignment: Mapping[Hashable, Any] | None = None,
               pair: tuple[Any, Any] | None = None, margin: float = 0.0) -> MaxInfluence:
        return MaxInfluence(value, self.node, frozenset(self.quilt), assignment, pair, why + self.truncation, None,
                            False, margin, self.assumptions)

    def infinite(self, why: str, assignment: Mapping[Hashable, Any] | None = None,
                 pair: tuple[Any, Any] | None = None) -> _Verdict:
        return _Verdict(self.result(math.inf, why, assignment, pair))

    def support_moves(self, where: str, assignment: Mapping[Hashable, Any] | None = None,
                      pair: tuple[Any, Any] | None = None) -> _Verdict:
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
    import networkx as nx
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
    import networkx as nx
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

