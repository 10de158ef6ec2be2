"""The Attribute-Private Gaussian Mechanism (APGM) and its non-Gaussian variant (APGMnG)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .._validation import check_delta
from ..calibration import Calibration
from ..calibration.assumptions import RelaxationEstimate, estimate_lambda_eta
from ..errors import ValidationError
from .mechanism import Guarantee, check_gaussian_params
from .sampled_moments import SampledMomentMechanism, check_nonnegative, relaxed_parameters
from bayespriv.privacy.analytic_gaussian import gaussian_radius
from .covariance_modes import choose_covariance_mode, mechanism_boxes, unequal_noise
from .scale_search import accounted_theorem, uses_real_law
from bayespriv.privacy.privacy_loss import PairBox, box_assumptions, privacy_curve

__all__ = ["APGM", "APGMnG"]


class APGM(SampledMomentMechanism):
    """Attribute-Private Gaussian Mechanism (Algorithm 1 of Zhang, Ohrimenko,
    Yang & Cummings, *Attribute Privacy*, FAccT 2022).

    Adds ``N(0, σ² I)`` with

    ``σ² = max over pairs (a, b) of max(0, (Δ_ab / r*)² − V_ab)``

    where Δ_ab bounds ‖E[F|a] − E[F|b]‖₂, V_ab bounds from below the smallest
    eigenvalue of Cov(F|a) and of Cov(F|b), and r*(ε, δ) is the Gaussian radius
    (:func:`~bayespriv.privacy.analytic_gaussian.gaussian_radius`). With
    ``gaussian_calibration="classic"``, r* = ε/c and for k = 1 this is
    Algorithm 1's ``(cΔF/ε)² − Var(F | g(X))``.

    Privacy
    -------
    Definition: (ε, δ)-dataset (or distributional) attribute privacy, i.e.
    (ε, δ)-Pufferfish privacy for the calibration's pairs and Θ (Definition 4).

    Theorem 1 (paper; proof in its Appendix D): if F(X) | secret is Gaussian
    with the same covariance Σ under both secrets of a pair, the output is
    N(μ_s, Σ + σ²I); since dᵀ(Σ + σ²I)⁻¹d ≤ ‖d‖²/(λ_min(Σ) + σ²) ≤ r*², the two
    outputs are (ε, δ)-indistinguishable. For k > 1 this is the paper's
    suggested extension (L2 sensitivity, conditional covariance), made
    conservative through λ_min.

    Per θ (families): Pufferfish privacy is one condition per θ ∈ Θ and per
    secret pair, so σ² is the maximum over (θ, pair) rows of
    ``(Δ_row/r*)² − V_row`` with Δ and V of the same row (:meth:`Calibration.pair_constraints`);
    the unequal-covariance scale likewise meets every (θ, pair) box — never a sensitivity taken over all θ combined with
    the variance of another θ. Valid because each row is exactly one of the
    definition's conditions; never more noise than that mixed rule.

    Assumptions: ``gaussian_query`` (F | secret Gaussian) and, with
    ``covariance="equal"``, ``equal_covariance`` (the same covariance under
    both secrets of a pair). Both are checked on the calibration samples
    (:mod:`bayespriv.calibration.assumptions`; exactly for ``from_moments``):
    a failed check is listed in ``Guarantee.failed_assumptions`` and release
    refuses unless ``options=ReleaseOptions(accept_failed_assumptions=True)``; a check without power
    is reported unchecked. Bounds are exact for
    :meth:`Calibration.from_moments`, hold with the calibration's
    ``confidence`` for sampled calibrations, and are plug-in estimates when
    ``confidence=None`` (assumption ``estimated_moments``).

    Unequal covariances (``covariance="unequal"``, or ``"auto"`` — the
    default — when the ``equal_covariance`` check fails, e.g. for exact
    moments whose covariances differ): the noise keeps APGM's shape σ²I and
    σ² is the smallest value such that the exact privacy curve of
    N(μ_a, Σ_a + σ²I) vs N(μ_b, Σ_b + σ²I) meets (ε, δ) for every pair, θ and
    every mean difference and covariance pair in the calibration's
    confidence box (:func:`~bayespriv.privacy.privacy_loss.scale_for_delta`;
    exact: one point). The guarantee then names ``gaussian_query`` but not
    ``equal_covariance``. For example (means 0 vs 1, variances 1 vs 25,
    ε = 1, δ = 1e-3): σ² = 5.63 under equal covariance (true δ 0.24), 98.26
    here.

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}
        Radius r* of the equal-covariance calibration.
    covariance : {"auto", "equal", "unequal"}

    Attributes
    ----------
    sigma2 : float
        Noise variance per component.
    covariance_mode : {"equal", "unequal"}
    noise_scale_factor : float
        σ² relative to the equal-covariance σ² (1.0 in ``"equal"`` mode; the
        unequal σ² itself when the equal one is 0).
    pair_table : DataFrame
        Per (θ, pair) of the equal-covariance formula.

    Notes
    -----
    The paper takes the maximum sensitivity and the minimum variance over
    *all* pairs separately; taking both per pair is never more noise and still
    proves privacy, because the definition is a per-pair condition. The two
    coincide when one pair is worst for both (as in §4.2).

    Paper erratum (§4.2): the stated pair set a ∈ (.25, .5), b ∈ (.5, .75) has
    diameter d(U) = 0.5, yet the reported sensitivities use d(U) = 0.25; and the
    reported Var(F₁ | s) = 4.5 = 15²/50 omits the height term 3.5²·σ_h²/n of the
    weight's variance. The third query's σ² = 0.00022 is reported as "no noise".
    """

    theorem = "APGM: Zhang et al. 2022, Algorithm 1 / Theorem 1"
    proof_assumptions = ("gaussian_query", "equal_covariance")

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic",
                 covariance: str = "auto", accountant: str = "auto") -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self._set_apgm_noise(calibration, gaussian_calibration)
        self.noise_scale_factor = 1.0
        self.accountant = accountant
        if uses_real_law(calibration, accountant):
            self._set_accounted_noise()
        else:
            self.covariance_mode = choose_covariance_mode(self, covariance)
            if self.covariance_mode == "unequal":
                self._set_unequal_noise()

    def _set_accounted_noise(self) -> None:
        """Stage 2 (real law): keep the shape σ²I, scale it by the accountant of the released law."""
        self.covariance_mode = "accounted"
        cov = self._account_gaussian(np.eye(self.k) * max(self.sigma2, 0.0) if self.sigma2 > 0 else np.zeros((self.k, self.k)))
        acc = self._accounted
        self.noise_scale_factor = acc.factor**2
        self.sigma2 = float(np.trace(cov)) / self.k
        self.theorem = accounted_theorem(APGM.theorem, acc)
        self._set_gaussian(cov)

    def _set_unequal_noise(self) -> None:
        """Stage 2 (unequal covariances): scale the shape I by the exact privacy curve."""
        self._proof_assumptions = ("gaussian_query",) + box_assumptions(self._boxes())
        cov, scale, _ = unequal_noise(self, np.eye(self.k), self._boxes())
        self.noise_scale_factor = scale / self.sigma2 if self.sigma2 > 0 else scale
        self.sigma2 = float(scale)
        self.theorem = (f"{APGM.theorem} — as noise shape σ²I only; σ² = {self.sigma2:.6g} from the exact privacy curve "
                        "of Gaussians with unequal covariances (bayespriv.privacy.privacy_loss), over the "
                        "calibration's confidence box")
        self._set_gaussian(cov)

    def _boxes(self) -> tuple[PairBox, ...]:
        return mechanism_boxes(self)

    def privacy_curve(self, epsilons) -> np.ndarray:
        """δ(ε) for each ε: the worst over pairs, θ members and the calibration's
        confidence box of the exact privacy curve of N(μ_a, Σ_a + S) vs
        N(μ_b, Σ_b + S) with this mechanism's noise S, covariances *not*
        assumed equal (:func:`~bayespriv.privacy.privacy_loss.privacy_curve`;
        F | secret assumed Gaussian)."""
        if self.accounting is not None:
            return self._accounted_curve(epsilons)
        return privacy_curve(epsilons, self._boxes(), self.noise_cov)

    def _set_apgm_noise(self, calibration: Calibration, gaussian_calibration: str, radius: float | None = None) -> None:
        """Algorithm 1's σ² (per pair, conservative), shared with :class:`APGMnG` (which passes its inner radius)."""
        self.gaussian_calibration = gaussian_calibration
        self.radius = check_gaussian_params(self, gaussian_calibration)
        if radius is not None:
            self.radius = radius
        cons = calibration.pair_constraints()
        delta_ab = np.linalg.norm(cons.upper, axis=1)
        lam = np.minimum(np.linalg.eigvalsh(cons.cov_a)[:, 0], np.linalg.eigvalsh(cons.cov_b)[:, 0])
        v_ab = np.maximum(lam, 0.0)  # a covariance is PSD: a negative lower bound only means "no credit"
        sigma2 = np.where(delta_ab == 0, 0.0, np.maximum(0.0, (delta_ab / self.radius) ** 2 - v_ab))
        self.pair_table = pd.DataFrame(
            {"pair": cons.labels, "sensitivity": delta_ab, "variance": v_ab, "sigma2": sigma2}
        ).set_index("pair")
        worst = int(np.argmax(sigma2))
        #: θ of the constraint that sets the noise (for families).
        self.worst_theta = cons.thetas[worst]
        self.sigma2 = float(sigma2[worst])
        self._set_gaussian(self.sigma2 * np.eye(self.k))


