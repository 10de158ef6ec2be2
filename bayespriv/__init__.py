"""bayespriv: protect global properties of datasets.

Public names only; see DESIGN.md for the data flow
(Θ + secrets + query → calibrate → Calibration → mechanism → Release).
"""

from . import accounting, audit, mechanisms
from .accounting import JointGaussian, Ledger, VariableRelease, epsilon_on, epsilon_table, subset_count_table
from .calibration import (
    Calibration,
    MarkovChain,
    ParameterNetwork,
    Quilt,
    calibrate,
    calibrate_chain,
    calibrate_quilts,
    markov_quilts,
    max_influence,
)
from .datamodels import BayesNetDataModel, DataModel, DataModelFamily, EmpiricalDataModel, FunctionDataModel, GaussianDataModel, PyMCDataModel
from .errors import (
    AssumptionFailedError,
    BayesPrivError,
    BayesPrivWarning,
    BudgetExceededError,
    ConvergenceError,
    LedgerError,
    ParameterTypeError,
    PrivacyAssumptionWarning,
    ReleaseMismatchError,
    UnsupportedSecretError,
    ValidationError,
)
from .mechanisms import Guarantee, Release
from .queries import Query, count, mean, proportion, stack
from .secrets import DatasetSecret, DistributionSecret, SecretPair, all_pairs, pairs_between

__version__ = "0.1.0"

__all__ = [
    "accounting",
    "audit",
    "mechanisms",
    "Ledger",
    "JointGaussian",
    "VariableRelease",
    "epsilon_on",
    "epsilon_table",
    "subset_count_table",
    "Calibration",
    "calibrate",
    "calibrate_quilts",
    "calibrate_chain",
    "markov_quilts",
    "max_influence",
    "Quilt",
    "MarkovChain",
    "ParameterNetwork",
    "BayesNetDataModel",
    "DataModel",
    "DataModelFamily",
    "EmpiricalDataModel",
    "FunctionDataModel",
    "GaussianDataModel",
    "PyMCDataModel",
    "AssumptionFailedError",
    "BayesPrivError",
    "BayesPrivWarning",
    "BudgetExceededError",
    "ConvergenceError",
    "LedgerError",
    "ParameterTypeError",
    "PrivacyAssumptionWarning",
    "ReleaseMismatchError",
    "UnsupportedSecretError",
    "ValidationError",
    "Guarantee",
    "Release",
    "Query",
    "count",
    "mean",
    "proportion",
    "stack",
    "DatasetSecret",
    "DistributionSecret",
    "SecretPair",
    "all_pairs",
    "pairs_between",
]
