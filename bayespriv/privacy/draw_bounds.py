"""Confidence bounds on the mean of [0, 1]-valued draws, by betting: valid for every law, at any n.

The accountant bounds δ(ε) of a law known through draws by the plug-in divergence of the
empirical mixtures plus two margins, each the distance from a sample mean to a confidence bound
on its expectation. The variables are per-draw probabilities ``g(x_i) = P(x_i + Z ∈ A)`` — values
in [0, 1] whatever the law of the query, heavy tails included — so the bounds here assume
nothing but independence and the range.

Theorem (testing by betting; Waudby-Smith & Ramdas 2023, JRSS-B 86(1), §3–4). Let V_1, V_2, …
be independent in [0, 1] with mean μ. For a candidate m and a bet λ ∈ [0, 1/(1 − m)], the
wealth ``K_n(m) = Π_{i≤n} (1 + λ (m − V_i))`` is non-negative, and under μ ≥ m its expectation
is at most 1 at every n (a non-negative supermartingale). A mixture ``Σ_c π_c K_n^{(c)}(m)`` of
such wealths with fixed bets and prior weights π_c summing to 1 is again one, so by Ville's
inequality ``P(∃ n: Σ_c π_c K_n^{(c)}(μ) ≥ 1/α) ≤ α``. Hence

    U_n = sup{m : Σ_c π_c K_n^{(c)}(m) < 1/α}

is an upper confidence bound for μ that holds at level 1 − α **simultaneously for every n**
(a confidence sequence): a calibration may add draws and look again without breaking it. The
lower bound is the mirror image, with wealth ``Π (1 + λ (V_i − m))`` and λ ∈ [0, 1/m].

The bets are fixed (they do not depend on the data), so each wealth is monotone in every
V_i: a bound from larger values is larger. With bets ``λ = c/(1 − m)`` (upper) and
``λ = c/m`` (lower) each wealth is monotone in m too, and the bound is found by bisection on a
bracket. What the bets cost: for a mean far below 1 with little spread, the upper bound is
about ``mean + (ln(1/α) + ln(1/π_1))/(c_1 n)`` — the δ that n draws cannot rule out, a region
of mass of that order missed by all of them (:func:`upper_floor`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from bayespriv._validation import fail

__all__ = ["mean_upper", "mean_lower", "upper_floor", "draws_for_floor", "UPPER_BETS", "LOWER_BETS"]

#: (c, prior weight) of the upper bound's bets λ = c/(1 − m): mostly the nearly all-in bet, which is
#: best for a small mean with a few large values (a rare region seen a few times or not at all).
UPPER_BETS = ((0.95, 0.55), (0.6, 0.2), (0.3, 0.15), (0.1, 0.1))
#: (c, prior weight) of the lower bound's bets λ = c/m.
LOWER_BETS = ((0.5, 0.4), (0.25, 0.3), (0.1, 0.2), (0.03, 0.1))
#: Relative precision of the bisection (of the margin between the mean and the bound).
_RTOL = 1e-4


def _checked(values: Any, counts: Any, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(values, float).reshape(-1)
    c = np.ones_like(v) if counts is None else np.asarray(counts, float).reshape(-1)
    if v.shape != c.shape or v.size == 0:
        raise fail("counts", "one count per value (and at least one value)", c.shape)
    if not (np.all(v >= -1e-12) and np.all(v <= 1 + 1e-12)):
        raise fail("values", "numbers in [0, 1]", f"range [{v.min():.3g}, {v.max():.3g}]")
    if not 0 < alpha < 1:
        raise fail("alpha", "a number in (0, 1)", alpha)
    return np.clip(v, 0.0, 1.0), c


#: Above this many distinct values, values are rounded to a geometric grid of this relative step (up for
#: the upper bound, down for the lower: both only widen the bound, each wealth being monotone in every value),
#: and the values below COMPRESS_STEP × max(mean, 1/n) are merged into one (up to that value, or down to 0):
#: either moves the mean by at most COMPRESS_STEP of the bound's own scale (the margin is at least about 1/n).
COMPRESS_ABOVE = 4096
COMPRESS_STEP = 1e-3
_LOG_STEP = math.log1p(COMPRESS_STEP)


def _compressed(values: np.ndarray, counts: np.ndarray, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """The values rounded to the grid (1 + step)^k (conservatively, see :data:`COMPRESS_ABOVE`) and merged."""
    if values.size <= COMPRESS_ABOVE:
        return values, counts
    n = float(counts.sum())
    tiny = COMPRESS_STEP * max(float(counts @ values) / n, 1.0 / n)
    k_min = math.floor(math.log(tiny) / _LOG_STEP)
    logs = np.log(np.maximum(values, tiny)) / _LOG_STEP
    k = (np.ceil(logs) if up else np.floor(logs)).astype(np.int64) - k_min
    bins = np.where(values < tiny, 0, k + 1)  # bin 0: the merged small values; bin k + 1: (1 + step)^(k + k_min)
    used = np.flatnonzero(np.bincount(bins, minlength=1))
    merged = np.bincount(bins, weights=counts)[used]
    rounded = np.exp(np.minimum(used - 1 + k_min, 0) * _LOG_STEP)
    small = tiny if up else 0.0
    return np.where(used == 0, small, np.minimum(rounded, 1.0)), merged


def _log_wealth(values: np.ndarray, counts: np.ndarray, m: float, bets: tuple, upper: bool) -> float:
    """log Σ_c π_c Π_i (1 + λ_c(m)·s_i) with s = m − V (upper) or V − m (lower), every bet at once."""
    c, log_weights = _bet_arrays(bets)
    s = (m - values) if upper else (values - m)
    lam = c / (1.0 - m) if upper else c / m
    return _log_mixture(log_weights + np.log1p(np.multiply.outer(lam, s)) @ counts)  # each factor ≥ 1 − c > 0


@functools.lru_cache(maxsize=8)
def _bet_arrays(bets: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(c, log π) of a bet table as arrays (made once per table; read only)."""
    table = np.asarray(bets, float)
    c, log_weights = table[:, 0], np.log(table[:, 1])
    c.setflags(write=False)
    log_weights.setflags(write=False)
    return c, log_weights


