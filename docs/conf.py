"""Sphinx configuration of the bayespriv API reference.

Build it with ``python -m sphinx -W -b html docs build/docs`` (warnings are errors);
``tests/test_docs.py`` runs the same build in CI.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MPLBACKEND", "Agg")

import bayespriv  # noqa: E402  (after the path is set)

project = "bayespriv"
author = "the bayespriv developers"
copyright = "the bayespriv developers"
release = version = bayespriv.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.autosummary",
]

# numpydoc-style docstrings through napoleon (a Sphinx built-in: no extra dependency).
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_class_signature = "mixed"
autodoc_default_options = {"members": True, "show-inheritance": False}
# Aliases keep the signatures readable (``RNGLike`` rather than its expanded Union).
autodoc_type_aliases = {"RNGLike": "bayespriv.random.RNGLike", "Batch": "bayespriv.queries.Batch"}

exclude_patterns = ["_build"]
# numpydoc type specs name shapes, e.g. "array (k, k)": the Python domain turns each word into a
# link and finds several attributes called ``k`` (Calibration.k, Mechanism.k, ...). Those
# "more than one target" notices (and only they are ``ref.python``) are not errors in the docs.
suppress_warnings = ["ref.python"]
source_suffix = {".rst": "restructuredtext"}
html_theme = "alabaster"
html_static_path: list[str] = []
html_theme_options = {"description": "Pufferfish privacy for global properties of datasets", "fixed_sidebar": True}


# -- Docstrings are written to be read as plain text too (``help()``) ------------------------------
# Two plain-text habits would be reStructuredText markup: ``|x − y|`` (an absolute value, read by
# docutils as a substitution) and a bespoke numpydoc-style section such as ``Privacy`` (every
# mechanism has one). Before napoleon runs, bars outside literals are escaped and every underlined
# section title napoleon does not know is registered as a generic section (shown as a rubric).

_LITERAL = re.compile(r"(``.*?``|:math:`[^`]*`)")
_UNDERLINE = re.compile(r"\s*-{3,}\s*$")


def _escape_bars(line: str) -> str:
    parts = _LITERAL.split(line)
    return "".join(p if i % 2 else p.replace("|", r"\|") for i, p in enumerate(parts))


def _bespoke_sections(package: pathlib.Path) -> list[str]:
    """Underlined section titles used in the package's docstrings that napoleon does not know."""
    found: dict[str, None] = {}
    for path in sorted(package.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for title, under in zip(lines, lines[1:]):
            name = title.strip()
            if name and _UNDERLINE.fullmatch(under) and len(under.strip()) == len(name) \
                    and name.lower() not in _NAPOLEON_SECTIONS:
                found[name] = None
    return list(found)


def _plain_text_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    """Escape ``|`` outside literals, doctest blocks and ``::`` literal blocks (in place)."""
    literal_indent: int | None = None
    in_doctest = False
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped:
            in_doctest = False
        elif literal_indent is not None and indent <= literal_indent:
            literal_indent = None
        in_doctest = in_doctest or stripped.startswith(">>>")
        table_row = stripped.startswith("+") or (stripped.startswith("|") and stripped.endswith("|"))
        if literal_indent is None and not in_doctest and stripped and not table_row:
            lines[i] = _escape_bars(line)
        if literal_indent is None and stripped.endswith("::") and not stripped.startswith(".."):
            literal_indent = indent


#: Section titles napoleon parses itself (sphinx.ext.napoleon.docstring), lower-case.
_NAPOLEON_SECTIONS = frozenset({
    "args", "arguments", "attention", "attributes", "caution", "danger", "error", "example", "examples",
    "hint", "important", "keyword args", "keyword arguments", "methods", "note", "notes", "other parameters",
    "parameters", "receive", "receives", "return", "returns", "raise", "raises", "references", "see also",
    "tip", "todo", "warning", "warnings", "warn", "warns", "yield", "yields",
})

napoleon_custom_sections = _bespoke_sections(ROOT / "bayespriv")


def setup(app):
    app.connect("autodoc-process-docstring", _plain_text_docstring, priority=100)
    return {"parallel_read_safe": True}
