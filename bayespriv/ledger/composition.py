"""Joint accounting of Gaussian releases: several queries, one Gaussian mechanism on the stacked query.

Why
---
The ledger adds (ε, δ) over releases (sequential composition; for Pufferfish mechanisms an
*assumption*, see :mod:`bayespriv.ledger.ledger`). Gaussian releases of different queries
F₁, …, F_m on the same data, under the same secret pairs, are exactly one Gaussian mechanism on the
stacked query F = (F₁, …, F_m) (``bp.stack(q1, q2)``) with block-diagonal noise
S = diag(S₁, …, S_m) (each mechanism's ``noise_cov``; the noises are independent). Under the
Gaussian-query assumption the joint output under secret a is N(μ_a, Σ_a + S), with μ_a and Σ_a the
mean and *full* covariance of F given a (cross-covariances between the queries included), so its
privacy profile is that of two Gaussians:

    δ(ε) = max over (θ, pair) of max(H_ε(P_a‖P_b), H_ε(P_b‖P_a)),  P_s = N(μ_s, Σ_s + S).

This needs no composition theorem for the releases it covers and is never larger than the sum of
the individual ε at the same total δ when the queries are independent (and usually much smaller:
two releases at distances r₁, r₂ cost like one at √(r₁² + r₂²)).

How δ(ε) is computed
--------------------
* Equal covariances (Σ_a = Σ_b per pair; ``covariance="equal"``): the privacy profile is the
  analytic Gaussian one (Balle & Wang 2018, Theorem 8) at the Mahalanobis distance
  r = √(dᵀ(Σ + S)⁻¹d), d = μ_a − μ_b, maximised over pairs and θ (δ grows with r). With a sampled
  calibration, r² is the conservative bound of
  :meth:`~bayespriv.calibration.constraints.PairConstraints.mahalanobis_sq` (every difference in
  the confidence box, every covariance above its Loewner lower bound), so the guarantee holds with
  probability ``confidence``; the guarantee names ``equal_covariance``, checked on the samples.
* Unequal covariances (``covariance="unequal"``): the exact privacy loss of two Gaussians with
  different covariances (:func:`bayespriv.privacy.privacy_loss.gaussian_privacy_curve`, an upper
  bound of δ). It uses the calibration's estimates (plug-in), so a sampled calibration's joint
  guarantee is labelled ``estimated_moments`` with no confidence claimed.
* ``covariance="auto"`` (default): ``"equal"`` when every pair's covariances are equal as given
  (exact calibrations such as ``Calibration.from_moments``) or, for a sampled calibration, when the
  ``equal_covariance`` check on its samples does not fail (as the mechanisms decide); else
  ``"unequal"``.

The smallest ε at a given δ is found by bisection on the (decreasing) profile and the upper end of
the final bracket is returned, so the reported ε always meets δ.

Charging the ledger
-------------------
:class:`JointGaussian` is a mechanism-like object the ledger charges once
(``ledger.charge(joint)``, or through :meth:`JointGaussian.release_values`): one release row for
all the values, with the joint (ε, δ) instead of the sum. Its row still carries
``"sequential_composition"``, since it is summed with the budget's *other* releases.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.linalg import block_diag

from bayespriv._validation import (
    check_delta,
    check_epsilon,
    check_finite_array,
    check_real,
    described,
    fail,
    seal_fields,
    sealed,
)
from bayespriv.calibration import Calibration
from bayespriv.calibration.assumptions import check_assumptions
from bayespriv.errors import AssumptionFailedError, ImmutableError, ParameterTypeError, ValidationError
from bayespriv.mechanisms.release_path import release_options
from bayespriv.privacy import ReleaseOptions
from bayespriv.privacy.guarantee import AccountingRecord, Guarantee, Release
from bayespriv.privacy.privacy_loss import gaussian_privacy_curve
from bayespriv.random import RNGLike, spawn_seeds

if TYPE_CHECKING:
    from bayespriv.mechanisms import Mechanism
    from bayespriv.mechanisms.mechanism import LedgerLike
    from numpy.typing import ArrayLike

__all__ = ["JointGaussian", "OutputLaws", "joint_gaussian_laws", "joint_delta", "joint_epsilon"]

THEOREM = ("joint Gaussian mechanism on the stacked query (bayespriv.ledger.composition): outputs "
           "N(μ_a, Σ_a + S) vs N(μ_b, Σ_b + S); δ(ε) by Balle & Wang 2018, Theorem 8 at the Mahalanobis distance "
           "(equal covariances) or by the exact privacy loss of two Gaussians (bayespriv.privacy.privacy_loss)")
COVARIANCE_MODES = ("auto", "equal", "unequal")
#: ε beyond which the bisection gives up (e^ε must stay finite; nothing is promised there anyway).
MAX_SEARCH_EPSILON = 700.0
#: The release flags a joint release reads (clip and accept_unverified belong to one mechanism's release).
JOINT_FLAGS = ("accept_failed_assumptions", "independent")
#: What each member's own release is told: its guarantee is replaced by the joint one, checked beforehand.
_MEMBER_OPTIONS = ReleaseOptions(accept_failed_assumptions=True)


# -- stage 1: the output laws --------------------------------------------------------------------------------


@seal_fields
@dataclass(frozen=True)
class OutputLaws:
    """The two output laws of every (θ, pair) constraint of a joint Gaussian release.

    Attributes
    ----------
    labels : tuple of str
        One per (θ, pair), as in :meth:`Calibration.pair_constraints`.
    equal_covariance : bool
        True: δ is the analytic Gaussian one at :attr:`radius`; False: two Gaussians
        ``N(diff, cov_a)`` vs ``N(0, cov_b)`` per constraint.
    radius : float
        Largest Mahalanobis distance over the constraints (conservative on the calibration's
        event); ``nan`` when ``equal_covariance`` is False.
    diff : ndarray (m, k)
        Mean differences μ_a − μ_b (estimates).
    cov_a, cov_b : ndarray (m, k, k)
        Covariances of the outputs, Σ_a + S and Σ_b + S (estimates).
    noise_cov : ndarray (k, k)
        S, block-diagonal.
    tv_bound : float
        Total variation between the noise actually drawn (the mechanisms' exact grid samplers) and
        N(0, S), summed over the mechanisms: δ grows by (1 + e^ε)·tv_bound (the discretisation
        theorem of :func:`bayespriv.noise.delta_with_discretization`).
    """

    labels: tuple[str, ...]
    equal_covariance: bool
    radius: float
    diff: np.ndarray
    cov_a: np.ndarray
    cov_b: np.ndarray
    noise_cov: np.ndarray
    tv_bound: float = 0.0

    def __post_init__(self) -> None:
        for name in ("diff", "cov_a", "cov_b", "noise_cov"):
            object.__setattr__(self, name, sealed(getattr(self, name), float))


def _covariances_equal(calibration: Calibration) -> bool:
    for m in calibration.members:
        for p in m.pairs:
            if not np.array_equal(m.cov_array[m.index(p.a)], m.cov_array[m.index(p.b)]):
                return False
    return True


def joint_gaussian_laws(calibration: Calibration, noise_cov: Any, *, covariance: str = "auto",
                        tv_bound: float = 0.0) -> OutputLaws:
    """The output laws N(μ_s, Σ_s + S) of a stacked calibration with noise ``S``.

    Parameters
    ----------
    calibration : Calibration
        Of the stacked query (means and full covariances, cross-covariances included).
    noise_cov : array (k, k)
        The joint noise covariance S (block-diagonal for independent mechanisms).
    covariance : {"auto", "equal", "unequal"}
        See the module docstring.
    tv_bound : float >= 0
        Total-variation distance of the drawn noise from N(0, S) (see :class:`OutputLaws`).
    """
    tv = check_real("tv_bound", tv_bound)
    if not (math.isfinite(tv) and 0.0 <= tv < 1.0):
        raise fail("tv_bound", "a finite number in [0, 1)", tv_bound)
    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"stacked_calibration must be a Calibration; got {type(calibration).__name__}")
    S = check_finite_array(noise_cov, "noise_cov", ndim=2)
    if S.shape != (calibration.k, calibration.k):
        raise fail("noise_cov", f"of shape ({calibration.k}, {calibration.k}) like the stacked calibration",
                   described(f"shape {S.shape}"))
    mode = _covariance_mode(calibration, covariance)
    cons = calibration.pair_constraints()
    ia = [(m, m.index(p.a), m.index(p.b)) for m in calibration.members for p in m.pairs]
    cov_a = np.stack([m.cov_array[i] for m, i, _ in ia]) + S
    cov_b = np.stack([m.cov_array[j] for m, _, j in ia]) + S
    radius = math.sqrt(float(np.max(cons.mahalanobis_sq(S)))) if mode == "equal" else math.nan
    return OutputLaws(cons.labels, mode == "equal", radius, cons.diff, cov_a, cov_b, S, tv)


def _covariance_mode(calibration: Calibration, covariance: Any) -> str:
    if covariance not in COVARIANCE_MODES:
        raise fail("covariance", f"one of {COVARIANCE_MODES}", covariance)
    equal = _covariances_equal(calibration)
    if covariance == "auto":
        if equal:
            return "equal"
        if calibration.sample_array is None:
            return "unequal"
        return "unequal" if check_assumptions(calibration, ("equal_covariance",)).failed else "equal"
    if covariance == "equal" and not equal and calibration.sample_array is None:
        raise fail("covariance", "'unequal' or 'auto' for a calibration without samples whose covariances differ "
                   "(nothing could check equal_covariance)", covariance)
    return covariance


# -- stage 2: the privacy profile -------------------------------------------------------------------------------


def joint_delta(laws: OutputLaws, epsilons: ArrayLike) -> np.ndarray:
    """δ(ε) of the joint release for each ε > 0 (an upper bound; the max over constraints).

    Equal covariances: the analytic Gaussian profile at ``laws.radius``, evaluated as two
    unit-variance one-dimensional Gaussians at that distance (its one-dimensional equivalent).
    Unequal covariances: the exact profile of each pair of Gaussians.
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if laws.equal_covariance:
        delta = np.zeros_like(eps) if laws.radius == 0 else gaussian_privacy_curve(eps, [laws.radius], [[1.0]], [[1.0]])
    else:
        curves = [gaussian_privacy_curve(eps, d, a, b) for d, a, b in zip(laws.diff, laws.cov_a, laws.cov_b)]
        delta = np.max(np.stack(curves), axis=0)
    return _with_discretization(delta, eps, laws.tv_bound)


def _with_discretization(delta: np.ndarray, eps: np.ndarray, tv: float) -> np.ndarray:
    """δ + (1 + e^ε)·τ rounded up, capped at 1 (τ = 0: δ unchanged)."""
    if tv == 0:
        return delta
    with np.errstate(over="ignore"):
        out = np.nextafter(delta + (1.0 + np.exp(eps)) * tv, np.inf)
    return np.minimum(out, 1.0)


def _pair_delta(laws: OutputLaws, i: int, epsilon: float) -> float:
    """δ(ε) of constraint ``i`` (unequal covariances), with the discretisation term."""
    eps = np.array([epsilon])
    d = gaussian_privacy_curve(eps, laws.diff[i], laws.cov_a[i], laws.cov_b[i])
    return float(_with_discretization(d, eps, laws.tv_bound)[0])


def _bisect(exceeds: Any, lo: float, rtol: float, delta: float) -> float:
    """Smallest ε > lo with ``exceeds(ε)`` False, for ``exceeds`` True at ``lo`` (or lo = 0) and
    non-increasing; the upper end of the final bracket (where ``exceeds`` was False) is returned."""
    hi = max(1.0, 2.0 * lo)
    while exceeds(hi):
        lo, hi = hi, 2.0 * hi
        if hi > MAX_SEARCH_EPSILON:
            raise fail("delta", f"reachable by the joint release at some ε ≤ {MAX_SEARCH_EPSILON:g} "
                       "(the output laws may have different supports: δ = 1 at every ε)", delta)
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if exceeds(mid):
            lo = mid
        else:
            hi = mid
    return hi


def joint_epsilon(laws: OutputLaws, delta: float, *, rtol: float = 1e-10) -> float:
    """The smallest ε with δ(ε) ≤ ``delta`` (bisection; the upper, conservative end of the bracket).

    With unequal covariances δ(ε) is the max over constraints of non-increasing profiles, so the
    answer is the largest per-constraint ε. The constraints are visited from the likeliest worst
    (largest plug-in Mahalanobis distance); one that already meets δ at the current answer costs one
    evaluation, one that does not moves the answer up by its own bisection. Finally every
    constraint is checked at the answer (so the result never rests on monotonicity alone).

    Raises
    ------
    ValidationError
        When no ε ≤ 700 reaches ``delta`` (e.g. the output laws have different supports: δ = 1).
    """
    target = check_delta(delta)
    if laws.equal_covariance:
        return _bisect(lambda e: joint_delta(laws, e)[0] > target, 0.0, rtol, delta)
    proxy = [float(d @ np.linalg.lstsq((a + b) / 2.0, d, rcond=None)[0])
             for d, a, b in zip(laws.diff, laws.cov_a, laws.cov_b)]
    order = [int(i) for i in np.argsort(proxy)[::-1]]
    best, checked_at = 0.0, {}
    while order:
        for i in order:
            if not (best > 0.0 and _pair_delta(laws, i, best) <= target):
                best = _bisect(lambda e: _pair_delta(laws, i, e) > target, best, rtol, delta)
            checked_at[i] = best  # constraint i meets δ at this ε
        order = [j for j, at in checked_at.items() if at < best]  # final pass: met δ only at a smaller ε
        checked_at = {j: at for j, at in checked_at.items() if at == best}
    return best


# -- stage 3: the mechanism-like object the ledger charges ---------------------------------------------------


class JointGaussian:
    """Gaussian mechanisms released together and accounted as one mechanism on the stacked query.

    Parameters
    ----------
    mechanisms : sequence of Gaussian mechanisms
        Built on calibrations of the single queries, in the order of the stack; each has a
        ``noise_cov`` (Gaussian noise) and the same secret pairs as ``stacked_calibration``.
    stacked_calibration : Calibration
        Of ``bp.stack(q1, q2, ...)``: its means and full covariance, cross-covariances included.
    delta : float, optional
        δ of the joint guarantee; default the sum of the mechanisms' δ (what the ledger would
        otherwise charge), so :attr:`epsilon` compares with :attr:`epsilon_sum` at the same δ.
    covariance : {"auto", "equal", "unequal"}
        How δ(ε) is computed (module docstring).

    Attributes
    ----------
    guarantee : Guarantee
        (ε_joint, δ) on the stacked calibration's pairs and Θ; :attr:`epsilon` is the smallest ε
        meeting δ. A new Guarantee at each access, equal to :attr:`accounting_record`, which is what
        :meth:`Ledger.charge <bayespriv.ledger.Ledger.charge>` spends.
    accounting_record : AccountingRecord
        The joint guarantee as a tuple, fixed at construction.
    epsilon_sum, delta_sum : float
        What summing the mechanisms' guarantees (sequential composition) would charge.
    laws : OutputLaws
        A copy at each access (its arrays sealed).

    Notes
    -----
    Immutable once built (assignment and deletion raise :class:`~bayespriv.errors.ImmutableError`;
    every public attribute is a read-only property). The joint ε is computed once, at
    construction, from private copies of the mechanisms' noise covariances; the noise of a
    release is drawn by each mechanism from its own private sampler.

    Privacy
    -------
    Definition: (ε, δ)-Pufferfish privacy of the vector of all released values for the stacked
    calibration's secret pairs (and every θ of a family). Theorem: the release is one Gaussian
    mechanism N(F(X), S) on the stacked query; under ``gaussian_query`` its outputs are
    N(μ_s, Σ_s + S), whose privacy profile is exact (Balle & Wang 2018, Theorem 8, for equal
    covariances; the exact privacy loss of two Gaussians otherwise). Assumptions:
    ``gaussian_query`` (checked on the samples when there are some), ``equal_covariance`` in the
    equal mode (checked), the calibration's own (``monte_carlo_clt`` / ``estimated_moments``),
    ``estimated_moments`` in the unequal mode with a sampled calibration. The bound on ε is exact
    up to the bisection tolerance (its conservative end is kept).

    Examples
    --------
    >>> joint = JointGaussian([apgm_weight, apgm_bp], stacked_cal)          # doctest: +SKIP
    >>> joint.epsilon, joint.epsilon_sum                                     # doctest: +SKIP
    (1.43, 2.0)
    >>> releases = joint.release_values([w, b], ledger=ledger)  # one row    # doctest: +SKIP
    """

    def __init__(self, mechanisms: Sequence[Any], stacked_calibration: Calibration, *, delta: float | None = None,
                 covariance: str = "auto", accountant: str = "auto") -> None:
        from bayespriv.mechanisms.scale_search import uses_real_law

        mechs = _check_mechanisms(mechanisms, stacked_calibration)
        records = [_record(m) for m in mechs]
        state = self.__dict__
        state["_mechanisms"] = mechs
        state["_calibration"] = stacked_calibration
        state["_epsilon_sum"] = float(sum(r.epsilon for r in records))
        state["_delta_sum"] = float(sum(r.delta for r in records))
        target = check_delta(self._delta_sum if delta is None else delta)
        noise = block_diag(*[_noise_covariance(m) for m in mechs])
        tv = sum(_tv_bound(m) for m in mechs)
        state["_laws"] = joint_gaussian_laws(stacked_calibration, noise, covariance=covariance, tv_bound=tv)
        state["_accounted"] = uses_real_law(stacked_calibration, accountant)
        state["_epsilon"] = self._smallest_epsilon(target)
        state["_delta"] = target
        state["_record"] = AccountingRecord.of(self._guarantee(target))
        state["_frozen"] = True

    def _smallest_epsilon(self, delta: float) -> float:
        """The joint ε at ``delta``: by the accountant of the released law (draws or exact laws) or, for a
        calibration of moments only, the exact Gaussian profile; a leak (no ε up to the search's end meets δ)
        is reported as such."""
        from bayespriv.privacy.accountant import GaussianNoise
        from .joint import JointLeakError, leak_reason, smallest_epsilon

        if self._accounted:
            eps, acc = smallest_epsilon(self._conditions(), GaussianNoise(self._laws.noise_cov), delta,
                                        self._epsilon_sum, self._calibration.confidence)
            if math.isfinite(eps):
                return eps
            found = leak_reason(acc, delta)
        else:
            try:
                return joint_epsilon(self._laws, delta)
            except ValidationError:
                found = "δ = 1 at every ε (the output laws have different supports)"
        raise JointLeakError(f"these releases together reveal the secret: joint ε = ∞ at δ = {delta:g} ({found}); "
                             "add noise to at least one of them, or release fewer of them on this data")

    def _conditions(self) -> Any:
        from bayespriv.calibration.laws import conditions_of

        cache = self.__dict__.get("_conds")
        if cache is None:
            cache = conditions_of(self._calibration)
            self.__dict__["_conds"] = cache
        return cache

    def _guarantee(self, delta: float) -> Guarantee:
        cal = self._calibration
        if self._accounted:
            from bayespriv.privacy.accountant import GaussianNoise, account

            acc = account(self._conditions(), GaussianNoise(self._laws.noise_cov), self._epsilon, confidence=cal.confidence)
            theorem = ("joint release on the stacked query, accounted on the released law "
                       f"(bayespriv.privacy.accountant: {acc.method})")
            return Guarantee(self._epsilon, delta, acc.confidence, tuple(dict.fromkeys(acc.assumptions + cal.assumptions)),
                             theorem)
        laws = self._laws
        checked = ("gaussian_query",) + (("equal_covariance",) if laws.equal_covariance and not cal.exact else ())
        report = check_assumptions(cal, checked)
        extra = ("estimated_moments",) if not laws.equal_covariance and not cal.exact else ()
        assumptions = tuple(dict.fromkeys(checked + cal.assumptions + extra))
        confidence = None if extra else cal.confidence
        return Guarantee(self._epsilon, delta, confidence, assumptions, THEOREM, failed_assumptions=report.failed,
                         unchecked_assumptions=report.unchecked)

    # -- immutability -----------------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"JointGaussian is immutable: its joint ε was computed from the mechanisms' noise at "
                             f"construction; got an assignment to {name!r}. Build a new JointGaussian instead.")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"JointGaussian is immutable; got a deletion of {name!r}")

    @property
    def mechanisms(self) -> tuple[Any, ...]:
        """The mechanisms released together, in the order of the stack."""
        return self._mechanisms

    @property
    def calibration(self) -> Calibration:
        """The stacked calibration."""
        return self._calibration

    @property
    def epsilon(self) -> float:
        """The joint ε: the smallest ε whose δ(ε) meets :attr:`delta` (conservative end of the bisection)."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """δ of the joint guarantee."""
        return self._delta

    @property
    def epsilon_sum(self) -> float:
        """Σ ε of the mechanisms' guarantees (what sequential composition would charge)."""
        return self._epsilon_sum

    @property
    def delta_sum(self) -> float:
        """Σ δ of the mechanisms' guarantees."""
        return self._delta_sum

    @property
    def laws(self) -> OutputLaws:
        """The output laws the joint ε was computed from (a copy: editing it changes nothing here)."""
        return dataclasses.replace(self._laws)

    @property
    def guarantee(self) -> Guarantee:
        """The joint guarantee: a new :class:`Guarantee` at each access, equal to :attr:`accounting_record`."""
        return self._record.guarantee()

    @property
    def accounting_record(self) -> AccountingRecord:
        """What a ledger charges for the joint release, fixed at construction (a tuple)."""
        return self._record

    # -- what the ledger reads ------------------------------------------------------------------------------
    @property
    def composition(self) -> str:
        """``"joint"``: one joint release of the stacked query; the ledger accounts it jointly with every earlier
        release on the same data, and every later one with it (:mod:`bayespriv.ledger.joint`)."""
        return "joint"

    @property
    def noise(self) -> str:
        """``"gaussian"``: the stacked noise is Gaussian (:attr:`noise_cov`)."""
        return "gaussian"

    def _noise_covariance(self) -> np.ndarray:
        """A copy of the stacked noise covariance (what the ledger records for joint accounting)."""
        return np.array(self._laws.noise_cov, dtype=float)

    @property
    def protected(self) -> tuple[str, ...]:
        """Attributes protected by any of the mechanisms (the ledger charges these budgets once)."""
        return tuple(dict.fromkeys(a for m in self.mechanisms for a in m.protected))

    @property
    def variables(self) -> tuple[str, ...]:
        """Columns any of the released values depends on, in order of first appearance."""
        return tuple(dict.fromkeys(v for m in self.mechanisms for v in (getattr(m, "variables", ()) or ())))

    @property
    def noise_cov(self) -> np.ndarray:
        """Covariance of the stacked noise: block-diagonal, one block per mechanism (sealed)."""
        return self._laws.noise_cov

    @property
    def k(self) -> int:
        """Dimension of the stacked query (sum of the mechanisms' k)."""
        return int(self._laws.noise_cov.shape[0])

    # -- the profile ------------------------------------------------------------------------------------------
    def privacy_curve(self, epsilons: ArrayLike) -> np.ndarray:
        """δ(ε) of the joint release for each ε (upper bounds)."""
        eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
        for e in eps:
            check_epsilon(float(e), "epsilons")
        if self._accounted:
            from bayespriv.privacy.accountant import GaussianNoise, PrivacyProfile

            profile = PrivacyProfile(self._conditions(), GaussianNoise(self._laws.noise_cov),
                                     confidence=self._calibration.confidence)
            return profile.curve(eps)
        return joint_delta(self._laws, eps)

    def delta_at(self, epsilon: float) -> float:
        """The joint δ at ``epsilon``."""
        return float(self.privacy_curve([check_epsilon(epsilon)])[0])

    def epsilon_at(self, delta: float) -> float:
        """The smallest joint ε at ``delta`` (conservative end of the search)."""
        return self._smallest_epsilon(check_delta(delta))

    def summary(self) -> pd.DataFrame:
        """ε and δ of each mechanism, of their sum (sequential composition) and of the joint release."""
        rows = [(f"{type(m).__name__}({_query_name(m)})", r.epsilon, r.delta)
                for m, r in zip(self._mechanisms, map(_record, self._mechanisms))]
        rows += [("sum (sequential composition)", self.epsilon_sum, self.delta_sum),
                 ("joint (stacked Gaussian)", self.epsilon, self.delta)]
        return pd.DataFrame(rows, columns=["release", "epsilon", "delta"]).set_index("release")

    # -- release ----------------------------------------------------------------------------------------------
    def release_values(self, answers: Sequence[Any], *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                       dataset_name: str | None = None, options: ReleaseOptions | None = None,
                       **deprecated: Any) -> tuple[Release, ...]:
        """Release every mechanism's value, charging the ledger once with the joint (ε, δ).

        Stages: check the answers and the joint premise (nothing spent on failure); charge the
        ledger once — as one ``"joint"`` release of the stacked query, accounted with every earlier
        release on ``dataset_name`` (None: the ledger's default account; a name or
        ``options=ReleaseOptions(independent=True)`` is a recorded declaration, as in
        :meth:`Mechanism.release <bayespriv.mechanisms.Mechanism.release>`; ``clip`` and
        ``accept_unverified`` do not apply to a joint release);
        draw each mechanism's noise (independent child seeds when ``rng`` is given); on any failure
        after the charge, void the ledger row and re-raise. Each returned :class:`Release` carries the
        *joint* guarantee and the ledger row id.
        """
        dataset_name, options = release_options("JointGaussian.release_values", options, deprecated,
                                                flags=JOINT_FLAGS, dataset_name=dataset_name, renamed=True)
        values = self._check_answers(answers)
        g = self.guarantee
        if g.failed_assumptions and not options.accept_failed_assumptions:
            raise AssumptionFailedError(
                f"the joint guarantee assumes {', '.join(g.failed_assumptions)}, which failed its check on the stacked "
                "calibration's samples; use covariance='unequal', more draws, or "
                "options=ReleaseOptions(accept_failed_assumptions=True)")
        seeds = [None] * len(values) if rng is None else spawn_seeds(rng, len(values))
        charge = (ledger.charge(self, seeded=rng is not None, dataset=dataset_name, independent=options.independent)
                  if ledger is not None else None)
        try:
            out = tuple(self._release_one(m, v, s, getattr(charge, "release_id", None))
                        for m, v, s in zip(self.mechanisms, values, seeds))
        except BaseException as exc:
            if charge is not None:
                ledger.void(charge.release_id, f"joint release failed after the spend: {type(exc).__name__}: {exc}")
            raise
        return out

    def release(self, dataset: pd.DataFrame, *, rng: RNGLike = None, ledger: LedgerLike | None = None,
                dataset_name: str | None = None, options: ReleaseOptions | None = None,
                **deprecated: Any) -> tuple[Release, ...]:
        """Compute each mechanism's query on ``dataset`` and release them all (see :meth:`release_values`)."""
        dataset_name, options = release_options("JointGaussian.release", options, deprecated, flags=JOINT_FLAGS,
                                                dataset_name=dataset_name)
        answers = []
        for m in self.mechanisms:
            q = m.calibration.query
            if q is None:
                raise ValidationError(f"release needs calibrations with a query; {type(m).__name__}'s has none. "
                                      "Use release_values(answers)")
            answers.append(q(dataset))
        return self.release_values(answers, rng=rng, ledger=ledger, dataset_name=dataset_name, options=options)

    def _check_answers(self, answers: Any) -> list[np.ndarray]:
        if isinstance(answers, (str, bytes)) or not isinstance(answers, Sequence) or len(answers) != len(self.mechanisms):
            raise fail("answers", f"a sequence of {len(self.mechanisms)} answers, one per mechanism", answers)
        out = []
        for i, (m, a) in enumerate(zip(self.mechanisms, answers)):
            v = np.atleast_1d(check_finite_array(a, f"answers[{i}]"))
            if v.shape != (m.k,):
                raise fail(f"answers[{i}]", f"of shape ({m.k},) like {type(m).__name__}'s query", described(f"shape {v.shape}"))
            out.append(v)
        return out

    def _release_one(self, mech: Mechanism, value: np.ndarray, seed: RNGLike, release_id: int | None) -> Release:
        # its own guarantee is replaced by the joint one, checked above
        r = mech.release_value(value, rng=seed, options=_MEMBER_OPTIONS)
        changes = {"guarantee": self.guarantee}
        if "ledger_id" in {f.name for f in dataclasses.fields(r)}:
            changes["ledger_id"] = release_id
        return dataclasses.replace(r, **changes)

    def __repr__(self) -> str:
        names = ", ".join(type(m).__name__ for m in self.mechanisms)
        return (f"JointGaussian([{names}], epsilon={self.epsilon:.6g}, delta={self.delta:g}; "
                f"sum would be epsilon={self.epsilon_sum:g}, delta={self.delta_sum:g})")

    def _repr_html_(self) -> str:
        from bayespriv._late import late

        return late("joint_gaussian_html")(self)


