"""Argument checks used at public entry points.

Messages follow one style: ``"<parameter> must be <rule>; got <value>"`` so that
the user sees which argument, which rule and which value in one line.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from .errors import ParameterTypeError, ValidationError


class described(str):
    """Text that describes a value (``"shape (3,)"``), shown without quotes in errors."""

    def __repr__(self) -> str:
        return str(self)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def fail(name: str, rule: str, value: Any) -> ValidationError:
    """Build the uniform error for parameter ``name`` breaking ``rule``."""
    return ValidationError(f"{name} must be {rule}; got {_show(value)}")


def check_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{name} must be a real number; got {_show(value)} of type {type(value).__name__}")
    return float(value)


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """epsilon: a finite real number > 0."""
    eps = check_real(name, value)
    if not (math.isfinite(eps) and eps > 0):
        raise fail(name, "a finite number > 0", value)
    return eps


def check_delta(value: Any, name: str = "delta", *, allow_zero: bool = False) -> float:
    """delta: in the open interval (0, 1), or [0, 1) when ``allow_zero``."""
    d = check_real(name, value)
    ok = (0.0 <= d < 1.0) if allow_zero else (0.0 < d < 1.0)
    if not ok or not math.isfinite(d):
        raise fail(name, "in [0, 1)" if allow_zero else "in the open interval (0, 1)", value)
    return d


def check_confidence(value: Any, name: str = "confidence") -> float | None:
    """confidence: None (plug-in estimates) or a probability in (0, 1)."""
    if value is None:
        return None
    c = check_real(name, value)
    if not (0.0 < c < 1.0):
        raise fail(name, "None or in the open interval (0, 1)", value)
    return c


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(f"{name} must be an integer >= {minimum}; got {_show(value)} of type {type(value).__name__}")
    if int(value) < minimum:
        raise fail(name, f"an integer >= {minimum}", value)
    return int(value)


def check_finite_array(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"{name} must be numeric; got {_show(value)}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise fail(name, f"a {ndim}-dimensional array", described(f"shape {arr.shape}"))
    if not np.all(np.isfinite(arr)):
        raise fail(name, "finite (no NaN or infinity)", value)
    return arr


def check_covariance(value: Any, name: str, k: int | None = None, *, strict: bool = False) -> np.ndarray:
    """A symmetric positive semi-definite (or definite, when ``strict``) k x k matrix."""
    cov = check_finite_array(value, name)
    if cov.ndim == 0:
        cov = cov.reshape(1, 1)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise fail(name, "a square matrix", described(f"shape {cov.shape}"))
    if k is not None and cov.shape != (k, k):
        raise fail(name, f"of shape ({k}, {k})", described(f"shape {cov.shape}"))
    if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(cov).max(initial=0)))):
        raise fail(name, "symmetric", cov)
    eig_min = float(np.linalg.eigvalsh(cov).min()) if cov.size else 0.0
    scale = max(1.0, float(np.abs(cov).max(initial=0)))
    if strict and eig_min <= 1e-12 * scale:
        raise fail(name, "positive definite", described(f"smallest eigenvalue {eig_min:.3g}"))
    if eig_min < -1e-9 * scale:
        raise fail(name, "positive semi-definite", described(f"smallest eigenvalue {eig_min:.3g}"))
    return 0.5 * (cov + cov.T)


def check_columns_present(required: Iterable[str], available: Iterable[str], name: str) -> None:
    available = list(available)
    missing = [c for c in required if c not in available]
    if missing:
        raise ValidationError(
            f"{name} must name columns of the data; got {missing!r}, which are not among {available!r}"
        )


def check_mapping(value: Any, name: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ParameterTypeError(f"{name} must be a mapping; got {type(value).__name__}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise fail(name, f"one of {choices!r}", value)
    return value