class APGMnG(APGM):
    """Attribute-Private Gaussian Mechanism for non-Gaussian data (Algorithm 2 of
    Zhang, Ohrimenko, Yang & Cummings, *Attribute Privacy*, arXiv version).

    The noise has APGM's shape (:class:`APGM`), calibrated at an inner
    (ε₀, δ₀) chosen so that the relaxed guarantee is exactly the (ε, δ) asked
    for: with λ = λ_η the η-approximate max-divergence between the laws of F
    and their Gaussian approximations,

        ε₀ = ε − 2λ,   δ₀ = (δ − (1 + e^{ε₀+λ}) η) / e^λ,

    and the mechanism refuses when ε₀ ≤ 0 or δ₀ ≤ 0 (saying how many draws the
    default η would need). The Gaussian approximations (Algorithm 2: "choose a
    Gaussian approximation for each secret ... with constant variance") are,
    for each pair, f̃_a = N(μ̂_a, C_ab) and f̃_b = N(μ̂_b, C_ab) with
    C_ab = (Σ̂_a + Σ̂_b)/2 — chosen per pair rather than per attribute, which
    the proof allows because privacy is a per-pair condition.

    Parameters
    ----------
    calibration : Calibration
        With samples (built by :func:`~bayespriv.calibrate`), unless
        ``lambda_eta`` is given.
    epsilon, delta : float
        The guarantee asked for.
    eta : float in (0, 1), optional
        η of the η-approximate max-divergence. Default: a quarter of the δ
        budget, ``δ / (4(1 + e^ε))``, which the estimator of λ_η can support
        only with about ``500/η`` draws (otherwise the mechanism refuses and
        says how many).
    lambda_eta : float ≥ 0, optional
        A bound on the divergence you vouch for; otherwise estimated.
    divergence_confidence : float
        Level of the Monte-Carlo margins of the λ_η estimate.
    gaussian_calibration : {"analytic", "classic"}

    Privacy
    -------
    Definition: (ε, δ)-dataset (or distributional) attribute privacy, i.e.
    Pufferfish privacy for the calibration's pairs and Θ.

    Theorem 3 (arXiv version): if 𝒟^η(f_s, f̃_s) = max(D^η(f_s ‖ f̃_s),
    D^η(f̃_s ‖ f_s)) ≤ λ_η for every secret s (and θ), APGMnG is
    (ε + 2λ_η, e^{λ_η}δ + η)-private. **Erratum**: that δ' is not proven (the
    proof treats "𝒟^η ≤ λ" as an event of probability 1 − η) and is false in
    general: take λ = 0, f̃_a = f̃_b (so no noise is needed), f_a = f̃_a with
    mass η moved into a set R of f̃-mass η, and f_b = f̃_b with R's mass moved
    out; both divergences are ≤ 0 at η, yet P(output ∈ R | a) = 2η while
    P(output ∈ R | b) = 0, so δ' ≥ 2η > η (checked in the tests). We use the
    proven chain of Chen & Ohrimenko (AISTATS 2023, Theorem 4.6):

        ε' = ε₀ + 2λ_η,   δ' = e^{λ_η} δ₀ + (1 + e^{ε₀+λ_η}) η,

    with (ε₀, δ₀) chosen so that (ε', δ') is the request. APGM's noise at
    (ε₀, δ₀) makes the approximations (ε₀, δ₀)-indistinguishable
    deterministically: ‖μ̂_a − μ̂_b‖ is at most the calibration's sensitivity
    bound and λ_min(C_ab) ≥ the variance APGM credits.

    Assumptions: ``estimated_divergence`` — λ_η is an **estimate** from the
    calibration samples (:func:`~bayespriv.calibration.assumptions.estimate_lambda_eta`:
    binned hockey-stick divergences with Monte-Carlo margins and the tails
    charged in full; the density ratio inside a bin cannot be seen from
    draws, so it is not a bound). With ``lambda_eta=`` it is replaced by
    ``divergence_bound_given``. The calibration's own assumptions are
    inherited. No Gaussian-query or equal-covariance assumption remains.
    Most calibrations are better served by :class:`APGM`, whose default
    accountant needs no Gaussian approximation at all.
    """

    theorem = "APGMnG: Zhang et al. (arXiv), Algorithm 2 / Theorem 3, δ' per Chen & Ohrimenko 2023 Theorem 4.6"
    proof_assumptions = ()

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float,
        eta: float | None = None,
        lambda_eta: float | None = None,
        divergence_confidence: float = 0.95,
        gaussian_calibration: str = "analytic",
    ) -> None:
        SampledMomentMechanism.__init__(self, calibration, epsilon=epsilon, delta=delta)
        if lambda_eta is None and any(m.sample_array is None for m in calibration.members):
            raise ValidationError(
                "calibration must carry samples (built by calibrate) for APGMnG to estimate λ_η; got one without "
                "samples (from_moments). Pass lambda_eta= (a bound on the η-approximate max-divergence you vouch for)."
            )
        self.eta = self._default_eta() if eta is None else check_delta(eta, "eta")
        self.divergence_confidence = float(divergence_confidence)
        #: The λ_η estimate (None when ``lambda_eta`` was given).
        self.lambda_estimate: RelaxationEstimate | None = None
        if lambda_eta is None:
            self._check_draws_for_eta(calibration)
            self.lambda_estimate = estimate_lambda_eta(calibration, self.eta, confidence=divergence_confidence)
            self.lambda_eta = float(self.lambda_estimate.value)
            self._divergence_label = "estimated_divergence"
        else:
            self.lambda_eta = check_nonnegative(lambda_eta, "lambda_eta")
            self._divergence_label = "divergence_bound_given"
        #: The inner (ε₀, δ₀) at which APGM's noise is calibrated.
        self.inner_epsilon, self.inner_delta = self._inner_parameters()
        self._set_apgm_noise(calibration, gaussian_calibration,
                             radius=gaussian_radius(self.inner_epsilon, self.inner_delta, gaussian_calibration))

    def _default_eta(self) -> float:
        """A quarter of the δ budget: η = δ/(4(1 + e^ε))."""
        return self._noise_delta / (4.0 * (1.0 + math.exp(min(self.epsilon, 700.0))))

    def _check_draws_for_eta(self, calibration: Calibration) -> None:
        n = min(int(m.sample_array.shape[1]) for m in calibration.members)
        need = int(math.ceil(500.0 / self.eta))
        if n < need:
            raise ValidationError(
                f"APGMnG cannot meet (epsilon={self.epsilon:g}, delta={self.delta:g}) from {n} draws: estimating λ_η at "
                f"eta={self.eta:.3g} needs about 500/eta = {need} draws per secret (got {n}). Draw more, pass a larger "
                "eta= with a larger delta, give lambda_eta= you can vouch for, or use APGM (its accountant needs no "
                "Gaussian approximation)")

    def _inner_parameters(self) -> tuple[float, float]:
        """(ε₀, δ₀) with ε₀ + 2λ = ε and e^λ δ₀ + (1 + e^{ε₀+λ}) η = δ (less the sampler's reserve); refuse when impossible."""
        lam, eta = self.lambda_eta, self.eta
        eps0 = self.epsilon - 2.0 * lam
        if not eps0 > 0:
            raise ValidationError(f"APGMnG cannot meet epsilon={self.epsilon:g}: the estimated λ_η = {lam:.4g} at "
                                  f"eta={eta:.3g} already costs 2λ = {2 * lam:.4g}. Draw more (λ_η shrinks) or ask a "
                                  "larger epsilon")
        delta0 = (self._noise_delta - (1.0 + math.exp(min(eps0 + lam, 700.0))) * eta) / math.exp(lam)
        if not delta0 > 0:
            raise ValidationError(f"APGMnG cannot meet delta={self.delta:g}: eta={eta:.3g} alone costs "
                                  f"(1 + e^(ε₀+λ))·η = {(1.0 + math.exp(eps0 + lam)) * eta:.3g}. Use a smaller eta "
                                  "(with more draws) or ask a larger delta")
        return eps0, min(delta0, 0.5)

    def _compute_guarantee(self) -> Guarantee:
        cal = self.calibration
        assumptions = tuple(dict.fromkeys((self._divergence_label,) + cal.assumptions))
        return Guarantee(self.epsilon, self.delta, cal.confidence, assumptions,
                         f"{self.theorem} (η={self.eta:.3g}, λ_η={self.lambda_eta:.4g}, inner ε₀={self.inner_epsilon:.4g}, "
                         f"δ₀={self.inner_delta:.3g})")

    def relaxed(self, eta: float | None = None, *, lambda_eta: float | None = None, confidence: float | None = None) -> Guarantee:
        """The guarantee of the same noise at another η (λ_η re-estimated) or with a given λ_η:
        (ε₀ + 2λ, e^λ δ₀ + (1 + e^{ε₀+λ})η) — explicitly weaker or stronger than the one asked for."""
        if eta is None and lambda_eta is None:
            return self.guarantee
        eta = self.eta if eta is None else check_delta(eta, "eta")
        conf = self.divergence_confidence if confidence is None else confidence
        lam, label = self._divergence(eta, lambda_eta, conf)
        eps, delta = relaxed_parameters(self.inner_epsilon, self.inner_delta, lam, eta)
        cal = self.calibration
        return Guarantee(eps, delta, cal.confidence, tuple(dict.fromkeys((label,) + cal.assumptions)),
                         f"{self.theorem} (η={eta:g}, λ_η={lam:.4g})")

    def __repr__(self) -> str:
        return (f"APGMnG(epsilon={self.epsilon:g}, delta={self.delta:g}, eta={self.eta:.3g}, "
                f"lambda_eta={self.lambda_eta:.4g}, sigma2={self.sigma2:.4g}, k={self.k})")
