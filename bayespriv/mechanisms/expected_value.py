"""The Expected Value mechanism family of Chen & Ohrimenko (AISTATS 2023).

* :class:`ExpM` — Theorems 4.1 / 4.2: noise scaled to the largest mean difference.
* :class:`DirM` — Theorem 4.3 and the multi-direction extension of §4.2: noise
  only in the span of the mean differences.
* :func:`noiseless_ok` / :class:`Noiseless` — Theorem 4.4: no noise at all when
  the query's own randomness hides the secret.
* :class:`EigM` — Theorem 4.5 (appendix A.1): Gaussian noise along the
  eigenvectors of the query's covariance.
* :class:`DauM` — Algorithm 1 / Theorem A.1 (appendix A.2), in closed form:
  Gaussian noise along one direction, crediting the query's covariance.

Every Gaussian mechanism here reduces to Corollary A.1 — ``dᵀ(Σ + S)⁻¹d ≤ r*²``
for every (θ, pair) constraint and every d of the difference's confidence box
(:meth:`Calibration.pair_constraints`; its 2ᵘ corners up to 12 uncertain
components, a certified polynomial bound over the box beyond,
:func:`~bayespriv.calibration.constraints.box_quadratic_max`) — and is checked
against it in float64 before it is returned (:func:`certified_mahalanobis_sq`). The
paper's ``(αc/ε)²`` is ``(α/r*)²`` here, with r* = ε/c for
``gaussian_calibration="classic"`` and the analytic radius by default.

That reduction needs equal covariances within a pair. The Gaussian-noise
mechanisms (EigM, DauM, OptimalGaussian, and APGM in ``apgm.py``) take
``covariance="auto" | "equal" | "unequal"``: ``"equal"`` is the reduction
above (assumption ``equal_covariance``); ``"unequal"`` keeps the noise *shape*
the reduction gives and scales it by the smallest factor whose exact privacy
curve meets (ε, δ) for unequal covariances, for every pair, θ member, mean
difference and covariance in the calibration's confidence box
(:mod:`~bayespriv.mechanisms.privacy_loss`); its guarantee names
``gaussian_query`` but not ``equal_covariance``. ``"auto"`` (default) is
``"unequal"`` exactly when the calibration's ``equal_covariance`` check fails
(for exact moments: when the covariances of a pair differ), and ``"equal"``
otherwise — a check that passes or has too few draws to be run keeps the
equal-covariance reduction, named in the guarantee (and reported unchecked
when it had no power).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice, check_delta, check_epsilon, check_finite_array, described, fail
from ..calibration import Calibration, PairConstraints
from ..calibration.constraints import MAX_CORNER_DIMS, white_box_max
from ..errors import ParameterTypeError, ValidationError
from ..calibration.assumptions import check_assumptions
from ..calibration.moments import shrink_factor
from .accounted import accounted_theorem, uses_real_law
from .base import Guarantee, Mechanism, check_gaussian_params, check_noise
from .relaxation import SampledMomentMechanism
from .noise import GAUSSIAN_CALIBRATIONS, gaussian_radius
from .privacy_loss import PairBox, box_assumptions, box_delta, gaussian_delta, privacy_curve, scale_for_delta

__all__ = [
    "ExpM",
    "DirM",
    "EigM",
    "DauM",
    "Noiseless",
    "NoiselessReport",
    "noiseless_ok",
    "certified_mahalanobis_sq",
]

#: Relative slack kept below the privacy target (r*² for Gaussian noise, ε for
#: Laplace noise) when noise is *computed*, so that floating-point rounding can
#: never push the achieved value over the target. Checks use the exact target.
SAFETY = 1e-9

#: Relative size (to the difference's norm) below which a component of a mean
#: difference outside the noise directions is treated as floating-point rounding.
ROUNDING_RTOL = 1e-12


class ExpM(SampledMomentMechanism):
    """Expected Value Mechanism: noise scaled to the largest mean difference.

    * ``noise="laplace"`` (Theorem 4.1): adds Lap(Δ_{E,1}/ε) to each
      component; (ε, 0)-distribution privacy.
    * ``noise="gaussian"`` (Theorem 4.2): adds N(0, σ²I) with
      σ = Δ_{E,2} / r*(ε, δ); (ε, δ)-distribution privacy.
    * ``noise=None`` (default): Laplace when ``delta`` is 0, Gaussian when a
      δ > 0 is given.

    Δ_{E,p} = sup over pairs of ‖E[f_θi] − E[f_θj]‖_p (here the calibration's
    conservative bound, or the estimate for a plug-in calibration).

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy w.r.t. the calibration's pairs
    (Pufferfish with secrets θ_i, θ_j).

    Theorems 4.1 / 4.2 (Chen & Ohrimenko 2023, proofs in appendix B.2): if
    f_θi is a translation of f_θj for every pair, the output distributions
    differ by a shift of norm ≤ Δ_{E,p}, so the Laplace / Gaussian mechanism of
    differential privacy applies. Assumption: ``translation`` (checked on
    the calibration samples, see :mod:`bayespriv.calibration.assumptions`: a
    failed check is listed in ``Guarantee.failed_assumptions`` and release
    refuses unless ``accept_failed_assumptions=True``). Theorem 4.2 as printed needs ε ∈ (0, 1) with the classic
    constant; the default analytic calibration holds for every ε.

    Per θ (families): no variance is credited, so the per-θ requirement is
    Δ_θ/ε (Laplace) or Δ_θ/r* (Gaussian) and its maximum over θ is the
    sensitivity over all θ used here — the per-θ rule and the "sup" rule
    coincide.
    """

    proof_assumptions = ("translation",)

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float = 0.0,
        noise: str | None = None,
        gaussian_calibration: str = "analytic",
        accountant: str = "auto",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self._set_isotropic(
            noise, calibration.sensitivity(1, bound=True), calibration.sensitivity(2, bound=True), gaussian_calibration
        )
        self.theorem = {
            "laplace": "ExpM(L): Chen & Ohrimenko 2023, Theorem 4.1",
            "gaussian": "ExpM(G): Chen & Ohrimenko 2023, Theorem 4.2",
        }[self.noise_kind]
        self.accountant = accountant
        if self.delta > 0 and uses_real_law(calibration, accountant):
            account_noise(self)
        self._freeze()

    def _compute_guarantee(self) -> Guarantee:
        laplace_theorem = self.noise_kind == "laplace" and self.accounting is None
        return self._guarantee(delta=0.0 if laplace_theorem else None)


def account_noise(mech: Mechanism) -> None:
    """Rescale a mechanism's noise (Gaussian, or full-rank Laplace) by the accountant of the released law.

    Laplace noise is accounted only for δ > 0 and along k independent directions: a pure-ε
    claim (δ = 0) cannot be estimated from draws and keeps resting on its theorem's premise.
    """
    from .accounted import account_laplace_shape

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


# ---------------------------------------------------------------------------------------------
# The one check: dᵀ(Σ + S)⁻¹d ≤ r*², conservatively
# ---------------------------------------------------------------------------------------------


def certified_mahalanobis_sq(constraints: PairConstraints, noise_cov: Any, warm: dict | None = None,
                             threshold: float | None = None) -> np.ndarray:
    """An upper bound ``(m,)`` of ``sup dᵀ(Σ + S)⁻¹d`` per (θ, pair) constraint:
    :meth:`PairConstraints.mahalanobis_sq` (the smaller of the ``Σ_lo + S``
    route, valid where that matrix is PSD, and the ``dᵀS⁺d`` route, valid since
    Σ ⪰ 0; over the difference box exactly at its corners up to 12 uncertain
    components, by a certified polynomial bound beyond). ``inf`` means "not
    private". ``warm``, ``threshold``: see :meth:`PairConstraints.mahalanobis_sq`."""
    return constraints.mahalanobis_sq(noise_cov, warm=warm, threshold=threshold)


def _box_norms(constraints: PairConstraints) -> np.ndarray:
    """Largest ‖d‖₂ over each constraint's box ``(m,)`` (= ‖|diff| + half_width‖₂)."""
    return np.linalg.norm(constraints.upper, axis=1)


def _repair(
    constraints: PairConstraints, r2: float, make: Callable[[float], np.ndarray], start: float
) -> tuple[np.ndarray, float]:
    """Smallest ``t ≥ 0`` (by bisection, up to 2⁻⁶⁰ relative) such that ``make(t)``
    certifies with ``r*²(1 − SAFETY/2)`` (half the computing margin is kept, so
    an independent float64 evaluation stays below r*²); returns ``(make(t), t)``.
    ``start`` > 0 is a first guess of the scale of t. Raises when no t up to
    2⁶⁰·start certifies."""
    r2 = r2 * (1.0 - SAFETY / 2.0)
    warm: dict = {}  # dual starting points carried along the bisection (polynomial box bound only)
    if certified_mahalanobis_sq(constraints, make(0.0), warm, r2).max(initial=0.0) <= r2:
        return make(0.0), 0.0
    hi = max(start, np.finfo(float).tiny)
    for _ in range(60):
        if certified_mahalanobis_sq(constraints, make(hi), warm, r2).max(initial=0.0) <= r2:
            break
        hi *= 2.0
    else:
        raise ValidationError(
            "the noise could not be certified: dᵀ(Σ + S)⁻¹d ≤ r*² fails even after enlarging the noise; "
            "the covariance lower bounds are probably too poor (use more draws)"
        )
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if certified_mahalanobis_sq(constraints, make(mid), warm, r2).max(initial=0.0) <= r2:
            hi = mid
        else:
            lo = mid
    return make(hi), hi


