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
#: the upper bound, down for the lower: both only widen the bound, each wealth being monotone in every value).
COMPRESS_ABOVE = 4096
COMPRESS_STEP = 1e-3


def _compressed(values: np.ndarray, counts: np.ndarray, up: bool) -> tuple[np.ndarray, np.ndarray]:
    """The values rounded to the grid (1 + step)^k (conservatively, see :data:`COMPRESS_ABOVE`) and merged."""
    if values.size <= COMPRESS_ABOVE:
        return values, counts
    pos = values > 0
    k = np.zeros(values.size, dtype=np.int64)
    logs = np.log(values[pos]) / math.log1p(COMPRESS_STEP)
    k[pos] = np.ceil(logs) if up else np.floor(logs)
    key = np.where(pos, k, np.iinfo(np.int64).min)
    distinct, inverse = np.unique(key, return_inverse=True)
    merged = np.bincount(inverse, weights=counts, minlength=distinct.size)
    rounded = np.where(distinct == np.iinfo(np.int64).min, 0.0,
                       np.exp(np.clip(distinct, -10**9, 0) * math.log1p(COMPRESS_STEP)))
    return np.minimum(rounded, 1.0), merged


def _log_wealth(values: np.ndarray, counts: np.ndarray, m: float, bets: tuple, upper: bool) -> float:
    """log Σ_c π_c Π_i (1 + λ_c(m)·s_i) with s = m − V (upper) or V − m (lower)."""
    s = (m - values) if upper else (values - m)
    terms = []
    for c, weight in bets:
        lam = c / (1.0 - m) if upper else c / m
        with np.errstate(divide="ignore"):
            terms.append(math.log(weight) + float(counts @ np.log1p(lam * s)))
    top = max(terms)
    return -math.inf if top == -math.inf else top + math.log(sum(math.exp(t - top) for t in terms))


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
    lo, hi = mean, 1.0
    if _log_wealth(v, c, hi - 1e-12, UPPER_BETS, True) < level:
        return 1.0
    step = max(level / n, 1e-12)
    while mean + step < 1.0 and _log_wealth(v, c, mean + step, UPPER_BETS, True) < level:
        lo, step = mean + step, 2.0 * step
    hi = min(1.0 - 1e-12, mean + step)
    return _crossing(lambda m: _log_wealth(v, c, m, UPPER_BETS, True) - level, lo, hi, _RTOL * (hi - mean))


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
    level = math.log(1.0 / alpha)
    lo, hi = 0.0, mean
    if _log_wealth(v, c, mean * 1e-9, LOWER_BETS, False) < level:
        return 0.0
    step = 0.5 * mean
    while mean - step > 0 and _log_wealth(v, c, mean - step, LOWER_BETS, False) < level:
        hi, step = mean - step, min(2.0 * step, mean)
    lo = max(mean * 1e-9, mean - step)
    return _crossing(lambda m: level - _log_wealth(v, c, m, LOWER_BETS, False), lo, hi, _RTOL * (mean - lo), upper=False)


def _crossing(f: Any, lo: float, hi: float, tol: float, upper: bool = True) -> float:
    """The conservative end of a bracket [lo, hi] of the crossing of an increasing f (f(lo) < 0 ≤ f(hi)), narrowed
    to ``tol`` by false position with the Illinois modification (a bisection step whenever it stalls): the
    upper end for an upper bound, the lower end for a lower bound."""
    f_lo, f_hi = f(lo), f(hi)
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


def upper_floor(n: float, alpha: float) -> float:
    """:func:`mean_upper` of ``n`` draws that are all 0: the smallest mean n draws can certify as an upper
    bound — a region of about this mass may be missed by every draw."""
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
