"""A process-wide, bounded cache of MCMC posteriors, keyed by what determines them.

:class:`~bayespriv.datamodels.PyMCDataModel` runs :func:`pymc.sample` once per
secret that needs a posterior. The run is a deterministic function of the
model (its graph: variables, distributions, constants, data), the evidence the
secret fixes, ``n_records``, the MCMC settings and the seed (derived from the
calibration's ``rng`` and the secret), and of the PyMC / PyTensor versions. The
hex digest of all of these (:meth:`PyMCDataModel._posterior_key`) keys this
cache; a hit hands back the very draws a new run would produce, so a repeated
calibration gives bit-identical numbers without sampling again.

The cache holds :class:`arviz.InferenceData` objects (the run, as
``Calibration.posteriors`` keeps it) whose ``posterior`` group carries the key
in the attribute :data:`KEY_ATTR`. That attribute is saved with a calibration
(netCDF), so :func:`~bayespriv.calibration.load_calibration` registers the
posteriors it reads (:func:`register_posteriors`): a new process that
calibrates the same model with the same secrets, settings and seed reuses
them. The cache is a least-recently-used map bounded by :data:`MAX_ENTRIES`
entries and :data:`MAX_BYTES` bytes of posterior arrays; nothing is written to
disk by the cache itself. Thread-safe. This module does not import PyMC.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["KEY_ATTR", "MAX_BYTES", "MAX_ENTRIES", "clear_posterior_cache", "get", "key_of", "put", "register_posteriors", "stats"]

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
    total = 0
    for group in idata.groups():
        total += int(getattr(idata[group], "nbytes", 0))
    return total


def _evict() -> None:
    total = sum(size for _, size in _entries.values())
    while _entries and (len(_entries) > MAX_ENTRIES or total > MAX_BYTES):
        _, (_, size) = _entries.popitem(last=False)
        total -= size


def get(key: str) -> Any | None:
    """The posterior cached under ``key`` (most recently used from now on), or None."""
    with _lock:
        hit = _entries.get(key)
        if hit is None:
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
        key = idata.posterior.attrs.get(KEY_ATTR)
    except AttributeError:
        return None
    return key if isinstance(key, str) and key else None


def register_posteriors(posteriors: Mapping[str, Any]) -> int:
    """Put MCMC runs read back from a saved calibration in the cache; return how many carried a key.

    Parameters
    ----------
    posteriors : mapping
        secret label -> :class:`arviz.InferenceData`, as
        :attr:`~bayespriv.Calibration.posteriors`. Runs without a key (saved by
        an older version) are skipped.
    """
    count = 0
    for idata in posteriors.values():
        key = key_of(idata)
        if key is not None:
            put(key, idata)
            count += 1
    return count


def stats() -> dict[str, int]:
    """``{"entries", "bytes", "hits", "misses"}`` of this process's cache (for tests and benchmarks)."""
    with _lock:
        return {"entries": len(_entries), "bytes": sum(s for _, s in _entries.values()), **_stats}


def clear_posterior_cache() -> int:
    """Forget every MCMC posterior cached in this process; return how many were held.

    :class:`~bayespriv.PyMCDataModel` keeps the MCMC runs of
    :meth:`~bayespriv.PyMCDataModel.prepare` in a process-wide cache keyed by
    the model's graph and builder code, the secret, ``n_records``, the MCMC
    settings (``draws``, ``tune``, ``chains``, ``target_accept``), the seed
    derived for the secret and the PyMC / PyTensor versions; a repeated
    :func:`~bayespriv.calibrate` with the same seed reuses them and gives the
    same numbers bit for bit. :func:`~bayespriv.load_calibration` also puts
    the posteriors saved in a calibration file in the cache. Clear it to force
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
