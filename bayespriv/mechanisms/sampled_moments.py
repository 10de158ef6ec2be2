"""Mechanisms built on sampled moments of F, and their relaxed guarantees.

:class:`SampledMomentMechanism` is the base of the mechanisms calibrated on a
:class:`~bayespriv.Calibration` (moments of the query F under each secret, estimated from draws or
given exactly): APGM, APGMnG, ExpM, DirM, EigM, DauM, OptimalGaussian, Noiseless, the Wasserstein
mechanisms, GroupDP and :class:`WithExtraLaplace`. What they share beyond
:class:`~bayespriv.mechanisms.mechanism.Mechanism`:

* the guarantee names the assumptions of the proof and the calibration's, and lists those whose
  check on the calibration samples failed (:meth:`SampledMomentMechanism.check`,
  :attr:`SampledMomentMechanism.assumption_checks`);
* the relaxations of Chen & Ohrimenko (AISTATS 2023) that replace a distributional assumption by
  Gaussian approximations of F: Theorem 4.6 (:meth:`SampledMomentMechanism.relaxed`,
  :func:`relaxed_parameters`) and Theorem 4.7 (:meth:`SampledMomentMechanism.with_extra_laplace`,
  :class:`WithExtraLaplace`).
"""

from __future__ import annotations

import abc
import math
from typing import Any, ClassVar

import numpy as np

from bayespriv._validation import check_delta, check_epsilon, check_real, fail, sealed
from bayespriv.calibration import Calibration
from bayespriv.calibration.assumptions import (
    CHECKABLE,
    DEFAULT_ALPHA,
    AssumptionReport,
    RelaxationEstimate,
    check_assumptions,
    default_eta,
    estimate_lambda_eta,
    estimate_w_infinity,
)
from bayespriv.errors import ParameterTypeError, ValidationError
from .mechanism import Mechanism, _Fixed
from bayespriv.noise import BitSource, plan_laplace
from bayespriv.privacy.guarantee import Guarantee
from bayespriv.noise.release_noise import ReleaseNoise, noise_of_plans
from .release_path import check_mechanism_epsilon

__all__ = ["SampledMomentMechanism", "WithExtraLaplace", "relaxed_parameters", "meaningful_relaxation",
           "DISTRIBUTIONAL_ASSUMPTIONS"]

#: Assumptions about the law of F that the Gaussian approximations of Theorems 4.6 / 4.7 make unnecessary.
DISTRIBUTIONAL_ASSUMPTIONS = CHECKABLE


