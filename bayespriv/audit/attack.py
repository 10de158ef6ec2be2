"""Property-inference attack against a mechanism: the meta-classifier of the papers.

Chen & Ohrimenko (AISTATS 2023, §5.3; after Ateniese et al. 2015 and Zhang et
al. 2021) measure how well a mechanism hides a global property with a
*meta-classifier*: the attacker samples shadow datasets from auxiliary data
under each of the two secrets of a pair, computes the released statistics
(the query F plus the mechanism's noise) on each, trains a logistic
regression to tell the secrets apart, and is scored on released statistics of
datasets drawn from held-out testing data. The paper uses 200 shadow datasets
and 200 test datasets of n = 100 records (half under each secret) and averages
the accuracy over 50 repetitions; these are the defaults here.

The attack never calls ``release``: it reads the mechanism's noise description
(``noise_cov``, or ``noise_scale`` and ``noise_basis`` for Laplace noise) and
draws the noise of all datasets of a repetition at once, so no ledger budget
is spent and any object describing its noise that way can be audited.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._deprecation import option_value
from .._validation import check_covariance, check_finite_array, check_positive_int, described, fail
from ..datamodels.base import DataModel
from .._display import NO_CLAIM, frame_html
from ..errors import ParameterTypeError, ValidationError
from ..queries import Query
from ..random import RNGLike, as_seed_sequence
from ..secrets import SecretPair

__all__ = ["AttackResult", "ShadowTraining", "property_inference_attack", "noise_sampler", "default_classifier"]

NoiseSampler = Callable[[int, np.random.Generator], np.ndarray]


# -- noise ---------------------------------------------------------------------------------------


def noise_sampler(mechanism: Any, k: int) -> NoiseSampler:
    """A vectorized sampler ``(n, rng) -> (n, k)`` of a mechanism's noise.

    Reads only the mechanism's noise description, never ``release``:

    * ``mechanism is None``: no noise (zeros);
    * ``noise_scale`` and ``noise_basis`` not None: Laplace noise
      ``B (b ⊙ L)`` with L i.i.d. standard Laplace (density e^{-|x|}/2), as
      :meth:`~bayespriv.mechanisms.Mechanism.release_value` draws it;
    * otherwise ``noise_cov``: N(0, Σ) drawn as ``U diag(√w) z`` from the
      eigendecomposition Σ = U diag(w) Uᵀ (eigenvalues clipped at 0), so a
      singular or zero covariance is handled exactly (no Cholesky).

    Parameters
    ----------
    mechanism : object or None
        Anything exposing ``noise_cov`` (k × k), or ``noise_scale`` (d,) and
        ``noise_basis`` (k × d).
    k : int
        Dimension of the query the noise is added to.

    Raises
    ------
    ParameterTypeError
        When the object describes no noise.
    ValidationError
        When the noise has the wrong dimension or is not a valid covariance.
    """
    if mechanism is None:
        return lambda n, rng: np.zeros((n, k))
    scale = getattr(mechanism, "noise_scale", None)
    basis = getattr(mechanism, "noise_basis", None)
    if scale is not None and basis is not None:
        b = check_finite_array(scale, "mechanism.noise_scale").reshape(-1)
        B = check_finite_array(basis, "mechanism.noise_basis")
        if B.ndim == 1 and b.size == 1:
            B = B.reshape(-1, 1)
        if B.shape != (k, b.size):
            raise fail("mechanism.noise_basis", f"of shape ({k}, {b.size}) (query dimension × number of scales)",
                       described(f"shape {B.shape}"))
        if np.any(b < 0):
            raise fail("mechanism.noise_scale", "non-negative", b)
        return lambda n, rng: (rng.laplace(0.0, 1.0, size=(n, b.size)) * b) @ B.T
    if not hasattr(mechanism, "noise_cov"):
        raise ParameterTypeError(
            "mechanism must be None or expose its noise as noise_cov, or noise_scale and noise_basis; "
            f"got {type(mechanism).__name__}"
        )
    cov = np.asarray(check_finite_array(mechanism.noise_cov, "mechanism.noise_cov"), dtype=float)
    if cov.ndim == 0:
        cov = cov.reshape(1, 1)
    cov = check_covariance(cov, "mechanism.noise_cov", k)
    w, U = np.linalg.eigh(cov)
    factor = U * np.sqrt(np.clip(w, 0.0, None))  # Σ = factor factorᵀ, also when Σ is singular
    if not np.any(factor):
        return lambda n, rng: np.zeros((n, k))
    return lambda n, rng: rng.standard_normal((n, k)) @ factor.T


def _mechanism_name(mechanism: Any) -> str:
    if mechanism is None:
        return "no noise"
    cls = type(mechanism).__name__
    text = repr(mechanism)
    return text if text.startswith(cls + "(") and len(text) <= 120 else cls


def _claimed(mechanism: Any) -> tuple[float | None, float | None]:
    """(ε, δ) the mechanism promises, when it exposes a ``guarantee``."""
    if mechanism is None:
        return None, None
    try:
        g = mechanism.guarantee
        return float(g.epsilon), float(g.delta)
    except Exception:  # noqa: BLE001 - any object may be audited; a missing claim is not an error
        return None, None


# -- classifier ----------------------------------------------------------------------------------


def default_classifier() -> Any:
    """The paper's meta-classifier: logistic regression, on standardized features.

    ``Pipeline(StandardScaler(), LogisticRegression())`` with scikit-learn's
    defaults (L2 penalty, C = 1, lbfgs). Standardizing makes the penalty act
    alike on features of different scales (an age in years and a count of
    records), which the paper leaves unspecified.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression())


