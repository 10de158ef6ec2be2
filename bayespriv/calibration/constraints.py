"""Every (θ, pair) condition a Gaussian-family mechanism must meet, conservatively.

The Gaussian mechanisms of the papers (APGM, ExpM(G), DirM, EigM, DauM and the
least-noise :class:`~bayespriv.mechanisms.OptimalGaussian`) all reduce to one
condition per discriminative pair (θ_i, θ_j) and per member θ of Θ:

    dᵀ (Σ + S)⁻¹ d ≤ r*(ε, δ)²,   d = E[F | θ_i] − E[F | θ_j],

with Σ the (common) covariance of F and S the added noise. From samples, d and
Σ are only estimated. :class:`PairConstraints` gathers, vectorized over all
constraints, what makes the condition provable on the calibration's event
(probability ``confidence``):

* the true d lies in the box ``diff ± half_width`` (the condition being
  convex in d, its maximum over the box is at a corner, :meth:`corners`; up to
  ``MAX_CORNER_DIMS`` uncertain components the 2ᵘ corners are enumerated, beyond
  that a polynomial certified upper bound is used, :func:`box_quadratic_max`);
* the true covariances dominate ``cov_a`` / ``cov_b`` in the Loewner order, and
  both dominate :attr:`cov_common`; since (Σ + S)⁻¹ ⪯ (Σ_lo + S)⁻¹ when
  Σ ⪰ Σ_lo and Σ_lo + S ≻ 0, checking with the lower bound is conservative.

For exact (``from_moments``) and plug-in calibrations the half widths are 0 and
the lower bounds are the values themselves.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import sealed
from ..errors import ValidationError
from ..secrets import SecretPair

__all__ = ["PairConstraints", "box_quadratic_max", "common_lower_bound", "white_box_max"]

#: Components with uncertain mean difference beyond which corners are refused (2^k corners).
MAX_CORNER_DIMS = 12


def common_lower_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A symmetric matrix below both ``a`` and ``b`` in the Loewner order.

    ``C = (A + B)/2 − |A − B|/2`` with ``|M|`` the matrix absolute value:
    ``A − C = (A − B)₊ ⪰ 0`` and ``B − C = (A − B)₋ ⪰ 0``. It equals A when
    A = B. Works on stacks ``(..., k, k)``.
    """
    diff = (a - b) / 2.0
    w, v = np.linalg.eigh(diff)
    absdiff = (v * np.abs(w)[..., None, :]) @ np.swapaxes(v, -1, -2)
    c = (a + b) / 2.0 - absdiff
    return (c + np.swapaxes(c, -1, -2)) / 2.0


