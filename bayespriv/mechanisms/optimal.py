"""OptimalGaussian: the least total Gaussian noise that Corollary A.1 proves private.

Beyond the papers: where ExpM(G), EigM and DauM choose a noise covariance S by a
formula, this module solves for the S of least trace (total noise variance)
subject to the condition every one of them reduces to (Chen & Ohrimenko 2023,
Corollary A.1), as a small semidefinite program (cvxpy + Clarabel).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import fail
from ..calibration import Calibration, PairConstraints
from ..errors import ValidationError
from .expected_value import (
    SAFETY,
    _box_norms,
    _dau_plan,
    _eig_plan,
    _GaussianConstraintMechanism,
    _noiseless_report,
    _repair,
    certified_mahalanobis_sq,
)

__all__ = ["OptimalGaussian"]

#: Used when ``solver=None``.
DEFAULT_SOLVER = "CLARABEL"


def _check_solver(solver: Any) -> str:
    import cvxpy as cp

    installed = tuple(cp.installed_solvers())
    name = DEFAULT_SOLVER if solver is None else solver
    if not isinstance(name, str) or name.upper() not in installed:
        raise fail("solver", f"None or the name of an installed cvxpy solver {installed!r}", solver)
    return name.upper()


def _solve_sdp(cons: PairConstraints, radius: float, solver: str) -> tuple[np.ndarray | None, str]:
    """Least-trace S ⪰ 0 with [[Σ_i + S, d], [dᵀ, r²]] ⪰ 0 for every constraint i and corner d.

    Scaled for the solver by the congruence diag(D, 1/r) with D = diag(1/√scale_j):
    ``[[D(Σ+S)D, Dd/r], [dᵀD/r, 1]] ⪰ 0``, variable X = DSD, objective
    ``trace(S) = Σ_j X_jj · scale_j`` (weights normalised). Returns (S or None, status).
    """
    import cvxpy as cp

    k = cons.k
    target = radius**2 * (1.0 - SAFETY)
    r = float(np.sqrt(target))
    corners = cons.corners()  # (m, c, k)
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    scale = np.maximum(np.abs(np.diagonal(C, axis1=1, axis2=2)).max(axis=0), (corners**2).max(axis=(0, 1)) / target)
    scale = np.where(scale > 0, scale, 1.0)
    D = 1.0 / np.sqrt(scale)
    weights = scale / scale.max()
    X = cp.Variable((k, k), PSD=True)
    one = np.ones((1, 1))
    lmis = []
    for i in range(len(cons)):
        Ci = (D[:, None] * C[i]) * D[None, :]
        for d in corners[i]:
            if not np.any(d):
                continue
            u = (D * d / r)[:, None]
            lmis.append(cp.bmat([[Ci + X, u], [u.T, one]]) >> 0)
    if not lmis:
        return np.zeros((k, k)), "no constraint"
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(weights, cp.diag(X)))), lmis)
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:  # reported, then the formula mechanisms are used
        return None, f"solver error: {exc}"
    if X.value is None or problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        return None, str(problem.status)
    Xv = (X.value + X.value.T) / 2.0
    S = Xv / np.outer(D, D)
    w, V = np.linalg.eigh((S + S.T) / 2.0)
    return (V * np.clip(w, 0.0, None)) @ V.T, str(problem.status)


class OptimalGaussian(_GaussianConstraintMechanism):
    """Gaussian noise of least total variance that Corollary A.1 proves private.

    Finds the noise covariance S ⪰ 0 of least trace such that

        ``dᵀ(Σ_c + S)⁻¹d ≤ r*²``  for every (θ, pair) constraint c and every
        corner d of its difference box,

    with Σ_c the common Loewner lower bound of the pair's covariances. By the
    Schur complement (Σ_c + S ≻ 0), the condition is the linear matrix
    inequality ``[[Σ_c + S, d], [dᵀ, r*²]] ⪰ 0`` (which, when Σ_c + S is only
    PSD, still gives d ∈ range and dᵀ(Σ_c + S)⁺d ≤ r*²), so the problem is a
    semidefinite program, solved with cvxpy (Clarabel by default).

    The answer is made safe against solver tolerances:

    1. the SDP targets r*²(1 − 1e-9) and its S is projected onto the PSD cone;
    2. it is checked in float64 with :func:`certified_mahalanobis_sq`
       (``pair_constraints().mahalanobis_sq``, discarding indefinite lower
       bounds); if it fails, the smallest t·I making it pass is added
       (bisection; :attr:`repair`);
    3. its trace is compared with EigM's, DauM's (when DauM applies) and
       ExpM(G)'s noise on the same calibration — each valid by its own
       theorem and certified the same way — and the least-trace valid one is
       returned (:attr:`source` says which, :attr:`fallback_reason` why).

    So the trace is never above EigM's, DauM's or ExpM(G)'s. When Theorem 4.4
    already holds, S = 0 without calling the solver.

    For a single constraint the optimum has a closed form (used by the
    tests): Σ + S ⪰ ddᵀ/r*² and S ⪰ 0 give ``tr S ≥ uᵀSu ≥ uᵀ(ddᵀ/r*² − Σ)u``
    for the top eigenvector u, attained by S = (ddᵀ/r*² − Σ)₊, so the least
    trace is ``λ_max(ddᵀ/r*² − Σ)₊`` — rank one, but in general *not* along d
    nor along an eigenvector of Σ (the paper's worked example: 6.17, against
    DauM's 6.78 and EigM's 22.05). With several pairs, members θ or box
    corners there is no closed form, hence the SDP.

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}
    solver : str, optional
        A cvxpy solver name (default ``"CLARABEL"``; ``"SCS"`` works too).
    covariance : {"auto", "equal", "unequal"}
        See :mod:`bayespriv.mechanisms.expected_value`.

    Attributes
    ----------
    source : str
        ``"noiseless"``, ``"solver"``, ``"solver+repair"``, ``"EigM"``,
        ``"DauM"`` or ``"ExpM"``.
    solver_status : str or None
    repair : float
        Multiple of I added to the solver's S (0 when none was needed).
    candidates : dict
        Trace of each valid candidate considered.
    fallback_reason : str or None
    trace : float
    pair_table : DataFrame
        Per (θ, pair): ``noiseless`` dᵀΣ⁻¹d and the achieved ``mahalanobis_sq``.
    worst_theta : dict or None

    Privacy
    -------
    Definition: (ε, δ)-distribution privacy w.r.t. the calibration's pairs.

    Corollary A.1 (Chen & Ohrimenko 2023, appendix A): with F(X) | θ ~
    N(μ_θ, Σ_θ) and independent Z ~ N(0, S), F(X) + Z ~ N(μ_θ, Σ_θ + S), and
    Theorem 4.4 applied to it needs ``dᵀ(Σ_θ + S)⁻¹d ≤ r*²`` for every pair.
    Here it is imposed with Σ_θ replaced by a Loewner lower bound (inverse
    monotonicity makes that conservative) and d by every corner of the
    difference box (the condition is convex in d), so it holds on the
    calibration's event; r* is the analytic radius by default (valid for all
    ε), or ε/c (classic; the paper's proof needs ε ≤ 1). The bound is exact
    for :meth:`Calibration.from_moments`, holds with probability
    ``confidence`` for sampled calibrations, and is a plug-in estimate when
    ``confidence=None``.

    Assumptions: ``gaussian_query`` and, with ``covariance="equal"``,
    ``equal_covariance``; both are checked on the calibration samples (see
    :attr:`assumption_notes`; a failed check is listed in the guarantee and
    release refuses unless ``accept_failed_assumptions=True``).

    Unequal covariances (``covariance="unequal"``, or ``"auto"`` when the
    ``equal_covariance`` check fails): the least-trace S above is the noise
    *shape*, scaled by the smallest factor c meeting (ε, δ) by the exact
    privacy curve over the calibration's confidence box
    (:func:`~bayespriv.mechanisms.privacy_loss.scale_for_delta`), widened by
    an isotropic part if S alone cannot (see :attr:`assumption_notes`);
    ``equal_covariance`` is then not assumed, :attr:`noise_scale_factor` is c
    and :attr:`trace` the trace of the released noise. The result is least
    trace only within that shape, not among all unequal-covariance noises.
    """

    theorem = "OptimalGaussian: least-trace S under Chen & Ohrimenko 2023, Corollary A.1 (Theorem 4.4 + Gaussian noise)"

    def __init__(
        self,
        calibration: Calibration,
        *,
        epsilon: float,
        delta: float,
        gaussian_calibration: str = "analytic",
        solver: str | None = None,
        covariance: str = "auto",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        cons = self._setup(gaussian_calibration, covariance)
        self.solver = _check_solver(solver)
        r2 = self.radius**2
        zero = np.zeros((self.k, self.k))
        report, noiseless = _noiseless_report(cons, self.radius)
        self.noiseless_report = report
        self.solver_status: str | None = None
        self.repair = 0.0
        self.fallback_reason: str | None = None
        self.candidates: dict[str, float] = {}
        if report.holds:
            cov, self.source = zero, "noiseless"
        else:
            cov, self.source = self._optimise(cons, r2)
        cov = self._covariance_noise(cov)
        self.trace = float(np.trace(cov))
        self._set_gaussian(cov)
        worst = int(np.argmax(noiseless)) if len(cons) else 0
        self._finish({"noiseless": noiseless}, worst)

    def _optimise(self, cons: PairConstraints, r2: float) -> tuple[np.ndarray, str]:
        candidates: dict[str, np.ndarray] = {}
        S, self.solver_status = _solve_sdp(cons, self.radius, self.solver)
        solver_source = None
        if S is not None:
            start = max(float(np.trace(S)) / self.k, float((_box_norms(cons) ** 2).max()) / r2) * 1e-9
            try:
                S0 = S
                S, self.repair = _repair(cons, r2, lambda t: S0 + t * np.eye(self.k), start)
                solver_source = "solver+repair" if self.repair > 0 else "solver"
                candidates[solver_source] = S
            except ValidationError as exc:  # pragma: no cover - the fallbacks below are valid
                self.fallback_reason = f"solver result could not be certified: {exc}"
        else:
            self.fallback_reason = f"solver failed ({self.solver_status})"
        # the formula mechanisms, each valid by its theorem; certified (and repaired) as in their classes
        sens2 = float((_box_norms(cons) ** 2).max(initial=0.0)) / r2
        eig = _eig_plan(cons, self.radius)
        V = eig.eigenvectors
        formulas: dict[str, Callable[[float], np.ndarray]] = {
            "EigM": lambda t: (V * (eig.sigma2 + t)) @ V.T,
            "ExpM": lambda t: (sens2 / (1.0 - SAFETY) + t) * np.eye(self.k),
        }
        try:
            dau = _dau_plan(cons, self.radius, None)
            vv = np.outer(dau.direction, dau.direction)
            formulas["DauM"] = lambda t: (dau.sigma2 + t) * vv
        except ValidationError:
            pass
        for name, make in formulas.items():
            try:
                candidates[name] = _repair(cons, r2, make, max(sens2, 1e-300) * 1e-9)[0]
            except ValidationError:  # pragma: no cover - each is valid by its theorem
                pass
        valid = {name: cov for name, cov in candidates.items()
                 if certified_mahalanobis_sq(cons, cov).max(initial=0.0) <= r2}
        self.candidates = {name: float(np.trace(cov)) for name, cov in valid.items()}
        if not valid:  # pragma: no cover - ExpM(G) always certifies
            raise ValidationError("OptimalGaussian: no candidate noise could be certified; please report this calibration")
        best = min(valid, key=lambda n: (self.candidates[n], n != solver_source))
        if solver_source is not None and best != solver_source:
            self.fallback_reason = (
                f"the solver's S (trace {self.candidates.get(solver_source, float('nan')):.6g}) has more trace than "
                f"{best} ({self.candidates[best]:.6g}); {best}'s noise is used"
            )
        return valid[best], best
