"""The additive components of the ready-made queries, ``F_c(X) = scale * sum_r h(x_r)``, and the
per-record functions h they are made of (picklable dataclasses, unlike lambdas: process
executors need them); :class:`Indicator`, what a ready-made count or proportion counts.

Their classes are published as ``bayespriv.queries.<name>``
(:mod:`bayespriv.queries` sets their ``__module__``): a query's fingerprint and its pickles
name them so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import fail
from ..errors import ValidationError
from .checks import numeric_output

__all__ = ["Batch", "Component", "Indicator", "ClippedColumn", "IndicatorOf"]

Batch = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Component:
    """One additive component ``F_c(X) = scale * sum_r h(x_r)``.

    Attributes
    ----------
    h : callable
        Per-record contribution: batch -> array ``(draws, n_records)``.
    per_mean : bool
        ``scale = 1/n`` when true (means, shares), 1 otherwise (sums, counts).
    record_range : float or None
        ``sup h - inf h``: how much one record can move ``sum_r h``; None when
        unbounded (then group DP is not available).
    linear : mapping or None
        ``{column: weight}`` when ``h(x) = sum_j weight_j * x_j`` exactly.
    name : str
    columns : tuple of str
        The columns ``h`` reads.
    """

    h: Callable[[Batch], np.ndarray]
    per_mean: bool
    record_range: float | None
    linear: Mapping[str, float] | None
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class _Column:
    """h(x) = x[column] (picklable, unlike a lambda: process executors need it)."""

    column: str

    def __call__(self, batch: Batch) -> np.ndarray:
        return batch[self.column]


@dataclass(frozen=True)
class _Clipped:
    """h(x) = clip(x[column], low, high)."""

    column: str
    low: float
    high: float

    def __call__(self, batch: Batch) -> np.ndarray:
        return np.clip(batch[self.column], self.low, self.high)

    @property
    def bounds(self) -> tuple[float, float]:
        """Range of h per record."""
        return float(self.low), float(self.high)


@dataclass(frozen=True)
class _Indicator:
    """h(x) = predicate(x), checked to be boolean of shape (draws, n_records)."""

    predicate: Callable[[Batch], np.ndarray]
    reference: str
    name: str

    def __call__(self, batch: Batch) -> np.ndarray:
        mask = np.asarray(self.predicate(batch))
        ref = np.shape(batch[self.reference])
        if mask.shape != ref or mask.dtype != bool:
            raise ValidationError(
                f"predicate of {self.name!r} must return a boolean array of shape (draws, n_records) = {ref}; "
                f"got dtype {mask.dtype} and shape {mask.shape}"
            )
        return mask

    @property
    def bounds(self) -> tuple[float, float]:
        """Range of h per record (an indicator)."""
        return 0.0, 1.0


@dataclass(frozen=True)
class _AdditiveFn:
    """F_c = mean or sum over records of h_c, stacked over components."""

    components: tuple[Component, ...]

    def __call__(self, batch: Batch) -> np.ndarray:
        cols = []
        for c in self.components:
            h = numeric_output(c.h(batch), c.name)
            cols.append(h.mean(axis=1) if c.per_mean else h.sum(axis=1))
        return np.stack(cols, axis=1)


def _equals_text(values: np.ndarray, category: Any) -> np.ndarray:
    """``values == category`` on a text column: both compared as text (``str(category)``)."""
    return values.astype(str, copy=False) == str(category)


@dataclass(frozen=True)
class _Equals:
    """predicate(x) = (x[column] == category), with the category compared as the column holds it.

    A text column (strings, as data models and :func:`batch_from_frame` give
    non-numeric columns) is compared with ``str(category)``; a boolean column
    needs a bool category; a numeric column a number (compared as float). A
    category of the wrong type for the column is refused, never silently
    counted as no match.
    """

    column: str
    category: Any

    def __call__(self, batch: Batch) -> np.ndarray:
        values = np.asarray(batch[self.column])
        cat = self.category
        if values.dtype.kind in "USO":
            return _equals_text(values, cat)
        if values.dtype == bool:
            if not isinstance(cat, (bool, np.bool_)):
                raise fail("category", f"a bool for the boolean column {self.column!r}", cat)
            return values == bool(cat)
        if isinstance(cat, (bool, np.bool_)) or not isinstance(cat, (int, float, np.integer, np.floating)):
            raise fail("category", f"a number for the numeric column {self.column!r}", cat)
        return values == float(cat)


@dataclass(frozen=True)
class Indicator:
    """What a ready-made count or proportion counts: the records with ``column == category``.

    :attr:`Query.indicator` of ``count(column, category)`` and
    ``proportion(column, category)``; data models that can tabulate the law of
    such a count read it (e.g. a hypergeometric law for a table resampled
    without replacement).

    Attributes
    ----------
    column : str
    category : object
        A value of the column: a string for a text column (compared as
        ``str(category)``), a bool for a boolean column, a number for a
        numeric one.
    statistic : {"count", "proportion"}
        The number of such records, or their share among the ``n_records``.
    """

    column: str
    category: Any
    statistic: str


#: The component kinds other stages recognise (the W∞ bounds read their range). Their class names keep
#: the underscore because query fingerprints and pickles record them.
ClippedColumn = _Clipped
IndicatorOf = _Indicator
