"""Releases on the same data, accounted together.

Pufferfish guarantees do not add up in general: two releases on the same dataset are two functions
of the same X, and an adversary combines them (Kifer & Machanavajjhala 2014, the section on
composition; Bai, He, Gu, Kifer & Maeng, *Composition for Pufferfish Privacy*, 2026, give necessary
and sufficient conditions, DP-style inequalities). Two releases each established with no noise can
reveal the secret together (mean(x) + mean(y) and mean(y)). So the ledger charges, for every
dataset and budget, the **joint** guarantee of everything released on it.

How each mechanism composes is what it declares (``Mechanism.composition``), never its class name:

* ``"dp"`` — its guarantee is differential privacy for the neighbour relation it states (GroupDP):
  sequential composition is a theorem (Dwork & Roth 2014, Theorem 3.16), the charges add;
* ``"dataset_dp"`` — a Pufferfish mechanism whose noise alone hides every difference its query can show
  between two datasets (:mod:`bayespriv.mechanisms.whole_dataset`, checked at construction): it is
  differentially private with the whole dataset as the unit, so it composes with any release; the
  charges add;
* ``"subset"`` — privacy on a subset of variables (count tables): Tan, Proposition 3.4, they add;
* ``"chain"`` — MQM on a Markov chain: Song & Chaudhuri (2017, *Composition properties of
  inferential privacy for time-series data*) show that MQM releases on the same chain compose
  linearly, like pure DP; they add;
* ``"quilt"`` — Markov quilt mechanisms on a parameter network (APMQM): releases that share, for
  every sensitive node and θ, a quilt valid for each of them compose linearly. The proof of the
  quilt theorems (Song, Wang & Chaudhuri 2017, §4; Zhang et al. 2022, Theorem 3) conditions on X_Q
  once: the remote factor e^{e_θ(Q)} is paid once and, given X_Q, the nearby part of release k moves
  by at most Δ_k, so its Laplace factor is at most e^{Δ_k / b_k} ≤ e^{ε_k − e_θ(Q)}; K releases give
  e_θ(Q) + Σ_k (ε_k − e_θ(Q)) ≤ Σ_k ε_k. The ledger checks that such a common quilt exists (each row
  records its valid quilts) and refuses the release otherwise, unless declared independent;
* ``"joint"`` — every other mechanism (Pufferfish): accounted jointly here.

Joint accounting
----------------
The releases R₁ … R_m already granted on a dataset for a budget, and the new one R_{m+1}, release
Y = (F₁(X) + Z₁, …, F_{m+1}(X) + Z_{m+1}) with independent noises. Under each secret s (and θ) of
the pairs they protect, Y has the law (F₁, …, F_{m+1})(X ~ Θ|s) ∗ N(0, diag(S₁, …, S_{m+1})): the
stacked query drawn jointly, convolved with the block-diagonal noise. Its privacy profile δ_J(ε) is
computed by the accountant of the released law (:mod:`bayespriv.privacy.accountant`), and the
joint ε is the smallest ε with δ_J(ε) ≤ δ₁ + … + δ_{m+1} (the δ the summing ledger would charge);
the new release is charged the increase of the joint ε, and its δ. The joint law is formed

* **from the calibration itself** when every earlier release has the same query (same
  fingerprint): the stacked query is F repeated, so its draws (or exact law) are the calibration's,
  repeated in every block;
* **from the data model** otherwise, when the model that calibrated the earlier releases is at hand
  in this process (:func:`bayespriv.calibration.engine.model_of`, kept for calibrations made by
  :func:`~bayespriv.calibrate`; not for files): the stacked query is calibrated afresh under the union of
  the pairs, with a seed derived from the dataset and the releases (recorded in the row's ``joint``
  record as ``seed``: the same draws, hence the same joint ε, can be drawn again);
* otherwise it cannot be formed, and the release is refused unless the caller declares the releases
  independent (``options=ReleaseOptions(independent=True)``; recorded on the row as the assumption
  ``declared_independent`` and charged the sum).

A joint profile that stays above δ for every ε up to :data:`MAX_JOINT_EPSILON` is a leak: the
releases together reveal the secret, and the release is refused (:class:`JointLeakError`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg import block_diag

from bayespriv.calibration.laws import Condition, FiniteLaw, GaussianLaw, SampledLaw, conditions_of
from bayespriv.errors import BudgetExceededError, ValidationError
from bayespriv.privacy.accountant import GaussianNoise, LaplaceNoise, PrivacyProfile

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration
    from bayespriv.privacy.accountant import Noise, PrivacyAccount

__all__ = [
    "ADDS_TO_ANY",
    "COMPOSITIONS",
    "DECLARED_INDEPENDENT",
    "JointAccountingError",
    "JointLeakError",
    "PriorRelease",
    "JointResult",
    "composes_with",
    "joint_guarantee",
    "MAX_JOINT_EPSILON",
]

#: How a mechanism composes (``Mechanism.composition``) and the theorem named on its ledger rows.
COMPOSITIONS: Mapping[str, str] = {
    "dp": "differential privacy: sequential composition (Dwork & Roth 2014, Theorem 3.16)",
    "dataset_dp": ("differential privacy for any change of the dataset (the noise hides the query's whole range, "
                   "bayespriv.mechanisms.whole_dataset; the strongest DP-style condition of Bai et al. 2026): "
                   "sequential composition with any release (Dwork & Roth 2014, Theorem 3.16)"),
    "subset": "privacy on a subset of variables: composition (Tan, Proposition 3.4)",
    "chain": "MQM on a Markov chain: linear composition (Song & Chaudhuri 2017)",
    "quilt": "Markov quilt mechanism: linear composition over a quilt valid for every release (bayespriv.ledger.joint)",
    "joint": "joint accounting of the releases on the same data (bayespriv.ledger.joint)",
}
#: The assumption recorded on a row whose release the caller declared independent of the others.
DECLARED_INDEPENDENT = "declared_independent"
#: How a release composes when its charge adds to that of *any* other release on the same data: differential
#: privacy for every change of the dataset (``"dp"``: GroupDP over a group that covers the secret; ``"dataset_dp"``),
#: a release declared independent (``"independent"``), or an object that declares nothing (None: added under
#: the assumption ``sequential_composition`` recorded on its row).
ADDS_TO_ANY = frozenset({"dp", "dataset_dp", "independent", None})


def composes_with(new: str | None, prior: str | None) -> bool:
    """Whether a release composing as ``new`` may be accounted with an earlier one composing as ``prior`` on the
    same data and budget (the ledger refuses it otherwise, :class:`JointAccountingError`).

    One side differentially private for every change of the dataset: for any release M₂ and secrets s, s',
    P(y₁, y₂ | s) = E_{X|s}[p₁(y₁|X) p₂(y₂|X)] ≤ e^{ε₁} g(y₁) E_{X|s}[p₂(y₂|X)] with g(y₁) = inf_X p₁(y₁|X), so
    the charges add (Dwork & Roth 2014, Theorem 3.16, with the dataset as the unit). Two releases of one kind
    compose by that kind's theorem (``"subset"``, ``"chain"``), by the ledger's common-quilt check (``"quilt"``)
    or by joint accounting (``"joint"``). No theorem adds a subset-of-variables count table, a Markov quilt
    release and a Pufferfish release of another kind on the same data: such a pair is refused unless declared
    independent.
    """
    return new in ADDS_TO_ANY or prior in ADDS_TO_ANY or new == prior
#: Largest joint ε searched; a profile above δ there is reported as a leak.
MAX_JOINT_EPSILON = 50.0
#: Relative precision of the joint ε.
EPSILON_RTOL = 1e-3


class JointAccountingError(ValidationError):
    """The joint law of the releases on a dataset cannot be formed (declare them independent, or plan them)."""


class JointLeakError(BudgetExceededError):
    """The releases on a dataset together reveal the secret: no ε up to :data:`MAX_JOINT_EPSILON` meets δ."""


@dataclass(frozen=True)
class PriorRelease:
    """An earlier, granted release on the same dataset and budget, as the ledger recorded it."""

    release_id: int
    query_fingerprint: str | None
    noise: Any  # GaussianNoise, LaplaceNoise or None (no noise, or none the accountant can use)
    epsilon: float
    delta: float
    pairs: tuple[str, ...]


@dataclass(frozen=True)
class JointResult:
    """The joint guarantee of the releases on a dataset for a budget, the new one included.

    Attributes
    ----------
    epsilon, delta : float
        The joint (ε, δ): δ is the sum of the releases' δ, ε the smallest ε whose accounted
        δ_J(ε) ≤ δ (upper end of the search bracket).
    method : str
        ``"same query"`` (the calibration repeated) or ``"stacked calibration"`` (the model).
    releases : tuple of int
        The earlier release ids accounted with the new one.
    assumptions : tuple of str
    confidence : float or None
    """

    epsilon: float
    delta: float
    method: str
    releases: tuple[int, ...]
    assumptions: tuple[str, ...]
    confidence: float | None


# ---------------------------------------------------------------------------------- the joint law
@dataclass(frozen=True)
class _Group:
    """Releases of one query (one fingerprint), in order of first appearance, and their combined noise."""

    fingerprint: str | None
    release_ids: tuple[int, ...]
    noise: Any


def _combined(noises: list[Any]) -> Any:
    """The noise of one query's releases combined: (Σ S_i⁻¹)⁻¹ for Gaussian noises.

    Releases F + Z_1, …, F + Z_m of one query with independent Z_i ~ N(0, S_i) of full rank reveal exactly
    what their precision-weighted mean does: the likelihood of (F + Z_i)_i given F is a function of
    Ȳ = S̄ Σ S_i⁻¹ (F + Z_i) times a factor free of F, so every likelihood ratio between secrets — hence the
    privacy profile — is that of Ȳ = F + Z̄, Z̄ ~ N(0, S̄), S̄ = (Σ S_i⁻¹)⁻¹. None (no reduction: the releases
    are stacked) for a single release's other noise, Laplace noise, or a singular covariance.
    """
    if len(noises) == 1:
        return noises[0]
    if any(not isinstance(n, GaussianNoise) for n in noises):
        return None
    prec = 0.0
    for n in noises:
        w = np.linalg.eigvalsh(n.cov)
        if w[0] <= 1e-12 * max(float(w[-1]), 1e-300):
            return None
        prec = prec + np.linalg.inv(n.cov)
    out = np.linalg.inv(prec)
    return GaussianNoise((out + out.T) / 2.0)


def _groups(priors: Sequence[PriorRelease], new_fp: str | None, new_noise: Noise | None) -> list[_Group]:
    """Releases grouped by query fingerprint (the new one last in its group); a group whose noises cannot be
    combined is split into one group per release (then stacked as distinct blocks)."""
    order: dict[Any, list[tuple[int, Any]]] = {}
    for p in priors:
        order.setdefault(p.query_fingerprint or ("unknown", p.release_id), []).append((p.release_id, p.noise))
    order.setdefault(new_fp or ("unknown", 0), []).append((0, new_noise))
    out = []
    for fp, members in order.items():
        combined = _combined([c for _, c in members])
        if combined is not None or len(members) == 1:
            out.append(_Group(fp if isinstance(fp, str) else None, tuple(i for i, _ in members), combined))
        else:
            out += [_Group(fp if isinstance(fp, str) else None, (i,), c) for i, c in members]
    return out


def _tile(law: Any, times: int) -> Any:
    """The law of (F, F, …, F) (``times`` copies) given the law of F."""
    if times == 1:
        return law
    if isinstance(law, SampledLaw):
        return SampledLaw(np.tile(law.draws, (1, times)))
    if isinstance(law, FiniteLaw):
        return FiniteLaw(np.tile(law.points, (1, times)), law.weights)
    return GaussianLaw(np.tile(law.mean, times), np.kron(np.ones((times, times)), law.cov))


def _same_query_conditions(cal: Calibration, times: int) -> tuple[Condition, ...]:
    return tuple(Condition(c.label, _tile(c.law_a, times), _tile(c.law_b, times), c.theta)
                 for c in conditions_of(cal))


def _stacked_conditions(mechanism: Any, groups: list[_Group], live: Mapping[int, Any],
                        seed: int) -> tuple[Condition, ...]:
    """Conditions of the stacked query (one block per group, in order), drawn from the data model."""
    from bayespriv.calibration import calibrate
    from bayespriv.calibration.engine import model_of
    from bayespriv.queries import stack

    cal = mechanism.calibration
    model = model_of(cal)
    handles, missing = [], []
    for g in groups:
        rid = g.release_ids[0]
        if rid == 0:
            handles.append((cal.query, model, tuple(cal.pairs)))
            continue
        h = live.get(rid)
        if h is None or h[1] is not model:
            missing.append(rid)
        handles.append(h)
    if model is None or missing or cal.query is None:
        why = ("the calibration of this release was loaded from a file or built by hand (no data model at hand)"
               if model is None else f"release(s) {missing} were made with another data model or in another process")
        raise JointAccountingError(
            f"the joint law of the releases on this dataset cannot be formed: {why}, and their queries differ. "
            "Release from calibrations made by bp.calibrate with the same model in this process, plan the releases "
            "together (bp.ledger.plan_releases). options=ReleaseOptions(independent=True) declares them independent (recorded as an "
            "assumption); it is not a way around this refusal: if they are not independent, their joint ε is "
            "unbounded")
    pairs = tuple(dict.fromkeys([p for h in handles for p in h[2]]))
    query = stack(*[h[0] for h in handles])
    n = int(cal.n_draws or 20_000)
    joint = calibrate(model, pairs, query, n_draws=n, rng=seed, confidence=cal.confidence)
    return conditions_of(joint)


def _joint_conditions(mechanism: Any, priors: Sequence[PriorRelease], live: Mapping[int, Any], seed: int,
                      new_noise: Noise | None) -> tuple[tuple[Condition, ...], Any, str]:
    """The conditions and the block-diagonal noise of the joint release (module docstring)."""
    cal = mechanism.calibration
    fp = getattr(cal, "query_fingerprint", None)
    groups = _groups(priors, fp, new_noise)
    noise = _block_noise([g.noise for g in groups])
    if len(groups) == 1 and groups[0].fingerprint == fp and fp is not None:
        labels = {p.label for p in cal.pairs}
        if not ({label for p in priors for label in p.pairs} - labels):
            return conditions_of(cal), noise, "same query (combined noise)"
    if all(g.fingerprint == fp and fp is not None for g in groups):
        labels = {p.label for p in cal.pairs}
        if not ({label for p in priors for label in p.pairs} - labels):
            return _same_query_conditions(cal, len(groups)), noise, "same query"
    return _stacked_conditions(mechanism, groups, live, seed), noise, "stacked calibration"


def _block_noise(noises: list[Any]) -> Any:
    """The noise of the stacked release: block-diagonal Gaussian, or Laplace along the block-diagonal basis."""
    if all(isinstance(n, GaussianNoise) for n in noises):
        return GaussianNoise(block_diag(*[n.cov for n in noises]))
    if all(isinstance(n, LaplaceNoise) and n.full_rank for n in noises):
        return LaplaceNoise(np.concatenate([n.scale for n in noises]), block_diag(*[n.basis for n in noises]))
    raise JointAccountingError(
        "joint accounting needs the same kind of noise on every release of the dataset, Gaussian or Laplace along "
        "as many directions as the query has (a noiseless release, or Gaussian and Laplace ones, are among them). "
        "options=ReleaseOptions(independent=True) declares the releases independent (recorded as an assumption); if they are not, their "
        "joint ε is unbounded")



# -------------------------------------------------------------------------------------- the joint ε
def leak_reason(acc: PrivacyAccount, delta: float) -> str:
    """Why no ε up to :data:`MAX_JOINT_EPSILON` meets δ: the law itself, or only the draws' margin (the point
    estimate meets δ but its upper confidence bound does not — more draws would settle it)."""
    where = f"at ε = {MAX_JOINT_EPSILON:g}"
    if acc.estimate <= delta < acc.delta:
        return (f"the draws cannot establish it: {where} the estimate of δ is {acc.estimate:.3g} but its upper "
                f"confidence bound is {acc.delta:.3g}, worst {acc.worst.label}; calibrate with more draws")
    return f"accounted δ {where} is {acc.delta:.3g}, worst {acc.worst.label}"


def smallest_epsilon(conds: tuple[Condition, ...], noise: Noise, delta: float, start: float,
                     confidence: float | None) -> tuple[float, Any]:
    """Smallest ε (to :data:`EPSILON_RTOL`) with accounted δ_J(ε) ≤ δ; inf when none up to MAX_JOINT_EPSILON.

    δ_J is non-increasing in ε; the search brackets the threshold from ``start`` (doubling up, halving
    down), then runs false position on (ε, log δ) with Illinois steps; the returned ε is the upper end of
    the final bracket, where the bound was evaluated and met.
    """

    profile = PrivacyProfile(conds, noise, confidence=confidence)  # what does not depend on ε, made once

    def f(eps: float) -> tuple[float, Any]:
        acc = profile.at(eps, target=delta)
        return math.log(max(acc.delta, 1e-300) / delta), acc

    hi = min(max(start, 1e-3), MAX_JOINT_EPSILON)
    f_hi, acc_hi = f(hi)
    while f_hi > 0:
        if hi >= MAX_JOINT_EPSILON:
            return math.inf, acc_hi
        hi = min(2.0 * hi, MAX_JOINT_EPSILON)
        f_hi, acc_hi = f(hi)
    lo = hi / 2.0
    f_lo, acc_lo = f(lo)
    while f_lo <= 0:
        hi, f_hi, acc_hi = lo, f_lo, acc_lo
        if hi < 1e-6:
            return hi, acc_hi
        lo = hi / 2.0
        f_lo, acc_lo = f(lo)
    side = 0
    for _ in range(60):
        if hi - lo <= EPSILON_RTOL * hi:
            break
        mid = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_lo != f_hi else 0.5 * (lo + hi)
        mid = min(max(mid, lo + 0.02 * (hi - lo)), hi - 0.02 * (hi - lo))
        f_mid, acc_mid = f(mid)
        if f_mid > 0:
            lo, f_lo = mid, f_mid
            if side == -1:
                f_hi *= 0.5
            side = -1
        else:
            hi, f_hi, acc_hi = mid, f_mid, acc_mid
            if side == 1:
                f_lo *= 0.5
            side = 1
    return hi, acc_hi


def joint_guarantee(mechanism: Any, priors: Sequence[PriorRelease], *, live: Mapping[int, Any],
                    new_noise: Noise | None, seed: int) -> JointResult:
    """The joint (ε, δ) of ``priors`` and ``mechanism``'s release on the same dataset (module docstring).

    Raises
    ------
    JointAccountingError
        When the joint law cannot be formed.
    JointLeakError
        When the releases together reveal the secret (no ε up to :data:`MAX_JOINT_EPSILON` meets δ).
    """
    g = mechanism.accounting_record
    delta = math.fsum([p.delta for p in priors] + [float(g.delta)])
    conds, noise, method = _joint_conditions(mechanism, priors, live, seed, new_noise)
    start = math.fsum([p.epsilon for p in priors] + [float(g.epsilon)])
    eps, acc = smallest_epsilon(conds, noise, delta, start, mechanism.calibration.confidence)
    ids = tuple(p.release_id for p in priors)
    if not math.isfinite(eps):
        raise JointLeakError(
            f"these releases together reveal the secret (or cannot be accounted): with release(s) {list(ids)} already "
            f"made on this dataset, {type(mechanism).__name__}'s release has joint ε = ∞ at δ = {delta:g} "
            f"({leak_reason(acc, delta)}); nothing was spent and no noise was drawn")
    return JointResult(eps, delta, method, ids, acc.assumptions, acc.confidence)
