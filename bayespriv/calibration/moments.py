"""Moment estimates with Monte-Carlo standard errors and conservative bounds.

All functions work on a samples array of shape ``(secrets, draws, k)``.

Bounds (``z`` > 0; see :func:`bonferroni_z`):

* mean box: ``μ̂ ± z·se`` with ``se = sqrt(diag(Σ̂)/n)`` (CLT);
* covariance entries: ``|Σ̂_cd − Σ_cd| ≤ z·se_cd`` with the distribution-free
  asymptotic standard error ``se_cd² = (E[(x_c−μ_c)²(x_d−μ_d)²] − Σ_cd²)/n``
  (plug-in fourth moments), so no normality of F is assumed here;
* Loewner lower bound of a covariance: ``Σ_lo = Σ̂ − z·‖se‖_F·I``; on the event
  that every entry lies in its interval, ``‖Σ̂ − Σ‖₂ ≤ ‖Σ̂ − Σ‖_F ≤ z‖se‖_F``,
  hence ``Σ ⪰ Σ_lo``. For k = 1 this is the usual lower bound of a variance.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri

__all__ = ["sample_moments", "bonferroni_z", "loewner_lower"]


def sample_moments(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Means ``(S, k)``, covariances ``(S, k, k)`` (ddof 1) and their standard errors."""
    S, n, k = samples.shape
    means = samples.mean(axis=1)
    centred = samples - means[:, None, :]
    covs = np.einsum("snc,snd->scd", centred, centred) / max(n - 1, 1)
    mean_se = np.sqrt(np.clip(np.diagonal(covs, axis1=1, axis2=2), 0, None) / n)
    sq = centred**2
    m4 = np.einsum("snc,snd->scd", sq, sq) / n
    biased = covs * (n - 1) / n
    cov_se = np.sqrt(np.clip(m4 - biased**2, 0, None) / n)
    return means, covs, mean_se, cov_se


def bonferroni_z(confidence: float | None, n_events: int) -> float:
    """Two-sided normal quantile so that ``n_events`` intervals hold jointly.

    By the union bound, each interval may fail with probability
    ``(1 − confidence)/n_events``. ``None`` (plug-in) gives 0.
    """
    if confidence is None:
        return 0.0
    return float(-ndtri((1.0 - confidence) / (2.0 * max(n_events, 1))))


def loewner_lower(covs: np.ndarray, cov_se: np.ndarray, z: float) -> np.ndarray:
    """``Σ̂ − z‖se‖_F I`` for each secret: a matrix below the true covariance."""
    k = covs.shape[-1]
    eta = z * np.sqrt((cov_se**2).sum(axis=(1, 2)))
    return covs - eta[:, None, None] * np.eye(k)
