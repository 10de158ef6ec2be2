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
(:mod:`~bayespriv.privacy.privacy_loss`); its guarantee names
``gaussian_query`` but not ``equal_covariance``. ``"auto"`` (default) is
``"unequal"`` exactly when the calibration's ``equal_covariance`` check fails
(for exact moments: when the covariances of a pair differ), and ``"equal"``
otherwise — a check that passes or has too few draws to be run keeps the
equal-covariance reduction, named in the guarantee (and reported unchecked
when it had no power).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_choice, check_finite_array, described, fail
from ..calibration import Calibration, PairConstraints
from ..calibration.constraints import MAX_CORNER_DIMS
from ..errors import ValidationError
from .scale_search import account_noise, uses_real_law
from .mechanism import Guarantee, check_gaussian_params, check_noise
from .sampled_moments import SampledMomentMechanism
from .daum_plan import DauPlan, dau_direction, dau_plan
from .dirm_geometry import DirGeometry, best_scales, dirm_theorem, span_basis
from .eigm_plan import EIGENVECTOR_RTOL, eig_plan
from .gaussian_constraint import GaussianConstraintMechanism
from .mahalanobis import (ROUNDING_RTOL, SAFETY, NoiselessReport, box_norms, certified_mahalanobis_sq, noiseless_ok,
                          noiseless_report, repair)
from bayespriv.privacy.analytic_gaussian import GAUSSIAN_CALIBRATIONS

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
    refuses unless ``options=ReleaseOptions(accept_failed_assumptions=True)``). Theorem 4.2 as printed
    needs ε ∈ (0, 1) with the classic constant; the default analytic calibration holds for every ε.

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

    def _compute_guarantee(self) -> Guarantee:
        laplace_theorem = self.noise_kind == "laplace" and self.accounting is None
        return self._guarantee(delta=0.0 if laplace_theorem else None)


class Noiseless(GaussianConstraintMechanism):
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
    refuses unless ``options=ReleaseOptions(accept_failed_assumptions=True)``). Noiseless has no
    unequal-covariance mode: :func:`privacy_curve` reports its true curve.
    Exact for :meth:`Calibration.from_moments`; with probability
    ``confidence`` for sampled calibrations; plug-in otherwise.
    """

    theorem = "Noiseless: Chen & Ohrimenko 2023, Theorem 4.4"

    def __init__(self, calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic",
                 accountant: str = "auto") -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        cons = self._setup(gaussian_calibration, "equal", accountant)
        report, m2 = noiseless_report(cons, self.radius)
        if self.covariance_mode == "accounted":
            self._account_noiseless()
            self.report = report
            self._set_gaussian(np.zeros((self.k, self.k)))
            self._finish({}, int(np.argmax(m2)))
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

    def _account_noiseless(self) -> None:
        """The exact release accounted on the real law: only an exact finite law in one dimension can be."""
        from ..calibration.laws import conditions_of
        from bayespriv.privacy.accountant import account
        from .scale_search import Accounted

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
            {"pair": list(cons.labels), "l2": box_norms(cons), "loss": loss}
        ).set_index("pair")
        self.worst_theta = cons.thetas[worst]
        self.worst_pair = cons.labels[worst]
        d = basis.shape[1]
        self.theorem = dirm_theorem(self.noise_kind, d)
        if self.delta > 0 and d > 0 and uses_real_law(calibration, accountant):
            account_noise(self)
            self.scales = np.sqrt(np.diag(self.directions.T @ self.noise_cov @ self.directions)) \
                if self.noise_kind == "gaussian" else np.array(self._laplace[0])
            self.scales.setflags(write=False)

    def _geometry(self, cons: PairConstraints, directions: Any) -> DirGeometry:
        """The noise directions that carry some difference, and every corner's coordinates along them."""
        corners = cons.corners()  # (m, c, k)
        flat = corners.reshape(-1, self.k)
        basis = self._basis(flat, directions, corners.shape[1])
        coords = corners @ basis  # (m, c, D)
        a = np.abs(coords).reshape(-1, basis.shape[1]).max(axis=0) if basis.shape[1] else np.zeros(0)
        keep = a > 0
        return DirGeometry(basis=basis[:, keep], coords=coords[..., keep], extent=a[keep])

    def _fit_noise(self, geometry: DirGeometry, n_rows: int) -> np.ndarray:
        """Set the scales (Laplace) or variances (Gaussian) along the directions; return each row's loss bound."""
        basis, coords, a = geometry.basis, geometry.coords, geometry.extent
        if self.noise_kind == "laplace":
            target = self.epsilon * (1.0 - SAFETY)
            scales = best_scales(np.abs(coords), a, target, laplace=True)
            self.scales = scales
            self._set_laplace(scales, basis)
            return (np.abs(coords) / scales).sum(axis=2).max(axis=1) if scales.size else np.zeros(n_rows)
        target = self.radius**2 * (1.0 - SAFETY)
        var = best_scales(coords**2, a**2, target, laplace=False)
        self.scales = np.sqrt(var)
        self.sigma2 = var
        self._set_gaussian((basis * var) @ basis.T)
        return (coords**2 / var).sum(axis=2).max(axis=1) if var.size else np.zeros(n_rows)

    def _basis(self, flat: np.ndarray, directions: Any, n_corners: int) -> np.ndarray:
        if directions is None:
            basis = span_basis(flat)
        else:
            arr = check_finite_array(directions, "directions")
            if arr.ndim == 1:
                arr = arr[:, None]
            if arr.ndim != 2 or arr.shape[0] != self.k or arr.shape[1] == 0:
                raise fail("directions", f"an array of shape ({self.k},) or ({self.k}, D) (columns are directions)",
                           described(f"shape {arr.shape}"))
            if np.any(np.linalg.norm(arr, axis=0) == 0):
                raise fail("directions", "non-zero vectors", arr)
            basis = span_basis(arr.T)
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

    def _compute_guarantee(self) -> Guarantee:
        laplace_theorem = self.noise_kind == "laplace" and self.accounting is None
        return self._guarantee(delta=0.0 if laplace_theorem else None)


