"""Utility against ε: build each mechanism at each ε and read the noise it reports.

:func:`utility_curves` is the mechanisms' side of :func:`bayespriv.diagnostics.plot_utility`: it builds the
mechanisms (the plot only draws the table it returns), so every construction — its checks, its noise
planning — happens here, in the layer that owns mechanisms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import check_choice
from ..errors import BayesPrivError, ParameterTypeError, ValidationError

if TYPE_CHECKING:
    from bayespriv.calibration import Calibration
    from .mechanism import Mechanism
    from numpy.typing import ArrayLike

__all__ = ["utility_curves", "DEFAULT_EPSILONS"]

#: The ε grid of :func:`utility_curves` when none is given: 12 values from 0.1 to 5, log-spaced.
DEFAULT_EPSILONS = np.geomspace(0.1, 5.0, 12)


def default_factories() -> dict[str, Callable[[Any, float], Any]]:
    """APGM and OptimalGaussian at δ = 1e-3."""
    from .apgm import APGM
    from .optimal import OptimalGaussian

    return {"APGM": lambda cal, e: APGM(cal, epsilon=e, delta=1e-3),
            "OptimalGaussian": lambda cal, e: OptimalGaussian(cal, epsilon=e, delta=1e-3)}


def noise_error(mech: Mechanism, error: str) -> float:
    """What the mechanism says about its noise: sqrt(trace(noise_cov)) or the mean of E|noise|."""
    if error == "l2":
        return float(np.sqrt(np.trace(np.asarray(mech.noise_cov, dtype=float))))
    return float(np.mean(np.asarray(mech.expected_abs_error, dtype=float)))


def _check_factories(mechanisms: Any) -> Mapping[str, Any]:
    if not isinstance(mechanisms, Mapping) or not mechanisms or not all(callable(f) for f in mechanisms.values()):
        raise ParameterTypeError("mechanisms must be a non-empty mapping label -> callable(calibration, epsilon); "
                                 f"got {type(mechanisms).__name__}")
    return mechanisms


def check_epsilons(epsilons: Any) -> np.ndarray:
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise ValidationError(f"epsilons must be a non-empty 1-d sequence of finite numbers > 0; got {epsilons!r}")
    return np.sort(eps)


def _series(calibration: Calibration, factory: Any, eps: np.ndarray, error: str) -> tuple[np.ndarray, tuple[str, ...]]:
    """One factory's error at each ε (nan where it could not be built) and the reasons."""
    out = np.full(eps.shape, np.nan)
    failures = []
    for i, e in enumerate(eps):  # one mechanism per ε: a handful of constructions, not a hot path
        try:
            out[i] = noise_error(factory(calibration, float(e)), error)
        except BayesPrivError as exc:  # e.g. ε too small for a finite noise: left blank, counted
            failures.append(f"ε={e:.3g}: {exc}")
    return out, tuple(failures)


def utility_curves(calibration: Calibration, mechanisms: Mapping[str, Any] | None = None,
                   epsilons: ArrayLike | None = None, *, error: str = "l2") -> pd.DataFrame:
    """Expected error of several mechanisms at each ε, read from the noise each one reports.

    Parameters
    ----------
    calibration : Calibration (or what the factories take)
    mechanisms : mapping label -> callable(calibration, epsilon) -> Mechanism, optional
        Default: APGM and OptimalGaussian at δ = 1e-3.
    epsilons : sequence of float > 0, optional
        Default: :data:`DEFAULT_EPSILONS`.
    error : {"l2", "abs"}
        ``"l2"``: sqrt(trace(noise_cov)) = sqrt(E‖noise‖²); ``"abs"``: the mean over components of the exact
        E|noise| (``expected_abs_error``).

    Returns
    -------
    pandas.DataFrame
        Index ε (sorted), one column per label; NaN where a factory raised a bayespriv error (no finite noise
        at that ε, for example). ``attrs["failures"]`` maps each label to its reasons, ``attrs["error"]`` is
        ``error``.
    """
    error = check_choice(error, "error", ("l2", "abs"))
    factories = _check_factories(default_factories() if mechanisms is None else mechanisms)
    eps = DEFAULT_EPSILONS.copy() if epsilons is None else check_epsilons(epsilons)
    columns, failures = {}, {}
    for label, factory in factories.items():
        columns[str(label)], failures[str(label)] = _series(calibration, factory, eps, error)
    table = pd.DataFrame(columns, index=pd.Index(eps, name="epsilon"))
    table.attrs["failures"] = failures
    table.attrs["error"] = error
    return table
