"""Progress bars in notebooks: tqdm.auto (a widget) with ipywidgets, an in-place HTML bar without it.

Neither writes to stderr, which a notebook shows as red error boxes. Terminals, CI and the
arguments are covered in tests/test_docs.py.
"""

from __future__ import annotations

import importlib.machinery
import io
import sys

import pytest
import tqdm.auto

from bayespriv import _progress
from bayespriv._progress import NotebookProgress, progress


class _Display:
    """Stands in for IPython.display.display: records what is shown and each in-place update."""

    def __init__(self) -> None:
        self.shown: list = []
        self.updates: list = []

    def __call__(self, obj, display_id=False):
        assert display_id is True  # updated in place, not printed anew
        self.shown.append(obj._repr_html_())
        return self

    def update(self, obj) -> None:
        self.updates.append(obj._repr_html_())


@pytest.fixture
def notebook(monkeypatch):
    """A Jupyter kernel (as ``in_notebook`` sees it), outside CI, with stderr captured."""
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    monkeypatch.delenv("CI", raising=False)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    return err


def _ipywidgets(monkeypatch, installed: bool) -> None:
    real = importlib.util.find_spec
    spec = importlib.machinery.ModuleSpec("ipywidgets", None)
    monkeypatch.setattr(_progress.importlib.util, "find_spec",
                        lambda name: (spec if installed else None) if name == "ipywidgets" else real(name))


def test_a_notebook_with_ipywidgets_gets_tqdm_auto(notebook, monkeypatch):
    _ipywidgets(monkeypatch, installed=True)
    assert _progress._bar_class() is tqdm.auto.tqdm


def test_a_notebook_without_ipywidgets_gets_an_html_bar_updated_in_place(notebook, monkeypatch):
    _ipywidgets(monkeypatch, installed=False)
    shown = _Display()
    monkeypatch.setattr("IPython.display.display", shown)
    monkeypatch.setattr(NotebookProgress, "REFRESH", 0.0)
    with progress(4, "calibrating", delay=0) as bar:
        for _ in range(4):
            bar.update()
    assert isinstance(bar, NotebookProgress) and bar.n == 4
    assert len(shown.shown) == 1 and len(shown.updates) == 4  # three updates and the final one at close
    assert "<progress value='4' max='4'" in shown.updates[-1] and "calibrating: 4/4 tasks" in shown.updates[-1]
    assert notebook.getvalue() == ""  # nothing on stderr


def test_quick_work_shows_no_bar_in_a_notebook(notebook, monkeypatch):
    _ipywidgets(monkeypatch, installed=False)
    shown = _Display()
    monkeypatch.setattr("IPython.display.display", shown)
    with progress(3, "quick", delay=60.0) as bar:
        bar.update(3)
    assert shown.shown == [] and shown.updates == [] and notebook.getvalue() == ""


def test_a_terminal_gets_tqdm_auto(monkeypatch):
    monkeypatch.setattr(_progress, "in_notebook", lambda: False)
    assert _progress._bar_class() is tqdm.auto.tqdm


def test_the_notebook_extra_declares_ipywidgets():
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    assert any(dep.startswith("ipywidgets") for dep in project["optional-dependencies"]["notebook"])