class SampledMomentMechanism(Mechanism):
    """A mechanism calibrated on the moments of F under each secret (a :class:`~bayespriv.Calibration`).

    Implements the contract of :class:`~bayespriv.mechanisms.mechanism.Mechanism`: its guarantee is
    (ε, δ) with the assumptions of its proof (:attr:`proof_assumptions`) and the calibration's
    (a subclass with another theorem overrides :meth:`_compute_guarantee`), its noise plan the
    additive noise it set. Adds the assumption checks and the relaxed guarantees below.

    Abstract: ``__init__``. A concrete subclass's constructor calls this one and sets its noise
    (:meth:`_set_gaussian`, :meth:`_set_laplace` or :meth:`_set_isotropic`); the class call then
    freezes the instance (:meth:`_freeze`). This class alone sets no noise and cannot be instantiated.

    Notes
    -----
    Honest assumptions. The assumptions of the proof (:attr:`proof_assumptions`, e.g.
    ``"gaussian_query"``, ``"equal_covariance"``, ``"translation"``) are
    tested on the calibration samples, at construction, when the guarantee is fixed
    (:func:`~bayespriv.calibration.assumptions.check_assumptions`, false-failure
    probability :attr:`assumption_alpha` per assumption; cached per
    calibration). The guarantee keeps every assumption named — a passed test
    is not a proof, and a ``from_moments`` calibration cannot be tested (the
    user vouches) — and lists those whose test failed in
    ``Guarantee.failed_assumptions``; no warning is emitted. Then:

    * :attr:`relaxed_guarantee` / :meth:`relaxed`: Theorem 4.6 of Chen &
      Ohrimenko (AISTATS 2023): (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ) with λ an
      *estimate* of the η-approximate max-divergence between the true laws of
      F and Gaussian approximations for which the mechanism is private
      (assumption ``"estimated_divergence"``), or a λ you supply;
    * :meth:`with_extra_laplace`: Theorem 4.7 (η-trimmed): the same mechanism
      plus Laplace noise of scale W/λ per component, W bounding the
      ∞-Wasserstein distance between the true laws and the approximations
      (a confidence bound for k = 1);
    * :meth:`check` returns the report, or raises with ``strict=True``.

    A guarantee that assumes nothing about the law of F (GroupDP, the Wasserstein mechanisms) has
    nothing to relax: :meth:`relaxed` and :meth:`with_extra_laplace` refuse it.
    """

    #: Assumptions of the mechanism's proof (the calibration's are added).
    proof_assumptions: ClassVar[tuple[str, ...]] = ()
    #: False-failure probability of each assumption check.
    assumption_alpha: ClassVar[float] = DEFAULT_ALPHA

    @abc.abstractmethod
    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float = 0.0) -> None:
        check_mechanism_epsilon(epsilon)  # before any arithmetic on it
        if not isinstance(calibration, Calibration):
            raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
        super().__init__(calibration, epsilon=epsilon, delta=delta)

    def _compute_guarantee(self) -> Guarantee:
        """(ε, δ) with the proof's and the calibration's assumptions, and the outcome of their checks."""
        return self._guarantee()

    def _plan_noise(self) -> Any:
        return self._plan_additive_noise()

    # -- guarantee ---------------------------------------------------------------------
    def _guarantee(self, delta: float | None = None, extra: tuple[str, ...] = ()) -> "Guarantee":
        cal = self.calibration
        accounted = self.__dict__.get("_accounted")
        if accounted is not None:  # the released law's profile meets (ε, δ): no structural premise to check
            # the calibration's moment bounds (and their CLT intervals) only shaped the noise: not relied on
            inherited = tuple(a for a in cal.assumptions if a != "monte_carlo_clt")
            assumptions = tuple(dict.fromkeys(accounted.account.assumptions + extra + inherited))
            return Guarantee(self.epsilon, self.delta if delta is None else delta, accounted.account.confidence,
                             assumptions, self.theorem)
        proof = getattr(self, "_proof_assumptions", self.proof_assumptions)
        assumptions = tuple(dict.fromkeys(tuple(proof) + extra + cal.assumptions))
        failed, unchecked = self._check_outcome(assumptions)
        return Guarantee(self.epsilon, self.delta if delta is None else delta, cal.confidence, assumptions, self.theorem,
                         failed, unchecked)

    def _check_outcome(self, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(failed, unchecked) among the checkable ``names``."""
        checkable = tuple(n for n in names if n in CHECKABLE)
        if not checkable:
            return (), ()
        report = check_assumptions(self.calibration, checkable, alpha=self.assumption_alpha)
        return report.failed, report.unchecked

    # -- the accountant of the released law -------------------------------------------------
    def _account_gaussian(self, shape: np.ndarray) -> np.ndarray:
        """Scale (and floor) a Gaussian noise shape by the accountant (:mod:`~bayespriv.mechanisms.scale_search`);
        returns the noise covariance and records the account."""
        from .scale_search import account_gaussian_shape

        acc = account_gaussian_shape(self, shape)
        self._accounted = acc
        return np.array(acc.noise.cov)

    # -- assumptions and relaxed guarantees ------------------------------------------------
    def _checked_names(self) -> tuple[str, ...]:
        if self.__dict__.get("_accounted") is not None:  # diagnostics: the premises the noise shape came from
            return tuple(n for n in self.proof_assumptions if n in CHECKABLE)
        named = self.guarantee.assumptions
        proof = tuple(getattr(self, "_proof_assumptions", self.proof_assumptions))
        return tuple(dict.fromkeys(proof + tuple(n for n in named if n in CHECKABLE)))

    @property
    def assumption_checks(self) -> AssumptionReport:
        """The checks of the proof's assumptions on the calibration samples
        (computed lazily, cached per calibration)."""
        return check_assumptions(self.calibration, self._checked_names(), alpha=self.assumption_alpha)

    def check(self, *, strict: bool = False, alpha: float | None = None) -> AssumptionReport:
        """Check the proof's assumptions on the calibration samples.

        Parameters
        ----------
        strict : bool
            Raise :class:`~bayespriv.ValidationError` when a check fails.
        alpha : float, optional
            False-failure probability per assumption (default
            :attr:`assumption_alpha`); does not change :attr:`guarantee`.

        Returns
        -------
        AssumptionReport
            Shows as a table in notebooks; ``.summary()`` is a DataFrame.
        """
        report = check_assumptions(self.calibration, self._checked_names(),
                                   alpha=self.assumption_alpha if alpha is None else alpha)
        if strict and report.failed:
            worst = {c.name: c for c in report.checks if c.holds is False}
            details = "; ".join(f"{n} (p={worst[n].p_value:.3g} for {worst[n].subject})" if worst[n].p_value is not None
                                else f"{n} ({worst[n].subject})" for n in report.failed)
            raise ValidationError(
                f"assumptions of {type(self).__name__}'s proof must hold on the calibration samples; got failed checks at "
                f"alpha={report.alpha:g}: {details}. The nominal guarantee is not established; relaxed_guarantee gives "
                "Theorem 4.6's fallback and with_extra_laplace(...) Theorem 4.7's."
            )
        return report

    def _lambda_estimate(self, eta: float, confidence: float) -> RelaxationEstimate:
        cache = self.__dict__.setdefault("_lambda_cache", {})
        key = (eta, confidence)
        if key not in cache:
            cache[key] = estimate_lambda_eta(self.calibration, eta, confidence=confidence)
        return cache[key]

    def relaxed(self, eta: float | None = None, *, lambda_eta: float | None = None, confidence: float = 0.95) -> Guarantee:
        """Theorem 4.6 of Chen & Ohrimenko (AISTATS 2023): the guarantee without
        the distributional assumptions.

        With Gaussian approximations f̃ for which this mechanism is (ε, δ)-private
        (N(μ̂_a, C_ab), N(μ̂_b, C_ab), C_ab = (Σ̂_a + Σ̂_b)/2, see
        :mod:`bayespriv.calibration.assumptions`), if
        max(D^η_∞(f ‖ f̃), D^η_∞(f̃ ‖ f)) ≤ λ for every secret, the mechanism is
        (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ)-private.

        Parameters
        ----------
        eta : float in (0, 1), optional
            Default :func:`~bayespriv.calibration.assumptions.default_eta`
            (max(δ, 500/n_draws)).
        lambda_eta : float ≥ 0, optional
            A bound you vouch for (assumption ``"divergence_bound_given"``);
            otherwise λ is *estimated* from the calibration samples
            (:func:`~bayespriv.calibration.assumptions.estimate_lambda_eta`,
            assumption ``"estimated_divergence"``: an estimate, not a bound).
        confidence : float
            Level of the Monte-Carlo margins of the estimate.

        Returns
        -------
        Guarantee

        Raises
        ------
        ValidationError
            When the relaxed guarantee would promise nothing (δ' ≥ 1, or no
            finite λ at this η from these draws): refused, never returned.
        ValidationError
            When the guarantee assumes none of ``gaussian_query``,
            ``equal_covariance``, ``translation`` (nothing to relax), or λ must
            be estimated from a calibration without samples.

        Notes
        -----
        Paper notes (appendix B.4): the proof's step "f_θ(t) ≤ e^λ f̃_θ(t) + η"
        mixes a density with a probability; the conclusion
        P(M_f ∈ S) ≤ e^λ P(M_f̃ ∈ S) + η holds anyway, since D^η_∞ ≤ λ means
        E_f[g] ≤ e^λ E_f̃[g] + η for every g with values in [0, 1] (integrate the
        set inequality over the level sets of g). Its "Similarly" line should
        read Pr(M_f̃θj ∈ S) ≤ e^λ Pr(M_fθj ∈ S) + η (θ_j on both sides).
        """
        nominal = self.guarantee
        _require_distributional(self, nominal)
        cal = self.calibration
        eta = default_eta(cal, nominal.delta) if eta is None else check_delta(eta, "eta")
        lam, label = self._divergence(eta, lambda_eta, confidence)
        eps, delta = meaningful_relaxation(*relaxed_parameters(nominal.epsilon, nominal.delta, lam, eta), eta=eta, lam=lam)
        assumptions = tuple(a for a in nominal.assumptions if a not in DISTRIBUTIONAL_ASSUMPTIONS) + (label,)
        theorem = f"Chen & Ohrimenko 2023, Theorem 4.6 (η={eta:g}, λ_η={lam:.4g}) applied to {nominal.theorem}"
        return Guarantee(eps, delta, nominal.confidence, assumptions, theorem)

    def _divergence(self, eta: float, lambda_eta: float | None, confidence: float) -> tuple[float, str]:
        """λ_η and how it was obtained: estimated from the calibration samples,
        or given by the user (then it is their bound)."""
        if lambda_eta is None:
            return self._lambda_estimate(eta, confidence).value, "estimated_divergence"
        return check_nonnegative(lambda_eta, "lambda_eta"), "divergence_bound_given"

    @property
    def relaxed_guarantee(self) -> Guarantee:
        """:meth:`relaxed` at the default η (estimated λ_η; needs calibration samples)."""
        return self.relaxed()

    def with_extra_laplace(self, lam: float, *, eta: float | None = None, confidence: float = 0.95,
                           w_infinity: float | None = None) -> "WithExtraLaplace":
        """Theorem 4.7 of Chen & Ohrimenko (AISTATS 2023), η-trimmed: this
        mechanism plus Laplace noise Lap(W/λ) on every component.

        See :class:`WithExtraLaplace` for W, η and the guarantee
        (ε + 2λ, e^λ δ + (1 + e^{ε+λ})η).
        """
        return WithExtraLaplace(self, lam, eta=eta, confidence=confidence, w_infinity=w_infinity)


def _require_distributional(mech: Mechanism, nominal: Guarantee) -> None:
    """Theorems 4.6 / 4.7 replace a distributional assumption by Gaussian approximations
    for which the mechanism is private; a guarantee resting on none has nothing to relax
    (and its mechanism is not known to be private for the approximations)."""
    if not any(a in DISTRIBUTIONAL_ASSUMPTIONS for a in nominal.assumptions):
        raise ValidationError(
            f"a relaxed guarantee (Chen & Ohrimenko 2023, Theorems 4.6 / 4.7) must be asked of a mechanism whose "
            f"guarantee assumes one of {DISTRIBUTIONAL_ASSUMPTIONS}; got {type(mech).__name__}, whose guarantee "
            f"assumes {nominal.assumptions or 'nothing'}"
        )


def check_nonnegative(value: Any, name: str) -> float:
    v = check_real(name, value)
    if not (math.isfinite(v) and v >= 0):
        raise fail(name, "a finite number >= 0", value)
    return v


def meaningful_relaxation(epsilon: float, delta: float, *, eta: float, lam: float) -> tuple[float, float]:
    """Refuse a relaxed (ε', δ') that promises nothing (δ' ≥ 1 or ε' infinite)."""
    if not math.isfinite(epsilon) or delta >= 1.0:
        raise ValidationError(
            f"the relaxed guarantee promises nothing: with eta={eta:g} and λ_η={lam:.4g} it is (ε={epsilon:g}, "
            f"δ={delta:g}), which every mechanism satisfies, so it guarantees nothing. Draw more samples (λ_η shrinks), "
            "choose another eta, or use a calibration that does not need the relaxation.")
    return epsilon, delta


def relaxed_parameters(epsilon: float, delta: float, lam: float, eta: float) -> tuple[float, float]:
    """(ε', δ') = (ε + 2λ, (1 + e^{ε+λ})η + e^λ δ), Theorem 4.6 of Chen & Ohrimenko 2023.

    δ' is capped at 1 (vacuous); λ = inf gives (inf, 1).
    """
    if not math.isfinite(lam):
        return math.inf, 1.0
    try:
        d = (1.0 + math.exp(epsilon + lam)) * eta + math.exp(lam) * delta
    except OverflowError:
        d = math.inf
    return epsilon + 2.0 * lam, float(min(1.0, d))


class WithExtraLaplace(SampledMomentMechanism):
    """A mechanism plus Laplace noise that pays for a wrong distributional
    assumption (Theorem 4.7 of Chen & Ohrimenko, AISTATS 2023, η-trimmed).

    Built by :meth:`SampledMomentMechanism.with_extra_laplace`. Releases
    ``base(F) + Z'`` with Z'_c ~ Lap(W/λ) i.i.d. on every component.

    Privacy
    -------
    Definition: (ε', δ')-Pufferfish privacy for the base mechanism's pairs.

    Theorem 4.7 (paper; proof in its B.5, via Lemma B.1): if M = F + Z is
    (ε, δ)-private for approximations f̃_θ, and W ≥ W∞(f_θ, f̃_θ) for the L1
    norm, then M + Z' is (ε + 2λ, e^λ δ)-private. Between a Gaussian f̃ and a
    law with lighter or bounded tails W∞ is infinite, so we use the trimmed
    version the paper's closing remark allows: W bounds |X − Y| under a
    coupling except on probability η, which gives
    D^η_∞(M_f + Z' ‖ M_f̃ + Z') ≤ λ (both ways) and, chained as in
    Theorem 4.6, (ε' , δ') = (ε + 2λ, e^λ δ + (1 + e^{ε+λ})η).

    W: for each Gaussian approximation N(μ̂_s, C_ab) and component, the
    η/k-trimmed W∞ of the quantile coupling, bounded with DKW bands
    (:func:`~bayespriv.calibration.assumptions.estimate_w_infinity`), summed
    over components (L1). For k = 1 this is a confidence bound (the
    guarantee's confidence is lowered by 1 − ``confidence``); for k > 1 the
    sum couples the joint laws only if their copulas agree (assumption
    ``"componentwise_coupling"``). ``w_infinity=`` replaces the estimate by a
    value you vouch for (assumption ``"w_infinity_given"``).

    Attributes
    ----------
    base : Mechanism
    lam : float
    eta : float
    w_infinity : float
    extra_scale : float
        W/λ.
    """

    proof_assumptions: ClassVar[tuple[str, ...]] = ()
    base = _Fixed("the mechanism whose noise is drawn first")

    def __init__(self, base: Mechanism, lam: float, *, eta: float | None = None, confidence: float = 0.95,
                 w_infinity: float | None = None) -> None:
        if not isinstance(base, Mechanism):
            raise ParameterTypeError(f"base must be a bayespriv Mechanism; got {type(base).__name__}")
        super().__init__(base.calibration, epsilon=base.epsilon, delta=base.delta)
        self.base = base
        self.lam = check_epsilon(lam, "lam")
        nominal = base.guarantee
        _require_distributional(base, nominal)
        self._nominal = nominal
        cal = base.calibration
        if w_infinity is None:
            self.eta = (default_eta(cal, nominal.delta, kind="w_infinity", confidence=confidence) if eta is None
                        else check_delta(eta, "eta"))
            est = estimate_w_infinity(cal, self.eta, confidence=confidence)
            if not math.isfinite(est.value):
                raise fail("eta", f"large enough for {cal.n_draws} draws to bound W∞ (η/(2k) above the DKW half-width)",
                           self.eta)
            self.w_infinity = est.value
            self._w_label = None if est.rigorous else "componentwise_coupling"
            self._confidence_loss = 1.0 - float(confidence)
        else:
            self.eta = 0.0 if eta is None else check_delta(eta, "eta", allow_zero=True)
            self.w_infinity = check_nonnegative(w_infinity, "w_infinity")
            self._w_label = "w_infinity_given"
            self._confidence_loss = 0.0
        self.extra_scale = self.w_infinity / self.lam
        self._gaussian_cov = base._gaussian_cov
        self._laplace = base._laplace
        self.theorem = f"Chen & Ohrimenko 2023, Theorem 4.7 (η-trimmed, η={self.eta:g}, W={self.w_infinity:.4g}) on {nominal.theorem}"
        meaningful_relaxation(*relaxed_parameters(nominal.epsilon, nominal.delta, self.lam, self.eta), eta=self.eta,
                              lam=self.lam)

    @property
    def requested(self) -> tuple[float, float]:
        """What the caller asked for by relaxing the base with λ (Theorem 4.7): its relaxed (ε', δ')."""
        return relaxed_parameters(self._nominal.epsilon, self._nominal.delta, self.lam, self.eta)

    @property
    def noise(self) -> str:
        """The base mechanism's noise plus Laplace, e.g. ``"gaussian+laplace"``."""
        return f"{self.base.noise}+laplace"

    @property
    def noise_cov(self) -> np.ndarray:
        return sealed(self.base.noise_cov + 2.0 * self.extra_scale**2 * np.eye(self.k))

    @property
    def noise_scale(self) -> np.ndarray | None:
        """None: the noise is a sum (see ``base.noise_scale`` and ``extra_scale``)."""
        return None

    @property
    def noise_basis(self) -> np.ndarray | None:
        return None

    @property
    def expected_abs_error(self) -> np.ndarray:
        """E|noise| per component of the sum: the base's noise plus Lap(b), b = ``extra_scale``.

        With base noise N(0, s²) on a component, E|G + L| = E[m(L)] where m(l) = E|G + l| is the folded
        normal mean s√(2/π)·e^(−l²/2s²) + l·(1 − 2Φ(−l/s)), integrated against the Laplace density by
        adaptive quadrature (absolute error below 1e-12 of the scale). With axis-aligned base Laplace noise
        of scale a: E|L₁ + L₂| = b + a²/(a + b) (closed form). Rotated base Laplace noise has no such
        per-component form and is refused with a ValidationError.
        """
        b = float(self.extra_scale)
        base = np.asarray(self.base.expected_abs_error, dtype=float)
        if b == 0.0:
            return sealed(base)
        if self._laplace is not None:
            return sealed(b + base**2 / (base + b))
        sd = np.sqrt(np.clip(np.diag(self._gaussian_cov), 0, None))
        return sealed(np.array([gaussian_plus_laplace_abs_mean(float(x), b) for x in sd]))

    def _compute_guarantee(self) -> Guarantee:
        nominal = self._nominal
        eps, delta = relaxed_parameters(nominal.epsilon, nominal.delta, self.lam, self.eta)
        assumptions = tuple(a for a in nominal.assumptions if a not in DISTRIBUTIONAL_ASSUMPTIONS)
        if self._w_label is not None:
            assumptions += (self._w_label,)
        conf = nominal.confidence
        if conf is not None and self._confidence_loss:
            conf = round(max(0.0, conf - self._confidence_loss), 12)
        return Guarantee(eps, delta, conf, assumptions, self.theorem)

    def relaxed(self, eta: float | None = None, *, lambda_eta: float | None = None, confidence: float = 0.95) -> Guarantee:
        """Already relaxed: returns :attr:`guarantee`."""
        return self.guarantee

    def _plan_noise(self) -> Any:
        """The base mechanism's exact sampler, then the extra Laplace noise's (see :meth:`_apply_noise`)."""
        extra = plan_laplace(np.full(self.k, self.extra_scale), np.eye(self.k)) if self.extra_scale > 0 else None
        self.__dict__["_extra_plan"] = extra
        return self.base.__dict__.get("_noise_plan")

    def _discretized(self, g: Guarantee) -> Guarantee:
        return g  # the nominal guarantee is the base's, discretization included; the extra plan keeps ε

    def _release_noise(self) -> ReleaseNoise:
        """The base mechanism's noise plus the extra Laplace noise, drawn independently."""
        return noise_of_plans(self.k, self.__dict__.get("_noise_plan"), self.__dict__.get("_extra_plan"))

    def _apply_noise(self, value: np.ndarray, bits: BitSource) -> np.ndarray:
        """Base noise (exact sampler), then the extra Laplace noise added to that private output by
        its own exact plan — whose pointwise ratio bound is Theorem 4.7's premise."""
        out = self.base._apply_noise(value, bits)
        extra = self.__dict__.get("_extra_plan")
        return out if extra is None else np.array(extra.release(out, bits))

    def _draw_noise(self, gen: np.random.Generator) -> np.ndarray:
        out = self.base._draw_noise(gen)
        if self.extra_scale > 0:
            out = out + gen.laplace(0.0, self.extra_scale, size=self.k)
        return out

    def __repr__(self) -> str:
        return f"WithExtraLaplace({self.base!r}, lam={self.lam:g}, eta={self.eta:g}, extra_scale={self.extra_scale:.4g})"


def gaussian_plus_laplace_abs_mean(sd: float, scale: float) -> float:
    """E|G + L| for independent G ~ N(0, sd²) and L ~ Lap(scale), scale > 0 (adaptive quadrature).

    By symmetry E|G + L| = ∫₀^∞ m(l) e^(−l/b)/b dl with m(l) = E|G + l| the folded normal mean.

    Examples
    --------
    >>> round(gaussian_plus_laplace_abs_mean(0.0, 2.0), 12)  # E|Lap(b)| = b
    2.0
    """
    from scipy import integrate, special

    if sd == 0.0:
        return float(scale)

    def folded(l: float) -> float:
        return sd * math.sqrt(2.0 / math.pi) * math.exp(-0.5 * (l / sd) ** 2) + l * float(special.erf(l / (sd * math.sqrt(2.0))))

    value, _ = integrate.quad(lambda t: folded(scale * t) * math.exp(-t), 0.0, math.inf, epsabs=1e-13, epsrel=1e-12)
    return float(value)
