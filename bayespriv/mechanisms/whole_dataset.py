"""Whether a mechanism's noise alone makes it private for *any* change of the dataset.

An additive-noise release F(X) + Z is (ε, δ)-indistinguishable for every pair of datasets x, x′ of n
records when Z hides every difference F(x) − F(x′) the query can show. When F's components have a
known range (counts in [0, n], proportions in [0, 1], means with ``bounds``: :meth:`Query.valid_range
<bayespriv.Query.valid_range>`), those differences fill the box D = ∏ [−wᵢ, wᵢ] (wᵢ the width of
component i), and

* Gaussian noise N(0, S) of full rank gives (ε, δ) for every pair iff max_{d ∈ D} dᵀS⁻¹d ≤ r*(ε, δ)²
  (Balle & Wang 2018, Theorem 8, at the Mahalanobis distance of the two means); the maximum of a convex
  quadratic over a box is at a corner, so the 2^(k−1) corners (up to sign) are checked;
* Laplace noise B·z, zⱼ ~ Laplace(bⱼ), with B square and invertible, gives ε for every pair iff
  max_{d ∈ D} Σⱼ |(B⁻¹d)ⱼ| / bⱼ ≤ ε (the same corner argument).

Such a mechanism is differentially private with the whole dataset as the unit of privacy, so by joint
convexity of the hockey-stick divergence it is (ε, δ)-indistinguishable between *any* two laws of the
data — in particular between the conditional laws of X given what other releases showed. Hence it
composes with any release on the same data by the sequential composition theorem (Dwork & Roth 2014,
Theorem 3.16), whatever those releases are and however the records are correlated: the strongest form
of the DP-style conditions under which Bai, He, Gu, Kifer & Maeng (2026, *Composition for Pufferfish
Privacy*) show Pufferfish mechanisms compose linearly. The ledger adds such releases (composition
``"dataset_dp"``) instead of accounting them jointly.

The check is exact (no estimate enters it) and conservative: it needs a finite range for every
component derived by the library (a user query's declared ``output_range`` is its author's claim and is
not used), full-rank noise, and at most :data:`MAX_CORNER_COMPONENTS` components; a corner must clear
the bound by a relative margin of 1e-12, so a mechanism exactly at the boundary is accounted jointly.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["MAX_CORNER_COMPONENTS", "box_corners", "gaussian_covers_box", "laplace_covers_box"]

#: Largest number of components whose 2^(k−1) corners are enumerated.
MAX_CORNER_COMPONENTS = 16
_MARGIN = 1e-12


def box_corners(widths: np.ndarray) -> np.ndarray:
    """The corners (w₀, ±w₁, …, ±w_{k−1}) of the box ∏ [−wᵢ, wᵢ], one per pair ±d, as rows."""
    k = widths.size
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=k - 1)), dtype=float).reshape(2 ** (k - 1), k - 1)
    return np.hstack([np.ones((signs.shape[0], 1)), signs]) * widths


def _widths(valid_range: np.ndarray | None, k: int) -> np.ndarray | None:
    if valid_range is None or not 1 <= k <= MAX_CORNER_COMPONENTS:
        return None
    r = np.asarray(valid_range, dtype=float)
    if r.shape != (k, 2) or not np.all(np.isfinite(r)):
        return None
    return r[:, 1] - r[:, 0]


def gaussian_covers_box(noise_cov: np.ndarray, valid_range: np.ndarray | None, radius: float) -> bool:
    """Whether N(0, noise_cov) hides every difference of the box of ``valid_range`` at Mahalanobis ``radius``."""
    cov = np.asarray(noise_cov, dtype=float)
    widths = _widths(valid_range, cov.shape[0])
    if widths is None or not np.isfinite(radius) or radius <= 0:
        return False
    w, v = np.linalg.eigh((cov + cov.T) / 2.0)
    if w[0] <= 1e-12 * max(float(w[-1]), 1e-300):
        return False
    corners = box_corners(widths) @ v  # in the eigenbasis
    worst = float(np.max(np.sum(corners**2 / w, axis=1)))
    return worst <= radius**2 * (1.0 - _MARGIN)


def laplace_covers_box(scale: np.ndarray, basis: np.ndarray, valid_range: np.ndarray | None, epsilon: float) -> bool:
    """Whether Laplace noise of ``scale`` along the columns of ``basis`` hides every difference of the box at ε."""
    b, B = np.asarray(scale, dtype=float), np.asarray(basis, dtype=float)
    if B.ndim != 2 or B.shape[0] != B.shape[1] or b.shape != (B.shape[1],) or not np.all(b > 0):
        return False
    widths = _widths(valid_range, B.shape[0])
    if widths is None or np.linalg.matrix_rank(B) < B.shape[0]:
        return False
    coef = np.linalg.solve(B, box_corners(widths).T)  # (d, corners)
    worst = float(np.max(np.sum(np.abs(coef) / b[:, None], axis=0)))
    return worst <= epsilon * (1.0 - _MARGIN)
