"""The Attribute-Private Gaussian Mechanism (APGM)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..calibration import Calibration
from .base import Mechanism, check_gaussian_params

__all__ = ["APGM"]


class APGM(Mechanism):
    """Attribute-Private Gaussian Mechanism (Algorithm 1 of Zhang, Ohrimenko,
    Yang & Cummings, *Attribute Privacy*, FAccT 2022).

    Adds ``N(0, σ² I)`` with

    ``σ² = max over pairs (a, b) of max(0, (Δ_ab / r*)² − V_ab)``

    where Δ_ab bounds ‖E[F|a] − E[F|b]‖₂, V_ab bounds from below the smallest
    eigenvalue of Cov(F|a) and of Cov(F|b), and r*(ε, δ) is the Gaussian radius
    (:func:`~bayespriv.mechanisms.noise.gaussian_radius`). With
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

    Assumptions: ``gaussian_query`` (F | secret Gaussian) and
    ``equal_covariance`` (the same covariance under both secrets of a pair);
    both are stated, not checked here. Bounds are exact for
    :meth:`Calibration.from_moments`, hold with the calibration's
    ``confidence`` for sampled calibrations, and are plug-in estimates when
    ``confidence=None`` (assumption ``estimated_moments``).

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

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic") -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        self.gaussian_calibration = gaussian_calibration
        self.radius = check_gaussian_params(self, gaussian_calibration)
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
