"""Empirical ε: a statistical lower bound on the privacy a mechanism actually gives.

If a mechanism M is (ε, δ)-private for the pair (a, b) — for distribution /
Pufferfish privacy: for every event S, P(M(X) ∈ S | a) ≤ e^ε P(M(X) ∈ S | b) + δ
and the same with a and b swapped, X drawn from Θ under the secret — then so
is every test that reads M(X) and was built without the test data
(post-processing). For the attack's decision "guess b", with
TPR = P(guess b | b) and FPR = P(guess b | a):

    TPR ≤ e^ε FPR + δ          and          1 − FPR ≤ e^ε (1 − TPR) + δ,

so ε ≥ log((TPR − δ)/FPR) and ε ≥ log((1 − FPR − δ)/(1 − TPR)). Replacing the
rates by one-sided Clopper–Pearson bounds (TPR from below, FPR from above,
each at level α/2; the second inequality uses the same two bounds, since
1 − FPR ≥ 1 − FPR_hi and 1 − TPR ≤ 1 − TPR_lo) gives a lower bound on the
smallest ε the mechanism can satisfy that holds with probability ≥ 1 − α.
This is the auditing recipe of Jagielski, Ullman & Oprea (NeurIPS 2020) and
Nasr et al. (IEEE S&P 2021), with the secret pair in place of neighbouring
datasets.

Pooling repetitions. The attack trains one classifier per repetition; given
the classifiers, the number of "guess b" among the test datasets of one
secret is a sum of binomials with different success probabilities (a
Poisson-binomial), whose mean rate is the average of the per-repetition rates.
The two inequalities are linear in the rates, so they hold for the averages.
Hoeffding (1956, Theorem 4) shows a Poisson-binomial is more concentrated
than the binomial of the same mean beyond one unit from the mean, so the
Clopper–Pearson bounds computed as if binomial remain conservative (the
exception, fewer than about one expected event, only arises for rates below
1/(number of datasets)).

What the bound is about: the Θ the test datasets were drawn from
(``test_model``). It contradicts a mechanism's claim only when the claim
covers that Θ (e.g. the mechanism was calibrated on the same population), and
only under the claim's own assumptions (a plug-in calibration's ε is itself
an estimate).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import pandas as pd
from scipy import stats

from bayespriv._validation import check_delta, check_positive_int, fail
from bayespriv._display import NO_CLAIM, cell, frame_html
from bayespriv.errors import ParameterTypeError
from .attack import AttackResult

__all__ = ["EmpiricalEpsilon", "clopper_pearson", "epsilon_lower_bound", "empirical_epsilon"]


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper–Pearson bounds, each with error probability ``alpha``.

    Returns ``(lower, upper)`` with P(p < lower) ≤ α and P(p > upper) ≤ α:
    ``lower = Beta⁻¹(α; k, n − k + 1)`` (0 when k = 0) and
    ``upper = Beta⁻¹(1 − α; k + 1, n − k)`` (1 when k = n).
    """
    n = check_positive_int(trials, "trials")
    k = int(successes)
    if not 0 <= k <= n:
        raise fail("successes", f"an integer in [0, {n}]", successes)
    if not 0.0 < alpha < 1.0:
        raise fail("alpha", "in the open interval (0, 1)", alpha)
    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))
    return lower, upper


def _log_ratio(num: float, den: float) -> float:
    if num <= 0.0:
        return 0.0
    if den <= 0.0:
        return math.inf
    return max(0.0, math.log(num / den))


#: Why an empirical ε reads infinite: the plug-in log(TPR / FPR) with FPR = 0.
_NO_FALSE_POSITIVE = "no false positive among the trials"


@dataclass(frozen=True)
class EmpiricalEpsilon:
    """A lower bound on ε from an attack's true / false positive rates.

    Attributes
    ----------
    epsilon : float
        Lower bound, holding with probability ≥ 1 − ``alpha``: the mechanism is
        *not* (ε', δ)-private for the pair under the test Θ for any ε' < epsilon.
        0 when the attack gives no evidence.
    estimate : float
        The same formula with the observed rates (no confidence; may be inf).
    tpr, fpr : float
        Observed P(guess b | b) and P(guess b | a).
    tpr_lower, fpr_upper : float
        Their one-sided Clopper–Pearson bounds, each at level ``alpha / 2``.
    n_positive, n_negative : int
        Test datasets drawn under b and under a.
    alpha, delta : float
    claimed_epsilon : float or None
        The mechanism's claim, to compare with.
    """

    epsilon: float
    estimate: float
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    n_positive: int
    n_negative: int
    alpha: float
    delta: float
    claimed_epsilon: float | None = None

    @property
    def contradicts_claim(self) -> bool | None:
        """True when the lower bound exceeds the claimed ε (None without a claim)."""
        return None if self.claimed_epsilon is None else self.epsilon > self.claimed_epsilon

    def summary(self) -> pd.DataFrame:
        """One-row DataFrame: ε lower bound and estimate, claimed ε, TPR/FPR with their confidence ends, counts, α, δ."""
        row = {"ε lower bound": self.epsilon, "ε estimate": self.estimate, "claimed ε": self.claimed_epsilon,
               "TPR": self.tpr, "TPR lower": self.tpr_lower, "FPR": self.fpr, "FPR upper": self.fpr_upper,
               "n positive": self.n_positive, "n negative": self.n_negative, "α": self.alpha, "δ": self.delta}
        return pd.DataFrame([row])

    def __repr__(self) -> str:
        claim = "" if self.claimed_epsilon is None else f", claimed={self.claimed_epsilon:g}"
        return (f"EmpiricalEpsilon(epsilon>={self.epsilon:.4g} at confidence {1 - self.alpha:g}, "
                f"estimate={cell(self.estimate, infinite=_NO_FALSE_POSITIVE)}, TPR={self.tpr:.4f}, "
                f"FPR={self.fpr:.4f}, delta={self.delta:g}{claim})")

    def _repr_html_(self) -> str:
        table = frame_html(self.summary(), index=False, missing={"claimed ε": NO_CLAIM},
                           infinite={"ε estimate": _NO_FALSE_POSITIVE, "ε lower bound": _NO_FALSE_POSITIVE})
        return f"<div><p><code>{html.escape(repr(self))}</code></p>{table}</div>"


