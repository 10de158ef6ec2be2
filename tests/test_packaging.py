"""What installing bayespriv puts on ``sys.path``: the package ``bayespriv`` and its metadata, nothing else.

The repository keeps its ready-made scenarios in ``models/`` at the top level; the build installs them
as ``bayespriv.models`` (``package-dir`` in pyproject.toml), so a user's own ``models`` package is
never shadowed. The wheel is built offline from a fresh copy of the tracked files, with the build
backend of this environment (``make`` installs it with the test extra).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests._checkout import ROOT, copy_checkout, tracked_files

#: An import of the scenarios as a top-level package, in code, notebooks or docs.
TOP_LEVEL_IMPORT = re.compile(r"(^|[\s\"'`(;>])(from models(\.\w+)* import|import models\b)", re.M)


def _require_build_backend() -> None:
    """Skip unless this environment satisfies pyproject.toml's build requirements (no download here)."""
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    for text in requires:
        req = Requirement(text)
        try:
            installed = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        if installed is None or not req.specifier.contains(installed, prereleases=True):
            pytest.skip(f"the build backend needs {text}, this environment has {req.name} {installed}; "
                        "`make test` installs it (test extra)")


def _python(code: str, cwd: Path, pythonpath: Path | None, hint: str = "") -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, hint + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    _require_build_backend()
    source = copy_checkout(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "--no-index",
                           "-w", str(out)], cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (built,) = out.glob("bayespriv-*.whl")
    return built


@pytest.mark.subprocess
def test_wheel_installs_only_bayespriv(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    version = wheel.name.split("-")[1]
    assert {name.split("/")[0] for name in names} == {"bayespriv", f"bayespriv-{version}.dist-info"}
    assert "bayespriv/models/__init__.py" in names and "bayespriv/models/hospital.py" in names


@pytest.mark.subprocess
def test_wheel_holds_every_module_of_the_source(wheel: Path):
    """A subpackage missing from pyproject's ``packages`` list would be missing here."""
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {name for name in tracked_files() if name.startswith("bayespriv/") and name.endswith((".py", ".typed"))}
    expected |= {"bayespriv/" + name for name in tracked_files() if name.startswith("models/") and name.endswith(".py")}
    assert expected and expected <= names, sorted(expected - names)


@pytest.mark.subprocess
def test_installed_wheel_imports_its_own_models(wheel: Path, tmp_path: Path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    printed = _python("import bayespriv, bayespriv.models.hospital as h; print(bayespriv.__file__); print(h.__file__)",
                      cwd=tmp_path, pythonpath=site).split()
    assert [Path(p).relative_to(site).as_posix() for p in printed] == ["bayespriv/__init__.py",
                                                                          "bayespriv/models/hospital.py"]


@pytest.mark.subprocess
def test_editable_install_resolves_models_to_the_checkout(tmp_path: Path):
    """``pip install -e .`` (what ``make`` runs) maps ``bayespriv.models`` to the checkout's ``models/``."""
    # The first distribution on sys.path may be the checkout's own bayespriv.egg-info (the build backend writes
    # it beside pyproject.toml, without direct_url.json): read the one the installer recorded.
    found = [d.read_text("direct_url.json") for d in importlib.metadata.distributions(name="bayespriv")]
    direct = next((json.loads(text) for text in found if text), {})
    if not (direct.get("dir_info", {}).get("editable") and direct.get("url") == ROOT.as_uri()):
        pytest.skip(f"bayespriv is not installed in editable mode from {ROOT} in this environment "
                    f"(install: {direct or 'none'}); `make test` does that")
    printed = _python("import bayespriv.models as m; print(m.__file__)", cwd=tmp_path, pythonpath=None,
                      hint="this editable install predates the models/ mapping of pyproject.toml: "
                           "reinstall it (`make venv`, or `pip install -e .`)\n")
    assert Path(printed.strip()) == ROOT / "models" / "__init__.py"


def test_nothing_imports_the_scenarios_as_a_top_level_package():
    found = []
    for name in tracked_files():
        if name.endswith((".py", ".ipynb", ".md", ".rst")):
            text = (ROOT / name).read_text(encoding="utf-8")
            found += [f"{name}: {m.group(0).strip()}" for m in TOP_LEVEL_IMPORT.finditer(text)]
    assert not found, found


#: Libraries that `import bayespriv` and `bayespriv --help` leave for the first call that uses them.
LAZY_LIBRARIES = ("networkx", "xarray", "matplotlib", "cvxpy", "scipy.signal", "pymc", "pytensor", "pgmpy", "arviz")


@pytest.mark.parametrize("code", ["import bayespriv",
                                  "import sys; from bayespriv.cli import main\ntry:\n    main(['--help'])\n"
                                  "except SystemExit:\n    pass"])
@pytest.mark.subprocess
def test_start_up_imports_no_library_it_does_not_use_yet(code: str):
    """Start-up cost: the heavy optional libraries are imported where they are used, not at import time. The
    twin: importing one on purpose is seen by the same check."""
    check = "\nimport sys\nprint('LOADED=' + ','.join(m for m in %r if m in sys.modules))" % (LAZY_LIBRARIES,)
    for extra, expected in (("", ""), ("\nimport networkx", "networkx")):
        done = subprocess.run([sys.executable, "-c", code + extra + check], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        loaded = next(line for line in done.stdout.splitlines() if line.startswith("LOADED="))
        assert loaded == f"LOADED={expected}"
