"""How values read in output made for a person: an infinity says why, a missing value says so.

Results keep their numbers: ``summary()`` tables, saved files and JSON hold ``inf``, ``nan`` and
``None`` as they are. What a person reads — a ``repr``, an HTML view in a notebook, a table the
command line prints — goes through :func:`cell`, :func:`frame_html` or :func:`frame_text`, where

* an infinite value reads ``∞ (<why>)``, with the reason its table gives for that column (for
  example ``∞ (unbounded: the query declares no bounds)``),
* a missing value (``None``, ``nan``, ``pd.NA``) reads ``—``, or the column's own explanation,
* other numbers read with 4 significant digits.

This module sits beside ``_validation``: it imports only numpy and pandas, so every stage may use
it for its own views.

Examples
--------
>>> from bayespriv._display import cell
>>> cell(float("inf"), infinite="no quilt with e < ε")
'∞ (no quilt with e < ε)'
>>> cell(None)
'—'
>>> cell(0.123456)
'0.1235'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MISSING", "NO_CLAIM", "cell", "frame_html", "frame_text", "infinite_text", "shown"]

#: What a missing value reads when its column gives no explanation.
MISSING = "—"
#: What a missing claimed ε or δ reads (a mechanism without a guarantee, e.g. no noise).
NO_CLAIM = "none claimed"


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, (float, np.floating)) and math.isnan(float(value))


def infinite_text(value: float, why: str | None) -> str:
    """``∞ (why)`` (``−∞ (why)`` for a negative infinity); ``∞`` alone when ``why`` is None."""
    sign = "∞" if value > 0 else "−∞"
    return sign if not why else f"{sign} ({why})"


def cell(value: Any, *, infinite: str | None = None, missing: str = MISSING, digits: int = 4) -> str:
    """The text of one value for a person.

    Parameters
    ----------
    value : Any
        A number, a bool, None, or anything with a ``str``.
    infinite : str, optional
        Why the value can be infinite here; an infinite value reads ``∞ (infinite)``.
    missing : str
        What a missing value (None, nan, pd.NA) reads.
    digits : int
        Significant digits of a float.

    Returns
    -------
    str
    """
    if _is_missing(value):
        return missing
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        return infinite_text(v, infinite) if math.isinf(v) else f"{v:.{digits}g}"
    return str(value)


def _per_column(option: str | Mapping[Any, str] | None, column: Any, default: str | None) -> str | None:
    if isinstance(option, Mapping):
        return option.get(column, default)
    return default if option is None else option


def shown(df: pd.DataFrame, *, infinite: str | Mapping[Any, str] | None = None,
          missing: str | Mapping[Any, str] = MISSING, digits: int = 4) -> pd.DataFrame:
    """A copy of ``df`` whose every value is replaced by its text (:func:`cell`), per column's reasons."""
    out = df.astype(object).copy()
    for j, column in enumerate(df.columns):
        why = _per_column(infinite, column, None)
        gap = _per_column(missing, column, MISSING) or MISSING
        out.iloc[:, j] = [cell(v, infinite=why, missing=gap, digits=digits) for v in df.iloc[:, j]]
    return out


def frame_html(df: pd.DataFrame, *, infinite: str | Mapping[Any, str] | None = None,
               missing: str | Mapping[Any, str] = MISSING, index: bool = True, digits: int = 4) -> str:
    """A DataFrame as an HTML table whose cells read as :func:`cell` says.

    Parameters
    ----------
    df : pandas.DataFrame
    infinite : str or mapping of column to str, optional
        Why a value of the table (or of a column) can be infinite.
    missing : str or mapping of column to str
        What a missing value reads (per column where a mapping).
    index : bool
        Whether to show the index.
    digits : int
        Significant digits of floats.

    Returns
    -------
    str
        A ``<table>`` (pandas escapes every text).
    """
    return shown(df, infinite=infinite, missing=missing, digits=digits).to_html(border=0, index=index)


def frame_text(df: pd.DataFrame, *, infinite: str | Mapping[Any, str] | None = None,
               missing: str | Mapping[Any, str] = MISSING, index: bool = True, digits: int = 4) -> str:
    """A DataFrame as plain text (``DataFrame.to_string``) whose cells read as :func:`cell` says."""
    return shown(df, infinite=infinite, missing=missing, digits=digits).to_string(index=index)
