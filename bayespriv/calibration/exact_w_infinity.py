"""Exact W∞ (or δ-trimmed W∞) of the quantile coupling of two one-dimensional laws, from their
quantile functions: frozen scipy distributions, discrete laws with finite support, and
:class:`~bayespriv.calibration.laws.FiniteLaw` (what a calibration with exact laws uses).

The quantities are defined in :mod:`bayespriv.calibration.quantile_bands`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_delta, check_finite_array, fail
from ..errors import ParameterTypeError, ValidationError
from .quantile_bands import _TRIM_TOL_EXACT, _trimmed

__all__ = ["w_infinity_from_quantiles", "w_infinity_discrete", "w_infinity_finite"]


def w_infinity_from_quantiles(
    ppf_a: Callable[[np.ndarray], np.ndarray],
    ppf_b: Callable[[np.ndarray], np.ndarray],
    *,
    jumps: Any = None,
    delta: float = 0.0,
    n_grid: int = 200_000,
) -> float:
    """W∞ (δ = 0) or δ-trimmed W∞ of the quantile coupling of two 1-D distributions.

    ``sup_u |Q_a(u) − Q_b(u)|``, or ``inf{W : Leb{u : |Q_a(u) − Q_b(u)| > W} ≤ δ}``
    (the smallest W for which the quantile coupling is (W, δ)-close).

    Parameters
    ----------
    ppf_a, ppf_b : callable
        Quantile functions (e.g. a frozen scipy distribution's ``ppf``),
        vectorized over an array of levels in (0, 1).
    jumps : array-like, optional
        Every level in (0, 1) where either quantile function jumps (for
        discrete distributions: their CDF values at the support points). Then
        both are constant on each interval between consecutive levels and the
        result is **exact**: they are evaluated at interval midpoints and the
        pieces' lengths are exact. Levels closer than 1e-12 to δ in
        accumulated length count as equal (decimal levels like 0.1).
    delta : float in [0, 1)
    n_grid : int
        Without ``jumps``: number of equal cells of (0, 1), evaluated at their
        midpoints, plus the end limits ppf(0), ppf(1) for δ = 0 when their
        difference is defined. An approximation for continuous quantile
        functions (error ≤ the oscillation of |Q_a − Q_b| over one cell).
    """
    delta = check_delta(delta, allow_zero=True)
    if not callable(ppf_a) or not callable(ppf_b):
        raise ParameterTypeError("ppf_a and ppf_b must be callables mapping levels in (0, 1) to quantiles")
    if jumps is not None:
        levels = check_finite_array(jumps, "jumps").reshape(-1)
        levels = np.unique(levels[(levels > 0.0) & (levels < 1.0)])
        right = np.append(levels, 1.0)
        left = np.concatenate([[0.0], levels])
        mid = 0.5 * (left + right)
        lengths = right - left
    else:
        if isinstance(n_grid, bool) or not isinstance(n_grid, int) or n_grid < 1:
            raise fail("n_grid", "an integer >= 1", n_grid)
        mid = (np.arange(n_grid) + 0.5) / n_grid
        lengths = np.full(n_grid, 1.0 / n_grid)
    values = np.abs(np.asarray(ppf_a(mid), dtype=float) - np.asarray(ppf_b(mid), dtype=float))
    if np.isnan(values).any():
        raise ValidationError("ppf_a and ppf_b must return numbers at every level in (0, 1); got NaN")
    result = _trimmed(lengths, values, delta, _TRIM_TOL_EXACT)
    if jumps is None and delta == 0.0:
        with np.errstate(invalid="ignore"):
            ends = np.abs(np.asarray(ppf_a(np.array([0.0, 1.0])), float) - np.asarray(ppf_b(np.array([0.0, 1.0])), float))
        ends = ends[~np.isnan(ends)]
        if ends.size:
            result = max(result, float(ends.max()))
    return result


def w_infinity_discrete(dist_a: Any, dist_b: Any, *, delta: float = 0.0) -> float:
    """Exact W∞ (or δ-trimmed W∞) of two frozen scipy discrete distributions
    with finite integer support (e.g. ``scipy.stats.betabinom(n, a, b)``).

    The jump levels are the CDF values at every support point of either
    distribution; see :func:`w_infinity_from_quantiles`.
    """
    points = []
    for name, d in (("dist_a", dist_a), ("dist_b", dist_b)):
        if not all(hasattr(d, attr) for attr in ("ppf", "cdf", "support")):
            raise ParameterTypeError(f"{name} must be a frozen scipy discrete distribution; got {type(d).__name__}")
        lo, hi = d.support()
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise fail(f"{name} support", "finite", (lo, hi))
        points.append(np.arange(int(lo), int(hi) + 1))
    jumps = np.concatenate([dist_a.cdf(points[0]), dist_a.cdf(points[1]), dist_b.cdf(points[0]), dist_b.cdf(points[1])])
    return w_infinity_from_quantiles(dist_a.ppf, dist_b.ppf, jumps=jumps, delta=delta)


def w_infinity_finite(law_a: Any, law_b: Any, *, delta: float = 0.0) -> float:
    """Exact W∞ (or δ-trimmed W∞) of two one-dimensional finite laws
    (:class:`~bayespriv.calibration.laws.FiniteLaw`).

    The quantile function of a law with sorted values x_1 < … < x_m and
    cumulative probabilities c_1 < … < c_m = 1 is Q(u) = x_j for
    c_{j−1} < u ≤ c_j; both Q_a and Q_b are constant between consecutive jump
    levels of either law, so :func:`w_infinity_from_quantiles` evaluates them
    there and the result is exact up to the rounding of the cumulative sums.

    Examples
    --------
    >>> from bayespriv.calibration.laws import FiniteLaw
    >>> w_infinity_finite(FiniteLaw([0, 1, 2], [0.25, 0.5, 0.25]), FiniteLaw([1, 2, 3], [0.25, 0.5, 0.25]))
    1.0
    """
    quantiles = []
    for name, law in (("law_a", law_a), ("law_b", law_b)):
        if not hasattr(law, "points") or not hasattr(law, "weights") or np.shape(law.points)[1:] != (1,):
            raise ParameterTypeError(f"{name} must be a one-dimensional FiniteLaw; got {type(law).__name__}")
        order = np.argsort(law.points[:, 0], kind="stable")
        x, c = law.points[order, 0], np.cumsum(law.weights[order])
        quantiles.append((x, c))

    def ppf(x: np.ndarray, c: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        return lambda u: x[np.minimum(np.searchsorted(c, u, side="left"), x.size - 1)]

    (xa, ca), (xb, cb) = quantiles
    return w_infinity_from_quantiles(ppf(xa, ca), ppf(xb, cb), jumps=np.concatenate([ca, cb]), delta=delta)