def _fresh_classifier(template: Any, seed: np.random.SeedSequence) -> Any:
    """An unfitted copy of ``template``; its unset ``random_state`` parameters come from ``seed``."""
    from sklearn.base import clone

    clf = clone(template)
    if hasattr(clf, "get_params") and hasattr(clf, "set_params"):
        unset = [name for name, value in clf.get_params(deep=True).items()
                 if (name == "random_state" or name.endswith("__random_state")) and value is None]
        if unset:
            states = seed.generate_state(len(unset))
            clf.set_params(**{name: int(s) for name, s in zip(unset, states)})
    return clf


# -- the attacker's training ---------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ShadowTraining:
    """How the attacker of :func:`property_inference_attack` trains its meta-classifier and is scored
    (``property_inference_attack(..., shadow=...)``), checked once.

    Keyword-only and frozen; the default, ``ShadowTraining()``, is the paper's setting (Chen & Ohrimenko
    2023, §5.3): 200 shadow datasets to train on and 200 test datasets to score on, per repetition, 50
    repetitions, standardized logistic regression trained on noisy shadow releases. A wrong type is a
    :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field.

    Attributes
    ----------
    n_train, n_test : int, default 200
        Shadow datasets the classifier is trained on and test datasets it is scored on, per repetition, at
        least 2 each, split ``n // 2`` under ``pair.a`` and the rest under ``pair.b``.
    repetitions : int, default 50
        Independent repetitions (fresh data, noise and classifier each), at least 1; the reported accuracy
        is their mean.
    classifier : scikit-learn estimator, optional
        Anything with ``fit`` and ``predict``, cloned (``sklearn.base.clone``) for every repetition; its
        unset ``random_state`` parameters are seeded from the attack's ``rng``. Default:
        :func:`default_classifier` (standardized logistic regression).
    noisy_shadow : bool, default True
        Add the mechanism's noise to the shadow datasets' F too: the attacker knows the mechanism
        (Kerckhoffs) and trains on what it will see. The paper's text (§5.3: "the query F as training
        features") is ambiguous; the authors' notebook (github.com/mgcsls/mechanisms-global-properties,
        ``exp_adult.ipynb``) trains on the exact F and adds noise only to the test releases, a weaker
        attack: ``noisy_shadow=False`` reproduces it (and the lower accuracies of their Table 3).

    Examples
    --------
    >>> from bayespriv.audit import ShadowTraining
    >>> ShadowTraining(repetitions=5, noisy_shadow=False)
    ShadowTraining(n_train=200, n_test=200, repetitions=5, classifier=None, noisy_shadow=False)
    >>> ShadowTraining(n_train=1)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: n_train must be an integer >= 2; got 1
    """

    n_train: int = 200
    n_test: int = 200
    repetitions: int = 50
    classifier: Any = None
    noisy_shadow: bool = True

    def __post_init__(self) -> None:
        checked = {
            "n_train": check_positive_int(self.n_train, "n_train", minimum=2),
            "n_test": check_positive_int(self.n_test, "n_test", minimum=2),
            "repetitions": check_positive_int(self.repetitions, "repetitions"),
        }
        fits = hasattr(self.classifier, "fit") and hasattr(self.classifier, "predict")
        if self.classifier is not None and not fits:
            raise ParameterTypeError("classifier must be None or a scikit-learn estimator with fit and predict; got "
                                     f"{type(self.classifier).__name__}")
        if not isinstance(self.noisy_shadow, (bool, np.bool_)):
            raise ParameterTypeError(f"noisy_shadow must be True or False; got {self.noisy_shadow!r:.80} of type "
                                     f"{type(self.noisy_shadow).__name__}")
        checked["noisy_shadow"] = bool(self.noisy_shadow)
        for name, value in checked.items():  # plain int / bool, as the checks return them
            object.__setattr__(self, name, value)


