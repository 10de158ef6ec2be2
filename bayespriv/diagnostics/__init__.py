"""Diagnostics: plots, and HTML views for notebooks, that only read results, never compute them.

Importing this package is cheap: matplotlib (and networkx for :func:`plot_quilt`) are imported
inside the plotting functions, on first use.
"""

from .html import (
    TableView,
    chain_calibration_html,
    chain_calibration_repr,
    epsilon_table_view,
    joint_gaussian_html,
    mechanism_html,
    quilt_calibration_html,
    quilt_calibration_repr,
)
from .plots import (
    plot_budget,
    plot_calibration,
    plot_convergence,
    plot_epsilon_table,
    plot_privacy_curve,
    plot_qq,
    plot_quilt,
    plot_release,
    plot_utility,
)

__all__ = [
    "plot_calibration",
    "plot_privacy_curve",
    "plot_utility",
    "plot_quilt",
    "plot_epsilon_table",
    "plot_budget",
    "plot_qq",
    "plot_convergence",
    "plot_release",
    "mechanism_html",
    "quilt_calibration_html",
    "chain_calibration_html",
    "joint_gaussian_html",
    "quilt_calibration_repr",
    "chain_calibration_repr",
    "epsilon_table_view",
    "TableView",
]
