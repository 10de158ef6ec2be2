"""Goodness-of-fit of draws against an exact finite law, shared by the data-model tests of exact laws.

Pearson χ² over the law's support, consecutive support points merged into cells that each expect at
least 20 draws (the χ² approximation of the statistic then holds well); the power of the test against
another law is that of the noncentral χ² with λ = n Σ (p_true − p_tested)² / p_tested over the cells.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

#: Least expected draws per cell.
MIN_EXPECTED = 20


def cells(values: np.ndarray, weights: np.ndarray, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Consecutive support points merged until each cell expects at least MIN_EXPECTED of n draws
    (the upper tail joins the last cell); returns the cells and their expected counts."""
    out, mass_out, current, mass = [], [], [], 0.0
    for v, w in zip(values, weights):
        current.append(v)
        mass += w
        if mass * n >= MIN_EXPECTED:
            out.append(np.array(current))
            mass_out.append(mass)
            current, mass = [], 0.0
    if current:
        out[-1] = np.concatenate([out[-1], current])
        mass_out[-1] += mass
    m = np.array(mass_out)
    return out, n * m / m.sum()


def chi2_p_value(draws: np.ndarray, law) -> float:
    """Pearson χ² p-value of 1-D draws against ``law = (points (m, 1), weights (m,))``."""
    points, weights = law
    groups, expected = cells(points[:, 0], weights, draws.size)
    observed = np.array([np.isin(draws, c).sum() for c in groups])
    assert observed.sum() == draws.size, "draws outside the law's support"
    return float(stats.chisquare(observed, expected).pvalue)


def power(true_law, tested_law, n: int, alpha: float) -> float:
    """Power at level ``alpha`` of the χ² test of ``tested_law`` on n draws that follow ``true_law``."""
    groups, expected = cells(tested_law[0][:, 0], tested_law[1], n)
    true = dict(zip(true_law[0][:, 0].tolist(), true_law[1].tolist()))
    p_true = np.array([sum(true.get(v, 0.0) for v in c) for c in groups])
    missing = 1.0 - p_true.sum()  # true mass outside the tested support: counted in the statistic as infinite
    if missing > 1e-12:
        return 1.0
    p_test = expected / n
    lam = n * float(np.sum((p_true - p_test) ** 2 / p_test))
    df = len(groups) - 1
    return float(stats.ncx2.sf(stats.chi2.isf(alpha, df), df, lam))
