"""Bounds on an attack's accuracy: the most an (ε, δ) claim allows, and n_leaked.

:func:`accuracy_bound`: no test between two secrets of a mechanism that is (ε, δ)-private for
the pair is more accurate than (e^ε + δ)/(1 + e^ε), for equal priors.

n_leaked. Suri & Evans (*Formalizing and Estimating Distribution Inference Risks*,
PETS 2022; arXiv:2109.06024) relate a distribution-inference attack to the leakage
that would occur if records were handed to the adversary directly: n_leaked is the
number of records whose direct observation gives the same distinguishing accuracy. For
a proportion secret p_a vs p_b the best test on m records' category indicators (i.i.d.
Bernoulli, the paper's setting) is a binomial likelihood-ratio test of accuracy
:func:`direct_accuracy` (m); :func:`n_leaked` inverts it exactly, interpolating
linearly between whole numbers of records. The definition is the paper's; the exact
binomial accuracy it is solved on is this module's choice (an estimator in the paper
that approximates that accuracy is not reproduced here, and may differ from it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special, stats

from .._validation import check_delta, check_real, fail
from ..secrets import DatasetSecret, SecretPair

__all__ = ["accuracy_bound", "direct_accuracy", "n_leaked"]


def accuracy_bound(epsilon: float, delta: float = 0.0) -> float:
    """Largest accuracy of any test between two (ε, δ)-indistinguishable laws, equal priors.

    ``(e^ε + δ)/(1 + e^ε)``, computed as ``1 − (1 − δ)·σ(−ε)`` (σ the logistic
    function) so that it stays exact for large ε. It follows from the two
    inequalities α + e^ε β ≥ 1 − δ and β + e^ε α ≥ 1 − δ that (ε, δ)-privacy
    imposes on the false-positive rate α and false-negative rate β of every test
    (Kairouz, Oh & Viswanath 2015), added. It is attained by a randomized-response
    pair of laws; Gaussian mechanisms stay well below it when δ is small.

    Parameters
    ----------
    epsilon : float ≥ 0
    delta : float in [0, 1)

    Returns
    -------
    float
        In [1/2, 1).

    Examples
    --------
    >>> from bayespriv.audit import accuracy_bound
    >>> round(accuracy_bound(1.0, 1e-3), 4)
    0.7313
    """
    eps = check_real("epsilon", epsilon)
    if not eps >= 0 or math.isnan(eps):
        raise fail("epsilon", "a number >= 0", epsilon)
    d = check_delta(delta, allow_zero=True)
    return float(1.0 - (1.0 - d) * special.expit(-eps))


def _proportions(p_a: Any, p_b: Any) -> tuple[float, float]:
    """(lower, higher) of two distinct proportions in [0, 1]."""
    ps = []
    for name, p in (("p_a", p_a), ("p_b", p_b)):
        v = check_real(name, p)
        if not 0.0 <= v <= 1.0:
            raise fail(name, "a proportion in [0, 1]", p)
        ps.append(v)
    if ps[0] == ps[1]:
        raise fail("p_b", f"different from p_a = {ps[0]!r} (equal proportions cannot be told apart)", p_b)
    return min(ps), max(ps)


def _error_binomial(m: int, lo: float, hi: float) -> float:
    """Error probability ½(P_hi(K ≤ t) + P_lo(K > t)) of the best test between Binomial(m, hi) and
    Binomial(m, lo), lo < hi, equal priors.

    The likelihood ratio of hi to lo is increasing in the count k, so the best test guesses hi
    when k > t; both tails are computed directly (``binom.cdf``, ``binom.sf``), so the error
    keeps its relative precision when it is tiny. Its complement is ½ + ½·TV.
    """
    if m == 0:
        return 0.5
    if hi == 1.0:  # only k = m is possible under hi
        t = m - 1
    elif lo == 0.0:  # only k = 0 is possible under lo
        t = 0
    else:
        up = math.log(hi) - math.log(lo)  # log-ratio per record in the category (> 0)
        down = math.log1p(-hi) - math.log1p(-lo)  # per record outside it (< 0)
        t = math.floor(m * (-down) / (up - down))  # k = m·c is a tie: either side errs alike
    return float(min(0.5, 0.5 * (stats.binom.cdf(t, m, hi) + stats.binom.sf(t, m, lo))))


def direct_accuracy(m: int, p_a: float, p_b: float) -> float:
    """Accuracy of the best test between proportions p_a and p_b from m records, equal priors.

    The adversary sees the category indicators of m records drawn i.i.d. (Bernoulli
    p_a under one secret, p_b under the other); the count K is sufficient and the
    likelihood-ratio test on it is optimal, with accuracy ``1/2 + TV/2``,
    TV the total variation between Binomial(m, p_a) and Binomial(m, p_b). It is
    non-decreasing in m (a test can ignore a record) but not strictly: for 0.4 vs
    0.6, one and two records both give 0.6.

    Parameters
    ----------
    m : int ≥ 0
        Records observed.
    p_a, p_b : float in [0, 1], distinct

    Returns
    -------
    float

    Examples
    --------
    >>> from bayespriv.audit import direct_accuracy
    >>> [round(direct_accuracy(m, 0.4, 0.6), 3) for m in range(4)]
    [0.5, 0.6, 0.6, 0.648]
    """
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 0:
        raise fail("m", "an integer >= 0", m)
    lo, hi = _proportions(p_a, p_b)
    return 1.0 - _error_binomial(int(m), lo, hi)


#: Largest number of records :func:`n_leaked` searches (beyond it: inf).
MAX_RECORDS = 2**62


def n_leaked(accuracy: float, p_a: float, p_b: float) -> float:
    """Records whose direct observation gives the same accuracy (Suri & Evans 2022).

    The smallest whole m with :func:`direct_accuracy` (m) ≥ ``accuracy`` is found
    by doubling and bisection (the accuracy is non-decreasing in m); the result
    interpolates linearly between m − 1 and m:
    ``(m − 1) + (accuracy − acc(m − 1)) / (acc(m) − acc(m − 1))``. So a whole
    number comes out exactly when the accuracy is attained by that many records
    and by no fewer.

    Parameters
    ----------
    accuracy : float in [0, 1]
        Accuracy of an attack (e.g. :attr:`LikelihoodRatioResult.accuracy`).
    p_a, p_b : float in [0, 1], distinct
        The two proportions the secrets fix.

    Returns
    -------
    float
        0 for an accuracy at or below 1/2; ``inf`` for an accuracy no finite number
        of records reaches (1, unless one proportion is 0 or 1).

    Notes
    -----
    Suri & Evans (*Formalizing and Estimating Distribution Inference Risks*, PETS
    2022, arXiv:2109.06024) define the measure as the number of training records the
    adversary would need to see directly for the same leakage; this function uses
    the exact binomial accuracy of m i.i.d. records (their setting). For a dataset
    secret, the records of one dataset are exchangeable rather than i.i.d. (the
    dataset holds exactly p·n of them); the binomial is the i.i.d. reading.

    Examples
    --------
    >>> from bayespriv.audit import n_leaked
    >>> round(n_leaked(0.62, 0.4, 0.6), 4)  # between 2 records (0.6) and 3 (0.648)
    2.4167
    """
    acc = check_real("accuracy", accuracy)
    if not 0.0 <= acc <= 1.0:
        raise fail("accuracy", "in [0, 1]", accuracy)
    lo, hi = _proportions(p_a, p_b)
    if acc <= 0.5:
        return 0.0
    if acc >= 1.0:  # no error at all: one record suffices for 0 vs 1, no finite number otherwise
        return 1.0 if (lo, hi) == (0.0, 1.0) else math.inf
    target = 1.0 - acc  # work with error probabilities: they keep their precision near accuracy 1
    err = lambda m: _error_binomial(m, lo, hi)  # noqa: E731
    high = 1
    while err(high) > target:
        if high >= MAX_RECORDS:
            return math.inf
        high *= 2
    low = high // 2  # err(low) > target (or low = 0)
    while high - low > 1:
        mid = (low + high) // 2
        if err(mid) <= target:
            high = mid
        else:
            low = mid
    before, after = err(high - 1), err(high)
    return float(high - 1 + (before - target) / (before - after))


def _proportion_pair(pair: SecretPair) -> tuple[float, float] | str:
    """(p_a, p_b) of a proportion pair, or why the pair has no n_leaked."""
    a, b = pair.a, pair.b
    if isinstance(a, DatasetSecret) and a.statistic == "proportion":
        return float(a.value), float(b.value)
    if isinstance(a, DatasetSecret):
        return (f"n_leaked is defined for proportion secrets; {pair.label!r} fixes a mean, and records seen "
                "directly do not map to a binomial test")
    return (f"n_leaked is defined for proportion secrets; {pair.label!r} fixes a parameter of Θ — if it is the "
            "probability of a category, call n_leaked(accuracy, p_a, p_b) with its two values")
