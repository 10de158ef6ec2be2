"""Budgets and per-variable ε: the release ledger, Algorithm 1 count tables, ε tables.

* :class:`Ledger` — privacy budgets per protected attribute in SQLite; check-and-spend is atomic.
* :func:`subset_count_table` — counts ε-private on a protected variable with exact public margins
  (Tan, *Privacy on a subset of dataset variables*, Algorithm 1).
* :func:`epsilon_on`, :func:`epsilon_table` — ε on each subset of variables (Propositions 3.3–3.5).
"""

from .epsilon import VariableRelease, as_variable_release, epsilon_on, epsilon_table
from .ledger import Charge, Ledger, calibration_hash
from .subset import (
    SubsetCountMechanism,
    cell_variance,
    nonnegative_rows,
    pair_matrix,
    subset_count_array,
    subset_count_table,
    two_sided_geometric,
    two_sided_geometric_pmf,
)

__all__ = [
    "Ledger",
    "Charge",
    "calibration_hash",
    "subset_count_table",
    "subset_count_array",
    "SubsetCountMechanism",
    "cell_variance",
    "nonnegative_rows",
    "pair_matrix",
    "two_sided_geometric",
    "two_sided_geometric_pmf",
    "VariableRelease",
    "as_variable_release",
    "epsilon_on",
    "epsilon_table",
]
