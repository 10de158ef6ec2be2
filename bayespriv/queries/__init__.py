"""Queries F(X), vectorized over draws.

A *batch* maps each column name to an array of shape ``(draws, n_records)``:
``draws`` datasets of ``n_records`` records each. A :class:`Query` maps a batch
to an array ``(draws, k)``. Applied to one dataset (a pandas DataFrame) it
returns an array ``(k,)``.

Ready-made queries (:func:`mean`, :func:`count`, :func:`proportion`) are
*additive*: each component is ``scale * sum_r h(x_r)`` over records, with
``scale`` 1 (sums, counts) or ``1/n`` (means, shares). Additive queries carry
what other stages need without seeing data: the per-record change bound used
by group differential privacy, and (for means of raw columns) the linear form
used by closed-form moments of Gaussian data models.

The package's modules: :mod:`~bayespriv.queries.query` (:class:`Query` and its fingerprint),
:mod:`~bayespriv.queries.components` (additive components and their per-record functions),
:mod:`~bayespriv.queries.ready_made` (:func:`mean`, :func:`count`, :func:`proportion`,
:func:`stack`) and :mod:`~bayespriv.queries.checks`.
"""

from .checks import batch_from_frame
from .components import Batch, Component, Indicator, _AdditiveFn, _Clipped, _Column, _Equals, _Indicator
from .query import Query, _Concatenated, query_fingerprint
from .ready_made import count, mean, proportion, stack

__all__ = ["Batch", "Query", "Component", "Indicator", "mean", "count", "proportion", "stack", "batch_from_frame", "query_fingerprint"]

# A query's fingerprint names the classes of the objects it holds by module and qualified name
# (``bayespriv.queries.Component``, ``bayespriv.queries._Clipped``, ...), and so do its pickles:
# they are published here, so that fingerprints saved with a calibration keep matching.
for _cls in (Query, Component, Indicator, _Column, _Clipped, _Indicator, _AdditiveFn, _Concatenated, _Equals):
    _cls.__module__ = __name__
del _cls