def epsilon_lower_bound(
    true_positives: int,
    n_positive: int,
    false_positives: int,
    n_negative: int,
    *,
    delta: float = 0.0,
    alpha: float = 0.05,
    claimed_epsilon: float | None = None,
) -> EmpiricalEpsilon:
    """Lower bound on ε from counts of a test's decisions (see the module docstring).

    ``ε_lb = max(0, log((TPR_lo − δ)/FPR_hi), log((1 − FPR_hi − δ)/(1 − TPR_lo)))``
    with TPR_lo, FPR_hi one-sided Clopper–Pearson bounds at level α/2 each, so
    that P(ε_lb > ε_true) ≤ α.

    Parameters
    ----------
    true_positives, n_positive : int
        "Guess b" among the ``n_positive`` test datasets drawn under b.
    false_positives, n_negative : int
        "Guess b" among the ``n_negative`` test datasets drawn under a.
    delta : float in [0, 1)
    alpha : float in (0, 1)
    claimed_epsilon : float, optional
    """
    delta = check_delta(delta, allow_zero=True)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise fail("alpha", "in the open interval (0, 1)", alpha)
    n_pos = check_positive_int(n_positive, "n_positive")
    n_neg = check_positive_int(n_negative, "n_negative")
    tpr_lo, _ = clopper_pearson(true_positives, n_pos, alpha / 2.0)
    _, fpr_hi = clopper_pearson(false_positives, n_neg, alpha / 2.0)
    tpr, fpr = true_positives / n_pos, false_positives / n_neg
    bound = max(_log_ratio(tpr_lo - delta, fpr_hi), _log_ratio(1.0 - fpr_hi - delta, 1.0 - tpr_lo))
    estimate = max(_log_ratio(tpr - delta, fpr), _log_ratio(1.0 - fpr - delta, 1.0 - tpr))
    return EmpiricalEpsilon(
        epsilon=bound, estimate=estimate, tpr=tpr, fpr=fpr, tpr_lower=tpr_lo, fpr_upper=fpr_hi,
        n_positive=n_pos, n_negative=n_neg, alpha=float(alpha), delta=delta, claimed_epsilon=claimed_epsilon,
    )


def empirical_epsilon(result: AttackResult, *, delta: float | None = None, alpha: float = 0.05) -> EmpiricalEpsilon:
    """Lower bound on the ε a mechanism provides, from a property-inference attack.

    Pools the attack's test decisions over all repetitions (``result.confusion``)
    and applies :func:`epsilon_lower_bound`; "positive" is the pair's second
    secret ``b`` (the bound is symmetric in the two secrets).

    Parameters
    ----------
    result : AttackResult
        From :func:`~bayespriv.audit.property_inference_attack`.
    delta : float in [0, 1), optional
        The δ of the claim being audited. Default: the mechanism's claimed δ
        (0 when it has none).
    alpha : float in (0, 1), default 0.05
        The bound is exceeded by the true ε with probability at most α.

    Returns
    -------
    EmpiricalEpsilon
        With ``claimed_epsilon`` copied from the result, so
        ``contradicts_claim`` tells whether the attack refutes the claim
        (see the module docstring for what Θ the bound is about).
    """
    if not isinstance(result, AttackResult):
        raise ParameterTypeError(f"result must be an AttackResult; got {type(result).__name__}")
    if delta is None:
        delta = result.claimed_delta or 0.0
    total = result.confusion.sum(axis=0)  # [true secret, predicted secret]
    return epsilon_lower_bound(
        int(total[1, 1]), int(total[1].sum()), int(total[0, 1]), int(total[0].sum()),
        delta=delta, alpha=alpha, claimed_epsilon=result.claimed_epsilon,
    )
