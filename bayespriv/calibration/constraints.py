"""Every (θ, pair) condition a Gaussian-family mechanism must meet, conservatively.

The Gaussian mechanisms of the papers (APGM, ExpM(G), DirM, EigM, DauM and the
least-noise :class:`~bayespriv.mechanisms.OptimalGaussian`) all reduce to one
condition per discriminative pair (θ_i, θ_j) and per member θ of Θ:

    dᵀ (Σ + S)⁻¹ d ≤ r*(ε, δ)²,   d = E[F | θ_i] − E[F | θ_j],

with Σ the (common) covariance of F and S the added noise. From samples, d and
Σ are only estimated. :class:`PairConstraints` gathers, vectorized over all
constraints, what makes the condition provable on the calibration's event
(probability ``confidence``):

* the true d lies in the box ``diff ± half_width`` (so, the condition being
  convex in d, it suffices to check the box's corners, :meth:`corners`);
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

from ..errors import ValidationError
from ..secrets import SecretPair

__all__ = ["PairConstraints", "common_lower_bound"]

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
            arr = np.array(getattr(self, name), dtype=float)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

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

    def corners(self) -> np.ndarray:
        """Difference vectors ``(m, c, k)`` whose convex hull contains every
        difference the box allows (c = 2^u for u uncertain components; c = 1
        when exact). A condition convex in d that holds at every corner holds
        for the true d."""
        uncertain = np.flatnonzero(np.any(self.half_width > 0, axis=0))
        if uncertain.size > MAX_CORNER_DIMS:
            raise ValidationError(
                f"corners: at most {MAX_CORNER_DIMS} components with uncertain mean differences are supported "
                f"(2^k corners); got {uncertain.size}. Use more draws, an exact calibration, or a mechanism "
                "that needs only norms of the differences (APGM, ExpM)"
            )
        if uncertain.size == 0:
            return self.diff[:, None, :].copy()
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=uncertain.size)))  # (c, u)
        out = np.repeat(self.diff[:, None, :], signs.shape[0], axis=1)
        out[:, :, uncertain] += signs[None, :, :] * self.half_width[:, None, uncertain]
        return out

    def mahalanobis_sq(self, noise_cov: np.ndarray) -> np.ndarray:
        """An upper bound ``(m,)`` of ``sup dᵀ(Σ + S)⁻¹d`` per constraint, over
        every difference d in the box and every true covariance Σ above its
        lower bound (on the calibration's event). This is what a mechanism must
        keep ≤ r*² (Corollary A.1 of Chen & Ohrimenko).

        Two valid bounds, the smaller kept: ``dᵀ(Σ_lo + S)⁻¹d`` at the corners,
        valid only where ``Σ_lo + S`` is positive semidefinite (inverse
        monotonicity needs it; a lower bound from few draws can be indefinite,
        then this route gives ``inf``), and ``dᵀS⁺d``, valid because a true
        covariance is PSD (Σ + S ⪰ S). ``inf`` where d leaves the range.
        """
        S = np.asarray(noise_cov, dtype=float)
        S = (S + S.T) / 2.0
        corners = self.corners()
        via_lower = _max_quadratic(self.cov_common + S[None], corners)
        if not np.any(S):
            return via_lower
        return np.minimum(via_lower, _max_quadratic(np.broadcast_to(S, self.cov_common.shape), corners))


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