# ---------------------------------------------------------------------------------------------
# Theorem 4.4: no noise
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoiselessReport:
    """Whether Theorem 4.4 lets F(X) be released without noise.

    Attributes
    ----------
    holds : bool
        ``dᵀΣ⁻¹d ≤ r*²`` for every (θ, pair) constraint and every corner d.
    distance : float
        Worst Mahalanobis distance ``sqrt(dᵀΣ⁻¹d)`` (``inf`` when a difference
        is outside the range of the covariance lower bound).
    radius : float
        r*(ε, δ).
    worst_pair : str
        Label of the constraint with the largest distance.
    worst_theta : dict or None
        θ of that constraint (families).
    """

    holds: bool
    distance: float
    radius: float
    worst_pair: str
    worst_theta: Any = None

    def __bool__(self) -> bool:
        return self.holds

    def __str__(self) -> str:
        verdict = "holds" if self.holds else "fails"
        return (f"Theorem 4.4 {verdict}: worst Mahalanobis distance {self.distance:.6g} "
                f"{'≤' if self.holds else '>'} r* = {self.radius:.6g} ({self.worst_pair})")


def _noiseless_report(constraints: PairConstraints, radius: float) -> tuple[NoiselessReport, np.ndarray]:
    m2 = certified_mahalanobis_sq(constraints, np.zeros((constraints.k, constraints.k)))
    worst = int(np.argmax(m2))
    report = NoiselessReport(
        holds=bool(m2.max() <= radius**2),
        distance=float(np.sqrt(m2[worst])),
        radius=float(radius),
        worst_pair=constraints.labels[worst],
        worst_theta=constraints.thetas[worst],
    )
    return report, m2


def _check_calibration(calibration: Any) -> Calibration:
    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    return calibration


def noiseless_ok(
    calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic"
) -> NoiselessReport:
    """Check Theorem 4.4 (Chen & Ohrimenko 2023): may F(X) be released as is?

    True when ``dᵀΣ⁻¹d ≤ r*(ε, δ)²`` for every (θ, pair) constraint of the
    calibration and every corner d of its difference box, with Σ the common
    covariance lower bound (:func:`certified_mahalanobis_sq` with S = 0).
    Assumes ``gaussian_query`` and ``equal_covariance``.

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}

    Returns
    -------
    NoiselessReport
        Truthy when the condition holds.
    """
    cal = _check_calibration(calibration)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    check_choice(gaussian_calibration, "gaussian_calibration", GAUSSIAN_CALIBRATIONS)
    radius = gaussian_radius(eps, dlt, gaussian_calibration)
    return _noiseless_report(cal.pair_constraints(), radius)[0]


COVARIANCE_MODES = ("auto", "equal", "unequal")


def unequal_covariance_boxes(calibration: Calibration) -> tuple[PairBox, ...]:
    """One :class:`~bayespriv.mechanisms.privacy_loss.PairBox` per (θ, pair)
    condition, in the order of :meth:`Calibration.pair_constraints`.

    Mean differences ``μ̂_a − μ̂_b ± z(se_a + se_b)``; covariances
    ``Σ̂/(1 + η) ⪯ Σ ⪯ Σ̂/(1 − η)`` with ``1 + η`` the calibration's shrink
    factor (:func:`~bayespriv.calibration.moments.shrink_factor`). Exact and
    plug-in calibrations give boxes of zero width.

    Raises
    ------
    ValidationError
        When some η ≥ 1: the draws bound the covariance from below only.
    """
    boxes = []
    for m in calibration.members:
        eta = shrink_factor(m.cov_se_white, m.z) - 1.0
        if np.any(eta >= 1.0):
            i = int(np.argmax(eta))
            raise fail("calibration", "drawn enough for an upper bound of every covariance (z·rho < 1, needed by "
                       "covariance='unequal'; use more draws)", described(f"z·rho = {eta[i]:.3g} for {m.secrets[i].label!r}"))
        for p in m.pairs:
            ia, ib = m.index(p.a), m.index(p.b)
            boxes.append(PairBox(m.mean_array[ia] - m.mean_array[ib], m.z * (m.mean_se[ia] + m.mean_se[ib]),
                                 m.cov_array[ia], m.cov_array[ib], float(eta[ia]), float(eta[ib])))
    return tuple(boxes)


def choose_covariance_mode(mech: Mechanism, covariance: Any) -> str:
    """``"equal"`` or ``"unequal"`` for a ``covariance=`` argument (module docstring: the ``"auto"`` rule)."""
    check_choice(covariance, "covariance", COVARIANCE_MODES)
    if covariance != "auto":
        return covariance
    report = check_assumptions(mech.calibration, ("equal_covariance",), alpha=mech.assumption_alpha)
    return "unequal" if report.failed else "equal"


def unequal_noise(mech: Mechanism, shape: np.ndarray, boxes: tuple[PairBox, ...]) -> tuple[np.ndarray, float, tuple[str, ...]]:
    """``(c·N, c, notes)``: the smallest scale c of the noise shape N meeting (ε, δ)
    for unequal covariances over every box (:func:`~bayespriv.mechanisms.privacy_loss.scale_for_delta`).

    The shape N is kept unless the widened shape ``W = N + (tr N / k or 1)·I``
    needs less total noise (trace): N may leave a direction without noise that
    a covariance difference exposes (then no scale of N meets δ), or nearly so
    (then its scale explodes). Both calibrations are valid; the one of least
    trace is returned and a widening is recorded in the notes (c is then W's
    factor).
    """
    target = float(getattr(mech, "_noise_delta", mech.delta))
    pairs = [(b.diff, b.cov_a, b.cov_b) for b in boxes]
    shape = (np.asarray(shape, dtype=float) + np.asarray(shape, dtype=float).T) / 2.0
    k = shape.shape[0]
    iso = float(np.trace(shape)) / k if np.trace(shape) > 0 else 1.0
    if np.allclose(shape, iso * np.eye(k), rtol=1e-12, atol=0.0):  # isotropic already: nothing to widen
        c = scale_for_delta(mech.epsilon, target, shape, pairs, box=boxes)
        return c * shape, c, ()
    wide = shape + iso * np.eye(k)
    c_wide = scale_for_delta(mech.epsilon, target, wide, pairs, box=boxes)
    best = (c_wide * wide, c_wide, ("covariance: the equal-covariance noise shape was widened by an isotropic part "
                                    "(N + (tr N/k)·I) because the shape alone needs more total noise, or cannot meet "
                                    "delta, for the unequal covariances",))
    if np.any(shape) and not _blind_spot(mech.epsilon, target, shape, boxes):
        try:
            c = scale_for_delta(mech.epsilon, target, shape, pairs, box=boxes,
                                max_scale=c_wide * float(np.trace(wide)) / float(np.trace(shape)))
            if c * float(np.trace(shape)) <= c_wide * float(np.trace(wide)):
                best = (c * shape, c, ())
        except ValidationError:
            pass
    if best[1] == 0.0:
        return np.zeros_like(shape), 0.0, ()
    return best


def _blind_spot(epsilon: float, target: float, shape: np.ndarray, boxes: tuple[PairBox, ...]) -> bool:
    """Whether no scale of ``shape`` can meet δ: the laws restricted to the null space of the
    shape (a post-processing, untouched by the noise) already exceed δ for some candidate."""
    w, v = np.linalg.eigh(shape)
    q = v[:, w <= 1e-12 * max(float(w.max()), 1e-300)]
    if q.shape[1] == 0:
        return False
    return any(gaussian_delta(epsilon, q.T @ d, q.T @ a @ q, q.T @ b @ q) > target
               for bx in boxes for d, a, b in bx.candidates())