@dataclass(frozen=True)
class PairConstraints:
    """One row per (member θ, secret pair); arrays are read-only.

    Attributes
    ----------
    labels : tuple of str
        ``"a vs b"``, prefixed by θ for families.
    pairs : tuple of SecretPair
    thetas : tuple of dict or None
    diff : ndarray (m, k)
        Estimated mean difference μ̂_a − μ̂_b.
    half_width : ndarray (m, k)
        The true difference lies in ``diff ± half_width`` (on the event).
    cov_a, cov_b : ndarray (m, k, k)
        Loewner lower bounds of Cov(F | a) and Cov(F | b).
    confidence : float or None
        Probability of the event (None: plug-in, no claim).
    """

    labels: tuple[str, ...]
    pairs: tuple[SecretPair, ...]
    thetas: tuple[Mapping[str, Any] | None, ...]
    diff: np.ndarray
    half_width: np.ndarray
    cov_a: np.ndarray
    cov_b: np.ndarray
    confidence: float | None

    def __post_init__(self) -> None:
        for name in ("diff", "half_width", "cov_a", "cov_b"):
            object.__setattr__(self, name, sealed(getattr(self, name), float))

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def k(self) -> int:
        """Dimension of the query."""
        return int(self.diff.shape[1])

    @property
    def upper(self) -> np.ndarray:
        """Componentwise upper bound ``(m, k)`` of |μ_a − μ_b|."""
        return np.abs(self.diff) + self.half_width

    @property
    def exact_difference(self) -> bool:
        """True when the differences carry no uncertainty (exact or plug-in)."""
        return not np.any(self.half_width)

    @property
    def cov_common(self) -> np.ndarray:
        """``(m, k, k)``: a matrix below both covariances of each pair."""
        return common_lower_bound(self.cov_a, self.cov_b)

    @property
    def uncertain_dims(self) -> int:
        """Number of components whose mean difference is uncertain in some constraint."""
        return int(np.count_nonzero(np.any(self.half_width > 0, axis=0)))

    def corners(self) -> np.ndarray:
        """Difference vectors ``(m, c, k)`` whose convex hull contains every
        difference the box allows (c = 2^u for u uncertain components; c = 1
        when exact). A condition convex in d that holds at every corner holds
        for the true d.

        Refused beyond ``MAX_CORNER_DIMS`` uncertain components (2^u rows):
        :meth:`mahalanobis_sq`, :meth:`linear_max` and :func:`box_quadratic_max`
        cover the box without enumerating it.
        """
        uncertain = np.flatnonzero(np.any(self.half_width > 0, axis=0))
        if uncertain.size > MAX_CORNER_DIMS:
            raise ValidationError(
                f"corners: at most {MAX_CORNER_DIMS} components with uncertain mean differences can be enumerated "
                f"(2^k corners); got {uncertain.size}. Use PairConstraints.mahalanobis_sq / linear_max or "
                "box_quadratic_max, which bound the box without its corners"
            )
        if uncertain.size == 0:
            return self.diff[:, None, :].copy()
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=uncertain.size)))  # (c, u)
        out = np.repeat(self.diff[:, None, :], signs.shape[0], axis=1)
        out[:, :, uncertain] += signs[None, :, :] * self.half_width[:, None, uncertain]
        return out

    def linear_max(self, directions: np.ndarray) -> np.ndarray:
        """``max |vᵀd|`` over each constraint's box, exactly: ``|vᵀd̂| + |v|ᵀh``.

        ``directions`` ``(k,)`` or ``(k, D)`` (columns); returns ``(m,)`` or ``(m, D)``.
        (A linear function's maximum over a box is attained at the corner whose
        signs follow its coefficients.)
        """
        v = np.asarray(directions, dtype=float)
        return np.abs(self.diff @ v) + self.half_width @ np.abs(v)

    def mahalanobis_sq(self, noise_cov: np.ndarray, *, warm: dict | None = None,
                       threshold: float | None = None) -> np.ndarray:
        """An upper bound ``(m,)`` of ``sup dᵀ(Σ + S)⁻¹d`` per constraint, over
        every difference d in the box and every true covariance Σ above its
        lower bound (on the calibration's event). This is what a mechanism must
        keep ≤ r*² (Corollary A.1 of Chen & Ohrimenko).

        Two valid bounds, the smaller kept: ``dᵀ(Σ_lo + S)⁻¹d`` over the box,
        valid only where ``Σ_lo + S`` is positive semidefinite (inverse
        monotonicity needs it; a lower bound from few draws can be indefinite,
        then this route gives ``inf``), and ``dᵀS⁺d``, valid because a true
        covariance is PSD (Σ + S ⪰ S). ``inf`` where d leaves the range.

        The maximum over the box is exact (its 2ᵘ corners) for up to
        ``MAX_CORNER_DIMS`` uncertain components; beyond, it is the certified
        polynomial upper bound of :func:`box_quadratic_max` (never below the
        corner maximum). ``warm`` (a dict, optional) carries the dual search's
        starting points between calls on nearby noises (a bisection). With
        ``threshold``, for a caller that only compares the result with it, the
        polynomial route may skip work: a row provably above it may read ``inf``
        and a row provably below it its cheaper (coarse) bound — every value is
        still an upper bound, and every comparison with ``threshold`` is the same.
        """
        S = np.asarray(noise_cov, dtype=float)
        S = (S + S.T) / 2.0
        if self.uncertain_dims <= MAX_CORNER_DIMS:
            corners = self.corners()
            via_lower = _max_quadratic(self.cov_common + S[None], corners)
            if not np.any(S):
                return via_lower
            return np.minimum(via_lower, _max_quadratic(np.broadcast_to(S, self.cov_common.shape), corners))
        lower_warm = None if warm is None else warm.setdefault("lower", {})
        noise_warm = None if warm is None else warm.setdefault("noise", {})
        alone = np.broadcast_to(S, self.cov_common.shape)
        if threshold is None or not np.any(S):
            via_lower = box_quadratic_max(self.cov_common + S[None], self.diff, self.half_width, warm=lower_warm,
                                          threshold=threshold)
            if not np.any(S):
                return via_lower
            return np.minimum(via_lower, box_quadratic_max(alone, self.diff, self.half_width, warm=noise_warm,
                                                           known_above=via_lower))
        # screened: the noise-only route's cheap bound first, duals only where the comparison needs them
        via_noise = box_quadratic_max(alone, self.diff, self.half_width, threshold=threshold, cheap_only=True)
        via_lower = box_quadratic_max(self.cov_common + S[None], self.diff, self.half_width, warm=lower_warm,
                                      threshold=threshold, known_above=via_noise)
        redo = ~(via_noise <= threshold) & ~(via_lower <= threshold)
        if np.any(redo):
            full = box_quadratic_max(alone, self.diff, self.half_width, warm=noise_warm, threshold=threshold,
                                     known_above=via_lower)
            via_noise = np.where(redo, full, via_noise)
        return np.minimum(via_lower, via_noise)


