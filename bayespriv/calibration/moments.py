"""Moment estimates with Monte-Carlo standard errors and conservative bounds.

All functions work on a samples array of shape ``(secrets, draws, k)``.

Bounds (``z`` > 0; see :func:`bonferroni_z`):

* mean box: ``μ̂ ± z·se`` with ``se = sqrt(diag(Σ̂)/n)`` (CLT);
* covariance entries (reported, e.g. in ``moments_table``): standard errors
  ``se_cd² = (E[(x_c−μ_c)²(x_d−μ_d)²] − Σ_cd²)/n`` (plug-in fourth moments), so
  no normality of F is assumed;
* Loewner lower bound of a covariance, *multiplicative*: whiten the draws,
  ``y = W(x − μ̂)`` with ``W = Σ̂^{-1/2}`` (on the range of Σ̂), and take the
  same fourth-moment standard errors ``s_cd`` of the whitened covariance
  entries. On the event that every whitened entry lies within ``z·s_cd`` of
  its mean, the whitened error matrix ``E = W(Σ̂ − Σ)W`` satisfies
  ``‖E‖₂ = ρ(E) ≤ ρ(|E|) ≤ ρ(z·s) =: η`` (Perron–Frobenius: the spectral
  radius is monotone on non-negative matrices), so ``WΣ̂W ⪯ (1 + η)WΣW`` and

      ``Σ ⪰ Σ_lo = Σ̂ / (1 + η)``.

  Unlike the additive bound ``Σ̂ − z‖se‖_F·I``, this one is never
  indefinite, and it keeps the credit of small-variance directions (for the
  census query of the distribution-privacy paper, 1000 draws: Σ̂/1.56 instead
  of an indefinite matrix). The whitening uses Σ̂ in place of Σ, a plug-in
  that is part of the same asymptotic (CLT) argument as every standard error
  here (assumption ``monte_carlo_clt``). Directions where Σ̂ is singular get
  no credit (Σ_lo is singular there too). For k = 1: ``σ̂²/(1 + z·se(σ̂²)/σ̂²)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import ndtri

__all__ = ["sample_moments", "bonferroni_z", "loewner_lower", "whitened_cov_se", "law_mismatch", "RTOL"]

#: Relative tolerance of a stored moment against its recomputation, of its natural scale (see
#: :mod:`bayespriv.files.consistency`).
RTOL = 1e-9


def sample_moments(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Means ``(S, k)``, covariances ``(S, k, k)`` (ddof 1), their standard
    errors, and the standard errors of the whitened covariance entries
    (:func:`whitened_cov_se`)."""
    S, n, k = samples.shape
    means = samples.mean(axis=1)
    centred = samples - means[:, None, :]
    covs = _gram(centred) / max(n - 1, 1)
    mean_se = np.sqrt(np.clip(np.diagonal(covs, axis1=1, axis2=2), 0, None) / n)
    cov_se = _fourth_moment_se(centred, covs * (n - 1) / n)
    return means, covs, mean_se, cov_se, whitened_cov_se(centred, covs)


def _gram(x: np.ndarray) -> np.ndarray:
    """``Σ_n x[s, n, c] x[s, n, d]`` as ``(S, k, k)``, by a batched matrix product (BLAS; an unoptimised einsum
    is several times slower on many draws)."""
    return np.matmul(np.swapaxes(x, 1, 2), x)


def _fourth_moment_se(centred: np.ndarray, biased: np.ndarray) -> np.ndarray:
    n = centred.shape[1]
    sq = centred**2
    m4 = _gram(sq) / n
    return np.sqrt(np.clip(m4 - biased**2, 0, None) / n)