class _GaussianConstraintMechanism(SampledMomentMechanism):
    """Shared set-up of the Gaussian mechanisms built on Corollary A.1, and of
    their unequal-covariance calibration (module docstring)."""

    proof_assumptions = ("gaussian_query", "equal_covariance")

    def _setup(self, gaussian_calibration: str, covariance: str = "equal", accountant: str = "gaussian") -> PairConstraints:
        self.gaussian_calibration = gaussian_calibration
        #: r*(ε, δ), the Mahalanobis radius.
        self.radius = check_gaussian_params(self, gaussian_calibration)
        self.constraints = self.calibration.pair_constraints()
        #: ``"auto"`` (the accountant of the released law where the calibration has draws or exact laws) or
        #: ``"gaussian"`` (F taken as Gaussian, the papers' route).
        self.accountant = accountant
        #: Factor applied to the equal-covariance noise shape (1.0 in ``"equal"`` mode).
        self.noise_scale_factor = 1.0
        if uses_real_law(self.calibration, accountant):
            #: ``"accounted"`` (real law), ``"equal"`` (Corollary A.1) or ``"unequal"`` (exact Gaussian curve).
            self.covariance_mode = "accounted"
            self.assumption_notes: tuple[str, ...] = ()
            return self.constraints
        #: Observations on the proof's assumptions, checked on the calibration.
        self.assumption_notes = _covariance_notes(self.constraints)
        self.covariance_mode = choose_covariance_mode(self, covariance)
        if self.covariance_mode == "unequal":
            self._proof_assumptions = ("gaussian_query",) + box_assumptions(self._boxes())
            self.assumption_notes = ()
        return self.constraints

    def _covariance_noise(self, shape: np.ndarray) -> np.ndarray:
        """The noise to set: the shape itself (``"equal"``), its unequal-covariance scaling, or the
        accountant's scaling of the released law (``"accounted"``)."""
        if self.covariance_mode == "equal":
            return shape
        if self.covariance_mode == "accounted":
            cov = self._account_gaussian(shape)
            acc = self._accounted
            self.noise_scale_factor = acc.factor**2
            self.assumption_notes += acc.notes
            self.theorem = accounted_theorem(self.theorem, acc)
            return cov
        cov, self.noise_scale_factor, notes = unequal_noise(self, shape, self._boxes())
        self.assumption_notes += notes
        self.theorem = (f"{self.theorem} — used as the noise shape only, scaled ×{self.noise_scale_factor:.6g} by the exact privacy curve "
                        "of Gaussians with unequal covariances (bayespriv.mechanisms.privacy_loss), over the "
                        "calibration's confidence box")
        return cov

    def _boxes(self) -> tuple[PairBox, ...]:
        cache = self.__dict__.get("_box_cache")
        if cache is None:
            cache = unequal_covariance_boxes(self.calibration)
            self.__dict__["_box_cache"] = cache
        return cache

    def privacy_curve(self, epsilons: Any) -> np.ndarray:
        """δ(ε) for each ε: the worst over pairs, θ members and the calibration's
        confidence box of the exact privacy curve of N(μ_a, Σ_a + S) vs
        N(μ_b, Σ_b + S) with this mechanism's noise S, covariances *not*
        assumed equal (:func:`~bayespriv.mechanisms.privacy_loss.privacy_curve`).
        Needs an upper bound of every covariance (η < 1) for sampled calibrations.
        """
        if self.accounting is not None:
            return self._accounted_curve(epsilons)
        return privacy_curve(epsilons, self._boxes(), self.noise_cov)

    def _finish(self, table: dict[str, Any], worst: int) -> None:
        """Certify the noise already set, and build ``pair_table`` / ``worst_theta``."""
        cons = self.constraints
        achieved = certified_mahalanobis_sq(cons, self.noise_cov)
        if self.covariance_mode == "accounted":
            table = {**table, "delta": _accounted_deltas(self._accounted.account, cons.labels)}
        elif self.covariance_mode == "unequal":
            target = float(getattr(self, "_noise_delta", self.delta))
            deltas = np.array([box_delta(self.epsilon, b, self.noise_cov) for b in self._boxes()])
            if deltas.max(initial=0.0) > target:  # pragma: no cover - guarded by scale_for_delta
                raise ValidationError(f"{type(self).__name__}: internal check failed: delta {deltas.max():.6g} > "
                                      f"{target:.6g}; please report this calibration")
            table = {**table, "delta": deltas}
        elif achieved.max(initial=0.0) > self.radius**2:  # pragma: no cover - guarded by construction
            raise ValidationError(
                f"{type(self).__name__}: internal check failed: dᵀ(Σ + S)⁻¹d = {achieved.max():.6g} > r*² = "
                f"{self.radius ** 2:.6g}; please report this calibration"
            )
        table = {"pair": list(cons.labels), **table, "mahalanobis_sq": achieved}
        #: One row per (θ, pair) constraint: what it needs and what the noise achieves.
        self.pair_table = pd.DataFrame(table).set_index("pair")
        #: θ of the constraint that sets the noise (for families).
        self.worst_theta = cons.thetas[worst]
        self.worst_pair = cons.labels[worst]


def _accounted_deltas(account: Any, labels: tuple[str, ...]) -> np.ndarray:
    """Per (θ, pair) condition: the accounted δ(ε) bound, worst of both directions."""
    worst: dict[str, float] = {}
    for r in account.rows:
        worst[r.label] = max(worst.get(r.label, 0.0), r.upper)
    return np.array([worst.get(label, np.nan) for label in labels])


def _covariance_notes(cons: PairConstraints) -> tuple[str, ...]:
    """Record, without failing, whether the two covariances of each pair agree."""
    a, b = cons.cov_a, cons.cov_b
    scale = np.maximum(np.abs(a).max(axis=(1, 2)), np.abs(b).max(axis=(1, 2)))
    rel = np.abs(a - b).max(axis=(1, 2)) / np.where(scale > 0, scale, 1.0)
    if rel.size and rel.max() > 1e-8:
        i = int(np.argmax(rel))
        return (
            f"equal_covariance: the covariance lower bounds of a pair differ (largest relative entry difference "
            f"{rel[i]:.3g} at {cons.labels[i]!r}); the common Loewner lower bound of both is used, and the "
            "equal-covariance assumption of Theorem 4.4 is tested on the samples, not proven "
            "(covariance='unequal' drops it)",
        )
    return ()


class Noiseless(_GaussianConstraintMechanism):
    """Release F(X) without noise, when Theorem 4.4 allows it.

    Construction raises :class:`~bayespriv.ValidationError` when the condition
    fails; :func:`noiseless_ok` asks the same question without raising.
    :class:`EigM`, :class:`DauM` and
    :class:`~bayespriv.mechanisms.optimal.OptimalGaussian` add no noise either
    whenever the condition holds (DauM and OptimalGaussian always; EigM only
    when its sufficient eigenvalue condition holds).

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy w.r.t. the calibration's pairs.

    Theorem 4.4 (Chen & Ohrimenko 2023, proof in appendix A): if
    f_θ = N(μ_θ, Σ_θ) with Σ_θi = Σ_θj for each pair, F(X) itself is
    (ε, δ)-private when ``dᵀΣ⁻¹d ≤ r*²`` for every pair. Here Σ is the common
    Loewner lower bound of the pair's covariances and d ranges over the
    corners of its confidence box, so the check is conservative on the
    calibration's event (:func:`certified_mahalanobis_sq`). The paper states
    the condition with r* = ε/c and a proof that needs ε ≤ 1; the reduction
    to two Gaussians at Mahalanobis distance ≤ r* makes the analytic radius
    (Balle & Wang 2018), the default, valid for every ε.

    Per θ (families): Pufferfish privacy is one condition per θ ∈ Θ and per
    secret pair, so the condition is checked per (θ, pair) row with that row's own mean
    difference box and covariance lower bound — never a sensitivity taken over all θ combined with
    the variance of another θ. Valid because each row is exactly one of the
    definition's conditions; never more noise than that mixed rule.

    Assumptions: ``gaussian_query``, ``equal_covariance`` (checked on the
    calibration samples; a failed check is listed in the guarantee and release
    refuses unless ``accept_failed_assumptions=True``). Noiseless has no
    unequal-covariance mode: :func:`privacy_curve` reports its true curve.
    Exact for :meth:`Calibration.from_moments`; with probability
    ``confidence`` for sampled calibrations; plug-in otherwise.
    """

    theorem = "Noiseless: Chen & Ohrimenko 2023, Theorem 4.4"

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic",
                 accountant: str = "auto") -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        cons = self._setup(gaussian_calibration, "equal", accountant)
        report, m2 = _noiseless_report(cons, self.radius)
        if self.covariance_mode == "accounted":
            self._account_noiseless()
            self.report = report
            self._set_gaussian(np.zeros((self.k, self.k)))
            self._finish({}, int(np.argmax(m2)))
            self._freeze()
            return
        if not report.holds:
            raise ValidationError(
                f"calibration must satisfy Theorem 4.4 (dᵀΣ⁻¹d ≤ r*² for every pair) at epsilon={self.epsilon:g}, "
                f"delta={self.delta:g}; got worst Mahalanobis distance {report.distance:.6g} > r* = {report.radius:.6g} "
                f"at {report.worst_pair!r}. Add noise: DauM, EigM or OptimalGaussian"
            )
        self.report = report
        self._set_gaussian(np.zeros((self.k, self.k)))
        self._finish({}, int(np.argmax(m2)))
        self._freeze()

    def _account_noiseless(self) -> None:
        """The exact release accounted on the real law: only an exact finite law in one dimension can be."""
        from ..calibration.laws import conditions_of
        from .accountant import account
        from .accounted import Accounted

        acc = account(conditions_of(self.calibration), None, self.epsilon, confidence=self.calibration.confidence,
                      target=self._noise_delta)
        if acc.delta > self._noise_delta:
            raise ValidationError(
                f"the exact release must meet delta={self.delta:g} at epsilon={self.epsilon:g} on the released law; "
                f"got accounted δ = {acc.delta:.3g} ({acc.worst.method}: a law known through draws, or a finite law "
                "in more than one dimension, cannot be accounted without noise). Add noise: DauM, EigM or "
                "OptimalGaussian")
        self._accounted = Accounted(None, 1.0, 0.0, acc)
        self.theorem = f"Noiseless: the exact release, accounted on the released law ({acc.method})"