def _max_quadratic(mats: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """``max_c dᵀ M⁺ d`` over corners per row; ``inf`` when M is indefinite or a
    corner leaves M's range (relative tolerance 1e-12)."""
    out = np.empty(mats.shape[0])
    for i in range(mats.shape[0]):  # m is small (pairs x members); k x k eigendecompositions
        w, v = np.linalg.eigh((mats[i] + mats[i].T) / 2)
        scale = max(float(np.abs(w).max()), 1.0)
        if w[0] < -1e-12 * scale:
            out[i] = np.inf
            continue
        proj = corners[i] @ v  # (c, k)
        pos = w > 1e-12 * scale
        if np.any(np.abs(proj[:, ~pos]) > 1e-12 * max(float(np.abs(proj).max()), 1.0)):
            out[i] = np.inf
        else:
            out[i] = float((proj[:, pos] ** 2 / w[pos]).sum(axis=1).max())
    return out


# ---------------------------------------------------------------------------------------------
# The maximum of a convex quadratic over a box, without 2^u corners
# ---------------------------------------------------------------------------------------------

_EPS = float(np.finfo(float).eps)

#: Relative duality gap at which the dual search stops. Smaller gaps push diag(λ) − G
#: towards singular (boundary optima), where float64 cannot evaluate the bound.
DUAL_GAP = 1e-10


@dataclass(frozen=True)
class _WhiteBox:
    """One box in whitened coordinates: ``dᵀM⁺d = ‖b + Bv‖²`` for d = d̂ + Hv, v ∈ [−1, 1]ᵘ."""

    b: np.ndarray  # (r,)
    B: np.ndarray  # (r, u)


def _whiten(M: np.ndarray, diff: np.ndarray, half: np.ndarray) -> _WhiteBox | None:
    """W = M^{+1/2} applied to d̂ and to the uncertain columns of H = diag(half);
    None when M is indefinite or the box leaves M's range (relative tolerance 1e-12,
    as the corner check)."""
    w, V = np.linalg.eigh((M + M.T) / 2.0)
    tol = 1e-12 * max(float(np.abs(w).max()), 1.0)
    if w[0] < -tol:
        return None
    cols = np.flatnonzero(half > 0)
    proj = np.column_stack([V.T @ diff, V[cols].T * half[cols]])  # (k, 1 + u): Vᵀd̂, VᵀH
    pos = w > tol
    if np.any(np.abs(proj[~pos]) > 1e-12 * max(float(np.abs(proj).max()), 1.0)):
        return None
    white = proj[pos] / np.sqrt(w[pos])[:, None]
    return _WhiteBox(white[:, 0], white[:, 1:])


def _corner_value(box: _WhiteBox) -> float:
    """The exact maximum ``max_v ‖b + Bv‖²`` at the 2ᵘ corners (small u only)."""
    u = box.B.shape[1]
    if u == 0:
        return float(box.b @ box.b)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=u)))  # (2^u, u)
    vals = box.b[None, :] + signs @ box.B.T
    return float(np.einsum("cr,cr->c", vals, vals).max())


