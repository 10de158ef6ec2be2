"""Densities of a mechanism's released laws, and the log-likelihood ratio between two of them.

The law of the released value given secret s is μ_s ∗ Z, μ_s known through draws of F(X) | s
(reference draws): its density is estimated by the mixture of the noise density centred on those
draws, evaluated in chunks with the float32 kernels of :mod:`~bayespriv.privacy.mixture_mc` after
mapping every point to coordinates where the noise is standard (:class:`_Noise`). Without noise, the
nearest reference draw decides (:func:`_nearest_scores`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_finite_array, described, fail
from ..errors import ValidationError
from bayespriv.privacy.loss_reduction import RANK_RTOL
from bayespriv.privacy.mixture_mc import KERNEL_BYTES, Block, chunk_rows
from .attack import noise_sampler


__all__ = ["log_likelihood_ratio"]



@dataclass(frozen=True)
class _Noise:
    """Map to noise coordinates: ``u = (y − centre) @ transform.T``; ``kind`` gaussian, laplace or none."""

    kind: str
    transform: np.ndarray | None

    @classmethod
    def of(cls, mechanism: Any, k: int) -> "_Noise":
        scale = getattr(mechanism, "noise_scale", None)
        basis = getattr(mechanism, "noise_basis", None)
        kind = getattr(mechanism, "noise", None)
        if kind not in (None, "gaussian", "laplace"):
            raise ValidationError(
                "the likelihood-ratio attack needs the density of the noise: Gaussian (noise_cov) or Laplace "
                f"(noise_scale, noise_basis); got noise {kind!r}, a sum whose density has no closed form here")
        noise_sampler(mechanism, k)  # validates shapes of the description
        if scale is not None and basis is not None:
            b = np.asarray(scale, dtype=float).reshape(-1)
            B = np.asarray(basis, dtype=float).reshape(k, b.size)
            if not np.any(b):
                return cls("none", None)
            if b.size != k or np.any(b <= 0) or np.linalg.matrix_rank(B) < k:
                raise ValidationError(
                    "Laplace noise must have a square, invertible basis with positive scales for its density to "
                    f"exist; got scales {b.tolist()} along a basis of shape {B.shape}")
            return cls("laplace", np.linalg.inv(B) / b[:, None])
        cov = np.asarray(mechanism.noise_cov, dtype=float).reshape(k, k)
        if not np.any(cov):
            return cls("none", None)
        w, v = np.linalg.eigh((cov + cov.T) / 2.0)
        if float(w.min()) <= RANK_RTOL * float(w.max()):
            raise ValidationError(
                "noise covariance must be full rank for the released law to have a density; got eigenvalues "
                f"{np.round(w, 12).tolist()} (a direction without noise releases F exactly there)")
        return cls("gaussian", (v / np.sqrt(w)).T)


def _log_mixture(u: np.ndarray, atoms: np.ndarray, laplace: bool) -> np.ndarray:
    """log (1/n) Σ_i φ(u_j − x_i) for standard Gaussian or Laplace φ, in chunks of rows."""
    n = atoms.shape[0]
    w = np.full(n, 1.0 / n, dtype=np.float32)
    out = np.empty(len(u))
    step = chunk_rows(n, atoms.shape[1], laplace)
    for s in range(0, len(u), step):
        blk = Block.of(u[s:s + step], atoms, laplace)  # φ = e · exp(top), e in [0, 1], float32
        out[s:s + step] = blk.top + np.log((blk.e @ w).astype(np.float64))
    return out


def _nearest(y: np.ndarray, atoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of y: the smallest squared distance to the atoms, and how many atoms attain it."""
    n, k = atoms.shape
    step = max(1, KERNEL_BYTES // (8 * n * k))
    dist, count = np.empty(len(y)), np.empty(len(y))
    for s in range(0, len(y), step):
        d = ((y[s:s + step, None, :] - atoms[None, :, :]) ** 2).sum(axis=2)
        dist[s:s + step] = d.min(axis=1)
        count[s:s + step] = (d == dist[s:s + step, None]).sum(axis=1)
    return dist, count


def _nearest_scores(y: np.ndarray, ref_a: np.ndarray, ref_b: np.ndarray) -> np.ndarray:
    """The zero-noise limit: +inf when b has the nearer draw, −inf when a has, else log count ratio."""
    pooled = np.vstack([ref_a, ref_b])
    sd = pooled.std(axis=0)
    sd[sd == 0] = 1.0
    centre = pooled.mean(axis=0)
    y, ref_a, ref_b = ((z - centre) / sd for z in (y, ref_a, ref_b))
    da, ca = _nearest(y, ref_a)
    db, cb = _nearest(y, ref_b)
    ratio = np.log(cb / len(ref_b)) - np.log(ca / len(ref_a))
    return np.where(db < da, np.inf, np.where(da < db, -np.inf, ratio))


def log_likelihood_ratio(values: Any, reference_a: Any, reference_b: Any, mechanism: Any) -> np.ndarray:
    """Scores log p̂_b(y) − log p̂_a(y) of released values under the mechanism's noise.

    p̂_s(y) = (1/n_s) Σ_i φ_Z(y − x_i) is the released density when F(X) | s is
    represented by the draws ``reference_s`` and Z is the mechanism's noise (see
    the module docstring). Without noise, the zero-noise limit of the same ratio:
    +inf when the nearest draw (per-component standardised distance) is one of b's,
    −inf when it is one of a's, and the log ratio of the shares of draws at that
    distance when they tie.

    Parameters
    ----------
    values : array (m, k) or (k,)
        Released values y.
    reference_a, reference_b : array (n_a, k), (n_b, k)
        Draws of F(X) under each secret.
    mechanism : Mechanism or object
        Exposing ``noise_cov`` (Gaussian; full rank or zero), or ``noise_scale``
        and ``noise_basis`` (Laplace, square invertible basis); its ``noise``
        attribute, when present, must be ``"gaussian"`` or ``"laplace"``.

    Returns
    -------
    ndarray (m,)
        Positive: evidence for b.

    Raises
    ------
    ValidationError
        For a noise without density here (a sum of noises, a singular covariance,
        a non-square Laplace basis) or arrays of the wrong shape.
    """
    ref_a = check_finite_array(reference_a, "reference_a", ndim=2)
    ref_b = check_finite_array(reference_b, "reference_b", ndim=2)
    k = ref_a.shape[1]
    if ref_b.shape[1] != k or min(len(ref_a), len(ref_b)) == 0:
        raise fail("reference_b", f"a non-empty array (n, {k}) like reference_a", described(f"shape {ref_b.shape}"))
    y = check_finite_array(values, "values")
    y = y.reshape(1, -1) if y.ndim == 1 else y
    if y.ndim != 2 or y.shape[1] != k:
        raise fail("values", f"of shape (m, {k})", described(f"shape {y.shape}"))
    return _scores(y, ref_a, ref_b, _Noise.of(mechanism, k))


def _scores(y: np.ndarray, ref_a: np.ndarray, ref_b: np.ndarray, noise: _Noise) -> np.ndarray:
    if noise.kind == "none":
        return _nearest_scores(y, ref_a, ref_b)
    centre = (ref_a.mean(axis=0) + ref_b.mean(axis=0)) / 2.0
    t = noise.transform
    u, ua, ub = ((z - centre) @ t.T for z in (y, ref_a, ref_b))
    laplace = noise.kind == "laplace"
    return _log_mixture(u, ub, laplace) - _log_mixture(u, ua, laplace)