#: How the attacker trains when a call passes no ``shadow=``: the paper's setting.
_DEFAULT_SHADOW = ShadowTraining()


def _shadow_training(owner: str, shadow: Any, old: Mapping[str, Any]) -> ShadowTraining:
    """The ``shadow=`` of a call of ``owner``: checked (None: the defaults), with the deprecated keywords of
    ``old`` (the settings' fields, once keywords of their own) folded in, warning. An old keyword given with
    ``shadow=`` is a :class:`~bayespriv.errors.ValidationError`; a keyword that was never accepted, a
    ``TypeError`` (as Python's)."""
    return option_value(owner, "shadow", ShadowTraining, shadow, old, _DEFAULT_SHADOW)


# -- result --------------------------------------------------------------------------------------


def _readonly(a: Any, dtype: Any = float) -> np.ndarray:
    arr = np.array(a, dtype=dtype)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class AttackResult:
    """Accuracy of a property-inference attack, over independent repetitions.

    Attributes
    ----------
    accuracy : float
        Mean accuracy over the repetitions (the paper's figure).
    accuracies : ndarray (repetitions,)
        Accuracy of each repetition on its ``n_test`` test datasets.
    standard_error : float
        Standard error of ``accuracy``: sample standard deviation of
        ``accuracies`` over √repetitions (NaN for one repetition). It covers
        both the test sampling and the variation of the trained classifier.
    ci : tuple of float
        Student-t confidence interval for the expected accuracy at
        ``confidence`` (repetitions are i.i.d.; normal approximation of their
        mean). NaN for one repetition.
    confidence : float
        Level of ``ci``.
    chance : float
        Accuracy of guessing: 0.5 (test datasets are balanced up to one).
    confusion : ndarray (repetitions, 2, 2) of int
        ``confusion[r, i, j]``: test datasets of repetition r drawn under
        secret i (0 = ``pair.a``, 1 = ``pair.b``) and classified as secret j.
        :func:`~bayespriv.audit.empirical_epsilon` reads it.
    n_train, n_test, repetitions : int
        Shadow datasets per repetition, test datasets per repetition, repetitions.
    mechanism : str
        What was attacked (``"no noise"`` for ``mechanism=None``).
    pair : SecretPair
        The two secrets the attacker tells apart.
    query : str
        Name of the query F whose noisy value is released.
    claimed_epsilon, claimed_delta : float or None
        The mechanism's own guarantee, when it has one.
    classifier : str
        The meta-classifier.
    noisy_shadow : bool
        Whether the classifier was trained on noisy shadow releases.
    """

    accuracy: float
    accuracies: np.ndarray
    standard_error: float
    ci: tuple[float, float]
    confidence: float
    confusion: np.ndarray
    n_train: int
    n_test: int
    repetitions: int
    mechanism: str
    pair: SecretPair
    query: str
    chance: float = 0.5
    claimed_epsilon: float | None = None
    claimed_delta: float | None = None
    classifier: str = field(default="StandardScaler + LogisticRegression")
    noisy_shadow: bool = True

    @property
    def advantage(self) -> float:
        """Distinguishing advantage 2·accuracy − 1 (0: chance, 1: perfect)."""
        return 2.0 * self.accuracy - 1.0

    def summary(self) -> pd.DataFrame:
        """One row: accuracy, its s.e. and confidence interval, chance, sizes, claimed (ε, δ)."""
        pct = f"{100 * self.confidence:g}%"
        row = {
            "accuracy": self.accuracy,
            "s.e.": self.standard_error,
            f"{pct} CI low": self.ci[0],
            f"{pct} CI high": self.ci[1],
            "chance": self.chance,
            "advantage": self.advantage,
            "repetitions": self.repetitions,
            "n_train": self.n_train,
            "n_test": self.n_test,
            "claimed ε": self.claimed_epsilon,
            "claimed δ": self.claimed_delta,
        }
        return pd.DataFrame([row], index=pd.Index([self.mechanism], name="mechanism"))

    def __repr__(self) -> str:
        lo, hi = self.ci
        return (f"AttackResult(mechanism={self.mechanism!r}, accuracy={self.accuracy:.4f} ± {self.standard_error:.4f} "
                f"[{lo:.4f}, {hi:.4f}], chance={self.chance:g}, repetitions={self.repetitions}, "
                f"n_train={self.n_train}, n_test={self.n_test})")

    def _repr_html_(self) -> str:
        shadow = "noisy" if self.noisy_shadow else "exact"
        head = html.escape(f"Property-inference attack on {self.query!r}: {self.pair.label} "
                           f"({self.classifier}, trained on {shadow} shadow releases)")
        table = frame_html(self.summary(), missing={"claimed ε": NO_CLAIM, "claimed δ": NO_CLAIM})
        return f"<div><p><b>{head}</b></p>{table}</div>"