# ---------------------------------------------------------------------------------------------
# Theorem 4.3 and §4.2: DirM
# ---------------------------------------------------------------------------------------------


def _span_basis(points: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``(k, d)`` of the span of the rows of ``points`` (SVD).

    Rank tolerance: numpy's ``matrix_rank`` default, ``s_max · max(N, k) · eps``;
    a dropped direction carries at most that much of any difference, i.e.
    floating-point rounding of the inputs (re-checked by the caller).
    """
    k = points.shape[1]
    if points.size == 0 or not np.any(points):
        return np.zeros((k, 0))
    _, s, vt = np.linalg.svd(points, full_matrices=False)
    tol = s.max() * max(points.shape) * np.finfo(float).eps
    return vt[s > tol].T.copy()


#: Exponents p of the candidate shapes w_j = a_j^p of the per-direction noise (see DirM).
_SHAPE_EXPONENTS = (0.0, 1.0 / 3.0, 0.5, 2.0 / 3.0, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class _DirGeometry:
    """DirM's orthonormal noise directions (k, D), the corners' coordinates along them (m, c, D) and their extents (D,)."""

    basis: np.ndarray
    coords: np.ndarray
    extent: np.ndarray


def _dirm_theorem(noise_kind: str, n_directions: int) -> str:
    """The theorem DirM's guarantee rests on, for its noise and number of directions."""
    return (
        f"DirM({'L' if noise_kind == 'laplace' else 'G'}): Chen & Ohrimenko 2023, Theorem 4.3"
        + (" (no mean difference: no noise)" if n_directions == 0 else " (one direction)" if n_directions == 1
           else f" extended to {n_directions} orthogonal directions (§4.2; proof in DirM docstring)")
        + ("" if noise_kind == "laplace" else ", Gaussian noise (appendix B.3 remark)")
    )


class DirM(SampledMomentMechanism):
    """Directional Expected Value Mechanism: noise only where the means move.

    The mean differences d (every corner of every (θ, pair) box) span a
    subspace with orthonormal basis b_1, ..., b_D (SVD of the stacked corner
    differences, or the span of ``directions``). Noise is added along those
    directions only, independently per direction:

    * ``noise="laplace"``: ``Σ_j s_j L_j b_j`` with L_j i.i.d. standard
      Laplace (``noise_basis`` = B, ``noise_scale`` = s);
    * ``noise="gaussian"``: N(0, Σ_j σ_j² b_j b_jᵀ) (``noise_cov``).

    When the differences are parallel (D = 1, v = b_1) this is Theorem 4.3:
    ``s = Δ_{E,2}/ε`` (Laplace), and with Gaussian noise σ = Δ_{E,2}/r*
    (the remark of appendix B.3). With several directions the scales are
    chosen as follows (valid for *any* positive shape, proven below): with
    β = Bᵀd the coordinates of a difference and a_j = max |β_j|, try the
    shapes w_j = a_j^p for p in {0, 1/3, 1/2, 2/3, 1, 3/2, 2}, rescale each
    to the smallest scale that is private, and keep the one with the least
    total noise variance. (p = 1/3 is optimal for Laplace and p = 1 for
    Gaussian when one difference attains every a_j; p = 0 is the paper's
    "the same noise in each direction".)

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float
        0 for Laplace; in (0, 1) for Gaussian.
    noise : {"laplace", "gaussian"}
    gaussian_calibration : {"analytic", "classic"}
    directions : array (k,) or (k, D), optional
        Directions (columns) to add noise along, e.g. the paper's v. They are
        orthonormalised; their span must contain every difference (up to
        rounding, relative 1e-12), otherwise :class:`ValidationError`.

    Attributes
    ----------
    directions : ndarray (k, D)
        The orthonormal noise directions.
    scales : ndarray (D,)
        Laplace scales s_j, or Gaussian standard deviations σ_j.
    pair_table : DataFrame
        Per (θ, pair): largest L2 norm of the difference and its privacy
        loss bound (Laplace: ``max Σ_j |β_j|/s_j``, to be ≤ ε; Gaussian:
        ``max Σ_j β_j²/σ_j²``, to be ≤ r*²).
    worst_theta : dict or None

    Privacy
    -------
    Definition: (ε, 0)- (Laplace) or (ε, δ)- (Gaussian) distribution privacy
    w.r.t. the calibration's pairs.

    Theorem 4.3 (Chen & Ohrimenko 2023, proof in appendix B.3) for D = 1.
    For D ≥ 1 (Laplace): let f_θi(t) = f_θj(t + b) with b = E[f_θi] − E[f_θj]
    = Bβ in the span. As in B.3, Pr(M ∈ S | θ_i) = ∫ f_θj(s) Pr(BZ + s − b ∈ S) ds
    with Z_j = s_j L_j. On the affine plane s + span(B) the density of the
    coordinates y = Bᵀ(x − s) is Π_j exp(−|y_j|/s_j)/(2s_j); shifting by β
    multiplies it by at most exp(Σ_j |β_j|/s_j). So (ε, 0)-privacy holds when
    ``Σ_j |β_j|/s_j ≤ ε`` for every difference — a convex function of d, hence
    maximal at a corner of the box. For a shape w, ``s = w·ρ/ε`` with
    ``ρ = max_corners Σ_j |β_j|/w_j`` meets it with equality at the worst
    corner. Gaussian: the noise restricted to the span is N(0, diag(σ²)) in
    coordinates β; two such Gaussians with means β apart are (ε, δ)-close iff
    ``Σ_j β_j²/σ_j² ≤ r*²`` (Balle & Wang 2018; the classic constant with
    ε < 1), again convex in d; ``σ² = w·ρ/r*²`` with ``ρ = max Σ_j β_j²/w_j``.
    A relative margin of 1e-9 absorbs rounding.

    Per θ (families): Pufferfish privacy is one condition per θ ∈ Θ and per
    secret pair, so the scales meet the loss bound of every (θ, pair) row, each with its own
    differences (the maximum over rows of the per-row ρ) — never a sensitivity taken over all θ combined with
    the variance of another θ. Valid because each row is exactly one of the
    definition's conditions; never more noise than that mixed rule.

    Assumption: ``translation`` (f_θi a translation of f_θj; checked on the
    calibration samples, as for :class:`ExpM`). Differences known only up to a box (sampled calibrations) span
    every uncertain component, so D is then usually k.

    Paper erratum (§4.2, after Theorem 4.3): with D > 1 directions, Laplace
    noise of scale Δ_{E,2}/ε in each direction is *not* enough: the loss is
    ``‖Bᵀd‖₁/s`` which can reach √D·Δ_{E,2}/s (e.g. d = (1, 1), B = I: loss
    √2·ε). The L1 norm of the coordinates must be covered, as done here.
    For Gaussian noise the paper's suggestion is valid (it is the shape p = 0).
    """

    proof_assumptions = ("translation",)

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float = 0.0,
        noise: str = "laplace",
        gaussian_calibration: str = "analytic",
        directions: Any = None,
        accountant: str = "auto",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self.accountant = accountant
        self.noise_kind = check_noise(noise)
        self.gaussian_calibration = gaussian_calibration
        if self.noise_kind == "gaussian":
            self.radius = check_gaussian_params(self, gaussian_calibration)
        else:
            check_choice(gaussian_calibration, "gaussian_calibration", GAUSSIAN_CALIBRATIONS)
        cons = calibration.pair_constraints()
        self.constraints = cons
        geometry = self._geometry(cons, directions)
        basis = geometry.basis
        self.directions = basis
        self.directions.setflags(write=False)
        loss = self._fit_noise(geometry, len(cons))
        self.scales.setflags(write=False)
        worst = int(np.argmax(loss)) if loss.size else 0
        self.pair_table = pd.DataFrame(
            {"pair": list(cons.labels), "l2": _box_norms(cons), "loss": loss}
        ).set_index("pair")
        self.worst_theta = cons.thetas[worst]
        self.worst_pair = cons.labels[worst]
        d = basis.shape[1]
        self.theorem = _dirm_theorem(self.noise_kind, d)
        if self.delta > 0 and d > 0 and uses_real_law(calibration, accountant):
            account_noise(self)
            self.scales = np.sqrt(np.diag(self.directions.T @ self.noise_cov @ self.directions)) \
                if self.noise_kind == "gaussian" else np.array(self._laplace[0])
            self.scales.setflags(write=False)
        self._freeze()

    def _geometry(self, cons: PairConstraints, directions: Any) -> _DirGeometry:
        """The noise directions that carry some difference, and every corner's coordinates along them."""
        corners = cons.corners()  # (m, c, k)
        flat = corners.reshape(-1, self.k)
        basis = self._basis(flat, directions, corners.shape[1])
        coords = corners @ basis  # (m, c, D)
        a = np.abs(coords).reshape(-1, basis.shape[1]).max(axis=0) if basis.shape[1] else np.zeros(0)
        keep = a > 0
        return _DirGeometry(basis=basis[:, keep], coords=coords[..., keep], extent=a[keep])

    def _fit_noise(self, geometry: _DirGeometry, n_rows: int) -> np.ndarray:
        """Set the scales (Laplace) or variances (Gaussian) along the directions; return each row's loss bound."""
        basis, coords, a = geometry.basis, geometry.coords, geometry.extent
        if self.noise_kind == "laplace":
            target = self.epsilon * (1.0 - SAFETY)
            scales = self._best_scales(np.abs(coords), a, target, laplace=True)
            self.scales = scales
            self._set_laplace(scales, basis)
            return (np.abs(coords) / scales).sum(axis=2).max(axis=1) if scales.size else np.zeros(n_rows)
        target = self.radius**2 * (1.0 - SAFETY)
        var = self._best_scales(coords**2, a**2, target, laplace=False)
        self.scales = np.sqrt(var)
        self.sigma2 = var
        self._set_gaussian((basis * var) @ basis.T)
        return (coords**2 / var).sum(axis=2).max(axis=1) if var.size else np.zeros(n_rows)

    def _basis(self, flat: np.ndarray, directions: Any, n_corners: int) -> np.ndarray:
        if directions is None:
            basis = _span_basis(flat)
        else:
            arr = check_finite_array(directions, "directions")
            if arr.ndim == 1:
                arr = arr[:, None]
            if arr.ndim != 2 or arr.shape[0] != self.k or arr.shape[1] == 0:
                raise fail("directions", f"an array of shape ({self.k},) or ({self.k}, D) (columns are directions)",
                           described(f"shape {arr.shape}"))
            if np.any(np.linalg.norm(arr, axis=0) == 0):
                raise fail("directions", "non-zero vectors", arr)
            basis = _span_basis(arr.T)
        resid = flat - (flat @ basis) @ basis.T
        norms = np.linalg.norm(flat, axis=1)
        bad = np.linalg.norm(resid, axis=1) > ROUNDING_RTOL * np.maximum(norms, np.finfo(float).tiny)
        bad &= norms > 0
        if np.any(bad):
            n = int(np.flatnonzero(bad)[0])
            row = n // n_corners
            raise fail(
                "directions",
                "vectors whose span contains every mean difference (each corner of its confidence box): noise "
                "outside the differences' span cannot hide a shift along it",
                described(f"directions missing part {np.linalg.norm(resid[n]):.3g} of the difference "
                          f"{np.array2string(flat[n], precision=4)} of {self.constraints.labels[row]!r}"),
            )
        return basis

    @staticmethod
    def _best_scales(mags: np.ndarray, a: np.ndarray, target: float, *, laplace: bool) -> np.ndarray:
        """Per-direction Laplace scales (``laplace``) or Gaussian variances with least total variance.

        ``mags`` ``(m, c, D)``: |β_j| (Laplace) or β_j² (Gaussian); ``a`` ``(D,)``
        their maxima over corners. For a shape w > 0, ``x = w·ρ/target`` with
        ``ρ = max_corners Σ_j mags_j / w_j`` gives ``Σ_j mags_j / x_j ≤ target``
        at every corner. Total variance: ``2 Σ x²`` (Laplace) or ``Σ x``.
        """
        if a.size == 0:
            return np.zeros(0)
        flat = mags.reshape(-1, a.size)
        best, best_cost = np.zeros(0), np.inf
        for p in _SHAPE_EXPONENTS:
            w = (a / a.max()) ** p
            rho = float((flat / w).sum(axis=1).max())
            x = w * (rho / target)
            cost = float((x**2).sum()) if laplace else float(x.sum())
            if cost < best_cost:
                best, best_cost = x, cost
        return best

    def _compute_guarantee(self) -> Guarantee:
        laplace_theorem = self.noise_kind == "laplace" and self.accounting is None
        return self._guarantee(delta=0.0 if laplace_theorem else None)


# ---------------------------------------------------------------------------------------------
# Theorem 4.5: EigM
# ---------------------------------------------------------------------------------------------

#: Relative off-diagonal size (in the common eigenbasis) above which the
#: covariance lower bounds are recorded as not sharing their eigenvectors.
EIGENVECTOR_RTOL = 1e-8


@dataclass(frozen=True)
class _EigPlan:
    eigenvectors: np.ndarray  # (k, k) columns
    eigenvalues: np.ndarray  # (k,) of the average covariance lower bound
    sigma2: np.ndarray  # (k,)
    need: np.ndarray  # (m, k)
    required: np.ndarray  # (m,) (Δ_i / r*)²
    sensitivity: np.ndarray  # (m,)
    credit: tuple[str, ...]  # (m,)
    offdiag: np.ndarray  # (m,) relative

    @property
    def cov(self) -> np.ndarray:
        return (self.eigenvectors * self.sigma2) @ self.eigenvectors.T


def _eig_plan(cons: PairConstraints, radius: float) -> _EigPlan:
    """Theorem 4.5's noise, per (θ, pair) constraint, with a diagonal-in-V credit."""
    k, m = cons.k, len(cons)
    target = radius**2 * (1.0 - SAFETY)
    sens = _box_norms(cons)
    required = sens**2 / target
    C = cons.cov_common
    avg = C.mean(axis=0)
    eigenvalues, V = np.linalg.eigh((avg + avg.T) / 2.0)
    Mv = np.swapaxes(V, 0, 1)[None] @ C @ V[None]  # (m, k, k): Vᵀ Σ_lo V
    diag = np.diagonal(Mv, axis1=1, axis2=2)
    off = np.abs(Mv).sum(axis=2) - np.abs(diag)
    scale = np.maximum(np.abs(diag).max(axis=1), np.finfo(float).tiny)
    offdiag = off.max(axis=1) / scale
    gersh = diag - off  # Gershgorin: Vᵀ Σ_lo V − diag(gersh) is diagonally dominant, hence PSD
    lam_min = np.linalg.eigvalsh((C + np.swapaxes(C, 1, 2)) / 2.0)[:, 0]
    cands = np.stack([gersh, np.repeat(lam_min[:, None], k, axis=1), np.zeros((m, k))])  # (3, m, k)
    needs = np.where(required[None, :, None] > 0, np.maximum(0.0, required[None, :, None] - cands), 0.0)
    choice = np.argmin(needs.sum(axis=2), axis=0)
    need = needs[choice, np.arange(m)]
    names = np.array(["eigenvalues", "lambda_min", "none"], dtype=object)
    credit = tuple(
        "gershgorin" if (c == 0 and offdiag[i] > EIGENVECTOR_RTOL) else str(names[c]) for i, c in enumerate(choice)
    )
    return _EigPlan(V, eigenvalues, need.max(axis=0) if m else np.zeros(k), need, required, sens, credit, offdiag)


class EigM(_GaussianConstraintMechanism):
    """Eigenvector Gaussian Mechanism (Chen & Ohrimenko 2023, Theorem 4.5).

    With v_1, ..., v_k the eigenvectors of the query's covariance Σ and λ_l
    its eigenvalues, adds N(0, Σ_l σ_l² v_l v_lᵀ) with

        ``σ_l² = max over (θ, pair) of max(0, (Δ_{E,2}/r*)² − λ_l)``

    (the paper's ``(cΔ_{E,2}/ε)² − λ²_{θ,l}``; its "λ²" *is* the eigenvalue
    ``v_lᵀΣv_l``, not its square — see the worked example: eigenvalues 10 and
    25, noise 28.52 − 10 = 18.52 and 28.52 − 25 = 3.52). The formula involves
    only the L2 sensitivity Δ_{E,2} and the eigenvalues, not the projections
    of the differences on the eigenvectors nor the dimension.

    Here Δ_{E,2} is taken per constraint (Δ_i, its box's largest L2 norm) —
    never more noise than the global Δ_{E,2}, still a proof because the
    definition is a per-pair condition — and Σ is the common Loewner lower
    bound of the pair's covariances (``pair_constraints().cov_common``).
    The eigenvectors V are those of the *average* lower bound over the
    constraints. The credit of each constraint is a matrix diagonal in V
    and below its Σ: the eigenvalues (exact when Σ_i shares V — the paper's
    assumption), a Gershgorin bound ``(VᵀΣV)_ll − Σ_{j≠l} |(VᵀΣV)_lj|``
    when it does not (recorded in :attr:`assumption_notes`), λ_min(Σ_i) for
    all l, or none (Σ ⪰ 0) — whichever needs least noise for that constraint.

    When Theorem 4.4 already holds (``noiseless_ok``), no noise is added.

    Attributes
    ----------
    eigenvectors : ndarray (k, k)
        Columns v_l.
    eigenvalues : ndarray (k,)
        Eigenvalues of the average covariance lower bound.
    sigma2 : ndarray (k,)
        Noise variance along each v_l.
    pair_table : DataFrame
        Per (θ, pair): ``sensitivity`` Δ_i, ``required`` (Δ_i/r*)², the
        ``credit`` used, ``offdiag`` (relative off-diagonal of VᵀΣ_iV) and the
        achieved ``mahalanobis_sq`` (≤ r*²).
    worst_theta : dict or None
    assumption_notes : tuple of str

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy w.r.t. the calibration's pairs.

    Theorem 4.5 (proof in appendix A.1) through Corollary A.2: for each
    constraint i with credit D_i (diagonal in V, ``V diag(D_i) Vᵀ ⪯ Σ``),
    ``Σ + S ⪰ V diag(D_i + σ²) Vᵀ ⪰ (Δ_i/r*)² I``, hence
    ``dᵀ(Σ + S)⁻¹d ≤ ‖d‖²(r*/Δ_i)² ≤ r*²`` and Corollary A.1 / Theorem 4.4
    apply. A relative margin of 1e-9 on r*² absorbs rounding, and the result
    is checked with :func:`certified_mahalanobis_sq`. With r* = ε/c (classic)
    the paper's proof needs ε ≤ 1; the analytic radius holds for every ε.

    Per θ (families): Pufferfish privacy is one condition per θ ∈ Θ and per
    secret pair, so σ_l² is the maximum over (θ, pair) rows of each row's own need
    ((Δ_i/r*)² less *its own* credit), and every row is certified with its own
    difference box and covariance lower bound — never a sensitivity taken over all θ combined with
    the variance of another θ. Valid because each row is exactly one of the
    definition's conditions; never more noise than that mixed rule.

    Assumptions: ``gaussian_query`` and, with ``covariance="equal"``,
    ``equal_covariance``; both are checked on the calibration samples (a
    failed check is listed in the guarantee and release refuses unless
    ``accept_failed_assumptions=True``). The paper's common-eigenvector
    assumption is not needed for validity (the Gershgorin credit covers its
    failure).

    Unequal covariances (``covariance="unequal"``, or ``"auto"`` when the
    ``equal_covariance`` check fails): the noise above is the *shape* N; the
    released noise is c·N with c the smallest factor such that the exact
    privacy curve of N(μ_a, Σ_a + cN) vs N(μ_b, Σ_b + cN) meets (ε, δ) for
    every pair, θ and every mean difference and covariance pair of the
    calibration's confidence box (:func:`~bayespriv.mechanisms.privacy_loss.scale_for_delta`;
    the box search is described in :func:`~bayespriv.mechanisms.privacy_loss.box_delta`).
    ``equal_covariance`` is then not assumed. ``sigma2`` is then the noise
    variance along each v_l, ``noise_scale_factor`` is c and ``pair_table``
    has a ``delta`` column (δ at ε per constraint).

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}
    covariance : {"auto", "equal", "unequal"}
    """

    theorem = "EigM: Chen & Ohrimenko 2023, Theorem 4.5 (via Corollary A.2)"

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic",
                 covariance: str = "auto", accountant: str = "auto") -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        cons = self._setup(gaussian_calibration, covariance, accountant)
        plan = _eig_plan(cons, self.radius)
        self.eigenvectors = plan.eigenvectors
        self.eigenvalues = plan.eigenvalues
        report, _ = _noiseless_report(cons, self.radius)
        self.noiseless_report = report
        if report.holds:
            sigma2 = np.zeros(self.k)
            self.theorem = "EigM: Chen & Ohrimenko 2023, Theorem 4.4 holds (no noise needed)"
        else:
            sigma2 = plan.sigma2
        if plan.offdiag.size and plan.offdiag.max() > EIGENVECTOR_RTOL:
            self.assumption_notes += (
                "eigenvectors: the covariance lower bounds do not share their eigenvectors (largest relative "
                f"off-diagonal {plan.offdiag.max():.3g} in the basis of their average); Theorem 4.5's assumption "
                "fails and a Gershgorin lower bound diagonal in that basis was credited instead (valid, more noise)",
            )
        V = plan.eigenvectors
        start = max(float(plan.required.max(initial=0.0)), 1e-300) * 1e-9
        cov, self.repair = _repair(cons, self.radius**2, lambda t: (V * (sigma2 + t)) @ V.T, start)
        self.sigma2 = sigma2 + self.repair
        if self.covariance_mode != "equal":
            cov = self._covariance_noise(cov)
            self.sigma2 = np.diag(V.T @ cov @ V).copy()
        self._set_gaussian(cov)
        worst = int(np.argmax(plan.need.sum(axis=1))) if len(cons) else 0
        self._finish({"sensitivity": plan.sensitivity, "required": plan.required, "credit": list(plan.credit),
                      "offdiag": plan.offdiag}, worst)
        self._freeze()


