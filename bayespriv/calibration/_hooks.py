"""Functions that :class:`~bayespriv.calibration.result.Calibration`'s convenience methods call.

``cal.to_netcdf(path)``, ``cal.convergence()``, ``cal.draws_for_slack(...)`` and the W∞ column of
``cal.summary()`` are computed by the modules that own them (persist, convergence, wasserstein), which
all need ``Calibration``. So that ``result.py`` and ``views.py`` (its tables) import none of
them — one-way imports, no cycle — each of those modules registers its functions here when it is
imported; the package (``bayespriv.calibration``) imports every one of them, and importing
``result`` runs the package's ``__init__`` first, so a registered function is always there when a
method needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "call"]

_REGISTERED: dict[str, Callable[..., Any]] = {}


def register(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make ``fn`` callable by its name through :func:`call` (used as a decorator or a plain call)."""
    _REGISTERED[fn.__name__] = fn
    return fn


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call the registered function ``name``."""
    try:
        fn = _REGISTERED[name]
    except KeyError:  # pragma: no cover - the package imports every registering module
        raise RuntimeError(f"bayespriv.calibration has not registered {name!r}: import bayespriv.calibration") from None
    return fn(*args, **kwargs)
