"""The Expected Value mechanism family of Chen & Ohrimenko (AISTATS 2023)."""

from __future__ import annotations

import numpy as np

from ..calibration import Calibration
from .base import Mechanism, check_gaussian_params, check_noise

__all__ = ["ExpM"]


class ExpM(Mechanism):
    """Expected Value Mechanism: noise scaled to the largest mean difference.

    * ``noise="laplace"`` (Theorem 4.1): adds Lap(Δ_{E,1}/ε) to each
      component; (ε, 0)-distribution privacy.
    * ``noise="gaussian"`` (Theorem 4.2): adds N(0, σ²I) with
      σ = Δ_{E,2} / r*(ε, δ); (ε, δ)-distribution privacy.

    Δ_{E,p} = sup over pairs of ‖E[f_θi] − E[f_θj]‖_p (here the calibration's
    conservative bound, or the estimate for a plug-in calibration).

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy w.r.t. the calibration's pairs
    (Pufferfish with secrets θ_i, θ_j).

    Theorems 4.1 / 4.2 (Chen & Ohrimenko 2023, proofs in appendix B.2): if
    f_θi is a translation of f_θj for every pair, the output distributions
    differ by a shift of norm ≤ Δ_{E,p}, so the Laplace / Gaussian mechanism of
    differential privacy applies. Assumption: ``translation`` (stated, not
    checked here). Theorem 4.2 as printed needs ε ∈ (0, 1) with the classic
    constant; the default analytic calibration holds for every ε.
    """

    proof_assumptions = ("translation",)

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float = 0.0,
        noise: str = "gaussian",
        gaussian_calibration: str = "analytic",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self.noise_kind = check_noise(noise)
        self.gaussian_calibration = gaussian_calibration
        k = self.k
        if noise == "laplace":
            self.sensitivity = calibration.sensitivity(1, bound=True)
            self._set_laplace(np.full(k, self.sensitivity / self.epsilon), np.eye(k))
            self.theorem = "ExpM(L): Chen & Ohrimenko 2023, Theorem 4.1"
        else:
            self.radius = check_gaussian_params(self, gaussian_calibration)
            self.sensitivity = calibration.sensitivity(2, bound=True)
            self.sigma = self.sensitivity / self.radius
            self._set_gaussian(self.sigma**2 * np.eye(k))
            self.theorem = "ExpM(G): Chen & Ohrimenko 2023, Theorem 4.2"

    @property
    def guarantee(self):
        return self._guarantee(delta=0.0 if self.noise_kind == "laplace" else None)
