"""Progress bars for long computations: tqdm in notebooks and terminals, silent in CI.

One entry point, :func:`progress`. It returns a bar with ``update(n=1)`` and ``close()`` that is
also a context manager: a ``tqdm.auto`` bar (a widget in Jupyter when ``ipywidgets`` is
installed, text on stderr otherwise) when progress should be shown, and a :class:`SilentProgress`
that does nothing when it should not.

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

import importlib.util
import numbers
import os
import sys
from typing import Any, Protocol

import numpy as np

from ._validation import fail
from .errors import ParameterTypeError

__all__ = ["ProgressBar", "SilentProgress", "progress", "should_show"]

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


def _tqdm_class() -> type:
    """``tqdm.auto.tqdm``, except in a kernel without ipywidgets (text bar, without tqdm's warning)."""
    if in_notebook() and importlib.util.find_spec("ipywidgets") is None:
        from tqdm.std import tqdm
    else:
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
        A ``tqdm.auto`` bar writing to stderr (a widget in notebooks), or a
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
    return _tqdm_class()(total=total, desc=desc, unit=unit, delay=delay, file=sys.stderr, leave=True,
                         dynamic_ncols=True)
