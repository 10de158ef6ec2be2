"""Calibration: sample F(X) | secret and estimate what the mechanisms need, each with its Monte-Carlo error.

The sampling engine (:mod:`.engine`; how it runs, :class:`ExecutionOptions`, and what a sampler reports
beside its draws, :class:`DrawReport`), moments and conservative bounds (:mod:`.moments`,
:mod:`.constraints`), W∞ distances (:mod:`.w_distances`), assumption checks and their power
(:mod:`.assumptions`, :mod:`.power`), convergence (:mod:`.convergence`) and the frozen result,
:class:`Calibration` (:mod:`.result`), and what every mechanism reads from a calibration of any kind,
:class:`CalibrationLike` (:mod:`.contract`). Parameter networks (max-influence, quilts, chains) are the stage
beside this one, :mod:`bayespriv.networks`; saving and loading is the files stage, :mod:`bayespriv.files`.
"""

from .execution import ExecutionOptions
from .draw_report import DrawReport
from .engine import calibrate, calibration_from_samples, draw_query_samples, minimum_draws
from .assumptions import POWER_RULES, AssumptionCheck, AssumptionReport, check_assumptions, required_draws
from .convergence import Convergence, convergence, draws_for_slack
from .constraints import PairConstraints, common_lower_bound
from .contract import CalibrationLike
from .result import Calibration
from .w_distances import PairWasserstein, WassersteinBounds, wasserstein_bounds

__all__ = ["calibrate", "ExecutionOptions", "minimum_draws", "POWER_RULES", "required_draws", "Convergence",
           "convergence", "draws_for_slack", "calibration_from_samples", "DrawReport", "draw_query_samples",
           "Calibration", "CalibrationLike", "PairConstraints", "common_lower_bound", "AssumptionCheck",
           "AssumptionReport", "check_assumptions", "PairWasserstein", "WassersteinBounds", "wasserstein_bounds"]
