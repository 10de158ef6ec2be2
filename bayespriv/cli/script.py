"""Calibration scripts: what one defines, running it, and taking its names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bayespriv as bp
from bayespriv.cli.files import _check_in_file
from bayespriv.cli.problems import _ArgumentProblem


SCRIPT_TEMPLATE = """\
A calibration script is a Python file that defines, at module level:

  model       the adversary's data model Θ: a bayespriv DataModel (GaussianDataModel,
              EmpiricalDataModel, PyMCDataModel, BayesNetDataModel, FunctionDataModel)
              or a DataModelFamily
  pairs       a SecretPair or a sequence of them (what must stay indistinguishable)
  query       a bayespriv Query (bp.mean, bp.count, bp.stack, or bp.Query(fn, columns, name))

and optionally:

  n_draws     datasets drawn per secret (default 20000; --draws overrides it)
  confidence  level of the calibration's bounds (default 0.95; None: plug-in, as the papers)

The same script is given again to `bayespriv release --script`: a query is code, so it is not
saved in the calibration file; its fingerprint is, and a release refuses a changed query.
The script runs with __name__ == "bayespriv_script" (an `if __name__ == "__main__":` block
is skipped). Template: examples/calibration_template.py.
"""


def _run_script(path: Path, argument: str) -> dict[str, Any]:
    """Execute a calibration script; its module-level names."""
    import runpy

    _check_in_file(path, argument, "calibration script")
    todo = "fix the script (run it with python to see the traceback, or pass --debug)"
    try:
        return runpy.run_path(str(path), run_name="bayespriv_script")
    except Exception as exc:  # the user's code: report, do not trace back through the command
        raise _ArgumentProblem(argument, f"the script {str(path)!r} failed: {type(exc).__name__}: {exc}",
                               todo) from exc
    except SystemExit as exc:  # sys.exit() in the script would end the command silently
        raise _ArgumentProblem(argument, f"the script {str(path)!r} called sys.exit({exc.code!r})", todo) from exc


def _script_name(scope: dict[str, Any], name: str, kinds: tuple[type, ...], what: str, path: Path,
                 argument: str) -> Any:
    todo = "see `bayespriv calibrate --help` and examples/calibration_template.py"
    if name not in scope:
        raise _ArgumentProblem(argument, f"the script {str(path)!r} must define {name!r} ({what}); it does not", todo)
    value = scope[name]
    if not isinstance(value, kinds):
        raise _ArgumentProblem(argument, f"{name!r} in {str(path)!r} must be {what}; got {type(value).__name__}", todo)
    return value


def _script_query(scope: dict[str, Any], path: Path, argument: str) -> bp.Query:
    return _script_name(scope, "query", (bp.Query,), "a bayespriv Query", path, argument)
