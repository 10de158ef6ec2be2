"""Power rules: the fewest draws at which a check of :mod:`bayespriv.calibration.assumptions` can
detect the departures from its assumption that matter.

A check that does not reject with fewer draws than its rule asks for reads *unchecked*, never
passed (:func:`~bayespriv.calibration.assumptions.check_assumptions`). The rules are data
(:data:`POWER_RULES`), one row per test a check runs, with the measurements behind them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import special, stats

__all__ = ["MIN_DRAWS_NORMALITY", "VARIANCE_RATIO", "SKEWNESS", "KS_DISTANCE", "PowerRule", "POWER_RULES",
           "power_rules", "required_draws"]

#: Fewest draws for the normality test.
MIN_DRAWS_NORMALITY = 20


@dataclass(frozen=True)
class PowerRule:
    """The smallest number of draws at which one test of a named check has power.

    A check's test rejects at a per-test level α' (its ``alpha`` split by
    Bonferroni over the tests it runs). Below :meth:`n_min` of α' the test
    would miss ``departure`` more often than not, so a pass there says nothing:
    the check reads *unchecked* (``holds=None``), never passed. A rejection
    below ``n_min`` still counts (its level does not depend on power).

    ``n_min(α') = ceil(factor · q(α')²)`` with ``q`` the test's critical value:
    the two-sided normal quantile ``Φ⁻¹(1 − α'/2)`` (``quantile="normal"``)
    or Kolmogorov's ``K⁻¹(1 − α')`` (``quantile="kolmogorov"``); ``factor``
    is the asymptotic one from the test's noncentrality, corrected where the
    measured small-sample power fell short (see :data:`POWER_RULES`).

    Attributes
    ----------
    check : str
        The named check (``"gaussian_query"``, ``"equal_covariance"``, ``"translation"``).
    departure : str
        The departure from the assumption that matters, with its size.
    test : str
        The test that must detect it.
    factor : float
        ``n_min = ceil(factor · q²)``.
    quantile : str
        ``"normal"`` or ``"kolmogorov"``.
    share : float
        Fraction of the check's α that each test of this kind gets (the
        translation check weights its KS tests twice: ``share = 1/2``).
    floor : int
        Fewest draws for the test's p-values to be valid at all.
    """

    check: str
    departure: str
    test: str
    factor: float
    quantile: str
    share: float = 1.0
    floor: int = 3

    def n_min(self, alpha: float, n_tests: int = 1) -> int:
        """Fewest draws per secret for power ≥ 1/2 at per-test level ``share · alpha / n_tests``."""
        a = self.share * alpha / max(int(n_tests), 1)
        q = float(stats.kstwobign.isf(a)) if self.quantile == "kolmogorov" else float(special.ndtri(1.0 - a / 2.0))
        return max(self.floor, math.ceil(self.factor * q * q))


#: Variance ratio that the ``equal_covariance`` power rule must detect. At ratio 2,
#: N(0, 2) against N(0, 1) alone (no mean shift) has δ(ε = 1) = 0.046 (quadrature): any Gaussian
#: mechanism whose target δ is below 0.02 is broken by this departure.
VARIANCE_RATIO = 2.0
#: Skewness that the ``gaussian_query`` power rule must detect (Gamma(4) has skewness 1 and
#: puts 9.1e-3 beyond the upper 1e-3 quantile of the Gaussian with its mean and variance: a
#: Gaussian mechanism's δ-sized tails are off by a factor 9).
SKEWNESS = 1.0
#: KS distance to every translate that the ``translation`` power rule must detect: the
#: standardized exponential law against N(0, 1) (0.149, computed by minimizing over the shift).
KS_DISTANCE = 0.15


def _welch_factor(ratio: float) -> float:
    # Welch's t on the squares (x − x̄)² of Gaussian draws, variances 1 and ρ: the mean
    # difference ρ − 1 over the standard error sqrt(2(1 + ρ²)/n) reaches the critical value
    # q at n = 2(1 + ρ²) q² / (ρ − 1)² (power 1/2). Measured n50 is ≤ 3.5 % above it for
    # α' ∈ [1e-6, 1e-2] (1000 replications each): factor × 1.05.
    return 1.05 * 2.0 * (1.0 + ratio**2) / (ratio - 1.0) ** 2


#: The power rule of every test a check runs, as data. Measurements (seeded simulation,
#: 1000 replications per α' for the first two, 400 for the third):
#:
#: * Shapiro–Wilk on Gamma(4) draws (skewness 1): power 1/2 at n50 = 54, 85, 118, 149, 190
#:   for α' = 1e-2 … 1e-6, i.e. n50 / q² = 7.6–8.2 (the skewness-test asymptotic 6 q²/γ²
#:   gives power 0.33 only); factor 8.5.
#: * Welch on the squares, variance ratio 2: n50 = 66, 112, 155, 199, 246 against the
#:   asymptotic 66, 108, 151, 195, 239 (α' = 1e-2 … 1e-6); factor = asymptotic × 1.05.
#: * The translation check's shift-minimized KS on N(0, 1) against an exponential of the same
#:   variance (KS distance 0.149 to every translate): the two-sample asymptotic
#:   n = 2 (K⁻¹(1 − α') / d)² gives power 0.05–0.15 (the shift is minimized over and the
#:   statistic lowered by a window mass, conservatively); 1.3 × it gives 0.55–0.64 at
#:   α = 0.05, 1e-3, 1e-5 (k = 1): factor 2 × 1.3 / d².
POWER_RULES: tuple[PowerRule, ...] = (
    PowerRule("gaussian_query", f"skewness {SKEWNESS:g} (a Gamma(4)-shaped law)", "Shapiro–Wilk",
              8.5 / SKEWNESS**2, "normal", floor=MIN_DRAWS_NORMALITY),
    PowerRule("equal_covariance", f"variance ratio {VARIANCE_RATIO:g} on a component (Gaussian F)",
              "Welch's t on the covariance entries", _welch_factor(VARIANCE_RATIO), "normal"),
    PowerRule("translation", f"KS distance {KS_DISTANCE:g} to every translate (exponential against Gaussian)",
              "shift-minimized two-sample KS", 1.3 * 2.0 / KS_DISTANCE**2, "kolmogorov", share=0.5),
    PowerRule("translation", f"variance ratio {VARIANCE_RATIO:g} on a component (Gaussian F)",
              "Welch's t on the covariance entries", _welch_factor(VARIANCE_RATIO), "normal"),
)


def power_rules(check: str) -> tuple[PowerRule, ...]:
    """The rows of :data:`POWER_RULES` for one named check (empty when it has none)."""
    return tuple(r for r in POWER_RULES if r.check == check)


def required_draws(check: str, alpha: float, n_tests: int) -> int:
    """Fewest draws per secret at which every test of ``check`` has power ≥ 1/2
    against its departure (the largest :meth:`PowerRule.n_min` of its rows), with
    the check's ``alpha`` split over ``n_tests`` tests. 0 for a check without rules."""
    return max((r.n_min(alpha, n_tests) for r in power_rules(check)), default=0)
