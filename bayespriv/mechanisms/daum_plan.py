"""DauM's noise plan: Algorithm 1 of Chen & Ohrimenko 2023 (appendix A.2) in closed form.

:func:`dau_plan` returns a :class:`DauPlan`: the direction v (:func:`dau_direction`), σ² of the
noise along it, and per (θ, pair) constraint α, the Schur credit s₀ and p⊥. Up to
``MAX_CORNER_DIMS`` uncertain components every corner of each difference box is used
(``_dau_corners``); beyond, the box maxima are certified polynomial bounds
(:func:`~bayespriv.calibration.constraints.white_box_max`). The closed form and its proof are
in the docstring of :class:`~bayespriv.mechanisms.expected_value.DauM`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_finite_array, described, fail
from ..calibration import PairConstraints
from ..calibration.constraints import MAX_CORNER_DIMS, white_box_max
from ..errors import ValidationError
from .mahalanobis import ROUNDING_RTOL, SAFETY


@dataclass(frozen=True)
class DauPlan:
    direction: np.ndarray  # (k,)
    sigma2: float
    per_pair: np.ndarray  # (m,)
    alpha: np.ndarray  # (m,)
    credit: np.ndarray  # (m,) the 1/(vᵀΣ⁻¹v)-type credit along v (Schur complement), nan without
    perp: np.ndarray  # (m,) Mahalanobis² of the part orthogonal to v (0 when parallel)
    parallel: bool
    notes: tuple[str, ...]

    @property
    def cov(self) -> np.ndarray:
        return self.sigma2 * np.outer(self.direction, self.direction)


def dau_direction(cons: PairConstraints, direction: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    k = cons.k
    if direction is None:
        norms = np.linalg.norm(cons.diff, axis=1)
        if norms.size == 0 or norms.max() == 0:
            v = np.zeros(k)
            v[0] = 1.0
            return v, ("direction: every estimated mean difference is 0; v = first coordinate axis",)
        i = int(np.argmax(norms))
        return cons.diff[i] / norms[i], ()
    arr = check_finite_array(direction, "direction")
    if arr.shape != (k,):
        raise fail("direction", f"a vector of shape ({k},)", described(f"shape {arr.shape}"))
    n = float(np.linalg.norm(arr))
    if n == 0:
        raise fail("direction", "a non-zero vector", arr)
    return arr / n, ()


def dau_plan(cons: PairConstraints, radius: float, direction: Any) -> DauPlan:
    """Algorithm 1's σ² in closed form (see DauM), generalised to non-parallel differences."""
    v, notes = dau_direction(cons, direction)
    if cons.uncertain_dims > MAX_CORNER_DIMS:
        return dau_plan_box(cons, radius, v, notes)
    m = len(cons)
    target = radius**2 * (1.0 - SAFETY)
    corners = _dau_corners(cons, v)
    per_pair = np.empty(m)
    credit = np.full(m, np.nan)
    perp = np.zeros(m)
    for i in range(m):  # m is small (pairs x members); (k-1) x (k-1) solves
        per_pair[i], credit[i], perp[i] = _dau_row(corners, i, target, cons.labels[i], radius)
    parallel = bool(np.all(corners.par_rows))
    if not parallel:
        notes += (
            "parallel_differences: the mean differences (or corners of their confidence boxes) are not all "
            "parallel to v, so Theorem A.1 does not apply; σ² solves Corollary A.1 exactly for every corner "
            "(closed form in the DauM docstring), valid because Σ hides the part orthogonal to v",
        )
    sigma2 = float(per_pair.max(initial=0.0))
    return DauPlan(v, sigma2, per_pair, corners.alpha, credit, perp, parallel, notes)


@dataclass(frozen=True)
class _DauCorners:
    """The corners of every row's difference box along v and in v⊥, with the rows' symmetrised covariance bounds."""

    v: np.ndarray  # (k,)
    U: np.ndarray  # (k, k-1): orthonormal basis of v⊥
    dv: np.ndarray  # (m, c)
    dU: np.ndarray  # (m, c, k-1)
    alpha: np.ndarray  # (m,) largest |vᵀd| over the corners
    par_rows: np.ndarray  # (m,) bool: every corner parallel to v
    C: np.ndarray  # (m, k, k)