def _coarse_value(box: _WhiteBox) -> float:
    """``‖b‖² + 2‖Bᵀb‖₁ + min(Σ_jl |G_jl|, u·λ_max(G))``, G = BᵀB: the linear term's
    supremum is exact, ``vᵀGv ≤ Σ|G_jl||v_j||v_l|`` and ``≤ λ_max(G)‖v‖²``."""
    b, B = box.b, box.B
    G = B.T @ B
    quad = min(float(np.abs(G).sum()), G.shape[0] * float(np.linalg.eigvalsh(G)[-1])) if G.size else 0.0
    return float(b @ b) + 2.0 * float(np.abs(B.T @ b).sum()) + quad


def _dual_value(G: np.ndarray, g: np.ndarray, bb: float, lam: np.ndarray) -> float:
    """``‖b‖² + Σλ + gᵀK⁻¹g`` with K = diag(λ) − G, evaluated so that float64 rounding
    cannot make it smaller than the exact value for these G, g, λ (first order);
    ``inf`` unless K is certified positive definite.

    λ_min(K) is bounded below by the computed eigenvalue less a backward-error
    allowance ``8u·eps·(‖G‖_F + max λ)``; with x the computed solution of Kx = g and
    r = g − Kx, ``gᵀK⁻¹g = gᵀx + xᵀr + rᵀK⁻¹r ≤ gᵀx + xᵀr + ‖r‖²/λ_min(K)``, plus an
    allowance for the rounding of the two dot products.
    """
    u = g.shape[0]
    K = np.diag(lam) - G
    allowance = 8.0 * (u + 1) * _EPS * (float(np.linalg.norm(G)) + float(np.abs(lam).max()))
    lam_min = float(np.linalg.eigvalsh(K)[0]) - allowance
    if not lam_min > 0:
        return np.inf
    try:
        x = np.linalg.solve(K, g)
    except np.linalg.LinAlgError:
        return np.inf
    r = g - K @ x
    quad = float(g @ x) + float(x @ r) + float(r @ r) / lam_min
    quad += 4.0 * (u + 1) * _EPS * (float(np.abs(g) @ np.abs(x)) + float(np.abs(x) @ np.abs(r)))
    total = bb + float(lam.sum()) + quad
    return total * (1.0 + 4.0 * (u + 2) * _EPS)


def _dual_lambda(G: np.ndarray, g: np.ndarray, lam0: np.ndarray | None = None) -> np.ndarray:
    """A near-minimiser of ``φ(λ) = Σλ + gᵀ(diag(λ) − G)⁻¹g`` over diag(λ) ≻ G
    (convex: a matrix-fractional function plus a linear one), by a log-barrier
    Newton method. Any λ it returns is feasible; its optimality only affects how
    tight the bound is, never its validity (:func:`_dual_value` evaluates it)."""
    u = g.shape[0]
    top = float(np.linalg.eigvalsh(G)[-1])
    size = max(top, float(np.linalg.norm(g)), np.finfo(float).tiny)
    lam = np.full(u, top + max(float(np.linalg.norm(g)) / np.sqrt(u), 1e-3 * size))
    while not np.isfinite(_phi(G, g, lam)):  # rounding at the start: move inside
        lam = lam * 2.0 + size
    mu = _phi(G, g, lam) / u
    if lam0 is not None and np.isfinite(_phi(G, g, lam0)):
        lam, mu = np.asarray(lam0, dtype=float).copy(), 1e-6 * _phi(G, g, lam0) / u
    while True:
        lam = _barrier_newton(G, g, lam, mu)
        if u * mu <= DUAL_GAP * _phi(G, g, lam):  # duality gap of the central path ≤ uμ
            return lam
        mu *= 0.02


def _phi(G: np.ndarray, g: np.ndarray, lam: np.ndarray) -> float:
    """φ(λ), ``inf`` outside the domain."""
    try:
        L = np.linalg.cholesky(np.diag(lam) - G)
    except np.linalg.LinAlgError:
        return np.inf
    z = np.linalg.solve(L, g)
    return float(lam.sum() + z @ z)


