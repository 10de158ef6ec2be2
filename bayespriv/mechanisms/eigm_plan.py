"""EigM's noise plan: Theorem 4.5's variances along the eigenvectors, per (θ, pair) constraint.

:func:`eig_plan` returns an :class:`EigPlan` (eigenvectors of the average covariance lower bound,
the variance along each, and per constraint the need, the credit used and the off-diagonal
size). The proof is in the docstring of :class:`~bayespriv.mechanisms.expected_value.EigM`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..calibration import PairConstraints
from .mahalanobis import SAFETY, box_norms


#: Relative off-diagonal size (in the common eigenbasis) above which the
#: covariance lower bounds are recorded as not sharing their eigenvectors.
EIGENVECTOR_RTOL = 1e-8


@dataclass(frozen=True)
class EigPlan:
    eigenvectors: np.ndarray  # (k, k) columns
    eigenvalues: np.ndarray  # (k,) of the average covariance lower bound
    sigma2: np.ndarray  # (k,)
    need: np.ndarray  # (m, k)
    required: np.ndarray  # (m,) (Δ_i / r*)²
    sensitivity: np.ndarray  # (m,)
    credit: tuple[str, ...]  # (m,)
    offdiag: np.ndarray  # (m,) relative

    @property
    def cov(self) -> np.ndarray:
        return (self.eigenvectors * self.sigma2) @ self.eigenvectors.T


def eig_plan(cons: PairConstraints, radius: float) -> EigPlan:
    """Theorem 4.5's noise, per (θ, pair) constraint, with a diagonal-in-V credit."""
    k, m = cons.k, len(cons)
    target = radius**2 * (1.0 - SAFETY)
    sens = box_norms(cons)
    required = sens**2 / target
    C = cons.cov_common
    avg = C.mean(axis=0)
    eigenvalues, V = np.linalg.eigh((avg + avg.T) / 2.0)
    Mv = np.swapaxes(V, 0, 1)[None] @ C @ V[None]  # (m, k, k): Vᵀ Σ_lo V
    diag = np.diagonal(Mv, axis1=1, axis2=2)
    off = np.abs(Mv).sum(axis=2) - np.abs(diag)
    scale = np.maximum(np.abs(diag).max(axis=1), np.finfo(float).tiny)
    offdiag = off.max(axis=1) / scale
    gersh = diag - off  # Gershgorin: Vᵀ Σ_lo V − diag(gersh) is diagonally dominant, hence PSD
    lam_min = np.linalg.eigvalsh((C + np.swapaxes(C, 1, 2)) / 2.0)[:, 0]
    cands = np.stack([gersh, np.repeat(lam_min[:, None], k, axis=1), np.zeros((m, k))])  # (3, m, k)
    needs = np.where(required[None, :, None] > 0, np.maximum(0.0, required[None, :, None] - cands), 0.0)
    choice = np.argmin(needs.sum(axis=2), axis=0)
    need = needs[choice, np.arange(m)]
    names = np.array(["eigenvalues", "lambda_min", "none"], dtype=object)
    credit = tuple(
        "gershgorin" if (c == 0 and offdiag[i] > EIGENVECTOR_RTOL) else str(names[c]) for i, c in enumerate(choice)
    )
    return EigPlan(V, eigenvalues, need.max(axis=0) if m else np.zeros(k), need, required, sens, credit, offdiag)
