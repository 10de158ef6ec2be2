"""Checks of what a query declares and returns: output names and ranges, column sensitivities,
numeric outputs; and the batch of one dataset read from a DataFrame."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_frame, check_real, fail
from ..errors import ParameterTypeError, ValidationError

__all__ = ["batch_from_frame"]


def _check_output_names(value: Any) -> tuple[str, ...]:
    """One non-empty string per component; a str is one name (never split into characters)."""
    names = (value,) if isinstance(value, str) else value
    rule = "a sequence of non-empty strings, one per component"
    if not isinstance(names, (list, tuple)) or not names:
        raise fail("output_names", rule, value)
    if not all(isinstance(n, str) and n for n in names):
        raise fail("output_names", rule, value)
    return tuple(names)


def numeric_output(value: Any, name: str) -> np.ndarray:
    """The query's output as float64, refusing strings, objects, complex numbers
    and anything else that is not real numbers or booleans (``np.asarray(["1.5"],
    dtype=float)`` would silently parse text)."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"query {name!r} must return a numeric array; got {type(value).__name__} ({exc})") from exc
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool) or np.issubdtype(arr.dtype, np.complexfloating):
        raise ParameterTypeError(
            f"query {name!r} must return a numeric array (real numbers or booleans); got dtype {arr.dtype}"
        )
    return arr.astype(float, copy=False)


def _check_output_range(value: Any, k: int | None) -> tuple[tuple[float, float], ...]:
    """One (low, high) pair of numbers per component, low <= high (±inf allowed, NaN not)."""
    rule = "a sequence of (low, high) pairs of numbers with low <= high, one per component"
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, np.ndarray)) or len(value) == 0:
        raise fail("output_range", rule, value)
    out = []
    for pair in value:
        if isinstance(pair, (str, bytes)) or not isinstance(pair, (list, tuple, np.ndarray)) or len(pair) != 2:
            raise fail("output_range", rule, value)
        lo, hi = (check_real("output_range", v) for v in pair)
        if np.isnan(lo) or np.isnan(hi) or lo > hi:
            raise fail("output_range", rule, value)
        out.append((float(lo), float(hi)))
    if k is not None and len(out) != k:
        raise fail("output_range", f"{k} pairs, one per component (output_names)", value)
    return tuple(out)


def _declared_column_sensitivities(value: Any) -> Mapping[frozenset[str], Any]:
    """Normalise ``column_sensitivities``: keys to frozensets of names, values checked."""
    if not isinstance(value, Mapping):
        raise ParameterTypeError(f"column_sensitivities must be a mapping; got {type(value).__name__}")
    out: dict[frozenset[str], Any] = {}
    for key, v in value.items():
        names = (key,) if isinstance(key, str) else tuple(key) if isinstance(key, (tuple, list, set, frozenset)) else None
        if not names or not all(isinstance(c, str) for c in names):
            raise fail("column_sensitivities keys", "a column name or a non-empty collection of column names", key)
        if not callable(v):
            v = check_real(f"column_sensitivities[{key!r}]", v)
            if not (v >= 0 and np.isfinite(v)):
                raise fail(f"column_sensitivities[{key!r}]", "a finite number >= 0 (or a callable of n_records)", v)
        out[frozenset(names)] = v
    return MappingProxyType(out)


def _declared_value(value: Any, n_records: int, name: str) -> float:
    v = value(n_records) if callable(value) else value
    v = check_real(f"column sensitivity declared by query {name!r}", v)
    if not (v >= 0 and np.isfinite(v)):
        raise fail(f"column sensitivity declared by query {name!r}", "a finite number >= 0", v)
    return v


def batch_from_frame(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, np.ndarray]:
    """A batch of one dataset from a DataFrame, refusing missing columns, repeated
    column names and NaN."""
    check_frame(frame, "dataset")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValidationError(f"dataset must have the columns {list(columns)!r}; missing {missing!r}")
    if len(frame) == 0:
        raise fail("dataset", "non-empty", "0 rows")
    out = {}
    for c in columns:
        col = frame[c]
        if col.isna().any():
            raise ValidationError(f"dataset column {c!r} must have no missing values; got {int(col.isna().sum())} NaN")
        values = col.to_numpy()
        if values.dtype == object or not np.issubdtype(values.dtype, np.number) and values.dtype != bool:
            values = col.astype(str).to_numpy(dtype=str)
        out[c] = values[None, :]
    return out