def _log_mixture(terms: np.ndarray) -> float:
    """log Σ exp(terms), without overflow."""
    top = float(np.max(terms))
    return -math.inf if top == -math.inf else top + math.log(float(np.exp(terms - top).sum()))


#: The upper wealth's values up to this are summed by their power series (:class:`_UpperWealth`).
SERIES_BELOW = 0.125
#: Terms of that series: the remainder is below 0.125^18/18 relative, under float64's resolution.
SERIES_TERMS = 18


class _UpperWealth:
    """The upper bound's log wealth at any m, with the small values summed once by their power series.

    With λ = c/(1 − m) and a = 1 − (1 − c)m, each factor is 1 + λ(m − v) = (a − c·v)/(1 − m), and
    log(a − c·v) = log a − Σ_k (c·v/a)^k / k with c·v/a ≤ v (a ≥ c): for the values
    v ≤ :data:`SERIES_BELOW` the sum over values is log a·n_s − Σ_k (c/a)^k S_k / k with the power sums
    S_k = Σ_i c_i v_i^k, computed once. The larger values (a few: the atoms inside or near the optimal set)
    take their logarithms. The same wealth as the logarithm of every factor, to float64 rounding.
    """

    def __init__(self, values: np.ndarray, counts: np.ndarray) -> None:
        small = values <= SERIES_BELOW
        self.big, self.big_counts = values[~small], counts[~small]
        vs, power = values[small], counts[small].copy()
        self.n_small = float(power.sum())
        sums = np.empty(SERIES_TERMS)
        for k in range(SERIES_TERMS):
            power *= vs
            sums[k] = power.sum()
        self.orders = np.arange(1, SERIES_TERMS + 1, dtype=float)
        self.weighted_sums = sums / self.orders

    def __call__(self, m: float) -> float:
        """The log wealth at m, every bet at once (each factor is at least 1 − c > 0)."""
        a = 1.0 - (1.0 - _UPPER_C) * m
        series = ((_UPPER_C / a)[:, None] ** self.orders) @ self.weighted_sums
        small = self.n_small * (np.log1p(-(1.0 - _UPPER_C) * m) - math.log1p(-m)) - series  # log a − log(1 − m)
        terms = _UPPER_LOG_WEIGHTS + small
        if self.big.size:
            terms = terms + np.log1p(np.multiply.outer(_UPPER_C / (1.0 - m), m - self.big)) @ self.big_counts
        return _log_mixture(terms)


_UPPER_C, _UPPER_LOG_WEIGHTS = _bet_arrays(UPPER_BETS)


def mean_upper(values: Any, counts: Any = None, *, alpha: float) -> float:
    """Upper confidence bound (level 1 − α, any n) on the mean of [0, 1]-valued draws (module docstring).

    Parameters
    ----------
    values : array
        The distinct values, each in [0, 1].
    counts : array, optional
        How many draws took each value (default one each).
    alpha : float in (0, 1)

    Returns
    -------
    float in [mean, 1]

    Examples
    --------
    No draw in a region: the bound is about (ln(1/α) + ln(1/0.55))/(0.95 n) — here n = 1000:

    >>> round(mean_upper([0.0], [1000], alpha=0.05), 5)
    0.00364
    """
    v, c = _checked(values, counts, alpha)
    n, mean = float(c.sum()), float(c @ v) / float(c.sum())
    v, c = _compressed(v, c, up=True)
    mean = max(mean, float(c @ v) / n)
    level = math.log(1.0 / alpha)
    wealth = _UpperWealth(v, c)
    f = lambda m: wealth(m) - level  # noqa: E731 - increasing in m
    return _upper_search(f, mean, level, n)


