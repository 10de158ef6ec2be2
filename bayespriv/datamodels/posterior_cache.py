"""A process-wide, bounded cache of exact posteriors (MCMC runs, quadrature tables), keyed by what determines them.

:class:`~bayespriv.datamodels.PyMCDataModel` runs :func:`pymc.sample` once per
secret that needs a posterior, or tabulates a one-dimensional posterior
(quadrature). The run is a deterministic function of the model (its graph:
variables, distributions, constants, data), the evidence the secret fixes,
``n_records``, the route, the MCMC settings and the seed (derived from the
calibration's ``rng`` and the secret), and of the PyMC / PyTensor versions.
The hex digest of all of these (:meth:`~bayespriv.datamodels.pymc_model.posterior.PosteriorRunner.key`) keys
this cache — the seed and the route included for every route, so an entry of
one route or seed can never answer another; a hit hands back the very draws a
new run would produce, so a repeated calibration gives bit-identical numbers
without sampling again.

Only values this process computed go in: :func:`put` is called by the data
model after it ran MCMC or built a table itself. Loading a calibration file
never puts anything here (a file's contents, keys included, would otherwise
decide what every later, unrelated calibration of the same model computes).
Posteriors saved in a file are reused only when the caller passes the loaded
calibration explicitly (``calibrate(..., execution=ExecutionOptions(reuse=loaded))``): they are offered for
that call alone (:func:`offered`), and a model takes one only under the key it
computes itself. Every lookup names the type it expects (:func:`get`): an
entry of another type is a miss, never handed out.

The MCMC entries are :class:`arviz.InferenceData` objects (the run, as
``Calibration.posteriors`` keeps it) whose ``posterior`` group carries the key
in the attribute :data:`KEY_ATTR`. The cache is a least-recently-used map
bounded by :data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` bytes of
posterior arrays; nothing is written to disk by the cache itself.
Thread-safe. This module does not import PyMC.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import threading
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["KEY_ATTR", "MAX_BYTES", "MAX_ENTRIES", "clear_posterior_cache", "get", "key_of", "offered", "put", "stats"]

#: Attribute of the InferenceData's ``posterior`` group holding the cache key.
KEY_ATTR = "bayespriv_posterior_key"
#: Most posteriors kept in memory.
MAX_ENTRIES = 64
#: Most bytes of posterior arrays kept in memory (an entry larger than this is not kept).
MAX_BYTES = 512 * 2**20

_lock = threading.Lock()
_entries: "collections.OrderedDict[str, tuple[Any, int]]" = collections.OrderedDict()
_stats = {"hits": 0, "misses": 0}


def _nbytes(idata: Any) -> int:
    """Bytes of the arrays of every group of ``idata`` (an estimate for the memory bound)."""
    from .compat import group, group_names

    return sum(int(getattr(group(idata, name), "nbytes", 0)) for name in group_names(idata))


def _evict() -> None:
    total = sum(size for _, size in _entries.values())
    while _entries and (len(_entries) > MAX_ENTRIES or total > MAX_BYTES):
        _, (_, size) = _entries.popitem(last=False)
        total -= size


#: Posteriors offered to the current call of ``calibrate(..., execution=ExecutionOptions(reuse=...))`` only
#: (key -> value).
_offered: "contextvars.ContextVar[Mapping[str, Any]]" = contextvars.ContextVar(
    "bayespriv_offered_posteriors", default=MappingProxyType({}))


@contextlib.contextmanager
def offered(posteriors: Mapping[str, Any]) -> Iterator[None]:
    """Within this block (this thread / task only), :func:`get` also finds ``posteriors`` (key -> value).

    Nothing is put in the process-wide cache: once the block ends, the
    offered values are gone. A model still takes a value only under the key
    it computes itself, and only of the type it expects.
    """
    token = _offered.set(MappingProxyType(dict(posteriors)))
    try:
        yield
    finally:
        _offered.reset(token)


def get(key: str, expected: type | tuple[type, ...]) -> Any | None:
    """The value under ``key`` (offered ones first, then the cache, most recently used from now on), or None.

    ``expected`` is the type (or types) the caller can use: a value of another
    type is a miss (counted as one), never returned, so a stray entry cannot
    make a caller crash or compute with the wrong object.
    """
    value = _offered.get().get(key)
    if value is not None and isinstance(value, expected):
        with _lock:
            _stats["hits"] += 1
        return value
    with _lock:
        hit = _entries.get(key)
        if hit is None or not isinstance(hit[0], expected):
            _stats["misses"] += 1
            return None
        _entries.move_to_end(key)
        _stats["hits"] += 1
        return hit[0]


def put(key: str, idata: Any, size: int | None = None) -> None:
    """Keep ``idata`` under ``key``, evicting the least recently used beyond the bounds.

    ``size`` (bytes) defaults to the arrays of the InferenceData's groups; other
    exact posteriors (quadrature tables) pass their own.
    """
    size = _nbytes(idata) if size is None else int(size)
    if size > MAX_BYTES:
        return
    with _lock:
        _entries[key] = (idata, size)
        _entries.move_to_end(key)
        _evict()


def key_of(idata: Any) -> str | None:
    """The cache key stored in ``idata.posterior.attrs`` (None when absent)."""
    try:
        from .compat import group_attrs

        key = group_attrs(idata, "posterior").get(KEY_ATTR)
    except (AttributeError, KeyError, TypeError):
        return None
    return key if isinstance(key, str) and key else None


def stats() -> dict[str, int]:
    """``{"entries", "bytes", "hits", "misses"}`` of this process's cache (for tests and benchmarks)."""
    with _lock:
        return {"entries": len(_entries), "bytes": sum(s for _, s in _entries.values()), **_stats}


def clear_posterior_cache() -> int:
    """Forget every MCMC posterior cached in this process; return how many were held.

    :class:`~bayespriv.PyMCDataModel` keeps the MCMC runs of
    :meth:`~bayespriv.PyMCDataModel.prepare` in a process-wide cache keyed by
    the model's graph and builder code, the secret, ``n_records``, the route,
    the MCMC settings (``draws``, ``tune``, ``chains``, ``target_accept``), the
    seed derived for the secret and the PyMC / PyTensor versions; a repeated
    :func:`~bayespriv.calibrate` with the same seed reuses them and gives the
    same numbers bit for bit. Only runs of this process are kept:
    :func:`~bayespriv.load_calibration` puts nothing here (pass a loaded
    calibration to ``calibrate(..., execution=ExecutionOptions(reuse=...))``
    to reuse its saved posteriors in that call). Clear it to force
    new MCMC runs (e.g. after changing something the key cannot see, such as
    a global PyTensor flag) or to free memory; the cache is bounded anyway
    (64 runs, 512 MiB of posterior arrays, least recently used dropped first).

    Returns
    -------
    int
        The number of posteriors removed.

    Examples
    --------
    >>> import bayespriv as bp
    >>> bp.clear_posterior_cache() >= 0
    True
    """
    with _lock:
        n = len(_entries)
        _entries.clear()
        _stats["hits"] = _stats["misses"] = 0
        return n
