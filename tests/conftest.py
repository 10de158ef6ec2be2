"""Shared fixtures. Statistical tests state their false-failure probability α."""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.abc import MetaPathFinder
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]


class _CheckoutModels(MetaPathFinder):
    """Import ``bayespriv.models`` from this checkout's ``models/`` when ``bayespriv`` comes from it.

    The build maps the repository's ``models/`` to ``bayespriv.models`` (``package-dir`` in
    pyproject.toml; an editable install resolves it through setuptools' import finder). A source
    tree put on ``sys.path`` by hand (``PYTHONPATH``) has no such mapping, and an editable install
    of another checkout would map it to that checkout's folder: this finder makes the tests use
    the models next to the package they test. An installed (non-source) ``bayespriv`` keeps its own.
    """

    def find_spec(self, fullname, path=None, target=None):
        package = sys.modules.get("bayespriv")
        if fullname != "bayespriv.models" or package is None:
            return None
        if Path(package.__file__).resolve().parent != ROOT / "bayespriv":
            return None
        return importlib.util.spec_from_file_location(
            fullname, ROOT / "models" / "__init__.py", submodule_search_locations=[str(ROOT / "models")])


sys.meta_path.insert(0, _CheckoutModels())
ADULT_DIR = Path(os.environ.get("BAYESPRIV_ADULT_DIR", ROOT.parent / "shared" / "data" / "adult"))


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    """Directory of the UCI Adult data; skips the test when it is absent."""
    if not (ADULT_DIR / "adult.data").exists() or not (ADULT_DIR / "adult.test").exists():
        pytest.skip(f"UCI Adult data not found in {ADULT_DIR} (set BAYESPRIV_ADULT_DIR); it is never committed")
    return ADULT_DIR


@pytest.fixture(scope="session", autouse=True)
def signing_key_file(tmp_path_factory) -> Path:
    """Every test signs and verifies calibration files with a key of its own session, never the user's.

    ``BAYESPRIV_KEY_FILE`` points at a file in a per-session temporary directory (created with mode
    0600 by the first save) and ``BAYESPRIV_KEY`` is cleared, so the suite never reads or writes
    ``~/.config/bayespriv``; command-line tests run in subprocesses inherit both.
    """
    patch = pytest.MonkeyPatch()
    path = tmp_path_factory.mktemp("bayespriv-key") / "key"
    patch.setenv("BAYESPRIV_KEY_FILE", str(path))
    patch.delenv("BAYESPRIV_KEY", raising=False)
    yield path
    patch.undo()


# -- the interpreter-independent long runs ------------------------------------------------------------------------
#: Modules whose ``slow`` tests reach no PyMC, ArviZ or pgmpy: long statistical runs of the accountant, mechanisms,
#: exact noise samplers, calibration checks, ledger and audit — the same NumPy and SciPy give the same numbers on
#: every Python — and full-scale runs of the files and diagnostics. They get the
#: ``numeric`` marker; CI runs them on its first Python only (``.ci/run``: the second run is for the routes that
#: differ between PyMC 5 / ArviZ 0.x and PyMC 6 / ArviZ 1). A module that starts to use those libraries must leave
#: this list: run on these files alone, a numeric test that loads one fails (``_numeric_reaches_no_route_library``).
NUMERIC_MODULES = frozenset({
    "tests/privacy/test_accountant.py", "tests/privacy/test_certified.py", "tests/privacy/test_privacy_loss.py",
    "tests/privacy/test_extreme_gaussian.py", "tests/privacy/test_draw_bounds.py",
    "tests/mechanisms/test_requested.py", "tests/mechanisms/test_exact_law_mechanisms.py",
    "tests/mechanisms/test_optimal.py", "tests/mechanisms/test_expected_value.py",
    "tests/noise/test_exact_noise.py", "tests/calibration/test_assumptions.py",
    "tests/audit/test_coverage.py", "tests/audit/test_release_audit.py",
    "tests/audit/test_likelihood_ratio.py", "tests/audit/test_attack.py",
    "tests/ledger/test_plan.py", "tests/ledger/test_account.py", "tests/ledger/test_joint.py",
    "bayespriv/ledger/plan.py",  # its docstring example (SLOW_DOCTESTS)
    # full-scale runs of the files and the diagnostics (20 000-draw calibrations, their mechanisms): their code
    # paths run on every Python in the fast tests of the same modules
    "tests/files/test_signing.py", "tests/diagnostics/test_plots.py", "tests/diagnostics/test_html.py",
})
#: Single tests of other modules that are numeric in the same sense: long runs of the accountant through the
#: command line or an example on laws known through draws, reaching no route library (their modules' other
#: tests — the command line's round trip and ledger, the census study's refusals — run on both Pythons).
NUMERIC_TESTS = frozenset({
    "tests/test_cli_hardening.py::test_readme_release_cannot_lift_a_spent_budget",
    "tests/test_cli.py::test_release_with_the_best_mechanism_names_it_and_shapes_the_noise",
    "tests/examples/test_census_study.py::test_census_study_quick_reproduces_the_paper_and_beats_it",
})
#: What a numeric test may not import.
ROUTE_LIBRARIES = ("pymc", "arviz", "pgmpy")
#: Set when collection finishes: True when every selected test is numeric (then a route library in ``sys.modules``
#: after a test came from a numeric test or from collecting its module: either way the test's claim is wrong).
_ONLY_NUMERIC = pytest.StashKey[bool]()


#: Docstring examples as long as a slow test (a 20 000-draw calibration): marked ``slow`` like one (the fast tier).
SLOW_DOCTESTS = frozenset({"bayespriv.ledger.plan.plan_releases"})


def _module(item) -> str:
    """The item's file relative to the checkout (its absolute path when outside it)."""
    path = item.path.resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()


def _is_numeric(item) -> bool:
    """A slow test of a module of NUMERIC_MODULES, or a test named in NUMERIC_TESTS."""
    module = _module(item)
    return (bool(item.get_closest_marker("slow")) and module in NUMERIC_MODULES
            or f"{module}::{item.name}" in NUMERIC_TESTS)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.name in SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)
        if _is_numeric(item):
            item.add_marker(pytest.mark.numeric)


def pytest_collection_finish(session):
    """Arm the route-library check when the selection (after ``-m``) is numeric tests alone."""
    selected = session.items
    session.config.stash[_ONLY_NUMERIC] = bool(selected) and all(item.get_closest_marker("numeric") for item in selected)


@pytest.fixture(autouse=True)
def _numeric_reaches_no_route_library(request):
    """A numeric test fails when, in a session of numeric tests alone, PyMC, ArviZ or pgmpy is loaded after it:
    ``python -m pytest -m numeric <the files of NUMERIC_MODULES and NUMERIC_TESTS>`` checks both lists."""
    yield
    if request.node.get_closest_marker("numeric") and request.config.stash.get(_ONLY_NUMERIC, False):
        loaded = [name for name in ROUTE_LIBRARIES if name in sys.modules]
        assert not loaded, (f"a numeric test imported {loaded}: it must leave NUMERIC_TESTS, or its module NUMERIC_MODULES "
                             "(tests/conftest.py)")
