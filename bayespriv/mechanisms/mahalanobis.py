"""The one check of the Gaussian mechanisms built on Corollary A.1 (Chen & Ohrimenko 2023), and Theorem 4.4.

* :func:`certified_mahalanobis_sq` — a conservative ``sup dᵀ(Σ + S)⁻¹d`` per (θ, pair)
  constraint, the check every noise of :mod:`~bayespriv.mechanisms.expected_value` and
  :mod:`~bayespriv.mechanisms.optimal` passes before it is returned;
* :func:`repair` — the smallest enlargement of a noise family that passes it (bisection);
* :func:`box_norms` — the largest ‖d‖₂ over each constraint's box;
* :class:`NoiselessReport`, :func:`noiseless_report` and :func:`noiseless_ok` — Theorem 4.4:
  no noise at all when the query's own covariance hides every difference;
* the margins :data:`SAFETY` and :data:`ROUNDING_RTOL` shared by those mechanisms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_choice, check_delta, check_epsilon
from ..calibration import Calibration, PairConstraints
from ..errors import ParameterTypeError, ValidationError
from bayespriv.privacy.analytic_gaussian import GAUSSIAN_CALIBRATIONS, gaussian_radius


#: Relative slack kept below the privacy target (r*² for Gaussian noise, ε for
#: Laplace noise) when noise is *computed*, so that floating-point rounding can
#: never push the achieved value over the target. Checks use the exact target.
SAFETY = 1e-9

#: Relative size (to the difference's norm) below which a component of a mean
#: difference outside the noise directions is treated as floating-point rounding.
ROUNDING_RTOL = 1e-12


def certified_mahalanobis_sq(constraints: PairConstraints, noise_cov: Any, warm: dict | None = None,
                             threshold: float | None = None) -> np.ndarray:
    """An upper bound ``(m,)`` of ``sup dᵀ(Σ + S)⁻¹d`` per (θ, pair) constraint:
    :meth:`PairConstraints.mahalanobis_sq` (the smaller of the ``Σ_lo + S``
    route, valid where that matrix is PSD, and the ``dᵀS⁺d`` route, valid since
    Σ ⪰ 0; over the difference box exactly at its corners up to 12 uncertain
    components, by a certified polynomial bound beyond). ``inf`` means "not
    private". ``warm``, ``threshold``: see :meth:`PairConstraints.mahalanobis_sq`."""
    return constraints.mahalanobis_sq(noise_cov, warm=warm, threshold=threshold)


def box_norms(constraints: PairConstraints) -> np.ndarray:
    """Largest ‖d‖₂ over each constraint's box ``(m,)`` (= ‖|diff| + half_width‖₂)."""
    return np.linalg.norm(constraints.upper, axis=1)


def repair(
    constraints: PairConstraints, r2: float, make: Callable[[float], np.ndarray], start: float
) -> tuple[np.ndarray, float]:
    """Smallest ``t ≥ 0`` (by bisection, up to 2⁻⁶⁰ relative) such that ``make(t)``
    certifies with ``r*²(1 − SAFETY/2)`` (half the computing margin is kept, so
    an independent float64 evaluation stays below r*²); returns ``(make(t), t)``.
    ``start`` > 0 is a first guess of the scale of t. Raises when no t up to
    2⁶⁰·start certifies."""
    r2 = r2 * (1.0 - SAFETY / 2.0)
    warm: dict = {}  # dual starting points carried along the bisection (polynomial box bound only)
    if certified_mahalanobis_sq(constraints, make(0.0), warm, r2).max(initial=0.0) <= r2:
        return make(0.0), 0.0
    hi = max(start, np.finfo(float).tiny)
    for _ in range(60):
        if certified_mahalanobis_sq(constraints, make(hi), warm, r2).max(initial=0.0) <= r2:
            break
        hi *= 2.0
    else:
        raise ValidationError(
            "the noise could not be certified: dᵀ(Σ + S)⁻¹d ≤ r*² fails even after enlarging the noise; "
            "the covariance lower bounds are probably too poor (use more draws)"
        )
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if certified_mahalanobis_sq(constraints, make(mid), warm, r2).max(initial=0.0) <= r2:
            hi = mid
        else:
            lo = mid
    return make(hi), hi


@dataclass(frozen=True)
class NoiselessReport:
    """Whether Theorem 4.4 lets F(X) be released without noise.

    Attributes
    ----------
    holds : bool
        ``dᵀΣ⁻¹d ≤ r*²`` for every (θ, pair) constraint and every corner d.
    distance : float
        Worst Mahalanobis distance ``sqrt(dᵀΣ⁻¹d)`` (``inf`` when a difference
        is outside the range of the covariance lower bound).
    radius : float
        r*(ε, δ).
    worst_pair : str
        Label of the constraint with the largest distance.
    worst_theta : dict or None
        θ of that constraint (families).
    """

    holds: bool
    distance: float
    radius: float
    worst_pair: str
    worst_theta: Any = None

    def __bool__(self) -> bool:
        return self.holds

    def __str__(self) -> str:
        verdict = "holds" if self.holds else "fails"
        return (f"Theorem 4.4 {verdict}: worst Mahalanobis distance {self.distance:.6g} "
                f"{'≤' if self.holds else '>'} r* = {self.radius:.6g} ({self.worst_pair})")


def noiseless_report(constraints: PairConstraints, radius: float) -> tuple[NoiselessReport, np.ndarray]:
    m2 = certified_mahalanobis_sq(constraints, np.zeros((constraints.k, constraints.k)))
    worst = int(np.argmax(m2))
    report = NoiselessReport(
        holds=bool(m2.max() <= radius**2),
        distance=float(np.sqrt(m2[worst])),
        radius=float(radius),
        worst_pair=constraints.labels[worst],
        worst_theta=constraints.thetas[worst],
    )
    return report, m2


def _check_calibration(calibration: Any) -> Calibration:
    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    return calibration


def noiseless_ok(
    calibration: Calibration, *, epsilon: float, delta: float, gaussian_calibration: str = "analytic"
) -> NoiselessReport:
    """Check Theorem 4.4 (Chen & Ohrimenko 2023): may F(X) be released as is?

    True when ``dᵀΣ⁻¹d ≤ r*(ε, δ)²`` for every (θ, pair) constraint of the
    calibration and every corner d of its difference box, with Σ the common
    covariance lower bound (:func:`certified_mahalanobis_sq` with S = 0).
    Assumes ``gaussian_query`` and ``equal_covariance``.

    Parameters
    ----------
    calibration : Calibration
    epsilon : float > 0
    delta : float in (0, 1)
    gaussian_calibration : {"analytic", "classic"}

    Returns
    -------
    NoiselessReport
        Truthy when the condition holds.
    """
    cal = _check_calibration(calibration)
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    check_choice(gaussian_calibration, "gaussian_calibration", GAUSSIAN_CALIBRATIONS)
    radius = gaussian_radius(eps, dlt, gaussian_calibration)
    return noiseless_report(cal.pair_constraints(), radius)[0]
