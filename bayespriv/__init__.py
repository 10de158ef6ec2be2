"""bayespriv: protect global properties of datasets.

Public names only; see ``docs/design.rst`` for the data flow
(Θ + secrets + query → calibrate → Calibration → mechanism → Release).

Examples
--------
Θ: 50 records, (height, weight) jointly normal. Secret: is the average height 65 or 67?
Query: the average weight (its exact sensitivity is 2 · 30/9 = 20/3).

>>> import pandas as pd
>>> import bayespriv as bp
>>> model = bp.GaussianDataModel(mean=[66.0, 150.0], cov=[[9.0, 30.0], [30.0, 400.0]],
...                              columns=["height", "weight"], n_records=50)
>>> pair = bp.SecretPair(bp.DatasetSecret.mean("height", 65.0), bp.DatasetSecret.mean("height", 67.0))
>>> cal = bp.calibrate(model, pair, bp.mean("weight"), n_draws=20_000, rng=0)
>>> abs(cal.sensitivity() - 20 / 3) < 0.2, cal.sensitivity(bound=True) > cal.sensitivity()
(True, True)
>>> mech = bp.mechanisms.APGM(cal, epsilon=1.0, delta=1e-3)   # the cost, before any data
>>> mech.guarantee.epsilon, mech.guarantee.delta, mech.guarantee.established
(1.0, 0.001, True)
>>> data = pd.DataFrame({c: v[0] for c, v in model.sample(None, 1, rng=1).items()})
>>> release = mech.release(data)                              # noise from OS entropy
>>> release.value.shape, release.seeded
((1,), False)
"""

from . import audit, diagnostics, files, ledger, mechanisms, networks, noise, privacy
from bayespriv.ledger import (
    JointGaussian,
    Ledger,
    Session,
    SubsetCountMechanism,
    TableLayout,
    VariableRelease,
    epsilon_on,
    epsilon_table,
    subset_count_table,
)
from .calibration import Calibration, ExecutionOptions, calibrate
from .files import load_calibration, save_calibration
from .networks import (MarkovChain, ParameterNetwork, Quilt, QuiltSearch, calibrate_chain, calibrate_quilts, markov_quilts,
                       max_influence)
from .datamodels import (
    BayesNetDataModel,
    DataModel,
    DataModelFamily,
    EmpiricalDataModel,
    FunctionDataModel,
    GaussianDataModel,
    McmcSettings,
    PyMCDataModel,
    clear_posterior_cache,
)
from .errors import (
    AssumptionFailedError,
    BayesPrivError,
    BayesPrivWarning,
    BudgetExceededError,
    ConvergenceError,
    DrawsNeededError,
    LedgerError,
    ParameterTypeError,
    PrivacyAssumptionWarning,
    ReleaseMismatchError,
    UnsupportedSecretError,
    ValidationError,
)
from .privacy import Guarantee, Release, ReleaseOptions
from .queries import Query, count, mean, proportion, stack
from .secrets import DatasetSecret, DistributionSecret, SecretPair, all_pairs, pairs_between

from ._version import __version__

__all__ = [
    "audit",
    "diagnostics",
    "files",
    "ledger",
    "mechanisms",
    "networks",
    "noise",
    "privacy",
    "Ledger",
    "Session",
    "JointGaussian",
    "VariableRelease",
    "epsilon_on",
    "epsilon_table",
    "subset_count_table",
    "SubsetCountMechanism",
    "TableLayout",
    "Calibration",
    "calibrate",
    "ExecutionOptions",
    "calibrate_quilts",
    "QuiltSearch",
    "load_calibration",
    "save_calibration",
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
    "McmcSettings",
    "clear_posterior_cache",
    "AssumptionFailedError",
    "BayesPrivError",
    "BayesPrivWarning",
    "BudgetExceededError",
    "ConvergenceError",
    "DrawsNeededError",
    "LedgerError",
    "ParameterTypeError",
    "PrivacyAssumptionWarning",
    "ReleaseMismatchError",
    "UnsupportedSecretError",
    "ValidationError",
    "Guarantee",
    "Release",
    "ReleaseOptions",
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


def __getattr__(name: str):
    """``bayespriv.accounting``: the ledger's old name, kept for one release (it warns on every name read)."""
    if name == "accounting":
        import sys

        import bayespriv.accounting

        return sys.modules["bayespriv.accounting"]
    raise AttributeError(f"module 'bayespriv' has no attribute {name!r}")