def _barrier_newton(G: np.ndarray, g: np.ndarray, lam: np.ndarray, mu: float) -> np.ndarray:
    """Damped Newton on ``φ(λ) − μ log det(diag(λ) − G)`` from a feasible λ.

    With W = K⁻¹ and y = Wg: gradient ``1 − y² − μ diag(W)``, Hessian
    ``2 (yyᵀ) ∘ W + μ W ∘ W`` (positive definite: Schur products of PSD matrices).
    """
    def value(x: np.ndarray) -> float:
        try:
            L = np.linalg.cholesky(np.diag(x) - G)
        except np.linalg.LinAlgError:
            return np.inf
        z = np.linalg.solve(L, g)
        return float(x.sum() + z @ z) - 2.0 * mu * float(np.log(np.diagonal(L)).sum())

    f = value(lam)
    for _ in range(50):
        try:
            W = np.linalg.inv(np.diag(lam) - G)
        except np.linalg.LinAlgError:
            return lam
        W = (W + W.T) / 2.0
        y = W @ g
        grad = 1.0 - y**2 - mu * np.diagonal(W)
        hess = 2.0 * np.outer(y, y) * W + mu * W * W
        try:
            step = -np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            return lam
        dec = -float(grad @ step)
        if dec <= 1e-6 * mu or dec <= 1e-12 * abs(f):  # centred (Newton decrement), or near rounding level
            return lam
        t = 1.0
        while t > 1e-9:
            cand = lam + t * step
            fc = value(cand)
            if fc <= f - 0.25 * t * dec:
                break
            t *= 0.5
        else:
            return lam
        lam, f = cand, fc
    return lam


def box_quadratic_max(mats: np.ndarray, diff: np.ndarray, half: np.ndarray, *,
                      exact_dims: int = MAX_CORNER_DIMS, known_above: np.ndarray | None = None,
                      warm: dict | None = None, threshold: float | None = None,
                      cheap_only: bool = False) -> np.ndarray:
    """An upper bound ``(m,)`` of ``max dᵀM_i⁺d`` over each box ``d ∈ diff_i ± half_i``.

    Exact (the 2ᵘ corners) for rows with at most ``exact_dims`` uncertain
    components; beyond, polynomial (O(k³ + u³) per Newton step) and certified:
    the smaller of two upper bounds. ``inf`` where M_i is indefinite or the box
    leaves its range (relative tolerance 1e-12, as the corner check).

    With W = M^{+1/2}, b = W d̂, B = W H (H = the uncertain columns of
    diag(half)), every d = d̂ + Hv of the box (v ∈ [−1, 1]ᵘ) has
    ``dᵀM⁺d = f(v) = ‖b‖² + 2gᵀv + vᵀGv``, G = BᵀB, g = Bᵀb.

    * **Dual (S-procedure) bound.** For any λ ∈ ℝᵘ with K = diag(λ) − G ≻ 0,
      ``f(v) = ‖b‖² + Σ_j λ_j v_j² + (2gᵀv − vᵀKv) ≤ ‖b‖² + Σ_j λ_j v_j² + gᵀK⁻¹g``
      for *every* v ∈ ℝᵘ (the last bracket is a concave quadratic, maximal at
      v = K⁻¹g), and ``v_j² ≤ 1`` on the box with λ_j > 0 (K ≻ 0 and G ⪰ 0 force
      λ_j > 0). So ``max_box f ≤ φ(λ) = ‖b‖² + Σλ + gᵀK⁻¹g`` for every feasible
      λ — weak duality, no S-lemma "only if" needed. Equivalently
      ``[[K, −g], [−gᵀ, φ − ‖b‖² − Σλ]] ⪰ 0``, the S-procedure LMI of
      :func:`~bayespriv.mechanisms.optimal._solve_sdp_box` for fixed M. λ comes
      from a log-barrier Newton method (:func:`_dual_lambda`); its accuracy only
      affects tightness. The bound is exact whenever the minimiser is interior
      (then y = K⁻¹g has |y_j| = 1, a corner attaining it), in particular for a
      point box (u = 0: ‖b‖²) and for separable boxes.
    * **Coarse bound** (:func:`_coarse_value`): ``‖b‖² + 2‖g‖₁ + min(Σ|G_jl|, u·λ_max(G))``.

    Rounding: the whitening (float64 ``eigh`` of M) is the same as the corner
    enumeration's; the dual value is evaluated with allowances that keep it
    above its exact value for the computed G, g, λ (:func:`_dual_value`).

    Parameters
    ----------
    mats : array (m, k, k)
        Symmetric matrices M_i (only their PSD part is inverted).
    diff, half : array (m, k)
        Box centres and half widths (≥ 0).
    exact_dims : int
        Rows with at most this many uncertain components are enumerated.
    known_above : array (m,), optional
        For a caller that keeps ``min(known_above, result)``: a row whose maximum
        is provably ≥ ``known_above_i`` (its value at a corner already is) returns
        ``inf`` without computing the dual bound.
    warm : dict, optional
        Starting points of the dual search, read and updated by row index (a
        deterministic speed-up for sequences of nearby matrices, e.g. a bisection).
    threshold : float, optional
        For a caller that only compares the result with it: a row whose corner
        value exceeds it returns ``inf``, a row whose coarse bound is below it
        returns that bound (both valid upper bounds, same comparison).
    cheap_only : bool
        Skip the dual bound (rows not settled by ``threshold`` get the coarse bound).

    Returns
    -------
    ndarray (m,)
    """
    out = np.empty(mats.shape[0])
    for i in range(mats.shape[0]):  # m is small (pairs x members)
        box = _whiten(mats[i], diff[i], half[i])
        if box is None:
            out[i] = np.inf
        elif box.B.shape[1] <= exact_dims:
            out[i] = _corner_value(box)
        else:
            out[i] = _polynomial_value(box, i, warm, threshold, None if known_above is None else known_above[i],
                                       cheap_only)
    return out


