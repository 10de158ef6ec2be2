"""Exact privacy curves of two Gaussians with unequal covariances.

For a Gaussian query the two output laws of a secret pair are
``P_a = N(μ_a, Σ_a + S)`` and ``P_b = N(μ_b, Σ_b + S)``. When ``Σ_a ≠ Σ_b``
the Mahalanobis-radius argument of :mod:`bayespriv.privacy.analytic_gaussian` does not
apply. This module computes, for such a pair, the privacy profile

    δ(ε) = max(H_ε(P_a‖P_b), H_ε(P_b‖P_a)),   H_ε(P‖Q) = sup_E P(E) − e^ε Q(E),

and the smallest scale of a given noise shape that meets a target (ε, δ).

Reduction (exact)
-----------------
Translate so that ``P_b`` is centred, restrict both laws to their common
support, whiten by ``Σ_b`` (Cholesky) and rotate to the eigenbasis of the
whitened ``Σ_a``. Then ``P_b = N(0, I)`` and ``P_a = N(μ, diag(D))``; the
hockey-stick divergence is invariant under these bijections. The privacy loss
``L(y) = log p_a(y) − log p_b(y)`` is a sum of independent one-dimensional
quadratics, one per coordinate; coordinates with ``D_j = 1`` merge into one
(rotation) with mean ``r = ‖μ_{D=1}‖``. Then

    H_ε(P_a‖P_b) = P_a(L > ε) − e^ε P_b(L > ε)

(the optimal event is ``{L > ε}``). Under either law, L is a quadratic form of
a standard normal vector (a generalized chi-square).

* Equal covariances (no ``D_j ≠ 1``): the analytic Gaussian formula
  ``Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r)`` (Balle & Wang 2018, Theorem 8).
* One coordinate (``k = 1`` after reduction): ``{L > ε}`` is an interval or the
  complement of one; both probabilities are normal CDFs, evaluated in log space.
* Otherwise: numerical inversion of the characteristic function (Davies 1973,
  trapezoidal Gil-Pelaez with half-offset nodes), with rigorous bounds on every
  error term (:func:`~bayespriv.privacy.loss_inversion.tails`,
  :func:`~bayespriv.privacy.loss_inversion.cf_delta_bounds`). Both ends are kept: an upper bound of
  ``P_a(L > ε)`` and a lower bound of ``P_b(L > ε)`` give an upper bound of δ.

Supports
--------
If the two laws have different supports (different ranges of the
covariances, or a mean difference leaving their common range), one of them
puts all its mass where the other puts none, so δ(ε) = 1 for every ε.
Eigenvalues below :data:`~bayespriv.privacy.loss_reduction.RANK_RTOL` times the largest are taken as exact zeros;
inputs are assumed accurate to that level.

Numerical error
---------------
``gaussian_delta`` returns an upper bound of the exact δ(ε) for the inputs as
given (and :func:`gaussian_delta_bounds` a lower bound too):

* closed forms: rounding of ``log_ndtr`` allowed for (64 ulp, as in
  :mod:`~bayespriv.privacy.analytic_gaussian`); agreement with 25-digit mpmath
  quadrature is ~1e-13 relative (tests);
* inversion: aliasing (Chernoff tails) and truncation (closed-form bound of
  ∫|φ|/u) are each below 1e-13 for P_a and 1e-13·e^{−ε} for P_b, rounding is
  allowed for. When the characteristic function decays too slowly for
  ``MAX_NODES`` nodes (no normal part of L: every direction has unequal
  variances), L is smoothed by τZ and the smoothing error is bounded
  (:func:`~bayespriv.privacy.loss_inversion.cf_delta_bounds`) by terms proportional to τ² times the mass of L
  near ε, or a uniform bound, whichever is smaller. Measured brackets
  (upper − lower): ≈ 2.6e-7 at δ ≈ 0.1–0.3 and 5e-9 at δ ≈ 4e-6 in three
  dimensions; up to ≈ 4e-6 in two dimensions without mean difference (two
  chi-square terms, the slowest case).

Cost: closed forms take microseconds; one inversion (k ≥ 2) 2^18 nodes, about
0.05–0.1 s. :func:`scale_for_delta` screens first with a closed-form bound
(:func:`split_delta`: the mean shift and the covariance change composed, with a
Chernoff bound on the latter; microseconds, within 1.2× in noise scale where the
noise dominates F's own spread), then with 2^13 nodes (``CHEAP_NODES``, a looser
but valid bound), and evaluates fully only where both screens fail. Every screen
is an upper bound, so the search decides exactly as the full evaluation would.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from typing import Any

import numpy as np

from bayespriv._validation import (
    check_covariance,
    check_delta,
    check_epsilon,
    check_finite_array,
    check_real,
    described,
    fail,
    sealed,
)
from bayespriv.errors import ValidationError
from .hockey_stick import canonical_hockey, split_hockey
from .loss_reduction import canonical, check_pair

__all__ = [
    "gaussian_delta",
    "gaussian_delta_bounds",
    "gaussian_privacy_curve",
    "worst_delta",
    "scale_for_delta",
    "PairBox",
    "box_delta",
    "privacy_curve",
    "one_direction_delta",
    "split_delta",
]

#: Largest noise scale tried, relative to the pairs' own scale (beyond it the
#: covariances' condition number leaves float64's reach: RANK_RTOL).
MAX_SCALE = 1e8
#: Corners of the mean box searched by :meth:`PairBox.candidates` when k > 2.
MAX_SEARCHED_CORNERS = 4
#: Nodes of the cheap first evaluation in :func:`scale_for_delta` (its upper bound is valid,
#: only looser; the full evaluation is made only when the cheap one fails).
CHEAP_NODES = 2**13


def check_epsilons(epsilons) -> np.ndarray:
    eps = np.atleast_1d(check_finite_array(epsilons, "epsilons"))
    if eps.ndim != 1 or eps.size == 0 or np.any(eps <= 0):
        raise fail("epsilons", "a non-empty 1-D array of finite numbers > 0", epsilons)
    return eps


# ----------------------------------------------------------------------------------- public
def gaussian_delta_bounds(epsilons, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper bounds of δ(ε) for every ε (see :func:`gaussian_delta`).

    ``max_nodes`` (default :data:`~bayespriv.privacy.loss_inversion.MAX_NODES`) caps the nodes of the inversion:
    fewer is faster and still a valid bracket, only a wider one.

    Returns
    -------
    lower, upper : ndarray
        ``lower ≤ δ(ε) ≤ upper`` for the exact δ of the inputs as given. The
        upper bound is what :func:`gaussian_delta` returns; the gap is the
        numerical error (module docstring).
    """
    eps = check_epsilons(epsilons)
    d, a, b = check_pair(diff, cov_a, cov_b)
    c = canonical(d, a, b)
    lo_f, up_f = canonical_hockey(c, eps, max_nodes)
    lo_r, up_r = canonical_hockey(c.reverse(), eps, max_nodes)
    return np.maximum(lo_f, lo_r), np.maximum(up_f, up_r)


