"""The netCDF file format of saved calibrations: exact JSON of plain data, the root's stamp, the signed write.

Every saver of :mod:`bayespriv.files.calibration_io` (and of
:mod:`bayespriv.files.quilt_io`) builds a tree of xarray
Datasets and hands it to :func:`_write`, which signs it
(:mod:`bayespriv.files.signing`) and writes it with the ``h5netcdf``
engine without fill values or filters, so the stored bits are the arrays'
bits. Metadata is JSON written by :class:`_Encoder` (exact floats, NumPy
arrays and scalars as base64 of their bytes, tuples in mapping keys) and read
back by :func:`_decode`; :func:`_stamp` puts the format, versions and seed on
the root.
"""

from __future__ import annotations

import base64
import json
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import bayespriv.files.signing as signing

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import xarray as xr

__all__ = ["FORMAT", "FORMAT_VERSION", "ENGINE"]

#: Value of the ``bayespriv_format`` attribute of every file written here.
FORMAT = "bayespriv.calibration"
#: Version of the layout; a reader refuses a newer one. 2 added the exact laws (``law_*`` variables):
#: a version-1 reader would take such a file's exact moments for sampled ones and refuse it as contradicting its
#: draws, so it is told to upgrade instead. Files of version 1 are read as before.
FORMAT_VERSION = 2
#: The netCDF-4 engine (h5netcdf: pure HDF5, no C netCDF library needed).
ENGINE = "h5netcdf"


# -- plain data <-> JSON, exactly --------------------------------------------------------------
class _Encoder:
    """JSON text of plain data with exact floats (shortest repr), NumPy arrays and scalars
    (base64 of their bytes), tuples in mapping keys; anything else becomes a string naming its
    type and is listed in ``dropped``."""

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def encode(self, value: Any, where: str) -> Any:
        if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
            data = np.ascontiguousarray(value)
            return {"__ndarray__": base64.b64encode(data.tobytes()).decode("ascii"), "dtype": data.dtype.str,
                    "shape": list(data.shape)}
        if isinstance(value, np.generic) and value.dtype.kind in "biufc":
            return {"__npscalar__": base64.b64encode(value.tobytes()).decode("ascii"), "dtype": value.dtype.str}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, Mapping):
            if all(isinstance(k, str) and not k.startswith("__") for k in value):
                return {k: self.encode(v, f"{where}.{k}") for k, v in value.items()}
            return {"__mapping__": [[self._key(k, where), self.encode(v, f"{where}[{k!r}]")] for k, v in value.items()]}
        if isinstance(value, (tuple, list)) and not hasattr(value, "_fields"):
            return [self.encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
        self.dropped.append(where)
        return f"<{type(value).__module__}.{type(value).__qualname__} not saved>"

    def _key(self, key: Any, where: str) -> Any:
        if isinstance(key, tuple):
            return {"__tuple__": [self._key(k, where) for k in key]}
        return self.encode(key, f"{where} key")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        raw = base64.b64decode(value["__ndarray__"])
        return np.frombuffer(raw, dtype=np.dtype(value["dtype"])).reshape(value["shape"]).copy()
    if "__npscalar__" in value:
        return np.frombuffer(base64.b64decode(value["__npscalar__"]), dtype=np.dtype(value["dtype"]))[0]
    if "__mapping__" in value:
        return {_decode_key(k): _decode(v) for k, v in value["__mapping__"]}
    return {k: _decode(v) for k, v in value.items()}


def _decode_key(key: Any) -> Any:
    if isinstance(key, dict) and "__tuple__" in key:
        return tuple(_decode_key(k) for k in key["__tuple__"])
    return _decode(key)


def _dumps(value: Any) -> str:
    return json.dumps(value, allow_nan=True, ensure_ascii=False)


# -- writing ---------------------------------------------------------------------------------
def _encoding(ds: xr.Dataset) -> dict[str, dict]:
    """No fill values, no filters: the stored bits are the array's bits."""
    return {name: {"_FillValue": None} for name, var in ds.variables.items() if var.dtype.kind == "f"}


def _stamp(root: xr.Dataset, meta: dict[str, Any], seed: int | list[int] | None) -> xr.Dataset:
    """The root's metadata: format, versions and seed, as JSON and as plain attributes for other tools."""
    meta.update({"format": FORMAT, "format_version": FORMAT_VERSION, "bayespriv_version": _library_version(),
                 "python_version": platform.python_version(), "seed": seed})
    root.attrs["bayespriv_metadata"] = _dumps(meta)
    root.attrs.update({
        "bayespriv_format": FORMAT, "bayespriv_format_version": FORMAT_VERSION, "bayespriv_kind": meta["kind"],
        "bayespriv_version": meta["bayespriv_version"], "query_name": str(meta["query_name"]),
        "query_fingerprint": str(meta["query_fingerprint"]), "confidence": str(meta["confidence"]),
        "title": f"bayespriv calibration of {meta['query_name'] or 'a query'}",
    })
    return root


def _write(tree: dict[str, xr.Dataset], p: Path, key: bytes | None) -> Path:
    """Write the tree, its root carrying the signature of every group, variable and attribute under ``key``."""
    import xarray as xr
    dt = xr.DataTree.from_dict(tree)
    if key is not None:
        dt.attrs.update(signing.sign(dt, key).attrs())
    encoding = {node.path: _encoding(node.to_dataset(inherit=False)) for node in dt.subtree}
    dt.to_netcdf(p, engine=ENGINE, mode="w", encoding=encoding)
    return p


def _library_version() -> str:
    """The installed bayespriv version (written on every file)."""
    from bayespriv._version import __version__

    return str(__version__)
