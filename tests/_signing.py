"""Helpers of the tests of authenticated calibration files: edit a saved file and sign it again.

``resign`` plays someone who holds a key (the owner's, through a bug or theft, or another one):
it signs whatever the file now holds, exactly as ``save_calibration`` signs what it writes.
"""

from __future__ import annotations

from pathlib import Path

import h5py

from bayespriv.files import calibration_io as persist, signing


def resign(path, key: bytes | None = None) -> str:
    """Sign the file's current contents (as the loader reads them) with ``key`` (default: the owner's);
    returns the content digest."""
    nodes = persist._open_tree(Path(path))
    sig = signing.sign(nodes, key)
    with h5py.File(path, "r+") as f:
        for name, value in sig.attrs().items():
            f.attrs[name] = value
    return sig.content_hash


def set_array(path, name: str, value) -> None:
    """Overwrite the dataset ``name`` (an HDF5 path, e.g. ``"mean"`` or ``"posterior_001/posterior/z"``)."""
    with h5py.File(path, "r+") as f:
        f[name][...] = value


def get_array(path, name: str):
    with h5py.File(path, "r") as f:
        return f[name][()]
