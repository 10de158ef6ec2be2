"""The API reference, the docstrings behind it, and progress reporting.

* every public member has a docstring (a walk of the public API lists those without one);
* ``docs/api.rst`` documents every public name;
* ``sphinx-build -W -b html docs`` succeeds: no warning at all (about 10 s);
* :mod:`bayespriv._progress` shows tqdm bars only where a person watches.

The docstring examples themselves run as doctests through ``--doctest-modules`` with
``bayespriv`` in ``testpaths`` (pyproject.toml), i.e. ``python -m pytest --doctest-modules bayespriv``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import bayespriv
from bayespriv._progress import SilentProgress, progress, should_show
from bayespriv.errors import ParameterTypeError, ValidationError

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: The public API: the package and the subpackages whose ``__all__`` users import from.
PUBLIC_MODULES = (
    "bayespriv",
    "bayespriv.datamodels",
    "bayespriv.secrets",
    "bayespriv.queries",
    "bayespriv.calibration",
    "bayespriv.mechanisms",
    "bayespriv.ledger",
    "bayespriv.audit",
    "bayespriv.diagnostics",
    "bayespriv.errors",
)

_METHOD_KINDS = (property, staticmethod, classmethod, functools.cached_property)


# -- the walk of the public API ----------------------------------------------------------------------
def _own_class_doc(cls: type) -> str:
    """The class's own docstring; a dataclass's generated ``Name(field, ...)`` does not count."""
    doc = cls.__dict__.get("__doc__") or ""
    if dataclasses.is_dataclass(cls) and doc.startswith(cls.__name__ + "("):
        return ""
    return doc


def _member_doc(cls: type, attr: str, raw: object) -> str:
    """Docstring of a method or property as autodoc shows it (inherited from a base if not overridden)."""
    if isinstance(raw, (property, functools.cached_property)):
        for klass in cls.__mro__:
            candidate = klass.__dict__.get(attr)
            if isinstance(candidate, (property, functools.cached_property)) and candidate.__doc__:
                return candidate.__doc__
        return ""
    return inspect.getdoc(getattr(cls, attr, None)) or ""


def _class_members(cls: type) -> list[tuple[type, str, object]]:
    """Public methods and properties of ``cls`` defined in bayespriv (its own and its bases')."""
    out = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("bayespriv"):
            continue
        for attr, raw in vars(klass).items():
            if not attr.startswith("_") and (isinstance(raw, _METHOD_KINDS) or inspect.isfunction(raw)):
                out.append((klass, attr, raw))
    return out


def undocumented_public_members() -> list[str]:
    """Qualified names of public functions, classes, methods and properties without a docstring."""
    missing: dict[str, None] = {}
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not getattr(obj, "__module__", "").startswith("bayespriv"):
                continue  # subpackages are walked themselves; type aliases (Union[...]) carry no docstring
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            where = f"{obj.__module__}.{obj.__qualname__}"
            doc = _own_class_doc(obj) if inspect.isclass(obj) else (obj.__doc__ or "")
            if not doc.strip():
                missing[where] = None
            if inspect.isclass(obj):
                for klass, attr, raw in _class_members(obj):
                    if not _member_doc(obj, attr, raw).strip():
                        missing[f"{klass.__module__}.{klass.__qualname__}.{attr}"] = None
    return sorted(missing)


def test_every_public_member_has_a_docstring():
    missing = undocumented_public_members()
    assert not missing, f"{len(missing)} public members have no docstring:\n" + "\n".join(missing)


def test_the_walk_finds_a_missing_docstring(monkeypatch):
    """Twin: a public property stripped of its docstring is listed."""
    from bayespriv.secrets import SecretPair

    bare = property(SecretPair.__dict__["label"].fget, doc="")
    monkeypatch.setattr(SecretPair, "label", bare)
    assert "bayespriv.secrets.SecretPair.label" in undocumented_public_members()


# -- the API reference ----------------------------------------------------------------------------
def _documented_modules(api_text: str) -> list[str]:
    return re.findall(r"^\.\. automodule:: (\S+)\s*$", api_text, flags=re.M)


def test_api_reference_documents_every_public_name():
    """Every name of ``bp.__all__`` is the object of some module documented with ``:members:``."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in [DOCS / "api.rst", *sorted((DOCS / "api").glob("*.rst"))])
    documented = [m for m in _documented_modules(text) if m != "bayespriv"]
    assert set(PUBLIC_MODULES) - {"bayespriv"} <= set(documented), "docs/api.rst and docs/api/*.rst must automodule every public module"
    objects = {id(getattr(importlib.import_module(m), n)) for m in documented for n in importlib.import_module(m).__all__}
    absent = [n for n in bayespriv.__all__
              if not inspect.ismodule(getattr(bayespriv, n)) and id(getattr(bayespriv, n)) not in objects]
    assert not absent, f"bp names documented nowhere in docs/api.rst: {absent}"
    subpackages = [n for n in bayespriv.__all__ if inspect.ismodule(getattr(bayespriv, n))]
    assert all(f"bayespriv.{n}" in documented for n in subpackages)


def _sphinx_build(source: Path, out: Path) -> subprocess.CompletedProcess:
    """``sphinx-build -W --keep-going -b html``: every warning fails the build."""
    pytest.importorskip("sphinx", reason="install the test extra: pip install -e '.[test]'")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(out / "doctrees"),
           str(source), str(out / "html")]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)


@pytest.mark.docs
@pytest.mark.subprocess
def test_docs_build_without_warnings(tmp_path):
    """The API reference and the design notes build with no warning (about 10 s)."""
    run = _sphinx_build(DOCS, tmp_path)
    assert run.returncode == 0, f"sphinx-build failed ({run.returncode}):\n{run.stderr[-6000:]}"
    for name in ("bayespriv.calibration.calibrate", "bayespriv.mechanisms.APGM", "bayespriv.ledger.Ledger"):
        page = tmp_path / "html" / "api" / f"{name.split('.')[1]}.html"
        assert f'id="{name}"' in page.read_text(encoding="utf-8"), f"{name} missing from {page.name}"
    assert (tmp_path / "html" / "design.html").exists()


@pytest.mark.docs
@pytest.mark.subprocess
def test_docs_build_fails_on_a_warning(tmp_path):
    """Twin: the same command on a page with one markup warning fails (a tiny project, about 1 s)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "conf.py").write_text('project = "twin"\n', encoding="utf-8")
    (source / "index.rst").write_text("Twin\n====\n\nAn absolute value |x − y| in plain text.\n", encoding="utf-8")
    run = _sphinx_build(source, tmp_path / "out")
    assert run.returncode != 0 and "substitution" in run.stderr