def _polynomial_value(box: _WhiteBox, key: Any, warm: dict | None, threshold: float | None,
                      known_above: float | None, cheap_only: bool) -> float:
    """One row of :func:`box_quadratic_max` beyond ``exact_dims``: screens, then min(coarse, dual)."""
    guess = _corner_guess(box)  # a value attained in the box: a lower bound of the maximum
    if (known_above is not None and guess >= known_above) or (threshold is not None and guess > threshold):
        return np.inf
    coarse = _coarse_value(box)
    if cheap_only or (threshold is not None and coarse <= threshold):
        return coarse
    return min(coarse, _dual_bound(box, warm, key))


def _corner_guess(box: _WhiteBox) -> float:
    """A lower bound of the box maximum: the value at the corner v = sign(Bᵀb) (or all +1)."""
    v = np.where(box.B.T @ box.b >= 0, 1.0, -1.0)
    x = box.b + box.B @ v
    return float(x @ x)


def white_box_max(b: np.ndarray, B: np.ndarray, *, exact_dims: int = MAX_CORNER_DIMS, warm: dict | None = None,
                  key: Any = 0, threshold: float | None = None) -> float:
    """An upper bound of ``max ‖b + Bv‖²`` over v ∈ [−1, 1]ᵘ (B: (r, u)): exact at the
    2ᵘ corners when u ≤ ``exact_dims``, else the smaller of the dual and coarse bounds
    of :func:`box_quadratic_max` (whose docstring has the proof). ``warm[key]`` holds
    the last dual λ (read and updated); ``threshold`` as in :func:`box_quadratic_max`."""
    box = _WhiteBox(np.asarray(b, dtype=float), np.asarray(B, dtype=float))
    if box.B.shape[1] <= exact_dims:
        return _corner_value(box)
    return _polynomial_value(box, key, warm, threshold, None, False)


def _dual_bound(box: _WhiteBox, warm: dict | None = None, key: Any = 0) -> float:
    """The certified dual value of :func:`box_quadratic_max` for one whitened box."""
    G = box.B.T @ box.B
    G = (G + G.T) / 2.0
    g = box.B.T @ box.b
    bb = float(box.b @ box.b)
    if not np.any(G):
        return bb
    start = None if warm is None else warm.get(key)
    lam = _dual_lambda(G, g, start if start is not None and start.shape == g.shape else None)
    if warm is not None:
        warm[key] = lam
    size = float(np.abs(lam).max())
    best = np.inf
    for shift in (0.0, 1e-12, 1e-10, 1e-8):  # at a boundary optimum K is singular: step inside
        best = min(best, _dual_value(G, g, bb, lam + shift * size))
        if np.isfinite(best):
            break
    return best
