"""Float draws of a mechanism's noise law, for simulations and audits: N(0, Σ) and Laplace along a basis.

A release never uses these (its noise comes from the exact samplers through a grid plan,
:mod:`.grid_plans`); they serve audits, utility simulations and the benchmarks' float baseline.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sample_gaussian", "sample_laplace"]


def sample_gaussian(cov: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of N(0, cov) for a PSD (possibly singular) covariance."""
    w, U = np.linalg.eigh(cov)
    return (U * np.sqrt(np.clip(w, 0.0, None))) @ rng.standard_normal(cov.shape[0])


def sample_laplace(scale: np.ndarray, basis: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``basis @ (scale * L)`` with L i.i.d. standard Laplace (density e^{-|x|}/2)."""
    return basis @ (scale * rng.laplace(0.0, 1.0, size=scale.shape[0]))
