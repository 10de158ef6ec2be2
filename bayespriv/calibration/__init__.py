"""Calibration: sample F(X) | secret and estimate what the mechanisms need."""

from .engine import calibrate, calibration_from_samples, draw_query_samples
from .constraints import PairConstraints, common_lower_bound
from .result import Calibration

__all__ = ["calibrate", "calibration_from_samples", "draw_query_samples", "Calibration", "PairConstraints", "common_lower_bound"]