# -- the attack ----------------------------------------------------------------------------------


def _check_model(model: Any, name: str) -> DataModel:
    if not isinstance(model, DataModel):
        raise ParameterTypeError(f"{name} must be a bayespriv DataModel; got {type(model).__name__}")
    return model


def _draw(model: DataModel, pair: SecretPair, counts: tuple[int, int], seeds: list[np.random.SeedSequence],
          query: Query) -> tuple[np.ndarray, np.ndarray]:
    """F on ``counts[i]`` datasets drawn under secret i, stacked, with labels 0 / 1."""
    parts = [model.sample_query(s, m, np.random.default_rng(seed), query)
             for s, m, seed in zip(pair.secrets, counts, seeds)]
    F = np.concatenate(parts, axis=0)
    labels = np.repeat(np.array([0, 1]), counts)
    return F, labels


def _split(n: int) -> tuple[int, int]:
    return n // 2, n - n // 2


@dataclass(frozen=True)
class _AttackSetup:
    """Validated inputs of one attack: models, pair, query, the attacker's training, level and classifier template."""

    train_model: DataModel
    test_model: DataModel
    pair: SecretPair
    query: Query
    shadow: ShadowTraining
    confidence: float
    template: Any


@dataclass(frozen=True)
class _AccuracySummary:
    """Accuracy of each repetition, their mean, its standard error and confidence interval."""

    accuracies: np.ndarray
    accuracy: float
    standard_error: float
    ci: tuple[float, float]


def _resolve_query(mechanism: Any, query: Query | None) -> Query:
    """The query given, else the mechanism's calibration query; checked to be a Query."""
    if query is None:
        calibration = getattr(mechanism, "calibration", None)
        query = getattr(calibration, "query", None)
        if query is None:
            raise fail("query", "given (the mechanism has no calibration query to default to)", None)
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    return query


def _check_models_fit(models: tuple[tuple[DataModel, str], ...], pair: SecretPair, query: Query) -> None:
    """Each model accepts both secrets and has every column the query reads."""
    for model, name in models:
        for s in pair.secrets:
            model.check_secret(s)
        missing = [c for c in query.columns if c not in model.columns]
        if missing:
            raise ValidationError(f"query columns must be columns of {name} {list(model.columns)!r}; got {missing!r}")


