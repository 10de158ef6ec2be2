"""Audits: property-inference and likelihood-ratio attacks on mechanisms, empirical lower bounds on ε, and the
coverage of a confidence statement over repeated calibrations."""

from .accuracy import accuracy_bound, direct_accuracy, n_leaked
from .coverage import (CalibrationRuns, CoverageLaw, CoverageResult, coverage_by_noise, failure_threshold,
                       measure_coverage)
from .attack import AttackResult, ShadowTraining, default_classifier, noise_sampler, property_inference_attack
from .densities import log_likelihood_ratio
from .empirical_epsilon import EmpiricalEpsilon, clopper_pearson, empirical_epsilon, epsilon_lower_bound
from .likelihood import AttackTrials, LikelihoodRatioResult, likelihood_ratio_attack
from .sequence import sequence_attack
from .mechanism_table import HalfNoise, TableRows, calibration_rows

__all__ = [
    "AttackResult",
    "ShadowTraining",
    "property_inference_attack",
    "noise_sampler",
    "default_classifier",
    "EmpiricalEpsilon",
    "empirical_epsilon",
    "epsilon_lower_bound",
    "clopper_pearson",
    "LikelihoodRatioResult",
    "AttackTrials",
    "likelihood_ratio_attack",
    "log_likelihood_ratio",
    "accuracy_bound",
    "direct_accuracy",
    "n_leaked",
    "sequence_attack",
    "calibration_rows",
    "TableRows",
    "HalfNoise",
    "CoverageLaw",
    "CoverageResult",
    "CalibrationRuns",
    "measure_coverage",
    "coverage_by_noise",
    "failure_threshold",
]