def _upper_search(f: Any, mean: float, level: float, n: float) -> float:
    """The crossing of f above ``mean``: doubling steps from the mean, then :func:`_crossing` (1 when none)."""
    lo, f_lo, step = mean, None, max(level / n, 1e-12)
    while True:  # doubling steps up from the mean to a passing point (or to 1: the bound is then 1)
        hi = mean + step
        if hi >= 1.0:
            hi, f_hi = 1.0 - 1e-12, f(1.0 - 1e-12)
            if f_hi < 0:
                return 1.0
            break
        f_hi = f(hi)
        if f_hi >= 0:
            break
        lo, f_lo, step = hi, f_hi, 2.0 * step
    return _crossing(f, lo, hi, _RTOL * (hi - mean), f_lo=f_lo, f_hi=f_hi)


def mean_lower(values: Any, counts: Any = None, *, alpha: float) -> float:
    """Lower confidence bound (level 1 − α, any n) on the mean of [0, 1]-valued draws (module docstring).

    Examples
    --------
    >>> lo = mean_lower([0.0, 0.01], [900, 100], alpha=0.05)
    >>> 0.0 < lo < 0.001
    True
    """
    v, c = _checked(values, counts, alpha)
    mean = float(c @ v) / float(c.sum())
    if mean <= 0.0:
        return 0.0
    v, c = _compressed(v, c, up=False)
    mean = min(mean, float(c @ v) / float(c.sum()))
    if mean <= 0.0:  # every value below the merging threshold
        return 0.0
    level = math.log(1.0 / alpha)
    f = lambda m: level - _log_wealth(v, c, m, LOWER_BETS, False)  # noqa: E731 - increasing in m
    hi, f_hi, step = mean, None, 0.5 * mean
    while True:  # doubling steps down from the mean to a passing point (or to ~0: the bound is then 0)
        lo = mean - step
        if not lo > 0:
            lo, f_lo = mean * 1e-9, f(mean * 1e-9)
            if f_lo > 0:
                return 0.0
            break
        f_lo = f(lo)
        if f_lo <= 0:
            break
        hi, f_hi, step = lo, f_lo, min(2.0 * step, mean)
    return _crossing(f, lo, hi, _RTOL * (mean - lo), upper=False, f_lo=f_lo, f_hi=f_hi)


def _crossing(f: Any, lo: float, hi: float, tol: float, upper: bool = True, *, f_lo: float | None = None,
              f_hi: float | None = None) -> float:
    """The conservative end of a bracket [lo, hi] of the crossing of an increasing f (f(lo) < 0 ≤ f(hi)), narrowed
    to ``tol`` by false position with the Illinois modification (a bisection step whenever it stalls): the
    upper end for an upper bound, the lower end for a lower bound. ``f_lo``, ``f_hi``: f at the ends, when known."""
    f_lo = f(lo) if f_lo is None else f_lo
    f_hi = f(hi) if f_hi is None else f_hi
    side = 0
    for _ in range(200):
        if hi - lo <= tol + 1e-300:
            break
        if math.isfinite(f_lo) and math.isfinite(f_hi) and f_hi > f_lo:
            mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            mid = min(max(mid, lo + 0.01 * (hi - lo)), hi - 0.01 * (hi - lo))
        else:
            mid = 0.5 * (lo + hi)
        f_mid = f(mid)
        if f_mid < 0:
            lo, f_lo = mid, f_mid
            f_hi = f_hi / 2.0 if side == -1 else f_hi
            side = -1
        else:
            hi, f_hi = mid, f_mid
            f_lo = f_lo / 2.0 if side == 1 else f_lo
            side = 1
    return hi if upper else lo


@functools.lru_cache(maxsize=256)
def upper_floor(n: float, alpha: float) -> float:
    """:func:`mean_upper` of ``n`` draws that are all 0: the smallest mean n draws can certify as an upper
    bound — a region of about this mass may be missed by every draw (a pure function of its arguments: kept
    for the process, as every row of a scale search asks it again)."""
    return mean_upper([0.0], [float(n)], alpha=alpha)


def draws_for_floor(target: float, alpha: float) -> int:
    """Fewest draws ``n`` with ``upper_floor(n, alpha) ≤ target`` (by doubling and bisection)."""
    if not 0 < target < 1:
        raise fail("target", "a number in (0, 1)", target)
    lo, hi = 1, 2
    while upper_floor(hi, alpha) > target:
        lo, hi = hi, 2 * hi
    while hi - lo > max(1, hi // 1000):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if upper_floor(mid, alpha) > target else (lo, mid)
    return hi
