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
