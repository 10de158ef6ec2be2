"""Privacy curves: what an (ε, δ) statement about a released law is, and how it is computed.

This stage knows laws and noise, never a mechanism: mechanisms ask it for the δ(ε) of the law they
release and for the noise scale that meets a request.

* :class:`Guarantee` — what is promised, at which confidence, under which named assumptions;
  :class:`Release` — what a release hands out; :class:`ReleaseOptions` — the opt-ins and
  declarations a release is made with (:mod:`.guarantee`).
* :func:`gaussian_radius`, :func:`gaussian_sigma` — r*(ε, δ) of the analytic (Balle & Wang 2018) or
  classic Gaussian mechanism, computed once for every mechanism (:mod:`.analytic_gaussian`).
* :func:`gaussian_delta`, :func:`gaussian_privacy_curve` — exact δ(ε) of two Gaussians with unequal
  covariances (:mod:`.privacy_loss`, :mod:`.loss_reduction`, :mod:`.loss_inversion`,
  :mod:`.hockey_stick`).
* :func:`account`, :func:`scale_to_delta` — the accountant: δ(ε) of the law actually released (sampled
  draws of F plus the noise), with confidence bounds that cover what the draws cannot show, and
  :class:`PrivacyProfile` — the same at many ε for one noise, its ε-free work made once
  (:mod:`.accountant`; the estimators in :mod:`.mixture_1d`, :mod:`.mixture_mc`, :mod:`.finite_exact`,
  :mod:`.kernel_sums`, :mod:`.gauss_cells`, :mod:`.draw_bounds`, :mod:`.certified`); :class:`WeightedAtoms` — a finite law
  as weighted atoms, checked once, as the Monte-Carlo estimator takes it (:mod:`.mixture_mc`).
"""

from . import privacy_loss
from .accountant import PrivacyAccount, PrivacyProfile, account, scale_to_delta
from .analytic_gaussian import (
    GAUSSIAN_CALIBRATIONS,
    analytic_gaussian_log_delta,
    classic_constant,
    gaussian_radius,
    gaussian_sigma,
)
from .guarantee import Guarantee, Release, ReleaseOptions
from .mixture_mc import WeightedAtoms
from .privacy_loss import gaussian_delta, gaussian_privacy_curve

__all__ = [
    "Guarantee",
    "Release",
    "ReleaseOptions",
    "GAUSSIAN_CALIBRATIONS",
    "gaussian_radius",
    "gaussian_sigma",
    "classic_constant",
    "analytic_gaussian_log_delta",
    "privacy_loss",
    "gaussian_delta",
    "gaussian_privacy_curve",
    "WeightedAtoms",
    "PrivacyAccount",
    "account",
    "PrivacyProfile",
    "scale_to_delta",
]
