"""Was ``n_draws`` enough? The calibration's estimates and bounds as draws accumulate.

:func:`convergence` recomputes a sampled calibration on prefixes of its own
draws (the first n of every secret, for a growing n) with the library's own
summaries (:func:`~bayespriv.calibration.engine.calibration_from_samples`:
the same moments, standard errors, Bonferroni z and Loewner bounds as the
calibration itself), and reports per prefix the L_ord sensitivity estimate, its
upper bound and their difference, the *slack*, with the smallest variance and
its lower bound. Its last row is the calibration itself, exactly.

:func:`draws_for_slack` extrapolates: every standard error is ``√(v/n)``
for a fixed per-draw variance ``v``, so at the same confidence (same z) the
slack of the bound scales as ``1/√n`` and ``n_target = n·(slack/target)²``.
Drawing is in :func:`bayespriv.diagnostics.plot_convergence`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_positive_int, check_real, described, fail
from .result import Calibration, _ord

__all__ = ["Convergence", "convergence", "draws_for_slack"]


@dataclass(frozen=True)
class Convergence:
    """The sensitivity and variance estimates and bounds on prefixes of a calibration's draws.

    Attributes
    ----------
    n : ndarray of int (P,)
        Draws per secret in each prefix, increasing; the last is ``n_draws``.
    sensitivity, sensitivity_bound : ndarray (P,)
        The L_ord sensitivity estimate and its upper bound (over pairs and, for a
        family, over members) on each prefix.
    slack : ndarray (P,)
        ``sensitivity_bound − sensitivity``: what the Monte-Carlo error costs.
    variance, variance_bound : ndarray (P,)
        The smallest conditional variance (over secrets, components and members)
        and its lower bound.
    ord : float
        The norm (1, 2 or inf).
    confidence : float or None
        The calibration's confidence (every prefix uses the same z).
    """

    n: np.ndarray
    sensitivity: np.ndarray
    sensitivity_bound: np.ndarray
    slack: np.ndarray
    variance: np.ndarray
    variance_bound: np.ndarray
    ord: float
    confidence: float | None

    def draws_for_slack(self, target: float) -> int:
        """Draws per secret for a slack of ``target``, extrapolated from the last prefix as ``1/√n``
        (the calibration itself: the same number as :func:`draws_for_slack`)."""
        return _draws_for(int(self.n[-1]), float(self.slack[-1]), target, self.confidence)

    def to_frame(self) -> Any:
        """The table, one row per prefix (a pandas DataFrame indexed by ``n``)."""
        import pandas as pd

        return pd.DataFrame({"sensitivity": self.sensitivity, "sensitivity bound": self.sensitivity_bound,
                             "slack": self.slack, "smallest variance": self.variance,
                             "variance bound": self.variance_bound}, index=pd.Index(self.n, name="n"))


def _draws_for(n: int, slack: float, target: Any, confidence: float | None) -> int:
    """``⌈n·(slack/target)²⌉`` (at least 2), after checking ``target`` and that there is slack."""
    target = check_real("target", target)
    if not (math.isfinite(target) and target > 0):
        raise fail("target", "a positive finite slack (bound − estimate of the sensitivity)", target)
    if not slack > 0:
        raise fail("calibration", "a calibration whose bounds have slack (confidence not None, draws that vary)",
                   described(f"slack {slack:.3g} (confidence {confidence})"))
    return max(2, int(math.ceil(n * (slack / target) ** 2)))


def _checked_sampled(calibration: Any) -> Calibration:
    """A Calibration holding the draws of every member."""
    if not isinstance(calibration, Calibration):
        from ..errors import ParameterTypeError

        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    if any(m.sample_array is None for m in calibration.members):
        raise fail("calibration", "a sampled calibration (its draws are recomputed on prefixes)",
                   described("a calibration without samples (exact moments, or loaded without them)"))
    if calibration.finite_laws:
        raise fail("calibration", "a calibration whose bounds rest on its draws (with the exact laws of F its "
                                  "moments are exact: no bound rests on its draws, whatever their number)",
                   described("one holding finite_laws"))
    return calibration


def _prefix_sizes(cal: Calibration, n_points: int) -> np.ndarray:
    """Geometric grid of prefix sizes from the fewest draws the calibration's bounds accept to ``n_draws``."""
    from .engine import _events, minimum_draws

    n = cal.n_draws
    n_events = len(cal.members) * _events(len(cal.secrets), cal.k)
    start = min(n, max(2, minimum_draws(cal.confidence, cal.k, n_events)[0]))
    sizes = np.unique(np.round(np.geomspace(start, n, n_points)).astype(int))
    return sizes[(sizes >= 2) & (sizes <= n)]