def one_direction_delta(epsilon: float, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> float:
    """H_ε(P_a‖P_b) for P_a = N(diff, cov_a), P_b = N(0, cov_b): one direction of :func:`gaussian_delta`.

    An upper bound of the exact value, with the numerical error of the module docstring.
    """
    eps = check_epsilon(epsilon)
    d, a, b = check_pair(diff, cov_a, cov_b)
    return float(canonical_hockey(canonical(d, a, b), np.array([eps]), max_nodes)[1][0])


def gaussian_privacy_curve(epsilons, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> np.ndarray:
    """δ(ε) for each ε of a 1-D array: the upper bounds of :func:`gaussian_delta`.

    The closed forms are evaluated per ε; the inversion shares the
    characteristic function over all ε (one plan covering the whole grid).
    """
    return gaussian_delta_bounds(epsilons, diff, cov_a, cov_b, max_nodes=max_nodes)[1]


def gaussian_delta(epsilon: float, diff, cov_a, cov_b, *, max_nodes: int | None = None) -> float:
    """δ(ε) = max(H_ε(P_a‖P_b), H_ε(P_b‖P_a)) for P_a = N(diff, cov_a), P_b = N(0, cov_b).

    Parameters
    ----------
    epsilon : float > 0
    diff : array (k,)
        Mean difference μ_a − μ_b.
    cov_a, cov_b : array (k, k)
        Covariances of the two laws (positive semi-definite; a scalar for k = 1).

    Returns
    -------
    float
        An upper bound of the exact δ(ε) (equal to it up to rounding in the
        closed-form cases; within ~1e-12·(1 + e^ε) plus the documented
        smoothing term with the characteristic-function inversion, see the
        module docstring). 1.0 when the supports differ.

    Notes
    -----
    H_ε(P‖Q) = P(L > ε) − e^ε Q(L > ε) with L the privacy loss log(dP/dQ).
    The bound keeps the conservative end of each term: an upper bound of
    P_a(L > ε) and a lower bound of P_b(L > ε) (and symmetrically for the
    reverse direction).
    """
    eps = check_epsilon(epsilon)
    return float(gaussian_privacy_curve(np.array([eps]), diff, cov_a, cov_b, max_nodes=max_nodes)[0])


def split_delta(epsilon: float, diff, cov_a, cov_b) -> float:
    """A closed-form upper bound of :func:`gaussian_delta`, looser and far cheaper: both directions of
    :func:`~bayespriv.privacy.hockey_stick.split_hockey` (a mean shift composed with a covariance
    change). :func:`scale_for_delta` screens with it before any inversion."""
    eps = check_epsilon(epsilon)
    c = canonical(*check_pair(diff, cov_a, cov_b))
    return max(split_hockey(c, eps), split_hockey(c.reverse(), eps))


def worst_delta(epsilon: float, pairs: Sequence[tuple]) -> tuple[float, int]:
    """The largest :func:`gaussian_delta` over ``(diff, cov_a, cov_b)`` triples, and its index."""
    eps = check_epsilon(epsilon)
    pairs = list(pairs)
    if not pairs:
        raise fail("pairs", "a non-empty sequence of (diff, cov_a, cov_b)", pairs)
    values = [gaussian_delta(eps, *p) for p in pairs]
    i = int(np.argmax(values))
    return float(values[i]), i


# ----------------------------------------------------------------------------- boxes of pairs
@dataclass(frozen=True)
class PairBox:
    """What a sampled calibration knows about one pair, on its confidence event.

    The true mean difference lies in ``diff ± half_width`` (componentwise) and
    the true covariances in the multiplicative Loewner intervals

        Σ̂_a/(1 + η_a) ⪯ Σ_a ⪯ Σ̂_a/(1 − η_a),   Σ̂_b/(1 + η_b) ⪯ Σ_b ⪯ Σ̂_b/(1 − η_b).

    The lower ends are :func:`bayespriv.calibration.moments.loewner_lower`
    (η = z·ρ(s), the Perron root of the whitened standard errors). The upper
    ends mirror them: on the event that the true-whitened error
    ``E = Σ^{-1/2}(Σ̂ − Σ)Σ^{-1/2}`` has ``‖E‖₂ ≤ η``,
    ``(1 − η)Σ ⪯ Σ̂ ⪯ (1 + η)Σ``. An upper end needs η < 1 (else: more draws).
    Exact calibrations have ``half_width = 0`` and ``η = 0``.
    """

    diff: np.ndarray
    half_width: np.ndarray
    cov_a: np.ndarray
    cov_b: np.ndarray
    eta_a: float = 0.0
    eta_b: float = 0.0

    def __post_init__(self) -> None:
        d, a, b = check_pair(self.diff, self.cov_a, self.cov_b)
        k = d.shape[0]
        hw = np.atleast_1d(check_finite_array(self.half_width, "half_width"))
        if hw.shape != (k,) or np.any(hw < 0):
            raise fail("half_width", f"a vector ({k},) of numbers >= 0", self.half_width)
        for name in ("eta_a", "eta_b"):
            eta = check_real(name, getattr(self, name))
            if not (0.0 <= eta < 1.0):
                raise fail(name, "in [0, 1) (a covariance upper bound needs z·rho < 1; use more draws)", eta)
            object.__setattr__(self, name, eta)
        for name, arr in (("diff", d), ("half_width", hw), ("cov_a", a), ("cov_b", b)):
            object.__setattr__(self, name, sealed(arr, float))

    @property
    def k(self) -> int:
        return int(self.diff.shape[0])

    @property
    def exact(self) -> bool:
        return self.eta_a == 0 and self.eta_b == 0 and not np.any(self.half_width)

    def bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(lower_a, upper_a, lower_b, upper_b)`` Loewner bounds."""
        return (self.cov_a / (1 + self.eta_a), self.cov_a / (1 - self.eta_a),
                self.cov_b / (1 + self.eta_b), self.cov_b / (1 - self.eta_b))

    def contains(self, diff, cov_a, cov_b, rtol: float = 1e-9) -> bool:
        """Whether a (diff, cov_a, cov_b) triple lies in the box (up to ``rtol``)."""
        d, a, b = check_pair(diff, cov_a, cov_b)
        la, ua, lb, ub = self.bounds()
        scale = max(1.0, float(np.abs(ua).max()), float(np.abs(ub).max()))
        ok = bool(np.all(np.abs(d - self.diff) <= self.half_width + rtol * (1.0 + np.abs(self.diff))))
        for m, lo, hi in ((a, la, ua), (b, lb, ub)):
            ok &= float(np.linalg.eigvalsh(m - lo)[0]) >= -rtol * scale
            ok &= float(np.linalg.eigvalsh(hi - m)[0]) >= -rtol * scale
        return ok

    def corners(self) -> np.ndarray:
        """Mean differences at the corners of the box, ``(c, k)`` (one when exact)."""
        unc = np.flatnonzero(self.half_width > 0)
        if unc.size > 12:
            raise ValidationError(
                f"covariance='unequal' (or 'auto' after a failed equal_covariance check) with sampled bounds "
                f"evaluates δ(ε) at every corner of the mean-difference box: at most 12 uncertain components "
                f"(2^12 corners); got {unc.size}. Use exact moments (Calibration.from_moments), "
                f"covariance='equal' (its check is recorded and the release refused if it fails; then relaxed() "
                f"or APGMnG), or a query with fewer components")
        if unc.size == 0:
            return self.diff[None, :].copy()
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=unc.size)))
        out = np.repeat(self.diff[None, :], signs.shape[0], axis=0)
        out[:, unc] += signs * self.half_width[unc]
        return out

    def candidates(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The (diff, Σ_a, Σ_b) triples over which :func:`box_delta` maximizes.

        Let W whiten the estimates jointly (``WΣ̂_bWᵀ = I``, ``WΣ̂_aWᵀ = diag(D)``,
        generalized eigenvectors). In that frame the box contains every pair
        ``Σ_a = W⁻¹ diag(D_j t_j) W⁻ᵀ``, ``Σ_b = W⁻¹ diag(s_j) W⁻ᵀ`` with
        ``t_j ∈ {1/(1 + η_a), 1/(1 − η_a)}`` and ``s_j`` likewise. Candidates:
        for each sign pattern over the k axes, one covariance at its upper end
        and the other at its lower end on each axis (the most unequal
        choices, 2^k), plus both lower ends and both upper ends; times the
        corners of the mean box. To bound the cost, for k > 3 only the
        patterns with one axis flipped from all-up / all-down are used, and
        for k > 2 only the ``MAX_SEARCHED_CORNERS`` corners of largest
        Mahalanobis norm (average covariance). The brute-force checks cover
        k ≤ 2, where the full set is used.
        """
        corners = self._searched_corners()
        if self.eta_a == 0 and self.eta_b == 0:
            return [(d, self.cov_a, self.cov_b) for d in corners]
        return [(d, a, b) for d in corners for a, b in self._covariance_pairs()]

    def _searched_corners(self) -> np.ndarray:
        """Every corner for k ≤ 2; beyond, the ``MAX_SEARCHED_CORNERS`` corners of largest
        Mahalanobis norm under the average covariance (a search heuristic, to bound the cost)."""
        corners = self.corners()
        if self.k <= 2 or corners.shape[0] <= MAX_SEARCHED_CORNERS:
            return corners
        avg = np.linalg.pinv((self.cov_a + self.cov_b) / 2.0)
        norms = np.einsum("ci,ij,cj->c", corners, avg, corners)
        return corners[np.argsort(norms)[::-1][:MAX_SEARCHED_CORNERS]]

    def _covariance_pairs(self) -> list[tuple[np.ndarray, np.ndarray]]:
        la, ua, lb, ub = self.bounds()
        c = canonical(np.zeros(self.k), self.cov_a, self.cov_b)
        pairs = [(la, lb), (ua, ub), (la, ub), (ua, lb)]
        if c.disjoint or c.d.size != self.k or self.k == 1:
            return pairs
        w, v = np.linalg.eigh(self.cov_b)
        chol = np.linalg.cholesky(self.cov_b)
        white_a = np.linalg.solve(chol, np.linalg.solve(chol, self.cov_a).T)
        dd, u = np.linalg.eigh((white_a + white_a.T) / 2)
        back = chol @ u  # W⁻¹: columns are the generalized eigenvectors' duals
        lo_a, hi_a = 1 / (1 + self.eta_a), 1 / (1 - self.eta_a)
        lo_b, hi_b = 1 / (1 + self.eta_b), 1 / (1 - self.eta_b)
        if self.k <= 3:
            patterns = list(itertools.product((False, True), repeat=self.k))
        else:  # single-axis flips of the all-up / all-down patterns (cost bound)
            patterns = [tuple(i == j for i in range(self.k)) for j in range(self.k)]
            patterns += [tuple(i != j for i in range(self.k)) for j in range(self.k)]
        for pat in patterns:
            up = np.array(pat)
            if up.all() or not up.any():
                continue  # already in the list
            ta = np.where(up, hi_a, lo_a) * dd
            sb = np.where(up, lo_b, hi_b)
            pairs.append((back @ np.diag(ta) @ back.T, back @ np.diag(sb) @ back.T))
        return pairs


def box_delta(epsilon: float, box: PairBox, noise_cov=None) -> float:
    """δ(ε) maximized over the candidates of a :class:`PairBox`, with noise ``noise_cov`` added.

    What is proved and what is searched:

    * adding common independent noise never increases δ (post-processing), so
      for every true pair, moving any common part of ``Σ_a − L_a`` and
      ``Σ_b − L_b`` into the noise gives a larger δ: the supremum over the box
      is attained where the two excesses share no common part, i.e. where the
      two covariances are as unequal as the box allows;
    * the candidates (:meth:`PairBox.candidates`) are the most unequal extreme
      points aligned with the generalized eigenvectors of the estimates, and
      the corners of the mean box. That the maximum over the box lies among
      them is checked by brute-force search of the box in one and two
      dimensions (``tests/mechanisms/test_privacy_loss.py``), not proved.
    """
    eps = check_epsilon(epsilon)
    k = box.k
    s = np.zeros((k, k)) if noise_cov is None else check_covariance(noise_cov, "noise_cov", k)
    return max(gaussian_delta(eps, d, a + s, b + s) for d, a, b in box.candidates())


def privacy_curve(epsilons, boxes: Sequence[PairBox], noise_cov) -> np.ndarray:
    """δ(ε) of a Gaussian mechanism, worst over pairs (and θ members) and their boxes.

    The shared implementation behind ``Mechanism.privacy_curve``: for every
    :class:`PairBox` (one per (θ, pair) condition of a calibration) and every
    candidate of it (:meth:`PairBox.candidates`), the output laws are
    ``N(d, Σ_a + S)`` and ``N(0, Σ_b + S)`` with ``S = noise_cov``; the
    curve is the largest :func:`gaussian_privacy_curve` (an upper bound per ε).
    Exact boxes (from exact or plug-in moments) have a single candidate.

    Parameters
    ----------
    epsilons : array (n,) of floats > 0
    boxes : sequence of PairBox
    noise_cov : array (k, k)
        The mechanism's noise covariance.

    Returns
    -------
    ndarray (n,)
    """
    eps = check_epsilons(epsilons)
    boxes = list(boxes)
    if not boxes or not all(isinstance(b, PairBox) for b in boxes):
        raise fail("boxes", "a non-empty sequence of PairBox", boxes)
    s = check_covariance(noise_cov, "noise_cov", boxes[0].k)
    out = np.zeros(eps.shape)
    for bx in boxes:
        for d, a, b in bx.candidates():
            out = np.maximum(out, gaussian_privacy_curve(eps, d, a + s, b + s))
    return out


# ------------------------------------------------------------------------------- calibration
def _triples(pairs: list, box: list | None) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Every (pair index, diff, Σ_a, Σ_b) that must meet δ: the pair itself or its box's candidates."""
    out = []
    for i, p in enumerate(pairs):
        bx = None if box is None else box[i]
        out += [(i, *t) for t in bx.candidates()] if bx is not None else [(i, *p)]
    return out


def scale_for_delta(epsilon: float, delta: float, noise_shape, pairs: Sequence, *, box: Sequence | None = None,
                    max_scale: float | None = None) -> float:
    """The smallest c ≥ 0 such that every pair meets δ(ε) ≤ δ with noise S = c·noise_shape.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    noise_shape : array (k, k)
        Positive semi-definite shape N of the added Gaussian noise.
    pairs : sequence of (diff, cov_a, cov_b)
        Mean difference and covariances of F(X) under each secret of a pair.
    box : sequence of PairBox or None, optional
        One per pair (None entries allowed): the pair must then hold for every
        mean difference and covariance pair in the box (:func:`box_delta`);
        each triple of ``pairs`` must lie in its box.
    max_scale : float, optional
        Give up (ValidationError) once the search passes this c.

    Returns
    -------
    float
        The upper end of the final bracket [lo, hi] with
        ``hi − lo ≤ 1e-9·hi``: δ(ε) ≤ δ was evaluated (upper bound) at hi for
        every pair and every candidate of every box, and failed at lo for one.

    Notes
    -----
    δ is non-increasing in c: S' = S + (c' − c)N adds common independent noise
    to both laws, a post-processing, and the hockey-stick divergence obeys the
    data-processing inequality. So the supremum over pairs (and boxes) is
    monotone in c and a bracketing search finds the threshold; no scan for
    non-monotone pieces is needed. Because the computed δ is an upper bound
    carrying numerical error, every decision rests on an evaluated bound, and
    the returned end is checked against every triple: by a bound evaluated
    there, or at a smaller scale (below), never by interpolation.

    Stages: c = 0 (every triple); doubling of the worst triple's bracket;
    a bracketing search on it (false position on log δ vs log c, Illinois,
    falling back to bisection) to relative width 1e-9; every triple checked
    at the upper end, resuming above it with the worst failing one. A triple
    whose bound was evaluated ≤ δ at some c is not evaluated again at a larger
    c: its true δ there is at most its true δ at c (the monotonicity above),
    which is at most the bound evaluated. The upper end only rises between
    checks, so each triple is evaluated about once.

    Raises
    ------
    ValidationError
        If no scale up to ``MAX_SCALE`` times the pairs' own scale meets δ (the
        noise shape misses a direction where a pair differs, so δ stays above
        the target).
    """
    eps, target = check_epsilon(epsilon), check_delta(delta)
    items = list(pairs)
    if not items:
        raise fail("pairs", "a non-empty sequence of (diff, cov_a, cov_b)", items)
    items = [check_pair(*p) for p in items]
    k = items[0][0].shape[0]
    shape = check_covariance(noise_shape, "noise_shape", k)
    if box is not None:
        box = list(box)
        if len(box) != len(items):
            raise fail("box", f"a sequence of {len(items)} PairBox (one per pair) or None", described(f"length {len(box)}"))
        for i, bx in enumerate(box):
            if bx is not None and not isinstance(bx, PairBox):
                raise fail(f"box[{i}]", "a PairBox or None", bx)
            if bx is not None and not bx.contains(*items[i]):
                raise fail(f"pairs[{i}]", f"inside box[{i}]", described("a triple outside its box"))
    limit = math.inf if max_scale is None else check_real("max_scale", max_scale)
    return _bisect_scale(eps, target, shape, _triples(items, box), limit)


def _bisect_scale(eps: float, target: float, shape: np.ndarray, triples: list, limit: float = math.inf) -> float:
    """Stages of :func:`scale_for_delta` (see its Notes) over flattened (pair, candidate) triples."""
    log_t = math.log(target)

    def delta_at(j: int, c: float, cheap: bool = False) -> float:
        """Upper bound of δ; with ``cheap``, first a looser one (fewer nodes), kept when it passes."""
        _, d, a, b = triples[j]
        if cheap:
            value = split_delta(eps, d, a + c * shape, b + c * shape)
            if value <= target:
                return value
            value = gaussian_delta(eps, d, a + c * shape, b + c * shape, max_nodes=CHEAP_NODES)
            if value <= target:
                return value
        return gaussian_delta(eps, d, a + c * shape, b + c * shape)

    every = list(range(len(triples)))
    vals = _at_zero(triples, eps, target, delta_at)  # stage 1: c = 0
    if max(vals.values()) <= target:
        return 0.0
    size = max(float(np.trace(a) + np.trace(b) + d @ d) for _, d, a, b in triples)
    unit = max(size, 1e-300) / max(float(np.trace(shape)), 1e-300)
    worst = max(vals, key=vals.get)
    lo, d_lo, hi = 0.0, vals[worst], unit
    passed: dict[int, float] = {}  # triple -> a scale at which its δ bound was evaluated ≤ target
    while True:
        d_hi = delta_at(worst, hi)
        while d_hi > target:  # stage 2: the gap doubles until the worst triple passes
            if hi > limit:
                raise fail("max_scale", "large enough for the noise shape to meet delta", limit)
            if hi > MAX_SCALE * unit:
                raise fail("noise_shape", "able to meet the target delta at some scale (it misses a direction in which "
                           "a pair differs)", described(f"delta still above {target:g} at c = {hi:.3g}"))
            lo, d_lo, hi = hi, d_hi, (hi + 2.0 * (hi - lo) if hi > lo else 2.0 * hi)
            d_hi = delta_at(worst, hi)
        lo, hi, d_lo, d_hi = _bracket_search(lambda c: delta_at(worst, c), lo, hi, d_lo, d_hi, log_t, 1e-9)  # stage 3
        passed[worst] = hi
        pending = [j for j in every if passed.get(j, math.inf) > hi]  # stage 4: every triple not yet known at hi
        vals = {j: delta_at(j, hi, cheap=True) for j in pending}
        passed.update((j, hi) for j in pending if vals[j] <= target)
        bad = [j for j in pending if vals[j] > target]
        if not bad:
            return hi
        worst = max(bad, key=lambda j: vals[j])  # resume just above hi with the worst failing triple
        lo, d_lo, hi = hi, vals[worst], hi * (1.0 + 1e-6)


def _at_zero(triples: list, eps: float, target: float, delta_at) -> dict[int, float]:
    """Stage 1 of :func:`scale_for_delta`: δ bounds at c = 0 that decide whether no noise is needed and which
    triple to search first. Every triple is screened by :func:`split_delta`; when some fails, the one it ranks
    worst is evaluated, and when that one fails too (no noise is not enough) the others need not be: the
    search's every-triple check at its upper end (stage 4) covers them. Else every triple is evaluated."""
    screen = {j: split_delta(eps, d, a, b) for j, (_, d, a, b) in enumerate(triples)}
    if max(screen.values()) <= target:
        return screen
    worst = max(screen, key=screen.get)
    value = delta_at(worst, 0.0, cheap=True)
    if value > target:
        return {worst: value}
    return {j: screen[j] if screen[j] <= target else delta_at(j, 0.0, cheap=True) for j in screen}


def _bracket_search(delta_of, lo: float, hi: float, d_lo: float, d_hi: float, log_t: float,
                    width: float) -> tuple[float, float, float, float]:
    """Shrink [lo, hi] (δ(lo) > target ≥ δ(hi)) to ``hi − lo ≤ width·hi``.

    Illinois false position on f = log δ − log target against log c (the end
    kept twice in a row has its f halved), clamped 0.1 % inside the bracket,
    plain bisection after 60 steps. Every step is a direct evaluation, so the
    bracket's meaning never depends on the interpolation. Returns
    ``(lo, hi, δ(lo), δ(hi))``.
    """
    f_lo, f_hi = math.log(max(d_lo, 1e-300)) - log_t, math.log(max(d_hi, 1e-300)) - log_t
    last, steps = 0, 0
    while hi - lo > width * hi:
        steps += 1
        if lo > 0 and steps <= 60 and f_lo > f_hi:
            x_lo, x_hi = math.log(lo), math.log(hi)
            mid = math.exp(x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo))
            gap = hi - lo
            mid = min(max(mid, lo + 1e-3 * gap), hi - 1e-3 * gap)
        else:
            mid = 0.5 * (lo + hi)
        d_mid = delta_of(mid)
        f_mid = math.log(max(d_mid, 1e-300)) - log_t
        if f_mid > 0:
            lo, f_lo, d_lo = mid, f_mid, d_mid
            if last == -1:
                f_hi *= 0.5
            last = -1
        else:
            hi, f_hi, d_hi = mid, f_mid, d_mid
            if last == 1:
                f_lo *= 0.5
            last = 1
    return lo, hi, d_lo, d_hi


#: Assumption named by a guarantee whose covariance box is searched rather than proven (k > 2).
BOX_SEARCH_ASSUMPTION = "covariance_box_search"


def box_assumptions(boxes: Any) -> tuple[str, ...]:
    """``("covariance_box_search",)`` when some box is a real box (sampled bounds) in k > 2 dimensions.

    The worst case over a box of covariances is found by a search over extreme points aligned
    with the generalized eigenvectors and the mean box's corners; that it is the maximum is
    verified by brute force for k ≤ 2 only, so beyond that the guarantee names the assumption.
    Exact calibrations (a single point) need none.
    """
    for b in boxes:
        k = int(np.asarray(b.diff).shape[-1])
        real_box = bool(np.any(np.asarray(b.half_width) > 0)) or b.eta_a > 0 or b.eta_b > 0
        if k > 2 and real_box:
            return (BOX_SEARCH_ASSUMPTION,)
    return ()

