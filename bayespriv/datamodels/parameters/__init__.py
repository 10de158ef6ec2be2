"""Θ over parameters: the models whose nodes are the distribution parameters φ that secrets are about."""

from .chain import MarkovChain
from .density import ParameterDensity, parameter_density

__all__ = ["MarkovChain", "ParameterDensity", "parameter_density"]
