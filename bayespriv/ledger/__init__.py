"""Budgets and per-variable ε: the release ledger, Algorithm 1 count tables, ε tables, joint accounting.

* :class:`Ledger` — privacy budgets per protected attribute in SQLite; check-and-spend is atomic;
  ``void`` refunds a release that never happened; file problems raise ``LedgerError``.
* :class:`Session` — one protected dataset, one account: releases computed on the session's copy of the
  table and accounted together on the ledger (what "the same data" means: :mod:`.session`).
* :func:`subset_count_table` — counts ε-private on a protected variable with exact public margins
  (Tan, *Privacy on a subset of dataset variables*, Algorithm 1), laid out as a :class:`TableLayout` says.
* :func:`epsilon_on`, :func:`epsilon_table` — ε on each subset of variables (Propositions 3.3–3.5).
* :class:`JointGaussian` — several Gaussian releases accounted as one Gaussian mechanism on the
  stacked query (exact joint (ε, δ), charged once instead of the sum).
* :mod:`~bayespriv.ledger.joint` — the ledger accounts releases on the same data together
  (:class:`JointAccountingError`, :class:`JointLeakError`).
* :func:`plan_releases` — several queries calibrated together, noise chosen jointly (:class:`ReleasePlan`).
"""

from .composition import JointGaussian, OutputLaws, joint_delta, joint_epsilon, joint_gaussian_laws
from .epsilon import VariableRelease, as_variable_release, epsilon_on, epsilon_table
from .joint import COMPOSITIONS, JointAccountingError, JointLeakError
from .ledger import (
    COMPOSITION_ASSUMPTION,
    MAX_BUDGET_EPSILON,
    Charge,
    Ledger,
    calibration_hash,
    composes_unconditionally,
)
from .plan import ReleasePlan, plan_releases
from .session import Session
from .subset import (
    SubsetCountMechanism,
    TableLayout,
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
    "Session",
    "Charge",
    "calibration_hash",
    "composes_unconditionally",
    "COMPOSITION_ASSUMPTION",
    "MAX_BUDGET_EPSILON",
    "JointGaussian",
    "JointAccountingError",
    "JointLeakError",
    "COMPOSITIONS",
    "ReleasePlan",
    "plan_releases",
    "OutputLaws",
    "joint_gaussian_laws",
    "joint_delta",
    "joint_epsilon",
    "subset_count_table",
    "subset_count_array",
    "SubsetCountMechanism",
    "TableLayout",
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
