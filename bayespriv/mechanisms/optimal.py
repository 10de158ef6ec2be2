"""OptimalGaussian: the least total Gaussian noise that Corollary A.1 proves private.

Beyond the papers: where ExpM(G), EigM and DauM choose a noise covariance S by a
formula, this module solves for the S of least trace (total noise variance)
subject to the condition every one of them reduces to (Chen & Ohrimenko 2023,
Corollary A.1), as a small semidefinite program (cvxpy + Clarabel).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import fail
from ..calibration import Calibration, PairConstraints
from ..calibration.constraints import MAX_CORNER_DIMS, box_quadratic_max
from ..errors import ValidationError
from .daum_plan import dau_plan
from .eigm_plan import eig_plan
from .gaussian_constraint import GaussianConstraintMechanism
from .mahalanobis import SAFETY, box_norms, certified_mahalanobis_sq, noiseless_report, repair

__all__ = ["OptimalGaussian", "box_mahalanobis_sq_bound"]

#: Used when ``solver=None``.
DEFAULT_SOLVER = "CLARABEL"


def _check_solver(solver: Any) -> str:
    import cvxpy as cp

    installed = tuple(cp.installed_solvers())
    name = DEFAULT_SOLVER if solver is None else solver
    if not isinstance(name, str) or name.upper() not in installed:
        raise fail("solver", f"None or the name of an installed cvxpy solver {installed!r}", solver)
    return name.upper()


#: Relative margin below r*² targeted by the S-procedure SDP beyond ``MAX_CORNER_DIMS``
#: uncertain components. There the float64 certificate is the same relaxation as the SDP
#: (no corner slack), so the solver's own tolerance (~1e-6 relative measured) would
#: otherwise fail certification and trigger a repair bisection; 1e-5 more noise avoids it.
BOX_SOLVER_MARGIN = 1e-5

#: ``solver_status`` when the one-constraint closed form is used (no solver call).
CLOSED_FORM = "closed form (one constraint, exact difference)"


def _solve_sdp(cons: PairConstraints, radius: float, solver: str) -> tuple[np.ndarray | None, str]:
    """The least-trace S for ``cons``, before certification: the closed form for one
    constraint with an exact difference (:func:`_closed_form`), else one SDP with one
    S-procedure LMI per constraint (:func:`_solve_sdp_box`). Returns (S or None, status)."""
    target = radius**2 * (1.0 - SAFETY)
    if len(cons) == 1 and cons.exact_difference:
        return _closed_form(cons.diff[0], cons.cov_common[0], target), CLOSED_FORM
    return _solve_sdp_box(cons, radius, solver)


def _closed_form(d: np.ndarray, cov: np.ndarray, target: float) -> np.ndarray:
    """Least-trace S ⪰ 0 with ``Σ + S ⪰ ddᵀ/r²``: ``S = (ddᵀ/r² − Σ)₊``.

    Feasible: with M = ddᵀ/r² − Σ = M₊ − M₋, ``Σ + M₊ − ddᵀ/r² = M₋ ⪰ 0``.
    Optimal: for any feasible S, with P the projector on M's positive
    eigenspace, ``tr S ≥ tr PSP ≥ tr PMP = tr M₊`` (S ⪰ 0 and S ⪰ M). When Σ ⪰ 0,
    M has at most one positive eigenvalue (rank-one update) and ``tr S = λ_max(M)₊``.
    With r² > 0, ``Σ + S ⪰ ddᵀ/r²`` is the Schur form of
    ``[[Σ + S, d], [dᵀ, r²]] ⪰ 0``, i.e. ``dᵀ(Σ + S)⁺d ≤ r²`` with d in the range.
    """
    if not np.any(d):
        return np.zeros_like(cov)
    M = np.outer(d, d) / target - (cov + cov.T) / 2.0
    w, V = np.linalg.eigh((M + M.T) / 2.0)
    return (V * np.clip(w, 0.0, None)) @ V.T


def _scaling(cons: PairConstraints, C: np.ndarray, target: float) -> np.ndarray:
    """Per-component scale (k,) for the solver: the largest of |Σ_jj| and (|d̂_j| + h_j)²/r²."""
    scale = np.maximum(np.abs(np.diagonal(C, axis1=1, axis2=2)).max(axis=0), (cons.upper**2).max(axis=0) / target)
    return np.where(scale > 0, scale, 1.0)


def _solve_sdp_box(cons: PairConstraints, radius: float, solver: str) -> tuple[np.ndarray | None, str]:
    """Least-trace S ⪰ 0 such that, for every constraint i, some λ ∈ ℝᵘ (u uncertain components) gives

        ``[[Σ_i + S, H_i, d̂_i], [H_iᵀ, diag(λ), 0], [d̂_iᵀ, 0, r² − Σ_j λ_j]] ⪰ 0``

    with H_i the columns of ``diag(half_width_i)`` of its uncertain components.

    Sound for the box (S-procedure): the Schur complement with respect to
    A = Σ_i + S gives, for every v ∈ [−1, 1]ᵘ and d = d̂_i + H_i v,
    ``r² − dᵀA⁺d ≥ Σ_j λ_j (1 − v_j²) ≥ 0`` (λ ⪰ 0 by the diagonal block), so
    Corollary A.1's condition holds on the whole box, not only at its corners;
    λ_j = λ is the enclosing ellipsoid ``Σ_j v_j² ≤ u``. It is a relaxation of the
    2ᵘ corner LMIs (never less noise than they need), one LMI of size k + u + 1
    per constraint, and identical to the corner LMI when the difference is exact.
    Scaled for the solver by the congruence ``diag(D, I/r, 1/r)``, D = diag(1/√scale)
    and μ = λ/r² (variable X = DSD, objective Σ_j X_jj·scale_j, weights normalised).

    Beyond ``MAX_CORNER_DIMS`` uncertain components with the default solver, the program is
    solved by :func:`_solve_structured` (a primal–dual interior point that forms only the
    Schur matrix on (svec X, μ), ~10× faster than Clarabel at k = 50), and by cvxpy if it fails.
    """
    import cvxpy as cp

    k = cons.k
    large = cons.uncertain_dims > MAX_CORNER_DIMS
    target = radius**2 * (1.0 - (BOX_SOLVER_MARGIN if large else SAFETY))
    r = float(np.sqrt(target))
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    scale = _scaling(cons, C, target)
    D = 1.0 / np.sqrt(scale)
    rows = [i for i in range(len(cons)) if np.any(cons.upper[i])]
    if not rows:
        return np.zeros((k, k)), "no constraint"
    Cs = [(D[:, None] * C[i]) * D[None, :] for i in rows]
    gs = [D * cons.diff[i] / r for i in rows]
    hs = [D * cons.half_width[i] / r for i in rows]
    status = ""
    if large and solver == DEFAULT_SOLVER:
        S, status = _solve_structured(Cs, gs, hs, scale / scale.max(), D)
        if S is not None:
            return S, status
        status += "; "
    X = cp.Variable((k, k), PSD=True)
    lmi = _reduced_sprocedure_lmi if large else _sprocedure_lmi
    lmis = [lmi(cp, X, Ci, g, h) for Ci, g, h in zip(Cs, gs, hs)]
    flat = [c for item in lmis for c in (item if isinstance(item, list) else [item])]
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(scale / scale.max(), cp.diag(X)))), flat)
    S, solved = _finish_solve(cp, problem, X, D, solver)
    return S, status + solved


def _sprocedure_lmi(cp: Any, X: Any, Ci: np.ndarray, g: np.ndarray, h: np.ndarray) -> Any:
    """The scaled LMI ``[[Ci + X, G, g], [Gᵀ, diag(μ), 0], [gᵀ, 0, 1 − Σμ]] ⪰ 0`` (G = diag(h), uncertain columns)."""
    k = Ci.shape[0]
    cols = np.flatnonzero(h > 0)
    u = cols.size
    one = np.ones((1, 1))
    gcol = g[:, None]
    if u == 0:
        return cp.bmat([[Ci + X, gcol], [gcol.T, one]]) >> 0
    G = np.zeros((k, u))
    G[cols, np.arange(u)] = h[cols]
    mu = cp.Variable(u)
    corner = cp.reshape(1 - cp.sum(mu), (1, 1), order="C")
    return cp.bmat([[Ci + X, G, gcol], [G.T, cp.diag(mu), np.zeros((u, 1))],
                    [gcol.T, np.zeros((1, u)), corner]]) >> 0


def _reduced_sprocedure_lmi(cp: Any, X: Any, Ci: np.ndarray, g: np.ndarray, h: np.ndarray) -> list[Any]:
    """The scaled S-procedure LMI of :func:`_sprocedure_lmi` with its diagonal block eliminated
    (used beyond ``MAX_CORNER_DIMS`` uncertain components: PSD cones of size k + 1 instead of 2k + 1).

    With w_j = h_j²/μ_j (μ_j > 0 on uncertain columns), the Schur complement with respect to
    diag(μ) turns ``[[Ci + X, G, g], [Gᵀ, diag(μ), 0], [gᵀ, 0, 1 − Σμ]] ⪰ 0`` into
    ``[[Ci + X − diag(w), g], [gᵀ, s]] ⪰ 0`` with ``s + Σ_j h_j²/w_j ≤ 1`` (GᵀG... G = diag(h):
    G diag(μ)⁻¹ Gᵀ = diag(h²/μ) = diag(w); Σμ = Σ h²/w): the same feasible set of X, convex
    (h²/w is convex for w > 0, a rotated second-order cone), far fewer PSD variables.
    """
    k = Ci.shape[0]
    cols = np.flatnonzero(h > 0)
    gcol = g[:, None]
    w = cp.Variable(cols.size, nonneg=True)
    s = cp.Variable()
    E = np.zeros((k, cols.size))
    E[cols, np.arange(cols.size)] = 1.0
    block = Ci + X - E @ cp.diag(w) @ E.T
    return [cp.bmat([[block, gcol], [gcol.T, cp.reshape(s, (1, 1), order="C")]]) >> 0,
            s + cp.sum(cp.multiply(h[cols] ** 2, cp.inv_pos(w))) <= 1]


def _finish_solve(cp: Any, problem: Any, X: Any, D: np.ndarray, solver: str) -> tuple[np.ndarray | None, str]:
    """Solve; unscale ``S = X/(DDᵀ)`` and project onto the PSD cone."""
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


# --- structured interior point for the reduced S-procedure SDP (beyond MAX_CORNER_DIMS) -------------

#: Relative duality gap (and primal residual) at which :func:`_interior_point` stops.
IPM_TOL = 1e-8

#: Fraction of the largest step to the boundary of the PSD cones taken per iteration.
IPM_STEP = 0.98


@dataclass(frozen=True)
class _BoxLMIs:
    """The scaled S-procedure SDP in dual form: minimise cᵀy over y = (svec X, μ_1, μ_2, …) with

    ``Z_0 = X ⪰ 0`` and, per constraint i, ``Z_i = F_i + [[X, 0, 0], [0, diag(μ_i), 0], [0, 0, −Σμ_i]] ⪰ 0``,
    ``F_i = [[C_i, G_i, g_i], [G_iᵀ, 0, 0], [g_iᵀ, 0, 1]]`` (the LMI of :func:`_sprocedure_lmi`).
    """

    k: int
    F0: tuple[np.ndarray, ...]     # F_i, one per constraint
    mu_slices: tuple[slice, ...]   # where μ_i sits in y
    weights: np.ndarray            # objective weight of each X_jj
    rows: np.ndarray               # X_ab variables, a ≤ b
    cols: np.ndarray

    @property
    def n_vars(self) -> int:
        return self.rows.size + sum(s.stop - s.start for s in self.mu_slices)


def _box_lmis(Cs: list, gs: list, hs: list, weights: np.ndarray) -> _BoxLMIs:
    k = Cs[0].shape[0]
    rows, cols = np.triu_indices(k)
    F0, slices, start = [], [], rows.size
    for C, g, h in zip(Cs, gs, hs):
        u = np.flatnonzero(h > 0)
        B = np.zeros((k + u.size + 1, k + u.size + 1))
        B[:k, :k] = C
        B[u, k + np.arange(u.size)] = B[k + np.arange(u.size), u] = h[u]
        B[:k, -1] = B[-1, :k] = g
        B[-1, -1] = 1.0
        F0.append(B)
        slices.append(slice(start, start + u.size))
        start += u.size
    return _BoxLMIs(k, tuple(F0), tuple(slices), np.asarray(weights, dtype=float), rows, cols)


def _lmi_objective(L: _BoxLMIs) -> np.ndarray:
    c = np.zeros(L.n_vars)
    c[:L.rows.size] = np.where(L.rows == L.cols, L.weights[L.rows], 0.0)
    return c


def _lmi_assemble(L: _BoxLMIs, y: np.ndarray, constant: bool = True) -> list[np.ndarray]:
    """The blocks ``[Z_0, Z_1, …]`` at y (without the constant F_i when ``constant=False``)."""
    X = np.zeros((L.k, L.k))
    X[L.rows, L.cols] = X[L.cols, L.rows] = y[:L.rows.size]
    out = [X]
    for B, s in zip(L.F0, L.mu_slices):
        Z = B.copy() if constant else np.zeros_like(B)
        Z[:L.k, :L.k] += X
        idx = L.k + np.arange(s.stop - s.start)
        Z[idx, idx] += y[s]
        Z[-1, -1] -= y[s].sum()
        out.append(Z)
    return out


def _lmi_adjoint(L: _BoxLMIs, R: list[np.ndarray]) -> np.ndarray:
    """``(Σ_blocks tr(F_j R))_j`` for symmetric blocks R (F_j: the coefficient of y_j)."""
    top = R[0] + sum(Rb[:L.k, :L.k] for Rb in R[1:])
    out = np.empty(L.n_vars)
    out[:L.rows.size] = np.where(L.rows == L.cols, 1.0, 2.0) * top[L.rows, L.cols]
    for Rb, s in zip(R[1:], L.mu_slices):
        idx = L.k + np.arange(s.stop - s.start)
        out[s] = Rb[idx, idx] - Rb[-1, -1]
    return out


def _lmi_schur(L: _BoxLMIs, P: list[np.ndarray], Zi: list[np.ndarray]) -> np.ndarray:
    """The HKM Schur matrix ``M_jl = Σ_blocks tr(F_j P F_l Z⁻¹)``, vectorised.

    X–X part: ``K[(a,b),(c,d)] = Σ_blocks P_ac Z⁻¹_bd`` (one GEMM), then gathered at (a,b),(b,a) ×
    (c,d),(d,c); X–μ and μ–μ parts from the entries of F_μ = E_mm − E_nn (n the last row)."""
    k, nx = L.k, L.rows.size
    Ps = np.stack([Pb[:k, :k] for Pb in P]).reshape(len(P), k * k)
    Zs = np.stack([Zb[:k, :k] for Zb in Zi]).reshape(len(P), k * k)
    K = (Ps.T @ Zs).reshape(k, k, k, k).transpose(0, 2, 1, 3).reshape(k * k, k * k)
    a, b = L.rows, L.cols
    ia, ib = a * k + b, b * k + a
    v = np.where(a == b, 0.5, 1.0)
    K2 = K[ia] + K[ib]
    M = np.zeros((L.n_vars, L.n_vars))
    M[:nx, :nx] = (v[:, None] * v[None, :]) * (K2[:, ia] + K2[:, ib])
    for Pb, Zb, s in zip(P[1:], Zi[1:], L.mu_slices):
        m = k + np.arange(s.stop - s.start)
        if m.size == 0:
            continue
        Y = Pb[:k, m][:, None, :] * Zb[m, :k].T[None, :, :]  # Y[x, z, j] = P[x, m_j] Z⁻¹[m_j, z]
        yn = Pb[:k, -1][:, None] * Zb[-1, :k][None, :]
        M[:nx, s] = v[:, None] * (Y[b, a] + Y[a, b] - (yn[b, a] + yn[a, b])[:, None])
        M[s, :nx] = M[:nx, s].T
        M[s, s] = (Pb[np.ix_(m, m)] * Zb[np.ix_(m, m)].T - (Pb[m, -1] * Zb[-1, m])[:, None]
                   - (Pb[-1, m] * Zb[m, -1])[None, :] + Pb[-1, -1] * Zb[-1, -1])
    return M


def _lmi_max_step(A: list[np.ndarray], dA: list[np.ndarray]) -> float:
    """Largest α with ``A + α dA ⪰ 0`` blockwise (A ≻ 0): −1/λ_min of the pencil (dA, A)."""
    import scipy.linalg as sla

    lows = [sla.eigh(dAb, Ab, eigvals_only=True, subset_by_index=[0, 0])[0] for Ab, dAb in zip(A, dA)]
    lo = min(lows)
    return np.inf if lo >= 0 else -1.0 / lo


def _lmi_direction(L: _BoxLMIs, P: list, Zi: list, factor: Any, rp: np.ndarray, target: float,
                   corr: list | None) -> tuple[np.ndarray, list, list]:
    """HKM Newton direction (Δy, ΔZ, ΔP) towards ``PZ = target·I`` (with Mehrotra's
    second-order term ``corr`` = ΔP_a ΔZ_a Z⁻¹ when given) and ``tr(F_j P) = c_j``."""
    import scipy.linalg as sla

    R = [target * Zb - Pb - (0.0 if corr is None else cb) for Pb, Zb, cb in zip(P, Zi, corr or Zi)]
    R = [(Rb + Rb.T) / 2.0 for Rb in R]
    dy = sla.cho_solve(factor, _lmi_adjoint(L, R) - rp)
    dZ = _lmi_assemble(L, dy, constant=False)
    dP = [Rb - Pb @ dZb @ Zb for Rb, Pb, dZb, Zb in zip(R, P, dZ, Zi)]
    return dy, dZ, [(D + D.T) / 2.0 for D in dP]


def _lmi_start(L: _BoxLMIs, Cs: list, gs: list, hs: list) -> tuple[np.ndarray, list[np.ndarray]]:
    """A strictly feasible y (μ_ij = 1/(2u_i), X = tI: Z_i ≻ 0 by its Schur complement
    ``C_i + tI − diag(2u_i h²) − 2g gᵀ ≻ 0``) and P_0 = ξI (SDPT3's rule for ξ)."""
    y = np.zeros(L.n_vars)
    t = 0.0
    for s, C, g, h in zip(L.mu_slices, Cs, gs, hs):
        u = max(s.stop - s.start, 1)
        y[s] = 0.5 / u
        A = -C + np.diag(np.where(h > 0, h**2, 0.0) * 2.0 * u) + 2.0 * np.outer(g, g)
        t = max(t, float(np.linalg.eigvalsh(A)[-1]))
    y[:L.rows.size] = np.where(L.rows == L.cols, t + 1.0, 0.0)
    c = _lmi_objective(L)
    sizes = [L.k] + [B.shape[0] for B in L.F0]
    return y, [max(10.0, n * (1.0 + float(np.abs(c).max()))) * np.eye(n) for n in sizes]


def _interior_point(L: _BoxLMIs, y: np.ndarray, P: list, max_iter: int = 100) -> tuple[np.ndarray, str]:
    """Mehrotra predictor–corrector, HKM direction, for :class:`_BoxLMIs` from a strictly
    feasible y: every iterate keeps Z(y) ≻ 0 (step ``IPM_STEP`` of the way to the boundary), so
    whatever it returns satisfies the LMIs; the stopping rule only bounds its excess trace."""
    import scipy.linalg as sla

    c = _lmi_objective(L)
    N = sum(Pb.shape[0] for Pb in P)
    for it in range(max_iter):
        Z = _lmi_assemble(L, y)
        Zi = [np.linalg.inv(Zb) for Zb in Z]
        Zi = [(A + A.T) / 2.0 for A in Zi]
        rp = c - _lmi_adjoint(L, P)
        gap = sum(float(np.sum(Pb * Zb)) for Pb, Zb in zip(P, Z))
        if gap <= IPM_TOL * max(1.0, abs(float(c @ y))) and np.linalg.norm(rp) <= IPM_TOL * (1 + np.linalg.norm(c)):
            return y, f"optimal (structured interior point, {it} iterations)"
        factor = sla.cho_factor(_lmi_schur(L, P, Zi))
        _, dZa, dPa = _lmi_direction(L, P, Zi, factor, rp, 0.0, None)
        ap, ad = min(1.0, _lmi_max_step(P, dPa)), min(1.0, _lmi_max_step(Z, dZa))
        gap_a = sum(float(np.sum((Pb + ap * p) * (Zb + ad * z))) for Pb, p, Zb, z in zip(P, dPa, Z, dZa))
        corr = [p @ z @ Zb for p, z, Zb in zip(dPa, dZa, Zi)]
        dy, dZ, dP = _lmi_direction(L, P, Zi, factor, rp, min(1.0, (gap_a / gap) ** 3) * gap / N, corr)
        ap, ad = min(1.0, IPM_STEP * _lmi_max_step(P, dP)), min(1.0, IPM_STEP * _lmi_max_step(Z, dZ))
        P = [Pb + ap * p for Pb, p in zip(P, dP)]
        y = y + ad * dy
    return y, f"max_iter ({max_iter}) reached"


def _solve_structured(Cs: list, gs: list, hs: list, weights: np.ndarray,
                      D: np.ndarray) -> tuple[np.ndarray | None, str]:
    """The reduced S-procedure SDP by :func:`_interior_point`; S = X/(DDᵀ) projected on the PSD cone.
    Returns (None, reason) on a numerical failure or without convergence (the caller then uses cvxpy)."""
    from threadpoolctl import threadpool_limits  # a declared dependency

    L = _box_lmis(Cs, gs, hs, weights)
    try:
        # BLAS on one thread, scoped: the matrices are small (<= ~1500) and a 2-thread OpenBLAS
        # pool made the interior point ~2x slower (benchmarks/RESULTS_optimal.md)
        with threadpool_limits(limits=1):
            y, status = _interior_point(L, *_lmi_start(L, Cs, gs, hs))
    except np.linalg.LinAlgError as exc:
        return None, f"structured interior point failed: {exc}"
    if not status.startswith("optimal"):
        return None, f"structured interior point: {status}"
    S = _lmi_assemble(L, y)[0] / np.outer(D, D)
    w, V = np.linalg.eigh((S + S.T) / 2.0)
    return (V * np.clip(w, 0.0, None)) @ V.T, status


def _solve_sdp_corners(cons: PairConstraints, radius: float, solver: str) -> tuple[np.ndarray | None, str]:
    """The former program (reference for tests and benchmarks): one LMI
    ``[[Σ_i + S, d], [dᵀ, r²]] ⪰ 0`` per constraint i and per corner d of its box
    (2ᵘ corners, refused beyond ``MAX_CORNER_DIMS`` uncertain components). Exact
    for the box (the condition is convex in d) but exponential in u."""
    import cvxpy as cp

    k = cons.k
    target = radius**2 * (1.0 - SAFETY)
    r = float(np.sqrt(target))
    corners = cons.corners()  # (m, c, k)
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    scale = _scaling(cons, C, target)
    D = 1.0 / np.sqrt(scale)
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
    problem = cp.Problem(cp.Minimize(cp.sum(cp.multiply(scale / scale.max(), cp.diag(X)))), lmis)
    return _finish_solve(cp, problem, X, D, solver)


def box_mahalanobis_sq_bound(cons: PairConstraints, noise_cov: Any) -> np.ndarray:
    """A polynomial upper bound ``(m,)`` of ``sup dᵀ(Σ + S)⁻¹d`` over each constraint's box.

    The counterpart of :meth:`PairConstraints.mahalanobis_sq` that never enumerates
    corners, whatever the number of uncertain components: with M = Σ_lo + S (or S
    alone, valid as Σ ⪰ 0; the smaller bound is kept), the smaller of the dual
    (S-procedure) bound and the coarse bound of
    :func:`~bayespriv.calibration.constraints.box_quadratic_max` (proofs there).
    ``inf`` where M is indefinite or the box leaves M's range (relative tolerance
    1e-12, as the corner check). Exact when the differences are exact; never below
    the corner maximum. :meth:`PairConstraints.mahalanobis_sq` uses the same bound
    beyond ``MAX_CORNER_DIMS`` uncertain components.

    Parameters
    ----------
    cons : PairConstraints
    noise_cov : array (k, k)

    Returns
    -------
    ndarray (m,)
    """
    S = np.asarray(noise_cov, dtype=float)
    S = (S + S.T) / 2.0
    lower = box_quadratic_max(cons.cov_common + S[None], cons.diff, cons.half_width, exact_dims=0)
    if not np.any(S):
        return lower
    alone = box_quadratic_max(np.broadcast_to(S, cons.cov_common.shape), cons.diff, cons.half_width, exact_dims=0)
    return np.minimum(lower, alone)


class OptimalGaussian(GaussianConstraintMechanism):
    """Gaussian noise of least total variance that Corollary A.1 proves private.

    Finds the noise covariance S ⪰ 0 of least trace such that

        ``dᵀ(Σ_c + S)⁻¹d ≤ r*²``  for every (θ, pair) constraint c and every
        corner d of its difference box,

    with Σ_c the common Loewner lower bound of the pair's covariances. By the
    Schur complement (Σ_c + S ≻ 0), the condition is the linear matrix
    inequality ``[[Σ_c + S, d], [dᵀ, r*²]] ⪰ 0`` (which, when Σ_c + S is only
    PSD, still gives d ∈ range and dᵀ(Σ_c + S)⁺d ≤ r*²), so the problem is a
    semidefinite program, solved with cvxpy (Clarabel by default).

    How the program is solved:

    * one constraint with an exact difference: the closed form below, no
      solver (``solver_status`` is :data:`CLOSED_FORM`, :attr:`source`
      ``"closed form"``);
    * otherwise one SDP with, per constraint, the S-procedure LMI of size
      k + u + 1 (u = uncertain components; :func:`_solve_sdp_box`):
      ``[[Σ_c + S, H, d̂], [Hᵀ, diag(λ), 0], [d̂ᵀ, 0, r*² − Σλ_j]] ⪰ 0``,
      H = diag(half widths). Its Schur complement gives
      ``r*² − dᵀ(Σ_c + S)⁺d ≥ Σ_j λ_j(1 − v_j²) ≥ 0`` for every d = d̂ + Hv of
      the box, so it is sufficient for the 2ᵘ corner LMIs (a relaxation: never
      less noise; polynomial instead of exponential in u). With an exact
      difference it is the corner LMI itself. Beyond 12 uncertain components
      the diagonal block is eliminated (w_j = h_j²/λ_j:
      ``[[Σ_c + S − diag(w), d̂], [d̂ᵀ, s]] ⪰ 0``, ``s + Σ h_j²/w_j ≤ r*²``,
      :func:`_reduced_sprocedure_lmi`): the same feasible set with PSD cones
      of size k + 1 (about 2× faster at k = 50). There, with the default
      solver, the SDP is solved by a structured interior point
      (:func:`_solve_structured`: HKM direction, Mehrotra predictor–corrector,
      strictly feasible iterates, ~2–3 s at k = 50 with three pairs instead of
      ~16–26 s through cvxpy + Clarabel; cvxpy is the fallback).

    The answer is made safe against solver tolerances:

    1. the SDP (and the closed form) targets r*²(1 − 1e-9) and its S is
       projected onto the PSD cone;
    2. it is checked in float64 with :func:`certified_mahalanobis_sq`
       (``pair_constraints().mahalanobis_sq``, discarding indefinite lower
       bounds: at the 2ᵘ corners up to 12 uncertain components, beyond that
       by the certified dual (S-procedure) bound of
       :func:`~bayespriv.calibration.constraints.box_quadratic_max`, the same
       relaxation as the SDP, whose target is then r*²(1 − 1e-5) so that the
       solver's tolerance passes it); if it fails, the smallest t·I making it
       pass is added (bisection; :attr:`repair`);
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
    DauM's 6.78 and EigM's 22.05). (Σ_c indefinite, possible for a lower
    bound: the least trace is tr (ddᵀ/r*² − Σ_c)₊, by tr S ≥ tr PSP ≥ tr PMP
    with P the projector on the positive part of M = ddᵀ/r*² − Σ_c.) With
    several pairs, members θ or box corners there is no closed form, hence
    the SDP.

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}
    solver : str, optional
        A cvxpy solver name (default ``"CLARABEL"``; ``"SCS"`` works too). With
        ``"CLARABEL"``, programs beyond 12 uncertain components are solved by the
        structured interior point (Clarabel only if it fails).
    covariance : {"auto", "equal", "unequal"}
        See :mod:`bayespriv.mechanisms.expected_value`.

    Attributes
    ----------
    source : str
        ``"noiseless"``, ``"closed form"``, ``"closed form+repair"``,
        ``"solver"``, ``"solver+repair"``, ``"EigM"``,
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
    monotonicity makes that conservative) and d by every point of the
    difference box (S-procedure, above; certified at every corner, which
    suffices as the condition is convex in d, or beyond 12 uncertain
    components by the certified polynomial bound, which dominates every
    corner), so it holds on the
    calibration's event; r* is the analytic radius by default (valid for all
    ε), or ε/c (classic; the paper's proof needs ε ≤ 1). The bound is exact
    for :meth:`Calibration.from_moments`, holds with probability
    ``confidence`` for sampled calibrations, and is a plug-in estimate when
    ``confidence=None``.

    Per θ (families): Pufferfish privacy is one condition per θ ∈ Θ and per
    secret pair, so the program has one constraint per (θ, pair) row, with that
    row's own difference box and covariance lower bound Σ_c (the least-trace S
    meeting all of them) — never a sensitivity taken over all θ combined with
    the variance of another θ. Valid because each row is exactly one of the
    definition's conditions; never more noise than that mixed rule.

    Assumptions: ``gaussian_query`` and, with ``covariance="equal"``,
    ``equal_covariance``; both are checked on the calibration samples (see
    :attr:`assumption_notes`; a failed check is listed in the guarantee and
    release refuses unless ``options=ReleaseOptions(accept_failed_assumptions=True)``).

    Unequal covariances (``covariance="unequal"``, or ``"auto"`` when the
    ``equal_covariance`` check fails): the least-trace S above is the noise
    *shape*, scaled by the smallest factor c meeting (ε, δ) by the exact
    privacy curve over the calibration's confidence box
    (:func:`~bayespriv.privacy.privacy_loss.scale_for_delta`), widened by
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
        accountant: str = "auto",
    ) -> None:
        super().__init__(calibration, epsilon=epsilon, delta=delta)
        cons = self._setup(gaussian_calibration, covariance, accountant)
        self.solver = _check_solver(solver)
        r2 = self.radius**2
        zero = np.zeros((self.k, self.k))
        report, noiseless = noiseless_report(cons, self.radius)
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
            start = max(float(np.trace(S)) / self.k, float((box_norms(cons) ** 2).max()) / r2) * 1e-9
            try:
                S0 = S
                S, self.repair = repair(cons, r2, lambda t: S0 + t * np.eye(self.k), start)
                base = "closed form" if self.solver_status == CLOSED_FORM else "solver"
                solver_source = f"{base}+repair" if self.repair > 0 else base
                candidates[solver_source] = S
            except ValidationError as exc:  # pragma: no cover - the fallbacks below are valid
                self.fallback_reason = f"solver result could not be certified: {exc}"
        else:
            self.fallback_reason = f"solver failed ({self.solver_status})"
        # the formula mechanisms, each valid by its theorem; certified (and repaired) as in their classes
        sens2 = float((box_norms(cons) ** 2).max(initial=0.0)) / r2
        eig = eig_plan(cons, self.radius)
        V = eig.eigenvectors
        formulas: dict[str, Callable[[float], np.ndarray]] = {
            "EigM": lambda t: (V * (eig.sigma2 + t)) @ V.T,
            "ExpM": lambda t: (sens2 / (1.0 - SAFETY) + t) * np.eye(self.k),
        }
        try:
            dau = dau_plan(cons, self.radius, None)
            vv = np.outer(dau.direction, dau.direction)
            formulas["DauM"] = lambda t: (dau.sigma2 + t) * vv
        except ValidationError:
            pass
        for name, make in formulas.items():
            try:
                candidates[name] = repair(cons, r2, make, max(sens2, 1e-300) * 1e-9)[0]
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