def whitened_cov_se(centred: np.ndarray, covs: np.ndarray) -> np.ndarray:
    """Standard errors ``(S, k, k)`` of the covariance entries of the whitened
    draws ``Σ̂^{-1/2}(x − μ̂)`` (zero rows/columns beyond the rank of Σ̂)."""
    S, n, k = centred.shape
    out = np.zeros((S, k, k))
    for s in range(S):  # S secrets; each step is vectorized over draws
        w, v = np.linalg.eigh((covs[s] + covs[s].T) / 2)
        keep = w > 1e-12 * max(float(w.max(initial=0.0)), np.finfo(float).tiny)
        r = int(keep.sum())
        if r == 0:
            continue
        y = centred[s] @ (v[:, keep] / np.sqrt(w[keep]))  # (n, r)
        biased = (y.T @ y) / n
        out[s, :r, :r] = _fourth_moment_se(y[None], biased[None])[0]
    return out


def bonferroni_z(confidence: float | None, n_events: int) -> float:
    """Two-sided normal quantile so that ``n_events`` intervals hold jointly.

    By the union bound, each interval may fail with probability
    ``(1 − confidence)/n_events``. ``None`` (plug-in) gives 0.
    """
    if confidence is None:
        return 0.0
    return float(-ndtri((1.0 - confidence) / (2.0 * max(n_events, 1))))


def shrink_factor(cov_se_white: np.ndarray, z: float) -> np.ndarray:
    """``1 + η`` per secret, ``η = z·ρ(s)`` the Perron root of the whitened
    standard errors (see the module docstring)."""
    s = np.asarray(cov_se_white, dtype=float)
    sym = (s + np.swapaxes(s, -1, -2)) / 2
    return 1.0 + z * np.linalg.eigvalsh(sym)[..., -1]


def loewner_lower(covs: np.ndarray, cov_se_white: np.ndarray, z: float) -> np.ndarray:
    """``Σ̂ / (1 + η)`` for each secret: a matrix below the true covariance on
    the calibration's event (module docstring)."""
    return covs / shrink_factor(cov_se_white, z)[:, None, None]


def worst_violation(diff: np.ndarray, scale: np.ndarray) -> tuple[int, ...] | None:
    """Index of the largest violation of |diff| <= RTOL·scale (None when none)."""
    bad = ~(np.abs(diff) <= RTOL * scale)  # NaN counts as a violation
    if not bad.any():
        return None
    excess = np.where(bad, np.abs(np.nan_to_num(diff, nan=np.inf)) / np.maximum(scale, np.finfo(float).tiny), -1.0)
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), diff.shape))


def law_mismatch(secrets: Any, names: Any, laws: Any, mean_array: np.ndarray, cov_array: np.ndarray) -> str | None:
    """Where ``mean_array`` / ``cov_array`` are not the moments of the exact ``laws`` (None when they are).

    The moments are recomputed as :class:`~bayespriv.calibration.laws.FiniteLaw` computes them and
    compared within :data:`RTOL` of their natural scale (the standard deviation of a component for a
    mean, ``√(σ_c² σ_d²)`` for a covariance entry), as for samples.

    Parameters
    ----------
    secrets : sequence of Secret
    names : sequence of str
        Component names, for the message.
    laws : mapping of str to FiniteLaw
        By secret label.
    mean_array, cov_array : ndarray (S, k), (S, k, k)

    Returns
    -------
    str or None
        The quantity, secret and component, with the stored and recomputed values.
    """
    mean = np.stack([laws[s.label].mean for s in secrets])
    cov = np.stack([laws[s.label].cov for s in secrets])
    sd = np.sqrt(np.clip(np.diagonal(cov, axis1=1, axis2=2), 0, None))
    for name, stored, fresh, scale in (("mean", mean_array, mean, sd + np.abs(mean)),
                                       ("cov", cov_array, cov, sd[:, :, None] * sd[:, None, :] + np.abs(cov))):
        if stored.shape != fresh.shape:
            return f"{name} of shape {stored.shape} for laws giving {fresh.shape}"
        where = worst_violation(stored - fresh, scale)
        if where is not None:
            comp = ", ".join(str(names[c]) for c in where[1:])
            return (f"{name} of secret {secrets[where[0]].label!r}, component {comp}: stored {stored[where]!r}, "
                    f"recomputed from the stored law {fresh[where]!r}")
    return None
