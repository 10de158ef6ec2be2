"""Noise calibrated by the accountant of the released law: the stage every additive-noise mechanism shares.

A mechanism first computes the *shape* of its noise by its own rule (APGM's σ²I,
EigM's eigen-directions, DauM's direction, OptimalGaussian's least-trace S,
ExpM's isotropic noise …). This stage then scales that shape by the smallest
factor t whose accounted privacy profile meets the request — δ(ε) of the law
actually released, computed by :mod:`~bayespriv.privacy.accountant` from the
calibration's draws or exact laws — so the stated (ε, δ) is exactly the one
asked for, and no structural premise of the shape's theorem (Gaussian query,
equal covariances, translation) is needed: those become diagnostics that
explain the shape.

A shape with no noise in some direction releases the query's law exactly there,
which draws cannot account (its privacy would rest entirely on that law); a
direction with noise far below F's own spread leaves the draws unresolved there
(the empirical mixture is then a poor stand-in, and its δ large). For laws
known through draws (or finite laws in more than one dimension) such a shape
gets a **floor**: in the frame where F's average covariance Σ̄ is the identity,
every direction whose noise-to-F variance ratio is below f is raised to f
("noise of at least √f standard deviations of F in every direction"). The floor
level f and the factor t minimise the total noise variance over
f ∈ :data:`FLOOR_LEVELS`, by descent from f = 1 (a neighbouring level is
adopted when one evaluation of the accountant shows it meets δ with less total
noise). The guarantee says so. The Gaussian
fits cannot rank the levels: a small floor leaves the draws unresolved in those
directions, which the fits do not see (on the census, f = 1/16 fits best and
needs three times the noise of f = 1).

``accountant="gaussian"`` keeps the papers' route instead: F taken as
Gaussian with the calibration's moments (assumption ``gaussian_query``, whose
check on the draws then gates the release).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import check_choice
from bayespriv.calibration.laws import Condition, conditions_of
from bayespriv.errors import DrawsNeededError, ValidationError
from bayespriv.privacy.accountant import GaussianNoise, LaplaceNoise, PrivacyAccount, scale_to_delta

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration
    from bayespriv.privacy.accountant import Noise
    from .mechanism import Mechanism

__all__ = ["ACCOUNTANTS", "Accounted", "uses_real_law", "account_gaussian_shape", "account_laplace_shape",
           "FLOOR_LEVELS", "accounted_theorem", "with_certificate"]

#: The ``accountant=`` choices of the additive-noise mechanisms.
ACCOUNTANTS = ("auto", "gaussian", "certified")
#: Floor levels tried, in standard deviations of F in the unnoised directions.
FLOOR_LEVELS = (1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0, 8.0)


@dataclass(frozen=True)
class Accounted:
    """The accountant's calibration of a noise shape.

    Attributes
    ----------
    noise : GaussianNoise or LaplaceNoise
        The noise to add.
    factor : float
        t: standard deviations of the (floored) shape multiplied by t.
    floor : float
        f: the floor level (0 when the shape needed none).
    account : PrivacyAccount
        The accounted profile at the requested ε, at this noise: the distribution-free certificate
        (:mod:`~bayespriv.privacy.certified`) when it meets δ at this noise, else the estimated route's.
    estimated : PrivacyAccount or None
        The estimated route's account when the certificate replaced it (for its diagnostics).
    """

    noise: Any
    factor: float
    floor: float
    account: PrivacyAccount
    estimated: PrivacyAccount | None = None

    @property
    def certified(self) -> bool:
        """True when the guarantee rests on the distribution-free certificate (no assumption on F's law)."""
        return any(r.method == "certified_coupling" for r in self.account.rows)

    @property
    def notes(self) -> tuple[str, ...]:
        out = self.account.notes + (self.estimated.notes if self.estimated is not None else ())
        if self.floor:
            out = (f"floor: the noise shape leaves directions with little or no noise, where a law known through draws "
                   f"cannot be accounted; the noise there was raised to {self.floor:g} times F's variance (level chosen "
                   "for the least total noise)",) + out
        return out


def _conditions(calibration: Calibration) -> tuple[Condition, ...]:
    return conditions_of(calibration)


def uses_real_law(calibration: Calibration, accountant: str) -> bool:
    """True when the mechanism's noise is scaled by the accountant of the released law (module docstring):
    ``accountant="auto"`` and the calibration knows some law through draws or exactly."""
    check_choice(accountant, "accountant", ACCOUNTANTS)
    if accountant == "gaussian":
        return False
    return any(c.kind != "gaussian" for c in _conditions(calibration))


@dataclass(frozen=True)
class _Floor:
    """The shape N in the frame where F's average covariance Σ̄ is the identity: N = L U diag(λ) Uᵀ Lᵀ
    (Σ̄ = L Lᵀ); λ_j is the noise-to-F variance ratio along the j-th direction."""

    chol: np.ndarray
    basis: np.ndarray
    ratios: np.ndarray

    def level(self, f: float) -> np.ndarray:
        """What raises every ratio to at least f: L U diag(max(0, f − λ)) Uᵀ Lᵀ."""
        lu = self.chol @ self.basis
        return (lu * np.maximum(0.0, f - self.ratios)) @ lu.T


def _law_covariance(conds: tuple[Condition, ...]) -> np.ndarray:
    """F's covariance averaged over the conditions and both secrets, symmetric and positive definite (a ridge of
    1e-12 of its trace; the identity when F is constant)."""
    avg = sum((c.law_a.cov + c.law_b.cov) / 2.0 for c in conds) / len(conds)
    avg = (avg + avg.T) / 2.0
    if not np.any(avg):
        return np.eye(avg.shape[0])
    return avg + 1e-12 * max(float(np.trace(avg)), 1e-300) * np.eye(avg.shape[0])


def _floor_frame(shape: np.ndarray, conds: tuple[Condition, ...]) -> _Floor | None:
    """The floor's frame, or None when the shape already adds at least the smallest floor level of
    F's variance in every direction (a law known through draws is then resolved by the noise)."""
    avg = _law_covariance(conds)
    chol = np.linalg.cholesky(avg)
    inner = np.linalg.solve(chol, np.linalg.solve(chol, shape).T)
    ratios, basis = np.linalg.eigh((inner + inner.T) / 2.0)
    if ratios.min() >= FLOOR_LEVELS[0]:
        return None
    return _Floor(chol, basis, np.maximum(ratios, 0.0))


def _target(mech: Mechanism) -> float:
    return float(getattr(mech, "_noise_delta", mech.delta))


def account_gaussian_shape(mech: Mechanism, shape: np.ndarray) -> Accounted:
    """Scale (and, where needed, floor) a Gaussian noise shape so the accounted δ(ε) meets the request."""
    conds = _conditions(mech.calibration)
    shape = (np.asarray(shape, float) + np.asarray(shape, float).T) / 2.0
    conf, eps, target = mech.calibration.confidence, mech.epsilon, _target(mech)
    quiet = _noiseless(conds, GaussianNoise(np.zeros_like(shape)), eps, target, conf)
    if quiet is not None:
        return quiet
    if not np.any(shape):  # the theorem's noise is zero but the released law needs some: scale F's own covariance
        shape = _law_covariance(conds)
    exact_1d = all(c.kind == "finite" for c in conds) and shape.shape == (1, 1)  # accounted exactly at any noise
    floor = _floor_frame(shape, conds) if not exact_1d and any(c.kind != "gaussian" for c in conds) else None
    if getattr(mech, "accountant", "auto") == "certified":
        return _certified_only(conds, shape if floor is None else shape + floor.level(1.0), 0.0 if floor is None else 1.0,
                               mech)
    if floor is None:
        t, acc = _scale(conds, GaussianNoise(shape), eps, target, conf, mech)
        return with_certificate(conds, Accounted(GaussianNoise(shape * t * t), t, 0.0, acc), eps, target, conf)
    return with_certificate(conds, _floor_descent(conds, shape, floor, mech), eps, target, conf)


def with_certificate(conds: tuple[Condition, ...], acc: Accounted, eps: float, target: float,
                     conf: float | None) -> Accounted:
    """The same noise, with the distribution-free certificate as its account when that meets δ there.

    The certificate's bound is monotone in the noise scale, so it holds at a scale chosen from the same draws by
    the estimated route (:mod:`~bayespriv.privacy.certified`): where it meets δ, the guarantee rests on
    nothing but the draws' independence, and the estimated account is kept for its diagnostics."""
    if conf is None or acc.noise is None or not any(c.kind == "sampled" for c in conds):
        return acc
    from bayespriv.privacy.accountant import certified_account

    cert = certified_account(conds, acc.noise, eps, confidence=conf, target=target)
    if cert is None or cert.delta > target:
        return acc
    return Accounted(acc.noise, acc.factor, acc.floor, cert, acc.account)


def _certified_only(conds: tuple[Condition, ...], shape: np.ndarray, floor: float, mech: Mechanism) -> Accounted:
    """``accountant="certified"``: the smallest scale of the shape the distribution-free route certifies."""
    from bayespriv.privacy.accountant import certified_scale

    conf = mech.calibration.confidence
    if conf is None:
        raise ValidationError("accountant='certified' needs a calibration with a confidence (a plug-in calibration's "
                              "bounds are estimates, which the certificate does not rest on)")
    found = certified_scale(conds, GaussianNoise(shape), mech.epsilon, _target(mech), confidence=conf)
    if found is None:
        raise ValidationError(f"{type(mech).__name__} cannot certify (epsilon={mech.epsilon:g}, delta={mech.delta:g}) "
                              "without assumptions: every condition must be known through draws of both secrets (or "
                              "exactly), and no noise scale up to 1e6× the shape meets delta on the draws' coupling "
                              "bound; draw more, or use accountant='auto'")
    t, acc = found
    return Accounted(GaussianNoise(shape * t * t), t, floor, acc)


def _floor_descent(conds: tuple[Condition, ...], shape: np.ndarray, floor: _Floor, mech: Mechanism) -> Accounted:
    """The floor level of least total variance: scale at f = 1, then move to a neighbouring level of
    :data:`FLOOR_LEVELS` while it meets δ at a total variance 1 % below the best so far (one evaluation
    to test, a scale search to adopt)."""
    from bayespriv.privacy.accountant import account

    conf, eps, target = mech.calibration.confidence, mech.epsilon, _target(mech)
    levels = FLOOR_LEVELS
    i = levels.index(1.0)

    def scaled(j: int, start: float | None = None) -> Accounted:
        cand = shape + floor.level(levels[j])
        t, acc = _scale(conds, GaussianNoise(cand), eps, target, conf, mech, start=start)
        return Accounted(GaussianNoise(cand * t * t), t, levels[j], acc)

    best = scaled(i)
    total = float(np.trace(best.noise.cov))
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(levels):
            cand = shape + floor.level(levels[j])
            t_eq = math.sqrt(0.99 * total / float(np.trace(cand)))
            if account(conds, GaussianNoise(cand * t_eq * t_eq), eps, confidence=conf, diagnostics=False).delta > target:
                break
            best = scaled(j, start=t_eq)
            total = float(np.trace(best.noise.cov))
            j += step
        if best.floor != levels[i]:
            break  # moved down: no need to try up
    return best


def _noiseless(conds: tuple[Condition, ...], zero: Any, eps: float, target: float,
               conf: float | None) -> Accounted | None:
    """No noise at all, when every law is exact and finite and already meets δ(ε) ≤ δ (else None).

    Only exact laws: the draws of a sampled law are atoms whose privacy loss says nothing of the law
    between them, so a sampled law always gets noise.
    """
    from bayespriv.privacy.accountant import account

    if not conds or any(c.kind != "finite" for c in conds):
        return None
    acc = account(conds, zero, eps, confidence=conf, target=target)
    return Accounted(zero, 0.0, 0.0, acc) if acc.delta <= target else None


def account_laplace_shape(mech: Mechanism, scale: np.ndarray, basis: np.ndarray) -> Accounted:
    """Scale a full-rank Laplace noise so the accounted δ(ε) meets the request (δ > 0)."""
    conds = _conditions(mech.calibration)
    noise = LaplaceNoise(scale, basis)
    quiet = _noiseless(conds, noise.scaled(0.0), mech.epsilon, mech.delta, mech.calibration.confidence)
    if quiet is not None:
        return quiet
    if not noise.full_rank:
        raise ValidationError("Laplace noise along fewer directions than the query's cannot be accounted on a law "
                              "known through draws")
    t, acc = _scale(conds, noise, mech.epsilon, mech.delta, mech.calibration.confidence, mech)
    return with_certificate(conds, Accounted(noise.scaled(t), t, 0.0, acc), mech.epsilon, mech.delta,
                            mech.calibration.confidence)


def _scale(conds: tuple[Condition, ...], noise: Noise, eps: float, target: float, conf: float | None,
           mech: Mechanism, start: float | None = None) -> tuple[float, PrivacyAccount]:
    try:
        return scale_to_delta(conds, noise, eps, target, confidence=conf, start=start)
    except DrawsNeededError as exc:
        raise DrawsNeededError(f"{type(mech).__name__} cannot meet (epsilon={mech.epsilon:g}, delta={mech.delta:g}) "
                               f"on the released law: {exc}", draws_needed=exc.draws_needed, draws=exc.draws) from None
    except ValidationError as exc:
        raise ValidationError(f"{type(mech).__name__} cannot meet (epsilon={mech.epsilon:g}, delta={mech.delta:g}) on "
                              f"the released law: {exc}. Draw more (the accountant's confidence margin shrinks "
                              "with the draws), or ask a larger delta") from None


def account_noise(mech: Mechanism) -> None:
    """Rescale a mechanism's noise (Gaussian, or full-rank Laplace) by the accountant of the released law.

    Laplace noise is accounted only for δ > 0 and along k independent directions: a pure-ε
    claim (δ = 0) cannot be estimated from draws and keeps resting on its theorem's premise.
    """
    if mech.noise == "gaussian":
        mech._set_gaussian(mech._account_gaussian(mech._gaussian_cov))
    else:
        scale, basis = mech._laplace
        if basis.shape[1] != mech.k:
            return
        acc = account_laplace_shape(mech, scale, basis)
        mech._accounted = acc
        mech._set_laplace(acc.noise.scale, acc.noise.basis)
    acc = mech._accounted
    mech.theorem = accounted_theorem(mech.theorem, acc)
    if hasattr(mech, "sigma"):
        mech.sigma = float(math.sqrt(np.trace(acc.noise.cov) / mech.k))


def accounted_theorem(base: str, acc: Accounted) -> str:
    """The theorem line of an accounted mechanism."""
    if acc.factor == 0.0:
        return (f"{base} — no noise: the accounted δ(ε) of the exact law itself is ≤ δ "
                f"({acc.account.method}; bayespriv.privacy.accountant)")
    floor = f" + {acc.floor:g}·floor" if acc.floor else ""
    return (f"{base} — as noise shape{floor} only, scaled ×{acc.factor:.6g} so that the accounted δ(ε) of the "
            f"released law is ≤ δ ({acc.account.method}; bayespriv.privacy.accountant)")
