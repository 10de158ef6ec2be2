"""Θ over parameters: the models whose nodes are the distribution parameters φ that secrets are about."""

from .density import ParameterDensity, parameter_density

__all__ = ["ParameterDensity", "parameter_density"]
