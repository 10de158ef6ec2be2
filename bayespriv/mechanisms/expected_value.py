"""The Expected Value mechanism family of Chen & Ohrimenko (AISTATS 2023)."""

from __future__ import annotations

from ..calibration import Calibration
from .base import Mechanism

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
        self._set_isotropic(
            noise, calibration.sensitivity(1, bound=True), calibration.sensitivity(2, bound=True), gaussian_calibration
        )
        self.theorem = {
            "laplace": "ExpM(L): Chen & Ohrimenko 2023, Theorem 4.1",
            "gaussian": "ExpM(G): Chen & Ohrimenko 2023, Theorem 4.2",
        }[self.noise_kind]

    @property
    def guarantee(self):
        return self._guarantee(delta=0.0 if self.noise_kind == "laplace" else None)