# ---------------------------------------------------------------------------------------------
# Algorithm 1 / Theorem A.1: DauM
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _DauPlan:
    direction: np.ndarray  # (k,)
    sigma2: float
    per_pair: np.ndarray  # (m,)
    alpha: np.ndarray  # (m,)
    credit: np.ndarray  # (m,) the 1/(vᵀΣ⁻¹v)-type credit along v (Schur complement), nan without
    perp: np.ndarray  # (m,) Mahalanobis² of the part orthogonal to v (0 when parallel)
    parallel: bool
    notes: tuple[str, ...]

    @property
    def cov(self) -> np.ndarray:
        return self.sigma2 * np.outer(self.direction, self.direction)


def _dau_direction(cons: PairConstraints, direction: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    k = cons.k
    if direction is None:
        norms = np.linalg.norm(cons.diff, axis=1)
        if norms.size == 0 or norms.max() == 0:
            v = np.zeros(k)
            v[0] = 1.0
            return v, ("direction: every estimated mean difference is 0; v = first coordinate axis",)
        i = int(np.argmax(norms))
        return cons.diff[i] / norms[i], ()
    arr = check_finite_array(direction, "direction")
    if arr.shape != (k,):
        raise fail("direction", f"a vector of shape ({k},)", described(f"shape {arr.shape}"))
    n = float(np.linalg.norm(arr))
    if n == 0:
        raise fail("direction", "a non-zero vector", arr)
    return arr / n, ()


def _dau_plan(cons: PairConstraints, radius: float, direction: Any) -> _DauPlan:
    """Algorithm 1's σ² in closed form (see DauM), generalised to non-parallel differences."""
    v, notes = _dau_direction(cons, direction)
    if cons.uncertain_dims > MAX_CORNER_DIMS:
        return _dau_plan_box(cons, radius, v, notes)
    m = len(cons)
    target = radius**2 * (1.0 - SAFETY)
    corners = _dau_corners(cons, v)
    per_pair = np.empty(m)
    credit = np.full(m, np.nan)
    perp = np.zeros(m)
    for i in range(m):  # m is small (pairs x members); (k-1) x (k-1) solves
        per_pair[i], credit[i], perp[i] = _dau_row(corners, i, target, cons.labels[i], radius)
    parallel = bool(np.all(corners.par_rows))
    if not parallel:
        notes += (
            "parallel_differences: the mean differences (or corners of their confidence boxes) are not all "
            "parallel to v, so Theorem A.1 does not apply; σ² solves Corollary A.1 exactly for every corner "
            "(closed form in the DauM docstring), valid because Σ hides the part orthogonal to v",
        )
    sigma2 = float(per_pair.max(initial=0.0))
    return _DauPlan(v, sigma2, per_pair, corners.alpha, credit, perp, parallel, notes)


@dataclass(frozen=True)
class _DauCorners:
    """The corners of every row's difference box along v and in v⊥, with the rows' symmetrised covariance bounds."""

    v: np.ndarray  # (k,)
    U: np.ndarray  # (k, k-1): orthonormal basis of v⊥
    dv: np.ndarray  # (m, c)
    dU: np.ndarray  # (m, c, k-1)
    alpha: np.ndarray  # (m,) largest |vᵀd| over the corners
    par_rows: np.ndarray  # (m,) bool: every corner parallel to v
    C: np.ndarray  # (m, k, k)


def _dau_corners(cons: PairConstraints, v: np.ndarray) -> _DauCorners:
    """Project each row's box corners on v and on v⊥; flag the rows whose corners are all parallel to v."""
    corners = cons.corners()  # (m, c, k)
    U = np.linalg.svd(v[None, :])[2][1:].T  # (k, k-1): orthonormal basis of v⊥
    dv = corners @ v  # (m, c)
    dU = corners @ U  # (m, c, k-1)
    dnorm = np.linalg.norm(corners, axis=2)
    par_rows = np.all(np.linalg.norm(dU, axis=2) <= ROUNDING_RTOL * dnorm, axis=1)
    alpha = np.abs(dv).max(axis=1)
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    return _DauCorners(v=v, U=U, dv=dv, dU=dU, alpha=alpha, par_rows=par_rows, C=C)


def _dau_row(corners: _DauCorners, i: int, target: float, label: str, radius: float) -> tuple[float, float, float]:
    """One row of :func:`_dau_plan`: ``(σ², s₀ or nan, p⊥)`` over the row's box corners."""
    v, U, C, dv, dU = corners.v, corners.U, corners.C[i], corners.dv[i], corners.dU[i]
    k = v.shape[0]
    a = float(v @ C @ v)
    scale = max(float(np.abs(C).max()), np.finfo(float).tiny)
    if k == 1:
        definite, p_perp, e, s0 = True, np.zeros_like(dv), dv, a
    else:
        M = U.T @ C @ U
        b = U.T @ C @ v
        definite = bool(np.linalg.eigvalsh(M)[0] > 1e-12 * scale)
        if definite:
            Minv_dU = np.linalg.solve(M, dU.T)  # (k-1, c)
            p_perp = np.einsum("jc,jc->c", dU.T, Minv_dU)
            e = dv - b @ Minv_dU
            s0 = a - float(b @ np.linalg.solve(M, b))
    no_credit = corners.alpha[i] ** 2 / target  # valid for parallel differences: Σ + σ²vvᵀ ⪰ σ²vvᵀ
    if definite:
        perp = float(p_perp.max(initial=0.0))
        if perp >= target:
            raise ValidationError(
                "direction must be one along which noise can hide every mean difference (DauM adds noise "
                f"along v only); got v = {np.array2string(v, precision=4)}: the part of the difference of "
                f"{label!r} orthogonal to v has Mahalanobis distance {np.sqrt(perp):.4g} ≥ "
                f"r* = {radius:.4g}, which no noise along v can reduce. Use EigM, OptimalGaussian, DirM, "
                "or another direction"
            )
        general = float((e**2 / (target - p_perp)).max(initial=0.0)) - s0
        return (max(0.0, min(general, no_credit)) if corners.par_rows[i] else max(0.0, general)), s0, perp
    if corners.par_rows[i]:
        return no_credit, np.nan, 0.0
    raise ValidationError(
        "direction must be parallel to every mean difference when the covariance lower bound is "
        f"singular (or indefinite) orthogonal to it; got v = {np.array2string(v, precision=4)} and a "
        f"difference of {label!r} with a part orthogonal to v that Σ cannot hide. Use "
        "OptimalGaussian, DirM, more calibration draws, or another direction"
    )


#: Relative margin below r*² of DauM's σ² beyond ``MAX_CORNER_DIMS`` uncertain components
#: (bisection on a certified bound: room for the final certificate's own dual gap).
BOX_MARGIN = 1e-8


def _dau_plan_box(cons: PairConstraints, radius: float, v: np.ndarray, notes: tuple[str, ...]) -> _DauPlan:
    """:func:`_dau_plan` beyond ``MAX_CORNER_DIMS`` uncertain components: the same per-row
    quantities with every maximum over the box taken without its corners — α and the
    largest |e| exactly (linear), p⊥ and ``p⊥ + e²/(s₀ + σ²)`` by the certified bound
    :func:`~bayespriv.calibration.constraints.white_box_max` (≥ the corner maximum), so σ²
    is never below the corner formula's."""
    m = len(cons)
    target = radius**2 * (1.0 - BOX_MARGIN)
    U = np.linalg.svd(v[None, :])[2][1:].T  # (k, k-1)
    alpha = cons.linear_max(v)
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    per_pair, credit, perp = np.empty(m), np.full(m, np.nan), np.zeros(m)
    par_rows = np.empty(m, dtype=bool)
    for i in range(m):  # m is small (pairs x members)
        cols = np.flatnonzero(cons.half_width[i] > 0)
        gens = np.column_stack([cons.diff[i], np.eye(cons.k)[:, cols] * cons.half_width[i, cols]])  # (k, 1 + u)
        gU = U.T @ gens
        norms = np.linalg.norm(gens, axis=0)
        par_rows[i] = bool(np.all(np.linalg.norm(gU, axis=0) <= ROUNDING_RTOL * norms))
        per_pair[i], credit[i], perp[i] = _dau_row_box(C[i], v, U, gens, gU, float(alpha[i]), target,
                                                       bool(par_rows[i]), cons.labels[i], radius)
    parallel = bool(np.all(par_rows))
    if not parallel:
        notes += (
            "parallel_differences: the mean differences (or their confidence boxes) are not all parallel to v, so "
            "Theorem A.1 does not apply; σ² solves Corollary A.1 over each box (DauM docstring), with the box "
            "maximum bounded without its corners (certified polynomial bound, more than 12 uncertain components)",
        )
    return _DauPlan(v, float(per_pair.max(initial=0.0)), per_pair, alpha, credit, perp, parallel, notes)


def _dau_row_box(C: np.ndarray, v: np.ndarray, U: np.ndarray, gens: np.ndarray, gU: np.ndarray, alpha: float,
                 target: float, par: bool, label: str, radius: float) -> tuple[float, float, float]:
    """One row of :func:`_dau_plan_box`: ``(σ², s₀ or nan, p⊥ bound)``. Generators: column 0 is
    d̂, the others h_j e_j, so the box is ``gens @ (1, v)`` with v ∈ [−1, 1]ᵘ."""
    no_credit = alpha**2 / target
    M = U.T @ C @ U
    scale = max(float(np.abs(C).max()), np.finfo(float).tiny)
    if not np.linalg.eigvalsh(M)[0] > 1e-12 * scale:
        if par:
            return no_credit, np.nan, 0.0
        raise ValidationError(
            "direction must be parallel to every mean difference when the covariance lower bound is singular (or "
            f"indefinite) orthogonal to it; got v = {np.array2string(v, precision=4)} and a difference of {label!r} "
            "with a part orthogonal to v that Σ cannot hide. Use OptimalGaussian, DirM, more calibration draws, or "
            "another direction"
        )
    L = np.linalg.cholesky(M)
    P = np.linalg.solve(L, gU)  # whitened parts orthogonal to v: p⊥ = ‖P (1, v)‖²
    q = np.linalg.solve(L.T, np.linalg.solve(L, U.T @ C @ v))  # M⁻¹b
    e = v @ gens - q @ gU  # e(d) = vᵀd − bᵀM⁻¹Uᵀd on the generators
    s0 = float(v @ C @ v - (U.T @ C @ v) @ q)
    perp = white_box_max(P[:, 0], P[:, 1:])
    if perp >= target:
        raise ValidationError(
            "direction must be one along which noise can hide every mean difference (DauM adds noise along v only); "
            f"got v = {np.array2string(v, precision=4)}: the part of the difference of {label!r} orthogonal to v has "
            f"Mahalanobis distance up to {np.sqrt(perp):.4g} ≥ r* = {radius:.4g} (bound over its box), which no noise "
            "along v can reduce. Use EigM, OptimalGaussian, DirM, or another direction"
        )
    general = _dau_sigma_box(P, e, s0, target, perp)
    return (max(0.0, min(general, no_credit)) if par else max(0.0, general)), s0, perp


def _dau_sigma_box(P: np.ndarray, e: np.ndarray, s0: float, target: float, perp: float) -> float:
    """Smallest σ² (to relative 1e-9, rounded up) with the certified bound of
    ``max_box p⊥ + e²/(s₀ + σ²)`` ≤ target, by bisection on τ = 1/(s₀ + σ²) (the form grows
    with τ). Returns ``1/τ − s₀`` (≤ 0 when σ² = 0 already passes)."""
    warm: dict = {}

    def passes(tau: float) -> bool:
        stacked = np.vstack([P, np.sqrt(tau) * e[None, :]])
        return white_box_max(stacked[:, 0], stacked[:, 1:], warm=warm, threshold=target) <= target

    if s0 > 0 and passes(1.0 / s0):
        return 0.0
    e_max = abs(float(e[0])) + float(np.abs(e[1:]).sum())  # exact max |e| over the box
    lo = (target - perp) / max(e_max**2, np.finfo(float).tiny)  # passes up to the dual's accuracy
    for _ in range(200):
        if passes(lo):
            break
        lo *= 0.5
    else:  # pragma: no cover - p⊥'s bound is below the target
        raise ValidationError("DauM: no noise along v could be certified; please report this calibration")
    hi = lo * 2.0
    while passes(hi) and (s0 <= 0 or hi < 1.0 / s0):
        if hi > 1e300:  # e vanishes on the box: only s₀ + σ² > 0 is needed
            return max(0.0, -s0) * (1.0 + 1e-12)
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-9 * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    return 1.0 / lo - s0


class DauM(_GaussianConstraintMechanism):
    """Directional + adversarial-uncertainty mechanism (Chen & Ohrimenko 2023,
    Algorithm 1 of appendix A.2), in closed form.

    Adds N(0, σ² vvᵀ): Gaussian noise along the unit vector v only, with

        ``σ² = max over (θ, pair) of max(0, (α/r*)² − 1/(vᵀΣ⁻¹v))``,

    α = largest |vᵀd| over the pair's differences d, Σ the common covariance
    lower bound of the pair, r* the Gaussian radius (the paper's ε/c).
    ``v`` defaults to the direction of the largest estimated mean difference.

    Closed form of Algorithm 1 (line 7)
    -----------------------------------
    Line 7 asks for σ² with ``Σ + t vvᵀ ≻ 0``, ``t = σ² − (α/r*)²``. For
    Σ ≻ 0 and q = vᵀΣ⁻¹v > 0, the matrix determinant lemma gives
    ``det(Σ + t vvᵀ) = det(Σ)(1 + t q)``; a rank-one update moves at most one
    eigenvalue across 0 (interlacing), so ``Σ + t vvᵀ ≻ 0 ⟺ t > −1/q``, i.e.
    ``σ² > (α/r*)² − 1/q``. No bisection is needed. Moreover, by
    Sherman–Morrison, ``vᵀ(Σ + σ²vvᵀ)⁻¹v = 1/(1/q + σ²)``, so for d = αv the
    condition of Corollary A.1 reads ``α²/(1/q + σ²) ≤ r*²`` — i.e.
    ``σ² ≥ (α/r*)² − 1/q`` with *equality allowed*: the paper's strict
    inequality and its "increase σ² slightly" step come from the η in its
    proof of Theorem A.1, not from the corollary, which is stated with ≤.
    At equality the Mahalanobis distance is exactly r*, which is private; to
    be conservative against rounding, σ² is computed for r*²(1 − 1e-9) and
    the result is checked (:func:`certified_mahalanobis_sq`) and, if rounding
    still violated it, increased by bisection (``repair``).

    1/q = 1/(vᵀΣ⁻¹v) is the Schur complement ``a − bᵀM⁻¹b`` of Σ in the basis
    (v, v⊥) (a = vᵀΣv, b = UᵀΣv, M = UᵀΣU), the largest c with Σ ⪰ c vvᵀ.
    When Σ is singular along v (or the lower bound is indefinite) that credit
    is ≤ 0 and none is taken: σ² = (α/r*)² (Σ + σ²vvᵀ ⪰ σ²vvᵀ).

    Non-parallel differences
    ------------------------
    Theorem A.1 assumes every difference parallel to v; sampled calibrations
    (boxes) and several pairs often break it. DauM then does not refuse but
    solves Corollary A.1 exactly: with d = (δ_v, δ_U) in the basis (v, U),
    block elimination gives ``dᵀ(Σ + σ²vvᵀ)⁻¹d = p⊥ + e²/(s₀ + σ²)`` with
    ``p⊥ = δ_UᵀM⁻¹δ_U``, ``e = δ_v − bᵀM⁻¹δ_U``, ``s₀ = a − bᵀM⁻¹b``, so

        ``σ² = max over corners of e²/(r*² − p⊥) − s₀``

    (for d = αv: p⊥ = 0, e = α, s₀ = 1/q, the formula above). This needs
    M ≻ 0 and p⊥ < r*² — Σ must hide the part of d orthogonal to v, which no
    noise along v can reduce; otherwise construction raises ValidationError
    (use EigM, DirM or OptimalGaussian). The fallback is recorded in
    :attr:`assumption_notes` and the ``theorem``.

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}
    direction : array (k,), optional
        The paper's v (normalised here).
    covariance : {"auto", "equal", "unequal"}
        See the module docstring.

    Attributes
    ----------
    direction : ndarray (k,)
    sigma2 : float
    parallel : bool
        Whether Theorem A.1's assumption holds (up to rounding).
    pair_table : DataFrame
        Per (θ, pair): ``alpha``, ``credit`` (1/(vᵀΣ⁻¹v), NaN when Σ is
        singular orthogonal to v), ``perp`` (p⊥), ``sigma2`` and the achieved
        ``mahalanobis_sq``.
    worst_theta : dict or None
    assumption_notes : tuple of str

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy w.r.t. the calibration's pairs.

    Theorem A.1 (Chen & Ohrimenko 2023, appendix A.2) when the differences
    are parallel to v; Corollary A.1 with the closed form above otherwise.
    Both rest on Theorem 4.4: Gaussian query, equal covariance within a pair
    (``gaussian_query``, ``equal_covariance``: checked on the calibration
    samples, a failed check is listed in the guarantee and release refuses
    unless ``accept_failed_assumptions=True``), with Σ
    the Loewner lower bound (conservative: (Σ + S)⁻¹ ⪯ (Σ_lo + S)⁻¹) and d
    every corner of the box (the condition is convex in d; beyond 12 uncertain
    components the maxima over the box are certified polynomial upper bounds,
    :func:`_dau_plan_box`, so σ² is never below the corner formula's). The parallel
    assumption is *checked* (not assumed), so it is not listed among the
    guarantee's assumptions. With r* = ε/c the paper needs ε ≤ 1; the
    analytic radius holds for every ε.

    Per θ (families): Pufferfish privacy is one condition per θ ∈ Θ and per
    secret pair, so σ² is the maximum over (θ, pair) rows of each row's own σ²
    (its own α, p⊥, e and Schur credit s₀) — never a sensitivity taken over all θ combined with
    the variance of another θ. Valid because each row is exactly one of the
    definition's conditions; never more noise than that mixed rule.

    Paper notes: Algorithm 1 line 7 demands σ² > 0 strictly; σ² = 0 is fine
    whenever Σ alone satisfies Theorem 4.4.

    Unequal covariances (``covariance="unequal"``, or ``"auto"`` when the
    ``equal_covariance`` check fails): σ²vvᵀ is the noise *shape*, scaled by
    the smallest factor c meeting (ε, δ) by the exact privacy curve over the
    calibration's confidence box (as for :class:`EigM`); ``equal_covariance``
    is then not assumed. Noise along v alone cannot hide a covariance
    difference orthogonal to v; the shape is then widened by an isotropic part
    (recorded in :attr:`assumption_notes`) and ``sigma2`` is ``vᵀSv``.
    """

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float,
        gaussian_calibration: str = "analytic",
        direction: Any = None,
        covariance: str = "auto",
        accountant: str = "auto",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        cons = self._setup(gaussian_calibration, covariance, accountant)
        report, _ = _noiseless_report(cons, self.radius)
        self.noiseless_report = report
        try:
            plan = _dau_plan(cons, self.radius, direction)
        except ValidationError:
            if not report.holds and self.covariance_mode == "equal":
                raise
            # Theorem 4.4 holds (no noise, whatever v) or the unequal-covariance scaling widens the shape
            v, notes = _dau_direction(cons, direction)
            m = len(cons)
            alpha = (cons.linear_max(v) if cons.uncertain_dims > MAX_CORNER_DIMS
                     else np.abs(cons.corners() @ v).max(axis=1))
            plan = _DauPlan(v, 0.0, np.zeros(m), alpha, np.full(m, np.nan),
                            np.full(m, np.nan), False, notes)
        if report.holds:
            plan = dataclasses.replace(plan, sigma2=0.0, per_pair=np.zeros(len(cons)))
        self.direction = plan.direction
        self.direction.setflags(write=False)
        self.parallel = plan.parallel
        self.assumption_notes += plan.notes
        vv = np.outer(plan.direction, plan.direction)
        start = max(float((plan.alpha**2).max(initial=0.0)) / self.radius**2, 1e-300) * 1e-9
        self.theorem = (
            "DauM: Chen & Ohrimenko 2023, Theorem 4.4 holds (no noise needed)"
            if report.holds
            else "DauM: Chen & Ohrimenko 2023, Algorithm 1 / Theorem A.1 (closed form)"
            if plan.parallel
            else "DauM: Chen & Ohrimenko 2023, Algorithm 1 generalised to non-parallel differences (Corollary A.1, closed form)"
        )
        if self.covariance_mode != "equal":
            self.repair = 0.0
            cov = self._covariance_noise(plan.sigma2 * vv)
            self.sigma2 = float(plan.direction @ cov @ plan.direction)
        else:
            cov, self.repair = _repair(cons, self.radius**2, lambda t: (plan.sigma2 + t) * vv, start)
            self.sigma2 = plan.sigma2 + self.repair
        self._set_gaussian(cov)
        worst = int(np.argmax(plan.per_pair)) if len(cons) else 0
        self._finish({"alpha": plan.alpha, "credit": plan.credit, "perp": plan.perp, "sigma2": plan.per_pair}, worst)
        self._freeze()