def _dau_corners(cons: PairConstraints, v: np.ndarray) -> _DauCorners:
    """Project each row's box corners on v and on v⊥; flag the rows whose corners are all parallel to v."""
    corners = cons.corners()  # (m, c, k)
    U = np.linalg.svd(v[None, :])[2][1:].T  # (k, k-1): orthonormal basis of v⊥
    dv = corners @ v  # (m, c)
    dU = corners @ U  # (m, c, k-1)
    dnorm = np.linalg.norm(corners, axis=2)
    par_rows = np.all(np.linalg.norm(dU, axis=2) <= ROUNDING_RTOL * dnorm, axis=1)
    alpha = np.abs(dv).max(axis=1)
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    return _DauCorners(v=v, U=U, dv=dv, dU=dU, alpha=alpha, par_rows=par_rows, C=C)


def _dau_row(corners: _DauCorners, i: int, target: float, label: str, radius: float) -> tuple[float, float, float]:
    """One row of :func:`dau_plan`: ``(σ², s₀ or nan, p⊥)`` over the row's box corners."""
    v, U, C, dv, dU = corners.v, corners.U, corners.C[i], corners.dv[i], corners.dU[i]
    k = v.shape[0]
    a = float(v @ C @ v)
    scale = max(float(np.abs(C).max()), np.finfo(float).tiny)
    if k == 1:
        definite, p_perp, e, s0 = True, np.zeros_like(dv), dv, a
    else:
        M = U.T @ C @ U
        b = U.T @ C @ v
        definite = bool(np.linalg.eigvalsh(M)[0] > 1e-12 * scale)
        if definite:
            Minv_dU = np.linalg.solve(M, dU.T)  # (k-1, c)
            p_perp = np.einsum("jc,jc->c", dU.T, Minv_dU)
            e = dv - b @ Minv_dU
            s0 = a - float(b @ np.linalg.solve(M, b))
    no_credit = corners.alpha[i] ** 2 / target  # valid for parallel differences: Σ + σ²vvᵀ ⪰ σ²vvᵀ
    if definite:
        perp = float(p_perp.max(initial=0.0))
        if perp >= target:
            raise ValidationError(
                "direction must be one along which noise can hide every mean difference (DauM adds noise "
                f"along v only); got v = {np.array2string(v, precision=4)}: the part of the difference of "
                f"{label!r} orthogonal to v has Mahalanobis distance {np.sqrt(perp):.4g} ≥ "
                f"r* = {radius:.4g}, which no noise along v can reduce. Use EigM, OptimalGaussian, DirM, "
                "or another direction"
            )
        general = float((e**2 / (target - p_perp)).max(initial=0.0)) - s0
        return (max(0.0, min(general, no_credit)) if corners.par_rows[i] else max(0.0, general)), s0, perp
    if corners.par_rows[i]:
        return no_credit, np.nan, 0.0
    raise ValidationError(
        "direction must be parallel to every mean difference when the covariance lower bound is "
        f"singular (or indefinite) orthogonal to it; got v = {np.array2string(v, precision=4)} and a "
        f"difference of {label!r} with a part orthogonal to v that Σ cannot hide. Use "
        "OptimalGaussian, DirM, more calibration draws, or another direction"
    )


#: Relative margin below r*² of DauM's σ² beyond ``MAX_CORNER_DIMS`` uncertain components
#: (bisection on a certified bound: room for the final certificate's own dual gap).
BOX_MARGIN = 1e-8


def dau_plan_box(cons: PairConstraints, radius: float, v: np.ndarray, notes: tuple[str, ...]) -> DauPlan:
    """:func:`dau_plan` beyond ``MAX_CORNER_DIMS`` uncertain components: the same per-row
    quantities with every maximum over the box taken without its corners — α and the
    largest |e| exactly (linear), p⊥ and ``p⊥ + e²/(s₀ + σ²)`` by the certified bound
    :func:`~bayespriv.calibration.constraints.white_box_max` (≥ the corner maximum), so σ²
    is never below the corner formula's."""
    m = len(cons)
    target = radius**2 * (1.0 - BOX_MARGIN)
    U = np.linalg.svd(v[None, :])[2][1:].T  # (k, k-1)
    alpha = cons.linear_max(v)
    C = (cons.cov_common + np.swapaxes(cons.cov_common, 1, 2)) / 2.0
    per_pair, credit, perp = np.empty(m), np.full(m, np.nan), np.zeros(m)
    par_rows = np.empty(m, dtype=bool)
    for i in range(m):  # m is small (pairs x members)
        cols = np.flatnonzero(cons.half_width[i] > 0)
        gens = np.column_stack([cons.diff[i], np.eye(cons.k)[:, cols] * cons.half_width[i, cols]])  # (k, 1 + u)
        gU = U.T @ gens
        norms = np.linalg.norm(gens, axis=0)
        par_rows[i] = bool(np.all(np.linalg.norm(gU, axis=0) <= ROUNDING_RTOL * norms))
        per_pair[i], credit[i], perp[i] = _dau_row_box(C[i], v, U, gens, gU, float(alpha[i]), target,
                                                       bool(par_rows[i]), cons.labels[i], radius)
    parallel = bool(np.all(par_rows))
    if not parallel:
        notes += (
            "parallel_differences: the mean differences (or their confidence boxes) are not all parallel to v, so "
            "Theorem A.1 does not apply; σ² solves Corollary A.1 over each box (DauM docstring), with the box "
            "maximum bounded without its corners (certified polynomial bound, more than 12 uncertain components)",
        )
    return DauPlan(v, float(per_pair.max(initial=0.0)), per_pair, alpha, credit, perp, parallel, notes)


