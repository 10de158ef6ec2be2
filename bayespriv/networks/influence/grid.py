"""Gauss–Legendre quadrature grids over continuous parameters, for the numerical max-influence.

:func:`_resolution` chooses G (nodes per parameter) within a point budget; :class:`_Axis` maps a parameter's
range (bounded or not) from u ∈ (−1, 1); :class:`_Grid` gives log p(φ_Q = x, φ_i = a) with the other ancestors
integrated out, and the conditionals log p(x | a).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from bayespriv.errors import ValidationError

#: Largest tensor grid (points at the finer resolution 2G) for continuous parameters.
MAX_GRID_POINTS = 4_000_000
#: Cap of the automatic resolution G per dimension, and the least resolution accepted.
_AUTO_RESOLUTION = 256
_MIN_RESOLUTION = 8


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

