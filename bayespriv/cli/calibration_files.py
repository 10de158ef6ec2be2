"""Calibration files on the command line: reading them as one-line errors, and their signature (trust flags, banners)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from bayespriv.cli.files import _check_in_file
from bayespriv.cli.problems import _ArgumentProblem
from bayespriv.errors import BayesPrivError

if TYPE_CHECKING:
    from bayespriv.calibration import CalibrationLike
    from bayespriv.queries import Query


_CAL_TODO = ("pass a file written by `bayespriv calibrate` (Calibration.to_netcdf); if it was, it is damaged or "
             "was changed: calibrate again")


def _read_calibration_file(read: Callable[[], Any], path: Path, argument: str) -> Any:
    """``read()`` a calibration file; anything a crafted or damaged file makes the readers raise is one line."""
    from bayespriv.errors import ReleaseMismatchError

    _check_in_file(path, argument, "calibration file")
    try:
        return read()
    except _ArgumentProblem:
        raise
    except ReleaseMismatchError as exc:
        raise _ArgumentProblem("--script", str(exc), "pass the script the calibration was made with, or calibrate "
                                                     "again with this one") from exc
    except BayesPrivError as exc:
        raise _ArgumentProblem(argument, str(exc), _CAL_TODO) from exc
    except Exception as exc:  # h5py / xarray / the loader on an HDF5 file without the expected content
        raise _ArgumentProblem(argument, f"{str(path)!r} cannot be read as a calibration file "
                                         f"({type(exc).__name__}: {exc})", _CAL_TODO) from exc


# -- signed calibration files: the trust of a file ------------------------------------------------------------
_CLI_TRUST_HINT = ("on the command line: --trust-unverified loads it for inspection; a release from it also needs "
                   "--accept-unverified")


def _unverified_opt_in(args: argparse.Namespace) -> dict[str, bool]:
    """The ``accept_unverified`` release option: True only when both flags are given."""
    return {"accept_unverified": bool(args.trust_unverified and args.accept_unverified)}


def _load_trusting(path: Path, argument: str, query: Query | None, trust_unverified: bool) -> Any:
    """load_calibration with the command's trust: a file that does not verify is a refusal (exit 1) naming the
    file argument; anything else a crafted or damaged file raises is one line (:func:`_read_calibration_file`)."""
    from bayespriv.files import load_calibration
    from bayespriv.errors import UnverifiedCalibrationError

    def read() -> Any:
        try:
            return load_calibration(path, query=query, trust="unverified" if trust_unverified else "verified")
        except UnverifiedCalibrationError as exc:
            raise _ArgumentProblem(argument, str(exc), None if trust_unverified else _CLI_TRUST_HINT, code=1) from exc

    return _read_calibration_file(read, path, argument)


def _print_trust_banner(cal: CalibrationLike) -> None:
    """One line on top of ``inspect``: verified (key and content hash), or an UNVERIFIED banner with the reason."""
    p = getattr(cal, "provenance", None)
    if p is None:
        return
    if p.verified:
        print(f"{'verified:':<20} signed with your key {p.key_fingerprint}; content hash {p.content_hash}")
        return
    print(f"*** UNVERIFIED calibration file: {p.reason} ***")
    print("*** Shown for inspection only: a release from it needs --trust-unverified --accept-unverified. ***")


def _print_file_trust(path: Path, trust_unverified: bool) -> None:
    """The MAC of a chain or quilt file (shown without loading it, which needs its query)."""
    from bayespriv.files import calibration_io as persist, signing
    from bayespriv.errors import UnverifiedCalibrationError

    nodes = persist._open_tree(path)
    try:
        digest = signing.verify(nodes, source=f"the calibration file {str(path)!r}")
    except UnverifiedCalibrationError as exc:
        if not trust_unverified:
            raise UnverifiedCalibrationError(f"{exc} ({_CLI_TRUST_HINT})") from exc
        print(f"*** UNVERIFIED calibration file: {exc} ***")
        return
    print(f"{'verified:':<20} signed with your key {signing.key_fingerprint()}; content hash {digest}")