def _record(mech: Mechanism) -> Any:
    """What ``mech`` charges: its ``accounting_record`` (fixed at its construction), else its guarantee."""
    record = getattr(mech, "accounting_record", None)
    return mech.guarantee if record is None else record


def _noise_covariance(mech: Mechanism) -> np.ndarray:
    """A private copy of ``mech``'s noise covariance: from the state its sampler was planned from
    (``Mechanism._noise_covariance``), else a copy of ``noise_cov``."""
    private = getattr(mech, "_noise_covariance", None)
    return np.array(private() if callable(private) else mech.noise_cov, dtype=float)


def _tv_bound(mech: Mechanism) -> float:
    """TV distance of ``mech``'s drawn noise from its nominal Gaussian (``Mechanism.noise_tv_bound``)."""
    return float(mech.noise_tv_bound)


def _query_name(mech: Mechanism) -> str:
    q = getattr(getattr(mech, "calibration", None), "query", None)
    return getattr(q, "name", None) or "?"



def _check_mechanisms(mechanisms: Any, stacked: Any) -> tuple[Any, ...]:
    """Gaussian mechanisms whose components and pairs line up with the stacked calibration."""
    if not isinstance(stacked, Calibration):
        raise ParameterTypeError(f"stacked_calibration must be a Calibration; got {type(stacked).__name__}")
    if isinstance(mechanisms, (str, bytes)) or not isinstance(mechanisms, Sequence) or not mechanisms:
        raise fail("mechanisms", "a non-empty sequence of Gaussian mechanisms", mechanisms)
    mechs = tuple(mechanisms)
    for i, m in enumerate(mechs):
        gaussian = getattr(m, "noise", "gaussian") == "gaussian" and getattr(m, "noise_cov", None) is not None
        if not gaussian or getattr(m, "guarantee", None) is None or getattr(m, "calibration", None) is None:
            raise ParameterTypeError(f"mechanisms[{i}] must be a Gaussian mechanism (with noise_cov, guarantee and "
                                     f"calibration); got {type(m).__name__}")
    k = sum(np.asarray(m.noise_cov).shape[0] for m in mechs)
    if stacked.k != k:
        raise fail("stacked_calibration", f"a calibration of the stacked query with {k} components (the sum of the "
                   "mechanisms')", described(f"{stacked.k} components"))
    names = [n for m in mechs for n in m.calibration.component_names]
    if stacked.component_names and len(names) == k and tuple(names) != tuple(stacked.component_names):
        raise fail("stacked_calibration", f"components {tuple(names)!r} in the mechanisms' order",
                   stacked.component_names)
    pairs = {p.label for p in stacked.pairs}
    for i, m in enumerate(mechs):
        if {p.label for p in m.calibration.pairs} != pairs:
            raise fail(f"mechanisms[{i}]", "calibrated for the same secret pairs as stacked_calibration",
                       described(f"{len(m.calibration.pairs)} pairs, not those of the stacked calibration"))
    return mechs