def _docs_conf():
    spec = importlib.util.spec_from_file_location("bayespriv_docs_conf", DOCS / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_plain_text_docstrings_become_valid_markup():
    """|x| outside literals is escaped (docutils would read a substitution); literals, doctests and
    literal blocks are left alone; bespoke sections such as Privacy are known to napoleon."""
    conf = _docs_conf()
    lines = ["Bound on |F(X) − F(X')| and ``|a|``.", ">>> print('a | b')", "a | b", "", "Code::", "", "    a | b",
             "After |y|."]
    conf._plain_text_docstring(None, "function", "f", None, {}, lines)
    assert lines == [r"Bound on \|F(X) − F(X')\| and ``|a|``.", ">>> print('a | b')", "a | b", "", "Code::", "",
                     "    a | b", r"After \|y\|."]
    assert "Privacy" in conf.napoleon_custom_sections and "Parameters" not in conf.napoleon_custom_sections


def test_readme_points_at_the_design_notes_in_the_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../shared/DESIGN.md" not in readme
    assert "docs/design.rst" in readme and (DOCS / "design.rst").exists()


# -- progress -------------------------------------------------------------------------------------
class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_in_ci_and_without_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    monkeypatch.setenv("CI", "true")
    assert not should_show(None) and isinstance(progress(5, "calibrating"), SilentProgress)
    monkeypatch.delenv("CI")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal, not a notebook
    assert not should_show(None) and isinstance(progress(5, "calibrating"), SilentProgress)


def test_progress_draws_a_tqdm_bar_in_a_terminal(monkeypatch):
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.delenv("CI", raising=False)
    with progress(4, "calibrating", delay=0) as bar:
        for _ in range(4):
            bar.update()
    assert type(bar).__module__.startswith("tqdm") and bar.n == 4
    assert "calibrating" in term.getvalue() and "4/4" in term.getvalue()


def test_progress_explicit_setting_wins(monkeypatch):
    monkeypatch.setenv("CI", "1")
    out = _Terminal()
    monkeypatch.setattr(sys, "stderr", out)
    with progress(2, "forced", enabled=True, delay=0) as bar:
        bar.update(2)
    assert "2/2" in out.getvalue()
    monkeypatch.delenv("CI")
    silent = progress(2, "off", enabled=False)
    silent.update(2)
    assert isinstance(silent, SilentProgress) and silent.n == 2


@pytest.mark.parametrize("kwargs, error", [
    ({"total": 3, "enabled": "yes"}, ParameterTypeError),
    ({"total": 2.5}, ParameterTypeError),
    ({"total": -1}, ValidationError),
    ({"total": 3, "delay": -1.0}, ValidationError),
])
def test_progress_rejects_bad_arguments(kwargs, error):
    with pytest.raises(error, match=next(iter(k for k in kwargs if k != "total"), "total")):
        progress(desc="x", **kwargs)
