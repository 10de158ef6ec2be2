"""Bayes-optimal likelihood-ratio attack on a mechanism, and the records it leaks (n_leaked).

The adversary knows Θ, the query F and the mechanism's noise Z (Kerckhoffs), sees one
released value Y = F(X) + Z and must tell secret a from secret b. With equal priors the
test of least error compares the densities of the two released laws, p_s = μ_s ∗ Z
(μ_s the law of F(X) | s): guess b when log p_b(Y) − log p_a(Y) > 0. Any other test —
the meta-classifier of :func:`~bayespriv.audit.property_inference_attack` included — is
at most as accurate, so this attack measures what the release itself gives away.

Densities. μ_s is known through draws x_1 … x_n of F(X) | s (by default the
calibration's), so p_s is estimated by the mixture p̂_s(y) = (1/n) Σ_i φ_Z(y − x_i),
evaluated in chunks with the float32 kernels of
:mod:`~bayespriv.privacy.mixture_mc` (the accountant's own), after mapping every
point to coordinates where the noise is standard (whitened Gaussian noise; Laplace noise
along a square basis mapped to unit scales). Without noise the mixture degenerates: the
test is its limit as the kernel shrinks — the secret with the nearer reference draw
(distances standardised per component), ties broken by how many draws sit at that
distance (the empirical pmf, for a discrete F).

What is measured. Given the reference draws the decision rule is fixed, and the trials
are fresh datasets from ``model`` with fresh noise, independent of those draws. So the
observed accuracy is an unbiased estimate of *this test's* accuracy, which is at most
the Bayes accuracy of the release on Θ (a mixture from finitely many draws only loses
accuracy, never gains it); the confidence interval and the empirical ε are valid at
their stated level whatever the reference draws. Reference draws distinct from the
calibration's (``reference_draws=`` another calibration) keep the attack independent of
the draws the mechanism was calibrated on.

Bounds a claim implies. If the mechanism is (ε, δ)-private for the pair then every test
with false-positive rate α and false-negative rate β has α + e^ε β ≥ 1 − δ and
β + e^ε α ≥ 1 − δ; adding them, its accuracy 1 − (α + β)/2 is at most
(e^ε + δ)/(1 + e^ε) (:func:`accuracy_bound`), for equal priors. A Gaussian mechanism is
far from that bound at small δ (its accuracy is Φ(r/2) with r the Mahalanobis distance
of the released means), so accuracy refutes only gross breaches; the sharper audit is
the empirical ε (:func:`~bayespriv.audit.epsilon_lower_bound`) at the thresholds ±ε of
the log-likelihood ratio, where the set {log p_b/p_a > ε} is the one that attains the
hockey-stick divergence H_ε(P_b‖P_a).

n_leaked, the records whose direct observation would give the attack's accuracy, and the
bound (ε, δ) puts on any test's accuracy are in :mod:`bayespriv.audit.accuracy`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._deprecation import option_value
from .._display import NO_CLAIM, frame_html
from .._validation import check_finite_array, check_positive_int, check_real, described, fail
from ..calibration.engine import CHUNK_BYTES
from ..calibration.result import Calibration
from ..datamodels.base import DataModel
from ..errors import ParameterTypeError, ValidationError
from ..queries import Query
from ..random import RNGLike, as_seed_sequence
from ..secrets import Secret, SecretPair
from .accuracy import accuracy_bound, n_leaked, _proportion_pair
from .attack import _claimed, _mechanism_name, _readonly, noise_sampler
from .densities import _Noise, _scores
from .empirical_epsilon import EmpiricalEpsilon, clopper_pearson, epsilon_lower_bound

__all__ = [
    "AttackTrials",
    "LikelihoodRatioResult",
    "likelihood_ratio_attack",
]

# -- the trials ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AttackTrials:
    """What the likelihood-ratio attack is run on (``likelihood_ratio_attack(..., trials=...)``,
    ``calibration_rows(..., trials=...)``): how many fresh datasets it guesses on, and the draws behind the
    densities it guesses with; checked once.

    Keyword-only and frozen; the default, ``AttackTrials()``, draws 2000 datasets per secret and takes the
    densities from the attacked mechanism's own calibration. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field; the shapes of given draws are checked
    by the attack, which knows the query.

    Attributes
    ----------
    n_trials : int, default 2000
        Fresh datasets drawn from the model per secret, at least 1: the attack guesses the secret of each
        from its released value. The accuracy's confidence interval narrows as 1/√n_trials.
    reference_draws : None, Calibration or mapping, optional
        Draws of F(X) | secret behind the estimated densities p̂: the mechanism's calibration (None, the
        default), a separate calibration of the same query (held out: independent of the draws the noise
        was calibrated on), or a mapping secret -> array (n, k). For a family calibration, the member whose
        θ is the attacked model's. Any draws give a valid attack; held-out ones an unbiased one.

    Examples
    --------
    >>> from bayespriv.audit import AttackTrials
    >>> AttackTrials(n_trials=500)
    AttackTrials(n_trials=500, reference_draws=None)
    >>> AttackTrials(n_trials=0)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: n_trials must be an integer >= 1; got 0
    """

    n_trials: int = 2000
    reference_draws: Calibration | Mapping[Secret, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_trials", check_positive_int(self.n_trials, "n_trials"))
        if not (self.reference_draws is None or isinstance(self.reference_draws, (Calibration, Mapping))):
            raise ParameterTypeError("reference_draws must be None, a Calibration, or a mapping secret -> array "
                                     f"(n, k); got {type(self.reference_draws).__name__}")


#: What the attack runs on when a call passes no ``trials=``.
_DEFAULT_TRIALS = AttackTrials()


def _attack_trials(owner: str, trials: Any, old: Mapping[str, Any]) -> AttackTrials:
    """The ``trials=`` of a call of ``owner``: checked (None: the defaults), with the deprecated keywords of
    ``old`` (the fields, once keywords of their own) folded in, warning. An old keyword given with ``trials=``
    is a :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a ``TypeError`` (as
    Python's)."""
    return option_value(owner, "trials", AttackTrials, trials, old, _DEFAULT_TRIALS)


# -- result ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LikelihoodRatioResult:
    """Outcome of :func:`likelihood_ratio_attack`.

    "Positive" is the pair's second secret ``b``, as in
    :func:`~bayespriv.audit.empirical_epsilon`.

    Attributes
    ----------
    accuracy : float
        Share of the 2 × ``n_trials`` trials (half under each secret) whose secret
        was guessed right, with the decision at ``threshold``.
    accuracy_ci : tuple of float
        Two-sided Clopper–Pearson interval of the test's expected accuracy at
        level 1 − ``alpha`` (conservative for the balanced design: the number right
        is a sum of two binomials, more concentrated than one binomial of the same
        mean, Hoeffding 1956).
    tpr, fpr : float
        P(guess b | b) and P(guess b | a) at ``threshold``.
    confusion : ndarray (2, 2) of int
        ``confusion[i, j]``: trials under secret i (0 = a, 1 = b) guessed as j.
    scores : ndarray (2, n_trials)
        log p̂_b(y) − log p̂_a(y) of each trial; row 0 drawn under a, row 1 under b.
    threshold : float
        Guess b when the score exceeds it (ties: a fair coin). 0 is the
        Bayes-optimal test for equal priors; log(π_a/π_b) for priors π.
    empirical : EmpiricalEpsilon
        The largest lower bound on ε (at the claimed δ, or 0 without a claim) over
        ``audit_thresholds``; each bound is computed at level α/len(audit_thresholds),
        so the largest holds with probability ≥ 1 − α (its ``alpha`` field shows
        the per-threshold level).
    audit_threshold : float
        The threshold whose decisions gave ``empirical``.
    audit_thresholds : tuple of float
        Every threshold the audit tried, fixed before the trials were drawn.
    accuracy_bound : float or None
        (e^ε + δ)/(1 + e^ε) for the claimed (ε, δ): the most any test may reach if
        the claim holds (:func:`accuracy_bound`); None without a claim.
    n_leaked : float or None
        Records seen directly that give the same accuracy (:func:`n_leaked`), for
        proportion secrets; None otherwise (see ``n_leaked_note``).
    n_leaked_interval : tuple of float or None
        ``n_leaked`` at the ends of ``accuracy_ci``.
    n_leaked_note : str
        What n_leaked compares with, or why it is None.
    n_trials : int
        Fresh datasets drawn per secret.
    n_reference : tuple of int
        Draws of F(X) per secret behind the released densities.
    reference : str
        Where those draws came from.
    noise : str
        ``"gaussian"``, ``"laplace"`` or ``"none"`` (nearest-draw test).
    alpha : float
    mechanism : str
    pair : SecretPair
    query : str
    claimed_epsilon, claimed_delta : float or None
    """

    accuracy: float
    accuracy_ci: tuple[float, float]
    tpr: float
    fpr: float
    confusion: np.ndarray
    scores: np.ndarray
    threshold: float
    empirical: EmpiricalEpsilon
    audit_threshold: float
    audit_thresholds: tuple[float, ...]
    accuracy_bound: float | None
    n_leaked: float | None
    n_leaked_interval: tuple[float, float] | None
    n_leaked_note: str
    n_trials: int
    n_reference: tuple[int, int]
    reference: str
    noise: str
    alpha: float
    mechanism: str
    pair: SecretPair
    query: str
    claimed_epsilon: float | None = None
    claimed_delta: float | None = None

    @property
    def advantage(self) -> float:
        """Distinguishing advantage 2·accuracy − 1 (0: chance, 1: perfect)."""
        return 2.0 * self.accuracy - 1.0

    @property
    def exceeds_bound(self) -> bool | None:
        """True when even the lower end of ``accuracy_ci`` exceeds ``accuracy_bound``: the claim is refuted
        at level α (None without a claim)."""
        return None if self.accuracy_bound is None else self.accuracy_ci[0] > self.accuracy_bound

    @property
    def contradicts_claim(self) -> bool | None:
        """True when the empirical ε lower bound exceeds the claimed ε (None without a claim)."""
        return self.empirical.contradicts_claim

    def summary(self) -> pd.DataFrame:
        """One row: accuracy and its interval, TPR/FPR, the claim's accuracy bound, ε lower bound, n_leaked, sizes."""
        pct = f"{100 * (1 - self.alpha):g}%"
        row = {
            "accuracy": self.accuracy,
            f"{pct} CI low": self.accuracy_ci[0],
            f"{pct} CI high": self.accuracy_ci[1],
            "TPR": self.tpr,
            "FPR": self.fpr,
            "claimed ε": self.claimed_epsilon,
            "claimed δ": self.claimed_delta,
            "accuracy bound": self.accuracy_bound,
            "ε lower bound": self.empirical.epsilon,
            "at threshold": self.audit_threshold,
            "n_leaked": self.n_leaked,
            "trials per secret": self.n_trials,
            "reference draws": min(self.n_reference),
        }
        return pd.DataFrame([row], index=pd.Index([self.mechanism], name="mechanism"))

    def __repr__(self) -> str:
        lo, hi = self.accuracy_ci
        bound = "" if self.accuracy_bound is None else f", bound={self.accuracy_bound:.4f}"
        leaked = "" if self.n_leaked is None else f", n_leaked={self.n_leaked:.4g}"
        return (f"LikelihoodRatioResult(mechanism={self.mechanism!r}, accuracy={self.accuracy:.4f} [{lo:.4f}, {hi:.4f}]"
                f"{bound}, epsilon>={self.empirical.epsilon:.4g}{leaked}, n_trials={self.n_trials})")

    def _repr_html_(self) -> str:
        head = html.escape(f"Likelihood-ratio attack on {self.query!r}: {self.pair.label} "
                           f"({self.noise} noise; densities from {self.reference})")
        note = html.escape(self.n_leaked_note)
        table = frame_html(self.summary(), missing={"claimed ε": NO_CLAIM, "claimed δ": NO_CLAIM,
                                                    "accuracy bound": "no claim to bound it",
                                                    "n_leaked": "not defined for this pair (see below)"},
                           infinite={"n_leaked": "no number of records seen directly reaches this accuracy",
                                     "ε lower bound": "no false positive among the trials"})
        return f"<div><p><b>{head}</b></p>{table}<p>{note}</p></div>"


# -- the attack ------------------------------------------------------------------------------------


def _member_for(cal: Calibration, model: DataModel) -> Calibration:
    """The calibration (member, for a family) whose θ is the model's."""
    if not cal.is_family:
        return cal
    theta = dict(model.theta)
    for m in cal.members:
        if dict(m.theta or {}) == theta:
            return m
    raise ValidationError(f"reference_draws must be given when the calibration is a family and no member has the "
                          f"model's θ {theta!r}; members have {[dict(m.theta or {}) for m in cal.members]!r}")


def _reference(mechanism: Any, model: DataModel, pair: SecretPair, given: Any, k: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Draws of F(X) under a and under b, and where they came from."""
    if isinstance(given, Calibration) and given.query_fingerprint != mechanism.calibration.query_fingerprint:
        raise ValidationError("reference_draws must be a calibration of the mechanism's query "
                              f"{mechanism.calibration.query.name!r}; got one of "
                              f"{getattr(given.query, 'name', None)!r} (another fingerprint)")
    if given is None or isinstance(given, Calibration):
        cal = _member_for(mechanism.calibration if given is None else given, model)
        if cal.sample_array is None:
            raise ValidationError("reference_draws must be given when the calibration holds no draws (built from "
                                  "moments); pass a sampled calibration or a mapping secret -> draws")
        refs = [cal.sample_array[cal.index(s)] for s in pair.secrets]
        label = "the mechanism's calibration" if given is None else "a separate calibration"
        where = f"{label} ({cal.sample_array.shape[1]} draws per secret)"
    elif isinstance(given, Mapping):
        missing = [s.label for s in pair.secrets if s not in given]
        if missing:
            raise ValidationError(f"reference_draws must hold draws for both secrets of the pair; missing {missing!r}")
        refs = [check_finite_array(given[s], f"reference_draws[{s.label!r}]", ndim=2) for s in pair.secrets]
        where = f"given draws ({len(refs[0])} and {len(refs[1])})"
    else:
        raise ParameterTypeError("reference_draws must be None, a Calibration, or a mapping secret -> array (n, k); "
                                 f"got {type(given).__name__}")
    for s, r in zip(pair.secrets, refs):
        if r.shape[1:] != (k,) or len(r) == 0:
            raise fail(f"reference_draws[{s.label!r}]", f"a non-empty array of shape (n, {k})",
                       described(f"shape {r.shape}"))
    return np.asarray(refs[0], float), np.asarray(refs[1], float), where


def _trials(model: DataModel, secret: Secret, n: int, seed: np.random.SeedSequence, query: Query) -> np.ndarray:
    """F on ``n`` fresh datasets under ``secret``, drawn in chunks of bounded memory."""
    per = model.n_records * int(model.bytes_per_record(query.columns))
    step = max(1, min(n, CHUNK_BYTES // max(per, 1)))
    sizes = [min(step, n - s) for s in range(0, n, step)]
    parts = [model.sample_query(secret, m, np.random.default_rng(sq), query) for m, sq in zip(sizes, seed.spawn(len(sizes)))]
    return np.concatenate([np.asarray(p, dtype=float).reshape(m, -1) for p, m in zip(parts, sizes)], axis=0)


def _guess_b(scores: np.ndarray, threshold: float, coin: np.ndarray) -> np.ndarray:
    """Guess b above the threshold, a below it, a fair coin on a tie."""
    return (scores > threshold) | ((scores == threshold) & coin)


def _audit(scores: np.ndarray, coin: np.ndarray, thresholds: tuple[float, ...], delta: float, alpha: float,
           claimed: float | None) -> tuple[EmpiricalEpsilon, float]:
    """The largest ε lower bound over the thresholds (Bonferroni: α split evenly)."""
    n = scores.shape[1]
    best: tuple[EmpiricalEpsilon, float] | None = None
    for t in thresholds:
        guess = _guess_b(scores, t, coin)
        emp = epsilon_lower_bound(int(guess[1].sum()), n, int(guess[0].sum()), n, delta=delta,
                                  alpha=alpha / len(thresholds), claimed_epsilon=claimed)
        if best is None or emp.epsilon > best[0].epsilon:
            best = (emp, t)
    assert best is not None
    return best


def _thresholds(audit_thresholds: Any, threshold: float, claimed: float | None) -> tuple[float, ...]:
    if audit_thresholds is None:
        found = [threshold] + ([claimed, -claimed] if claimed is not None and math.isfinite(claimed) else [])
    else:
        found = [check_real("audit_thresholds", t) for t in np.atleast_1d(np.asarray(audit_thresholds, dtype=object))]
        if not found or any(math.isnan(t) for t in found):
            raise fail("audit_thresholds", "None or a non-empty sequence of numbers", audit_thresholds)
    return tuple(dict.fromkeys(float(t) for t in found))


def _leaked(pair: SecretPair, accuracy: float, ci: tuple[float, float]) -> tuple[float | None, tuple[float, float] | None, str]:
    props = _proportion_pair(pair)
    if isinstance(props, str):
        return None, None, props
    pa, pb = props
    note = (f"n_leaked: records whose category ({pair.a.category!r} in {pair.a.column!r}) an adversary would need to "
            f"see directly, i.i.d., to tell {pa:g} from {pb:g} as accurately (exact binomial test; Suri & Evans 2022)")
    return n_leaked(accuracy, pa, pb), (n_leaked(ci[0], pa, pb), n_leaked(ci[1], pa, pb)), note


def _check_inputs(mechanism: Any, model: Any, pair: Any, alpha: Any, threshold: Any) -> tuple[Calibration, Query, DataModel, SecretPair]:
    cal = getattr(mechanism, "calibration", None)
    if not isinstance(cal, Calibration):
        raise ParameterTypeError("mechanism must expose its calibration (a bayespriv Calibration) and its noise; "
                                 f"got {type(mechanism).__name__}")
    if cal.query is None:
        raise ValidationError("mechanism.calibration must carry its query (the statistic F the trials release); "
                              "got a calibration without one")
    if not isinstance(model, DataModel):
        hint = " (attack one member of a family: family.members[i])" if hasattr(model, "members") else ""
        raise ParameterTypeError(f"model must be a bayespriv DataModel{hint}; got {type(model).__name__}")
    pair = cal.worst_pair if pair is None else pair
    if not isinstance(pair, SecretPair):
        raise ParameterTypeError(f"pair must be None or a bayespriv SecretPair; got {type(pair).__name__}")
    for s in pair.secrets:
        model.check_secret(s)
    missing = [c for c in cal.query.columns if c not in model.columns]
    if missing:
        raise ValidationError(f"query columns must be columns of the model {list(model.columns)!r}; got {missing!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 < alpha < 1.0:
        raise fail("alpha", "in the open interval (0, 1)", alpha)
    if not math.isfinite(check_real("threshold", threshold)):
        raise fail("threshold", "a finite number", threshold)
    return cal, cal.query, model, pair


def likelihood_ratio_attack(
    mechanism: Any,
    model: DataModel,
    pair: SecretPair | None = None,
    *,
    trials: AttackTrials | None = None,
    rng: RNGLike = None,
    threshold: float = 0.0,
    audit_thresholds: Any = None,
    alpha: float = 0.05,
    **deprecated: Any,
) -> LikelihoodRatioResult:
    """Bayes-optimal attack on a mechanism: the likelihood ratio of the two released laws.

    For each secret of ``pair``, draws ``trials.n_trials`` fresh datasets from ``model``,
    computes the calibration's query F on them, adds the mechanism's noise (a
    vectorised float sampler of its law, :func:`~bayespriv.audit.noise_sampler`;
    ``release`` is never called, no budget is spent), and guesses b when
    log p̂_b(y) − log p̂_a(y) > ``threshold`` (:func:`log_likelihood_ratio`; the
    module docstring says how the densities are estimated and why the result is
    valid whatever the reference draws).

    Parameters
    ----------
    mechanism : Mechanism or object
        Exposing ``calibration`` (whose query is released) and its noise:
        ``noise_cov`` (Gaussian, full rank, or zero for no noise), or
        ``noise_scale`` + ``noise_basis`` (Laplace, square invertible basis);
        ``guarantee`` (optional) gives the claim audited. A sum of noises
        (``noise="gaussian+laplace"``) is refused: its density has no closed form here.
    model : DataModel
        Θ the trials are drawn from — the adversary's knowledge. The claim covers
        it when it is the model the mechanism was calibrated on.
    pair : SecretPair, optional
        Default: the calibration's ``worst_pair``.
    trials : AttackTrials, optional
        Fresh datasets per secret and the draws behind p̂ (:class:`AttackTrials`;
        default: 2000 per secret, densities from the mechanism's calibration).
        ``n_trials=`` and ``reference_draws=`` are its deprecated spelling, kept
        for one release.
    rng : None, int, SeedSequence or Generator
        Datasets, noise and tie-breaking coins have their own streams, so two
        mechanisms attacked with the same seed see the same datasets and the same
        standard noise draws (common random numbers).
    threshold : float, default 0
        Decision threshold of the log-likelihood ratio: 0 is Bayes-optimal for
        equal priors, log(π_a/π_b) for priors π.
    audit_thresholds : sequence of float, optional
        Thresholds whose decisions feed the empirical ε (each at level
        α/len). Default: ``threshold`` and ±ε of the claim (the sets
        {log p_b/p_a > ε} and {log p_a/p_b > ε} attain the hockey-stick
        divergences that (ε, δ)-privacy bounds by δ).
    alpha : float, default 0.05
        Error probability of ``accuracy_ci`` and of the empirical ε.

    Returns
    -------
    LikelihoodRatioResult

    Raises
    ------
    ParameterTypeError, ValidationError
        For arguments of the wrong kind, a noise without a density, reference draws
        of the wrong shape or of another query, or a family calibration without a
        member for ``model``.

    Notes
    -----
    ``model.prepare`` is called first, as :func:`~bayespriv.calibrate` does (a PyMC
    model runs its per-secret inference there), with a seed of its own.

    Cost: the densities take 2·``trials.n_trials`` × (n_a + n_b) kernel evaluations of
    dimension k, in blocks of at most 64 MB (float32); datasets are drawn in chunks
    of bounded memory too. On the census (k = 5, 2000 draws per secret) 2 × 80 000
    trials take about 4 s on one core.

    Examples
    --------
    >>> import bayespriv as bp
    >>> from bayespriv.audit import AttackTrials, likelihood_ratio_attack
    >>> from bayespriv.mechanisms import APGM
    >>> model = bp.GaussianDataModel([0.0, 0.0], [[1.0, 0.8], [0.8, 1.0]], ["x", "y"], n_records=50)
    >>> pair = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 0.2))
    >>> cal = bp.calibrate(model, [pair], bp.mean("y"), n_draws=20_000, rng=0)
    >>> res = likelihood_ratio_attack(APGM(cal, epsilon=1.0, delta=1e-3), model, trials=AttackTrials(n_trials=500),
    ...                               rng=1)
    >>> res.accuracy <= res.accuracy_bound  # (e + 0.001)/(1 + e) = 0.731
    True
    >>> res.contradicts_claim
    False
    """
    trials = _attack_trials("likelihood_ratio_attack", trials, deprecated)
    cal, query, model, pair = _check_inputs(mechanism, model, pair, alpha, threshold)
    n = trials.n_trials
    k = cal.k
    ref_a, ref_b, where = _reference(mechanism, model, pair, trials.reference_draws, k)
    noise = _Noise.of(mechanism, k)
    eps, dlt = _claimed(mechanism)
    thresholds = _thresholds(audit_thresholds, float(threshold), eps)
    s_prepare, s_a, s_b, s_noise, s_coin = as_seed_sequence(rng).spawn(5)
    model = model.prepare(pair.secrets, np.random.default_rng(s_prepare))
    sampler, gen = noise_sampler(mechanism, k), np.random.default_rng(s_noise)
    y = np.vstack([_trials(model, s, n, sq, query) + sampler(n, gen) for s, sq in zip(pair.secrets, (s_a, s_b))])
    scores = _scores(y, ref_a, ref_b, noise).reshape(2, n)
    coin = np.random.default_rng(s_coin).random((2, n)) < 0.5
    guess = _guess_b(scores, float(threshold), coin).astype(np.int64)
    confusion = np.zeros((2, 2), dtype=np.int64)
    np.add.at(confusion, (np.repeat([0, 1], n), guess.reshape(-1)), 1)
    correct = int(np.trace(confusion))
    ci = clopper_pearson(correct, 2 * n, alpha / 2.0)
    acc = correct / (2 * n)
    emp, best = _audit(scores, coin, thresholds, dlt or 0.0, alpha, eps)
    leaked, leaked_ci, note = _leaked(pair, acc, ci)
    return LikelihoodRatioResult(
        accuracy=acc, accuracy_ci=ci, tpr=confusion[1, 1] / n, fpr=confusion[0, 1] / n,
        confusion=_readonly(confusion, np.int64), scores=_readonly(scores), threshold=float(threshold),
        empirical=emp, audit_threshold=best, audit_thresholds=thresholds,
        accuracy_bound=None if eps is None else accuracy_bound(eps, dlt or 0.0),
        n_leaked=leaked, n_leaked_interval=leaked_ci, n_leaked_note=note, n_trials=n,
        n_reference=(len(ref_a), len(ref_b)), reference=where, noise=noise.kind, alpha=float(alpha),
        mechanism=_mechanism_name(mechanism), pair=pair, query=query.name, claimed_epsilon=eps, claimed_delta=dlt,
    )


# -- sequences of releases on the same data --------------------------------------------------------


