"""Progress bars for long computations: tqdm in notebooks and terminals, silent in CI.

One entry point, :func:`progress`. It returns a bar with ``update(n=1)`` and ``close()`` that is
also a context manager, when progress should be shown:

* in a terminal, a ``tqdm.auto`` bar (text on stderr);
* in a Jupyter kernel with ``ipywidgets`` (the ``notebook`` extra: ``pip install
  bayespriv[notebook]``), a ``tqdm.auto`` bar, which is tqdm's notebook widget there;
* in a Jupyter kernel without ``ipywidgets``, a :class:`NotebookProgress`: an HTML bar
  displayed once and updated in place (tqdm's text bar would print to stderr, which notebooks
  show as red error boxes);

and a :class:`SilentProgress` that does nothing when it should not.

Shown when ``enabled=True``; never shown when ``enabled=False``; with ``enabled=None`` (the
default) shown only where a person is watching: in a Jupyter kernel or when stderr is a terminal,
and the ``CI`` environment variable is unset or empty. Even then the bar appears only once the work
has lasted ``delay`` seconds, so quick calls print nothing.

Examples
--------
>>> from bayespriv._progress import progress
>>> with progress(3, "calibrating", enabled=False) as bar:
...     for _ in range(3):
...         bar.update()
>>> bar.n
3
"""

from __future__ import annotations

import html
import importlib.util
import numbers
import os
import sys
import time
from typing import Any, Protocol

import numpy as np

from ._validation import fail
from .errors import ParameterTypeError

__all__ = ["NotebookProgress", "ProgressBar", "SilentProgress", "progress", "should_show"]

#: Seconds a task must run before its bar appears (quick calls print nothing).
DEFAULT_DELAY = 0.5


class ProgressBar(Protocol):
    """What :func:`progress` returns (a ``tqdm`` bar satisfies it)."""

    n: int

    def update(self, n: int = 1) -> Any:
        """Count ``n`` more units of work done."""

    def close(self) -> None:
        """Finish the bar (idempotent)."""

    def __enter__(self) -> "ProgressBar": ...

    def __exit__(self, *exc: object) -> Any: ...


class SilentProgress:
    """A progress bar that counts and shows nothing (``enabled=False``, CI, no terminal)."""

    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.n = total, desc, 0

    def update(self, n: int = 1) -> None:
        """Count ``n`` more units of work done."""
        self.n += n

    def close(self) -> None:
        """Nothing to finish."""

    def __enter__(self) -> "SilentProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SilentProgress({self.desc!r}: {self.n}/{self.total})"


class NotebookProgress:
    """A progress bar for a Jupyter kernel without ipywidgets: an HTML ``<progress>`` element.

    Displayed (``IPython.display.display(..., display_id=True)``) once the work has lasted
    ``delay`` seconds, then updated in place at most every :attr:`REFRESH` seconds and once at
    :meth:`close`; nothing is written to stderr. A saved notebook keeps only its last state.
    """

    #: Seconds between two redraws.
    REFRESH = 0.2

    def __init__(self, total: int, desc: str, unit: str = "task", delay: float = DEFAULT_DELAY) -> None:
        self.total, self.desc, self.unit, self.delay, self.n = total, desc, unit, delay, 0
        self._start = time.monotonic()
        self._drawn_at: float | None = None
        self._handle: Any = None

    def update(self, n: int = 1) -> None:
        """Count ``n`` more units of work done (redrawn when due)."""
        self.n += n
        now = time.monotonic()
        if now - self._start < self.delay:
            return
        if self._drawn_at is None or now - self._drawn_at >= self.REFRESH:
            self._draw(now)

    def close(self) -> None:
        """Draw the final state, if the bar was shown at all (idempotent)."""
        if self._handle is not None or time.monotonic() - self._start >= self.delay:
            self._draw(time.monotonic())

    def _draw(self, now: float) -> None:
        from IPython.display import display

        self._drawn_at = now
        if self._handle is None:
            self._handle = display(self, display_id=True)
        else:
            self._handle.update(self)

    def _text(self) -> str:
        return f"{self.desc}: {self.n}/{self.total} {self.unit}s ({time.monotonic() - self._start:.1f} s)"

    def _repr_html_(self) -> str:
        return (f"<div><progress value='{self.n}' max='{max(self.total, 1)}' style='width:20em'></progress> "
                f"<span>{html.escape(self._text())}</span></div>")

    def __repr__(self) -> str:
        return self._text()

    def __enter__(self) -> "NotebookProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def in_notebook() -> bool:
    """True inside a Jupyter kernel (notebook, JupyterLab, VS Code), False in a console."""
    shell = sys.modules.get("IPython")
    if "ipykernel.zmqshell" not in sys.modules or shell is None:
        return False
    ipython = shell.get_ipython()
    return ipython is not None and "qt" not in type(ipython).__name__.lower()


