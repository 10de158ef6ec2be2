"""Θ over parameters: the models whose nodes are the distribution parameters φ that secrets are about."""

from .chain import MarkovChain
from .density import ParameterDensity, parameter_density
from .network import ParameterDensityLike, ParameterNetwork

__all__ = ["MarkovChain", "ParameterDensity", "ParameterDensityLike", "ParameterNetwork", "parameter_density"]