def _dau_row_box(C: np.ndarray, v: np.ndarray, U: np.ndarray, gens: np.ndarray, gU: np.ndarray, alpha: float,
                 target: float, par: bool, label: str, radius: float) -> tuple[float, float, float]:
    """One row of :func:`dau_plan_box`: ``(σ², s₀ or nan, p⊥ bound)``. Generators: column 0 is
    d̂, the others h_j e_j, so the box is ``gens @ (1, v)`` with v ∈ [−1, 1]ᵘ."""
    no_credit = alpha**2 / target
    M = U.T @ C @ U
    scale = max(float(np.abs(C).max()), np.finfo(float).tiny)
    if not np.linalg.eigvalsh(M)[0] > 1e-12 * scale:
        if par:
            return no_credit, np.nan, 0.0
        raise ValidationError(
            "direction must be parallel to every mean difference when the covariance lower bound is singular (or "
            f"indefinite) orthogonal to it; got v = {np.array2string(v, precision=4)} and a difference of {label!r} "
            "with a part orthogonal to v that Σ cannot hide. Use OptimalGaussian, DirM, more calibration draws, or "
            "another direction"
        )
    L = np.linalg.cholesky(M)
    P = np.linalg.solve(L, gU)  # whitened parts orthogonal to v: p⊥ = ‖P (1, v)‖²
    q = np.linalg.solve(L.T, np.linalg.solve(L, U.T @ C @ v))  # M⁻¹b
    e = v @ gens - q @ gU  # e(d) = vᵀd − bᵀM⁻¹Uᵀd on the generators
    s0 = float(v @ C @ v - (U.T @ C @ v) @ q)
    perp = white_box_max(P[:, 0], P[:, 1:])
    if perp >= target:
        raise ValidationError(
            "direction must be one along which noise can hide every mean difference (DauM adds noise along v only); "
            f"got v = {np.array2string(v, precision=4)}: the part of the difference of {label!r} orthogonal to v has "
            f"Mahalanobis distance up to {np.sqrt(perp):.4g} ≥ r* = {radius:.4g} (bound over its box), which no noise "
            "along v can reduce. Use EigM, OptimalGaussian, DirM, or another direction"
        )
    general = _dau_sigma_box(P, e, s0, target, perp)
    return (max(0.0, min(general, no_credit)) if par else max(0.0, general)), s0, perp


def _dau_sigma_box(P: np.ndarray, e: np.ndarray, s0: float, target: float, perp: float) -> float:
    """Smallest σ² (to relative 1e-9, rounded up) with the certified bound of
    ``max_box p⊥ + e²/(s₀ + σ²)`` ≤ target, by bisection on τ = 1/(s₀ + σ²) (the form grows
    with τ). Returns ``1/τ − s₀`` (≤ 0 when σ² = 0 already passes)."""
    warm: dict = {}

    def passes(tau: float) -> bool:
        stacked = np.vstack([P, np.sqrt(tau) * e[None, :]])
        return white_box_max(stacked[:, 0], stacked[:, 1:], warm=warm, threshold=target) <= target

    if s0 > 0 and passes(1.0 / s0):
        return 0.0
    e_max = abs(float(e[0])) + float(np.abs(e[1:]).sum())  # exact max |e| over the box
    lo = (target - perp) / max(e_max**2, np.finfo(float).tiny)  # passes up to the dual's accuracy
    for _ in range(200):
        if passes(lo):
            break
        lo *= 0.5
    else:  # pragma: no cover - p⊥'s bound is below the target
        raise ValidationError("DauM: no noise along v could be certified; please report this calibration")
    hi = lo * 2.0
    while passes(hi) and (s0 <= 0 or hi < 1.0 / s0):
        if hi > 1e300:  # e vanishes on the box: only s₀ + σ² > 0 is needed
            return max(0.0, -s0) * (1.0 + 1e-12)
        lo, hi = hi, hi * 2.0
    while hi - lo > 1e-9 * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if passes(mid) else (lo, mid)
    return 1.0 / lo - s0