def _prefix_point(cal: Calibration, n: int, ord_: float | str) -> tuple[float, float, float, float]:
    """Sensitivity estimate and bound, smallest variance and its bound, on the first ``n`` draws."""
    from .draw_report import DrawReport
    from .engine import _events, calibration_from_samples

    report = DrawReport(n_events=len(cal.members) * _events(len(cal.secrets), cal.k))
    sens, bound, var, var_bound = -math.inf, -math.inf, math.inf, math.inf
    for m in cal.members:
        part = calibration_from_samples(m.sample_array[:, :n, :], m.secrets, m.pairs, None,
                                        confidence=m.confidence, report=report)
        sens = max(sens, part.sensitivity(ord_))
        bound = max(bound, part.sensitivity(ord_, bound=True))
        var = min(var, float(np.min(part.variance())))
        var_bound = min(var_bound, float(np.min(part.variance(bound=True))))
    return sens, bound, var, var_bound


def convergence(calibration: Calibration, ord: float | str = 2, *, n_points: int = 20) -> Convergence:
    """Sensitivity estimate, bound and slack (and the smallest variance) as the draws accumulate.

    Parameters
    ----------
    calibration : Calibration
        A sampled calibration (:func:`~bayespriv.calibrate`), single model or family.
    ord : {1, 2, "inf"}, default 2
        The norm of the sensitivity.
    n_points : int, default 20
        Prefix sizes, spaced geometrically from the fewest draws the calibration's
        bounds accept (:func:`~bayespriv.calibration.engine.minimum_draws`) to
        ``n_draws`` (fewer when the grid rounds to repeated sizes).

    Returns
    -------
    Convergence
        Its last row equals the calibration's own ``sensitivity(ord)``,
        ``sensitivity(ord, bound=True)``, ``variance()`` and ``variance(bound=True)``.

    Raises
    ------
    ValidationError
        A calibration without draws; ``n_points`` below 2.
    """
    cal = _checked_sampled(calibration)
    ord_ = _ord(ord)
    n_points = check_positive_int(n_points, "n_points", minimum=2)
    sizes = _prefix_sizes(cal, n_points)
    points = np.array([_prefix_point(cal, int(n), ord_) for n in sizes])
    return Convergence(n=sizes, sensitivity=points[:, 0], sensitivity_bound=points[:, 1],
                       slack=points[:, 1] - points[:, 0], variance=points[:, 2], variance_bound=points[:, 3],
                       ord=ord_, confidence=cal.confidence)


def draws_for_slack(calibration: Calibration, target: float, ord: float | str = 2) -> int:
    """Draws per secret needed for a sensitivity slack (bound − estimate) of ``target``.

    Every standard error behind the bound is ``√(v/n)`` and z depends only on
    the confidence and the number of intervals, so the slack ``s(n)`` scales as
    ``1/√n``; from the calibration's own slack ``s`` at ``n_draws`` draws,
    ``n = ⌈n_draws · (s/target)²⌉`` (which is below ``n_draws`` when the
    target is already met). The per-draw variances are estimates: the
    prediction carries their relative error, about ``1/√(2·n_draws)`` on the
    slack for a Gaussian F.

    Parameters
    ----------
    calibration : Calibration
        A sampled calibration with confidence bounds (``confidence`` not None).
    target : float > 0
        The wanted ``sensitivity(ord, bound=True) − sensitivity(ord)``.
    ord : {1, 2, "inf"}, default 2

    Returns
    -------
    int
        Draws per secret (at least 2).

    Raises
    ------
    ValidationError
        ``target`` not a positive finite number; a calibration without draws,
        or without slack (plug-in, exact).
    """
    cal = _checked_sampled(calibration)
    slack = cal.sensitivity(ord, bound=True) - cal.sensitivity(ord)
    return _draws_for(cal.n_draws, slack, target, cal.confidence)