def should_show(enabled: bool | None) -> bool:
    """Whether :func:`progress` shows a bar for this ``enabled`` setting (see the module notes)."""
    if enabled is not None:
        return bool(enabled)
    if os.environ.get("CI"):
        return False
    stderr = sys.stderr
    return in_notebook() or bool(stderr is not None and hasattr(stderr, "isatty") and stderr.isatty())


def _bar_class() -> type:
    """``tqdm.auto.tqdm`` (a widget in a kernel with ipywidgets, text in a terminal), except in a
    kernel without ipywidgets: :class:`NotebookProgress` (HTML, never stderr)."""
    if in_notebook() and importlib.util.find_spec("ipywidgets") is None:
        return NotebookProgress
    from tqdm.auto import tqdm

    return tqdm


def progress(total: int, desc: str, enabled: bool | None = None, *, unit: str = "task",
             delay: float = DEFAULT_DELAY) -> ProgressBar:
    """A progress bar over ``total`` units of work, or a silent stand-in.

    Parameters
    ----------
    total : int ≥ 0
        Units of work (tasks, chunks, chains).
    desc : str
        Label shown before the bar (``"calibrating"``).
    enabled : bool, optional
        True: always show; False: never; None (default): show in a Jupyter kernel or when
        stderr is a terminal, unless the ``CI`` environment variable is set (:func:`should_show`).
    unit : str
        Name of one unit of work.
    delay : float ≥ 0
        Seconds of work before the bar first appears.

    Returns
    -------
    ProgressBar
        A ``tqdm.auto`` bar (text on stderr in a terminal, a widget in a notebook with
        ipywidgets), a :class:`NotebookProgress` in a notebook without ipywidgets, or a
        :class:`SilentProgress`. Use it as a context manager, or call ``close()``.

    Raises
    ------
    ParameterTypeError
        When ``enabled`` is not None, True or False, or ``total`` is not an integer.
    ValidationError
        When ``total`` or ``delay`` is negative.
    """
    if enabled is not None and not isinstance(enabled, (bool, np.bool_)):
        raise ParameterTypeError(f"enabled must be None, True or False; got {enabled!r}")
    if isinstance(total, (bool, np.bool_)) or not isinstance(total, numbers.Integral):
        raise ParameterTypeError(f"total must be an integer; got {total!r} of type {type(total).__name__}")
    if total < 0:
        raise fail("total", "a count ≥ 0", total)
    if isinstance(delay, bool) or not isinstance(delay, numbers.Real) or not delay >= 0:
        raise fail("delay", "a number of seconds ≥ 0", delay)
    total = int(total)
    if not should_show(None if enabled is None else bool(enabled)):
        return SilentProgress(total, desc)
    cls = _bar_class()
    if cls is NotebookProgress:
        return NotebookProgress(total, desc, unit, delay)
    return cls(total=total, desc=desc, unit=unit, delay=delay, file=sys.stderr, leave=True, dynamic_ncols=True)
