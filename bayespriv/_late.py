"""The declared calls against the flow: convenience methods of early results that run code of a later stage.

A user expects ``cal.to_netcdf(path)`` (as on an xarray Dataset) and an HTML view of a mechanism in a
notebook, yet the file stage comes after calibration and the views after the mechanisms. Such a method
resolves its function here, by a name listed in :data:`LATE`, at the moment it is called. The table is
the whole list, written out in one place: ``tests/test_house.py`` checks that every entry resolves,
that every entry is used and every use is listed, and that no other module of the package resolves
code by name. Nothing is registered at import time, so what a method calls does not depend on which
modules happened to be imported before it.

Four entries point inside the calibration stage itself (``convergence``, ``wasserstein_bounds``,
``query_support``, ``draws_for_slack``): those modules build on :class:`~bayespriv.calibration.result.Calibration`,
so ``result.py`` importing them would be an import cycle.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["LATE", "late"]

#: name -> "module:function" of every call against the flow.
LATE: dict[str, str] = {
    "convergence": "bayespriv.calibration.convergence:convergence",
    "draws_for_slack": "bayespriv.calibration.convergence:draws_for_slack",
    "query_support": "bayespriv.calibration.w_distances:query_support",
    "wasserstein_bounds": "bayespriv.calibration.w_distances:wasserstein_bounds",
    "save_calibration": "bayespriv.files.calibration_io:save_calibration",
    "mechanism_html": "bayespriv.diagnostics.html:mechanism_html",
    "quilt_calibration_repr": "bayespriv.diagnostics.html:quilt_calibration_repr",
    "quilt_calibration_html": "bayespriv.diagnostics.html:quilt_calibration_html",
    "chain_calibration_repr": "bayespriv.diagnostics.html:chain_calibration_repr",
    "chain_calibration_html": "bayespriv.diagnostics.html:chain_calibration_html",
    "joint_gaussian_html": "bayespriv.diagnostics.html:joint_gaussian_html",
}


def late(name: str) -> Callable[..., Any]:
    """The function :data:`LATE` lists under ``name``, imported now."""
    module, function = LATE[name].split(":")
    return getattr(importlib.import_module(module), function)
