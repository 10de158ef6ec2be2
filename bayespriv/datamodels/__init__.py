"""Θ adapters: the only place that imports pymc / pgmpy."""

from .base import DataModel
from .posterior_cache import clear_posterior_cache
from .bayesnet import BayesNetDataModel
from .empirical import EmpiricalDataModel
from .family import DataModelFamily
from .function import FunctionDataModel
from .gaussian import GaussianDataModel
from .parameters import MarkovChain, ParameterDensity, ParameterNetwork, parameter_density
from .pymc import McmcSettings, PyMCDataModel

__all__ = ["DataModel", "BayesNetDataModel", "DataModelFamily", "EmpiricalDataModel", "FunctionDataModel", "GaussianDataModel", "PyMCDataModel", "McmcSettings", "MarkovChain", "ParameterDensity", "ParameterNetwork", "parameter_density", "clear_posterior_cache"]