# ---------------------------------------------------------------------------------------------
# Theorem 4.5: EigM
# ---------------------------------------------------------------------------------------------

class EigM(GaussianConstraintMechanism):
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
    ``options=ReleaseOptions(accept_failed_assumptions=True)``). The paper's common-eigenvector
    assumption is not needed for validity (the Gershgorin credit covers its
    failure).

    Unequal covariances (``covariance="unequal"``, or ``"auto"`` when the
    ``equal_covariance`` check fails): the noise above is the *shape* N; the
    released noise is c·N with c the smallest factor such that the exact
    privacy curve of N(μ_a, Σ_a + cN) vs N(μ_b, Σ_b + cN) meets (ε, δ) for
    every pair, θ and every mean difference and covariance pair of the
    calibration's confidence box (:func:`~bayespriv.privacy.privacy_loss.scale_for_delta`;
    the box search is described in :func:`~bayespriv.privacy.privacy_loss.box_delta`).
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
        plan = eig_plan(cons, self.radius)
        self.eigenvectors = plan.eigenvectors
        self.eigenvalues = plan.eigenvalues
        report, _ = noiseless_report(cons, self.radius)
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
        cov, self.repair = repair(cons, self.radius**2, lambda t: (V * (sigma2 + t)) @ V.T, start)
        self.sigma2 = sigma2 + self.repair
        if self.covariance_mode != "equal":
            cov = self._covariance_noise(cov)
            self.sigma2 = np.diag(V.T @ cov @ V).copy()
        self._set_gaussian(cov)
        worst = int(np.argmax(plan.need.sum(axis=1))) if len(cons) else 0
        self._finish({"sensitivity": plan.sensitivity, "required": plan.required, "credit": list(plan.credit),
                      "offdiag": plan.offdiag}, worst)


# ---------------------------------------------------------------------------------------------
# Algorithm 1 / Theorem A.1: DauM
# ---------------------------------------------------------------------------------------------


class DauM(GaussianConstraintMechanism):
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
    unless ``options=ReleaseOptions(accept_failed_assumptions=True)``), with Σ
    the Loewner lower bound (conservative: (Σ + S)⁻¹ ⪯ (Σ_lo + S)⁻¹) and d
    every corner of the box (the condition is convex in d; beyond 12 uncertain
    components the maxima over the box are certified polynomial upper bounds,
    :mod:`~bayespriv.mechanisms.daum_plan`, so σ² is never below the corner formula's). The parallel
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
        report, _ = noiseless_report(cons, self.radius)
        self.noiseless_report = report
        try:
            plan = dau_plan(cons, self.radius, direction)
        except ValidationError:
            if not report.holds and self.covariance_mode == "equal":
                raise
            # Theorem 4.4 holds (no noise, whatever v) or the unequal-covariance scaling widens the shape
            v, notes = dau_direction(cons, direction)
            m = len(cons)
            alpha = (cons.linear_max(v) if cons.uncertain_dims > MAX_CORNER_DIMS
                     else np.abs(cons.corners() @ v).max(axis=1))
            plan = DauPlan(v, 0.0, np.zeros(m), alpha, np.full(m, np.nan),
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
            cov, self.repair = repair(cons, self.radius**2, lambda t: (plan.sigma2 + t) * vv, start)
            self.sigma2 = plan.sigma2 + self.repair
        self._set_gaussian(cov)
        worst = int(np.argmax(plan.per_pair)) if len(cons) else 0
        self._finish({"alpha": plan.alpha, "credit": plan.credit, "perp": plan.perp, "sigma2": plan.per_pair}, worst)
