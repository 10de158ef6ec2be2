"""Calibration: sample F(X) | secret and estimate what the mechanisms need."""

from .engine import calibrate, calibration_from_samples, draw_query_samples, minimum_draws
from .assumptions import POWER_RULES, AssumptionCheck, AssumptionReport, check_assumptions, required_draws
from .convergence import Convergence, convergence, draws_for_slack
from .constraints import PairConstraints, common_lower_bound
from .influence import MaxInfluence, ParameterNetwork, max_influence
from .quilts import (
    ChainCalibration,
    MarkovChain,
    Quilt,
    QuiltCalibration,
    QuiltScore,
    calibrate_chain,
    calibrate_quilts,
    markov_quilts,
)
from .result import Calibration
from .persist import check_query, load_calibration, read_metadata, save_calibration
from .wasserstein import PairWasserstein, WassersteinBounds, wasserstein_bounds

__all__ = ["calibrate", "minimum_draws", "POWER_RULES", "required_draws", "Convergence", "convergence",
           "draws_for_slack", "load_calibration", "save_calibration", "read_metadata", "check_query", "calibration_from_samples", "draw_query_samples", "Calibration", "PairConstraints", "common_lower_bound", "AssumptionCheck", "AssumptionReport", "check_assumptions",
           "PairWasserstein", "WassersteinBounds", "wasserstein_bounds",
           "MaxInfluence", "ParameterNetwork", "max_influence", "ChainCalibration", "MarkovChain", "Quilt", "QuiltCalibration",
           "QuiltScore", "calibrate_chain", "calibrate_quilts", "markov_quilts"]