def _validate_attack(mechanism: Any, train_model: Any, test_model: Any, pair: Any, *, query: Query | None,
                     shadow: ShadowTraining, confidence: Any) -> _AttackSetup:
    """Check every argument of the attack, in order, and gather them (``shadow`` is checked already)."""
    train_model = _check_model(train_model, "train_model")
    test_model = _check_model(test_model, "test_model")
    if not isinstance(pair, SecretPair):
        raise ParameterTypeError(f"pair must be a bayespriv SecretPair; got {type(pair).__name__}")
    query = _resolve_query(mechanism, query)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.0 < confidence < 1.0:
        raise fail("confidence", "in the open interval (0, 1)", confidence)
    _check_models_fit(((train_model, "train_model"), (test_model, "test_model")), pair, query)
    template = default_classifier() if shadow.classifier is None else shadow.classifier
    return _AttackSetup(train_model=train_model, test_model=test_model, pair=pair, query=query, shadow=shadow,
                        confidence=confidence, template=template)


def _attack_confusion(mechanism: Any, setup: _AttackSetup, rng: RNGLike) -> np.ndarray:
    """Confusion matrix ``(repetitions, 2, 2)`` of the meta-classifier, one repetition per child seed."""
    shadow = setup.shadow
    train_counts, test_counts = _split(shadow.n_train), _split(shadow.n_test)
    confusion = np.zeros((shadow.repetitions, 2, 2), dtype=np.int64)
    sampler: NoiseSampler | None = None
    for r, rep_seed in enumerate(as_seed_sequence(rng).spawn(shadow.repetitions)):  # loop over repetitions, not draws
        s_train_a, s_train_b, s_test_a, s_test_b, s_noise, s_clf = rep_seed.spawn(6)
        X_train, y_train = _draw(setup.train_model, setup.pair, train_counts, [s_train_a, s_train_b], setup.query)
        X_test, y_test = _draw(setup.test_model, setup.pair, test_counts, [s_test_a, s_test_b], setup.query)
        if sampler is None:
            sampler = noise_sampler(mechanism, X_train.shape[1])
        noise_gen = np.random.default_rng(s_noise)
        train_noise = sampler(shadow.n_train, noise_gen)  # drawn either way: same test noise for both settings
        if shadow.noisy_shadow:
            X_train = X_train + train_noise
        X_test = X_test + sampler(shadow.n_test, noise_gen)
        pred = _fit_predict(setup.template, s_clf, (X_train, y_train), X_test)
        np.add.at(confusion[r], (y_test, pred), 1)
    return confusion


def _fit_predict(template: Any, seed: np.random.SeedSequence, train: tuple[np.ndarray, np.ndarray],
                 X_test: np.ndarray) -> np.ndarray:
    """Fit a fresh copy of the classifier on ``train`` and predict 0 / 1 labels of ``X_test``."""
    n_test = X_test.shape[0]
    clf = _fresh_classifier(template, seed)
    clf.fit(*train)
    pred = np.asarray(clf.predict(X_test)).astype(np.int64).reshape(-1)
    if pred.shape != (n_test,) or not np.all((pred == 0) | (pred == 1)):
        raise ValidationError(f"classifier must predict labels 0 or 1 for each of the {n_test} test datasets; got {pred[:5]!r}...")
    return pred


def _summarise_accuracy(confusion: np.ndarray, n_test: int, confidence: float) -> _AccuracySummary:
    """Per-repetition accuracies, their mean, standard error and Student-t interval (NaN for one repetition)."""
    repetitions = confusion.shape[0]
    accuracies = np.trace(confusion, axis1=1, axis2=2) / n_test
    acc = float(accuracies.mean())
    if repetitions > 1:
        se = float(accuracies.std(ddof=1) / math.sqrt(repetitions))
        half = float(stats.t.ppf(0.5 + confidence / 2.0, repetitions - 1)) * se
        ci = (acc - half, acc + half)
    else:
        se, ci = math.nan, (math.nan, math.nan)
    return _AccuracySummary(accuracies=accuracies, accuracy=acc, standard_error=se, ci=ci)


