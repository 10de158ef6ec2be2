"""The shared set-up of the Gaussian mechanisms built on Corollary A.1 (Chen & Ohrimenko 2023).

:class:`GaussianConstraintMechanism` is the base of :class:`~bayespriv.mechanisms.expected_value.Noiseless`,
:class:`~bayespriv.mechanisms.expected_value.EigM`, :class:`~bayespriv.mechanisms.expected_value.DauM`
and :class:`~bayespriv.mechanisms.optimal.OptimalGaussian`: the Gaussian radius, the pair
constraints, the covariance mode (:mod:`~bayespriv.mechanisms.covariance_modes`) or the accountant
of the released law, the final certification and the per-(θ, pair) table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..calibration import PairConstraints
from ..errors import ValidationError
from .scale_search import accounted_theorem, uses_real_law
from .mechanism import check_gaussian_params
from .sampled_moments import SampledMomentMechanism
from .covariance_modes import choose_covariance_mode, covariance_notes, mechanism_boxes, unequal_noise
from .mahalanobis import certified_mahalanobis_sq
from bayespriv.privacy.privacy_loss import PairBox, box_assumptions, box_delta, privacy_curve

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class GaussianConstraintMechanism(SampledMomentMechanism):
    """Shared set-up of the Gaussian mechanisms built on Corollary A.1, and of
    their unequal-covariance calibration (docstring of :mod:`~bayespriv.mechanisms.expected_value`)."""

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
        self.assumption_notes = covariance_notes(self.constraints)
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
                        "of Gaussians with unequal covariances (bayespriv.privacy.privacy_loss), over the "
                        "calibration's confidence box")
        return cov

    def _boxes(self) -> tuple[PairBox, ...]:
        return mechanism_boxes(self)

    def privacy_curve(self, epsilons: ArrayLike) -> np.ndarray:
        """δ(ε) for each ε: the worst over pairs, θ members and the calibration's
        confidence box of the exact privacy curve of N(μ_a, Σ_a + S) vs
        N(μ_b, Σ_b + S) with this mechanism's noise S, covariances *not*
        assumed equal (:func:`~bayespriv.privacy.privacy_loss.privacy_curve`).
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
