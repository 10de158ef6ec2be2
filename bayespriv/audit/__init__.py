"""Audits: property-inference attacks on mechanisms and empirical lower bounds on ε."""

from .attack import AttackResult, default_classifier, noise_sampler, property_inference_attack
from .empirical import EmpiricalEpsilon, clopper_pearson, empirical_epsilon, epsilon_lower_bound

__all__ = [
    "AttackResult",
    "property_inference_attack",
    "noise_sampler",
    "default_classifier",
    "EmpiricalEpsilon",
    "empirical_epsilon",
    "epsilon_lower_bound",
    "clopper_pearson",
]
