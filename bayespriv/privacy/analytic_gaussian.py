"""The one Gaussian calibration every mechanism uses: r*(ε, δ).

Every Gaussian mechanism in bayespriv reduces to one fact: two Gaussian output
distributions with the same covariance Σ and means at Mahalanobis distance
``r = sqrt((μ_a − μ_b)ᵀ Σ⁻¹ (μ_a − μ_b))`` are (ε, δ)-indistinguishable
exactly when ``r ≤ r*(ε, δ)``. :func:`gaussian_radius` computes r* once.

* ``"analytic"`` (default; Balle & Wang 2018, Theorem 8): the privacy profile
  of the pair is ``δ(r) = Φ(r/2 − ε/r) − e^ε Φ(−r/2 − ε/r)``, increasing in r;
  r* solves δ(r) = δ. We evaluate it in log space (``log_ndtr``), bisect on an
  upper bound of it that allows for rounding, and return the *lower* end of the
  final bracket, so δ(r*) ≤ δ always (checked against 60-digit mpmath). Valid
  for every ε > 0; over ε ∈ [0.01, 50], δ ∈ [1e-15, 0.1] r* is within 1e-9
  relative of the exact root (measured: 7.5e-11 at worst), i.e. σ = Δ/r* is
  never more than 1e-9 above the least noise that meets δ.
* ``"classic"`` (Dwork & Roth 2014, Theorem A.1): r* = ε / c with
  c = sqrt(2 ln(1.25/δ)); its proof needs ε < 1, so ε ≥ 1 warns
  (:class:`~bayespriv.errors.PrivacyAssumptionWarning`). It reproduces the
  papers' numbers.
"""

from __future__ import annotations

import math
from functools import lru_cache

from scipy.special import log_ndtr

from bayespriv._validation import check_choice, check_delta, check_epsilon
from bayespriv.errors import PrivacyAssumptionWarning, warn

__all__ = ["gaussian_radius", "analytic_gaussian_log_delta", "classic_constant", "gaussian_sigma", "GAUSSIAN_CALIBRATIONS"]

GAUSSIAN_CALIBRATIONS = ("analytic", "classic")


def classic_constant(delta: float) -> float:
    """c = sqrt(2 ln(1.25/δ)) of the classic Gaussian mechanism."""
    return math.sqrt(2.0 * math.log(1.25 / delta))


def analytic_gaussian_log_delta(epsilon: float, r: float) -> float:
    """log δ achieved at ε by two unit-variance Gaussians whose means are r apart.

    ``log(Φ(a) − e^ε Φ(b))`` with ``a = r/2 − ε/r``, ``b = −r/2 − ε/r``, computed
    as ``logΦ(a) + log(−expm1(ε + logΦ(b) − logΦ(a)))``. When the two terms
    nearly cancel (small ε), the rounding of ``logΦ`` is amplified by
    ``Φ(a)/δ``; :func:`gaussian_radius` therefore bisects on an upper bound of
    this value that accounts for that rounding.
    """
    if r <= 0:
        return -math.inf
    a = r / 2.0 - epsilon / r
    b = -r / 2.0 - epsilon / r
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    t = epsilon + lb - la
    if t >= 0:  # cannot happen mathematically (Φ(a) > e^ε Φ(b)); guard rounding
        return -math.inf
    return la + math.log(-math.expm1(t))


#: Relative rounding error allowed for each ``log_ndtr`` value (generous: ~64 ulp).
_LOG_NDTR_ROUNDING = 64 * 2.0**-52


def _log_delta_upper(epsilon: float, r: float) -> float:
    """An upper bound of the exact log δ(r), allowing for floating-point rounding.

    ``t = ε + logΦ(b) − logΦ(a)`` is close to 0 when the terms nearly cancel, and
    an absolute error e in t is a relative error ≈ e/|t| in δ. We move t down by
    a bound of its rounding error (and logΦ(a) up by its own), so that the bisection
    below never accepts an r whose exact δ exceeds the target (measured with
    50-digit mpmath: without this, δ(r*) overshot the target by up to 1e-11
    relative for small ε).
    """
    if r <= 0:
        return -math.inf
    a = r / 2.0 - epsilon / r
    b = -r / 2.0 - epsilon / r
    la, lb = float(log_ndtr(a)), float(log_ndtr(b))
    err_t = _LOG_NDTR_ROUNDING * (abs(la) + abs(lb) + epsilon + 2.0)
    t = epsilon + lb - la - err_t  # the exact t is at least this, and δ decreases in t
    if t >= 0:  # impossible for exact values (Φ(a) > e^ε Φ(b)): refuse to certify
        return math.inf
    return la + _LOG_NDTR_ROUNDING * (abs(la) + 1.0) + math.log(-math.expm1(t))


@lru_cache(maxsize=4096)
def _analytic_radius(epsilon: float, delta: float) -> float:
    log_target = math.log(delta)
    lo, hi = 0.0, 1.0
    while _log_delta_upper(epsilon, hi) <= log_target:
        lo, hi = hi, 2.0 * hi
        if hi > 1e8:  # pragma: no cover - delta < 1 keeps r* finite
            break
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _log_delta_upper(epsilon, mid) <= log_target:
            lo = mid
        else:
            hi = mid
    return lo


def gaussian_radius(epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """r*(ε, δ): the largest Mahalanobis mean distance that (ε, δ) allows.

    The noise standard deviation for an L2 sensitivity Δ is ``Δ / r*``.

    Parameters
    ----------
    epsilon : float > 0
    delta : float in (0, 1)
    calibration : {"analytic", "classic"}

    Warns
    -----
    PrivacyAssumptionWarning
        For ``"classic"`` with ε ≥ 1, where Dwork & Roth's proof does not hold.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    check_choice(calibration, "gaussian_calibration", GAUSSIAN_CALIBRATIONS)
    if calibration == "classic":
        if epsilon >= 1:
            warn(
                f"classic Gaussian calibration (c = sqrt(2 ln(1.25/δ))) is proven only for epsilon < 1; got epsilon={epsilon}. "
                "The papers use it anyway; use gaussian_calibration='analytic' for a guarantee that holds.",
                PrivacyAssumptionWarning,
            )
        return epsilon / classic_constant(delta)
    return _analytic_radius(epsilon, delta)


def gaussian_sigma(sensitivity: float, epsilon: float, delta: float, calibration: str = "analytic") -> float:
    """Standard deviation of isotropic Gaussian noise for L2 sensitivity Δ."""
    return float(sensitivity) / gaussian_radius(epsilon, delta, calibration)

