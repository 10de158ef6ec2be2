"""Files: a calibration saved to a standard netCDF file, signed, and loaded back only as far as it verifies.

* :func:`save_calibration`, :func:`load_calibration`, :func:`read_metadata`, :func:`check_query` —
  write and read moment, quilt and chain calibrations (:mod:`.calibration_io`, :mod:`.quilt_io`,
  the layout in :mod:`.fileformat`).
* :mod:`.signing` — the owner's key, HMAC-SHA-256 over a canonical digest of the file's contents.
* :mod:`.consistency` — a loaded calibration must agree with itself: what can be recomputed is, and a
  contradiction is refused.

A file is part of the release path: a calibration is trusted only when its MAC verifies under the
data owner's key and its contents agree with themselves; anything else loads, if at all, as
*unverified* (:data:`~bayespriv.calibration.provenance.UNVERIFIED`).
"""

from . import signing
from .calibration_io import check_query, load_calibration, read_metadata, save_calibration

__all__ = ["save_calibration", "load_calibration", "read_metadata", "check_query", "signing"]


def _old_spellings() -> None:
    """Names ``bayespriv.calibration`` exported before the files and the parameter networks got stages of their
    own (``bayespriv.calibration.load_calibration``, ``bayespriv.calibration.calibrate_quilts``, the module paths
    ``bayespriv.calibration.quilts`` and ``.influence``), kept for one release. Installed here, by the first
    stage that imports both of their homes, once both are complete."""
    import bayespriv.calibration as calibration
    import bayespriv.networks as networks
    import bayespriv._deprecation as _deprecation

    moved = {name: (globals()[name], f"bayespriv.files.{name}") for name in __all__ if name != "signing"}
    moved.update({name: (getattr(networks, name), f"bayespriv.networks.{name}") for name in networks.__all__})
    _deprecation.moved_names(calibration, moved)
    _deprecation.alias_module("bayespriv.calibration.quilts", networks.quilts)
    _deprecation.alias_module("bayespriv.calibration.influence", networks.influence)


_old_spellings()