def property_inference_attack(
    mechanism: Any,
    train_model: DataModel,
    test_model: DataModel,
    pair: SecretPair,
    *,
    query: Query | None = None,
    shadow: ShadowTraining | None = None,
    rng: RNGLike = None,
    confidence: float = 0.95,
    **deprecated: Any,
) -> AttackResult:
    """Meta-classifier property-inference attack (Chen & Ohrimenko 2023, §5.3).

    Each repetition:

    1. draws ``shadow.n_train`` shadow datasets from ``train_model`` (the
       attacker's auxiliary data), half under ``pair.a`` and half under
       ``pair.b``, and computes F on them with ``train_model.sample_query``
       (vectorized);
    2. adds the mechanism's noise to all of them at once (see
       :func:`noise_sampler`; ``release`` is never called, so no ledger budget
       is spent and seeds stay under the caller's control);
    3. fits a fresh copy of ``shadow.classifier`` (default
       :func:`default_classifier`: standardized logistic regression) with the
       noisy F as features and the secret as label;
    4. draws ``shadow.n_test`` datasets from ``test_model`` (held-out data),
       half under each secret, releases F plus fresh noise and records the
       classifier's confusion matrix.

    The reported accuracy is the mean over repetitions.

    Parameters
    ----------
    mechanism : Mechanism, object or None
        What is attacked: anything exposing ``noise_cov`` or ``noise_scale`` +
        ``noise_basis`` (every :class:`~bayespriv.mechanisms.Mechanism` does);
        ``None`` attacks the exact answers (no defence).
    train_model, test_model : DataModel
        Θ of the attacker's shadow datasets and of the datasets it is scored
        on (the paper: resampled auxiliary and testing splits of Adult).
    pair : SecretPair
        The secrets to tell apart; label 0 is ``pair.a``, label 1 ``pair.b``.
    query : Query, optional
        The released statistic F. Default: the mechanism's calibration query.
    shadow : ShadowTraining, optional
        How the attacker trains and is scored: datasets per repetition,
        repetitions, classifier, noisy or exact shadow releases
        (:class:`ShadowTraining`; default: the paper's setting).
        ``n_train=``, ``n_test=``, ``repetitions=``, ``classifier=`` and
        ``noisy_shadow=`` are its deprecated spelling, kept for one release.
    rng : None, int, SeedSequence or Generator
        One child seed per repetition (``spawn``); inside a repetition the
        training data, test data, noise and classifier have their own streams,
        so attacks with the same seed on different mechanisms see the *same*
        datasets (common random numbers) and repetition r does not depend on
        how many repetitions are run.
    confidence : float in (0, 1), default 0.95
        Level of the reported confidence interval.

    Returns
    -------
    AttackResult

    Examples
    --------
    >>> import numpy as np, bayespriv as bp
    >>> from bayespriv.audit import ShadowTraining, property_inference_attack
    >>> def draw(secret, n_draws, rng):
    ...     return {"x": rng.normal(secret.value, 1.0, (n_draws, 1))}
    >>> model = bp.FunctionDataModel(draw, columns=["x"], n_records=1)
    >>> pair = bp.SecretPair(bp.DistributionSecret("mu", -1.0), bp.DistributionSecret("mu", 1.0))
    >>> res = property_inference_attack(None, model, model, pair, query=bp.mean("x"),
    ...                                 shadow=ShadowTraining(repetitions=5), rng=0)
    >>> 0.75 < res.accuracy < 0.93  # Bayes-optimal: Φ(1) = 0.841
    True
    """
    shadow = _shadow_training("property_inference_attack", shadow, deprecated)
    setup = _validate_attack(mechanism, train_model, test_model, pair, query=query, shadow=shadow,
                             confidence=confidence)
    confusion = _attack_confusion(mechanism, setup, rng)
    summary = _summarise_accuracy(confusion, shadow.n_test, setup.confidence)
    eps, dlt = _claimed(mechanism)
    clf_name = ("StandardScaler + LogisticRegression" if shadow.classifier is None
                else type(shadow.classifier).__name__)
    return AttackResult(
        accuracy=summary.accuracy,
        accuracies=_readonly(summary.accuracies),
        standard_error=summary.standard_error,
        ci=summary.ci,
        confidence=float(setup.confidence),
        confusion=_readonly(confusion, np.int64),
        n_train=shadow.n_train,
        n_test=shadow.n_test,
        repetitions=shadow.repetitions,
        mechanism=_mechanism_name(mechanism),
        pair=setup.pair,
        query=setup.query.name,
        claimed_epsilon=eps,
        claimed_delta=dlt,
        classifier=clf_name,
        noisy_shadow=shadow.noisy_shadow,
    )
