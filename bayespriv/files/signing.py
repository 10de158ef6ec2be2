"""Authenticated calibration files: the data owner's key, a canonical content digest, HMAC-SHA-256.

A calibration file is part of the release path: its moments set the noise. So
:func:`~bayespriv.files.calibration_io.save_calibration` signs every file it
writes and :func:`~bayespriv.files.calibration_io.load_calibration` verifies
the signature before it uses anything in the file.

The key
-------
One secret key per data owner, 32 random bytes (:data:`KEY_BYTES`), taken from

1. the environment variable ``BAYESPRIV_KEY`` (:data:`ENV_KEY`): the key in
   **hexadecimal** (64 hex digits or more), for machines that hold secrets in
   the environment; else
2. the key file :func:`key_path`: ``$BAYESPRIV_KEY_FILE`` (:data:`ENV_KEY_FILE`)
   when set, else ``~/.config/bayespriv/key``; it holds the key in hexadecimal
   on one line.

A *writer* (``load_key(create=True)``, used by ``save_calibration``) creates
the key file on first use: 32 bytes from :func:`os.urandom`, written to a new
file opened with ``O_CREAT | O_EXCL`` and mode 0600 in a directory created
with mode 0700, then linked into place atomically (two processes racing agree
on one key). A *reader* (``load_calibration``) never creates a key: without
one it refuses with :class:`~bayespriv.errors.UnverifiedCalibrationError`. A
key file that group or others may read is refused
(:class:`~bayespriv.errors.SigningKeyError`: ``chmod 600`` it).
:func:`key_fingerprint` is a short public name of the key (the first 16 hex
digits of a SHA-256 of it), stored in every file so that a file signed with
another key is reported as such. :func:`rotate_key` replaces the key and keeps
nothing of the old one: files signed with it no longer verify.

The digest
----------
:func:`content_digest` is the SHA-256 of a canonical encoding of *all* the
contents of a file as the loader reads them (a mapping of group path to
:class:`xarray.Dataset`, or an :class:`xarray.DataTree`): the groups in sorted
path order, in each its attributes (sorted by name) and its variables and
coordinates (sorted by name, each with its role — coordinate or data —, its
dimensions, its attributes, its dtype, its shape and its raw bytes,
little-endian; strings as UTF-8). Every field is written as a one-byte tag,
an 8-byte big-endian length and the bytes, so no two different trees encode
alike. The three signature attributes of the root (:data:`SIGNATURE_ATTRS`)
are left out. The encoding is of the *decoded* values the loader uses, so an
edit anywhere that changes what is loaded — a value, a name, a dimension, an
attribute, a group, a decoding attribute such as ``scale_factor`` — changes
the digest. The digest is the calibration's ``content_hash``.

The MAC is ``HMAC-SHA-256(key, b"bayespriv calibration v1\\0" + digest)``
(hash-then-MAC: a forgery needs the key or a SHA-256 collision), stored in
hexadecimal in the root attribute ``bayespriv_mac`` with the key fingerprint
in ``bayespriv_key_fingerprint`` and the scheme name in
``bayespriv_signature_scheme``.

What this protects, and what not, is in the design notes ("Threat model").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bayespriv.errors import BayesPrivWarning, SigningKeyError, UnverifiedCalibrationError, warn
from bayespriv.calibration.provenance import UNVERIFIED, FileProvenance

__all__ = [
    "ENV_KEY",
    "ENV_KEY_FILE",
    "KEY_BYTES",
    "SCHEME",
    "MAC_ATTR",
    "KEY_ID_ATTR",
    "SCHEME_ATTR",
    "SIGNATURE_ATTRS",
    "Signature",
    "FileProvenance",
    "UNVERIFIED",
    "key_path",
    "load_key",
    "rotate_key",
    "key_fingerprint",
    "content_digest",
    "sign",
    "verify",
]

#: Environment variable holding the key itself, in hexadecimal.
ENV_KEY = "BAYESPRIV_KEY"
#: Environment variable naming the key file (default ``~/.config/bayespriv/key``).
ENV_KEY_FILE = "BAYESPRIV_KEY_FILE"
#: Bytes of a new key; a key given in ``BAYESPRIV_KEY`` must have at least this many.
KEY_BYTES = 32
#: Name of the signature scheme written in every signed file.
SCHEME = "hmac-sha256/canonical-v1"
#: Root attributes of a signed file (left out of the canonical encoding).
MAC_ATTR = "bayespriv_mac"
KEY_ID_ATTR = "bayespriv_key_fingerprint"
SCHEME_ATTR = "bayespriv_signature_scheme"
SIGNATURE_ATTRS = (MAC_ATTR, KEY_ID_ATTR, SCHEME_ATTR)

_MAGIC = b"bayespriv canonical tree v1"
_MAC_DOMAIN = b"bayespriv calibration v1\0"
_FINGERPRINT_DOMAIN = b"bayespriv key fingerprint\0"

#: Private switch for ``benchmarks/bench_signing.py`` only (see :func:`_disabled`): not an option.
_ENABLED = True


@contextmanager
def _disabled() -> Iterator[None]:
    """Save without signing and load without verification or consistency checks, in this block.

    For the benchmark that measures what signing costs, nothing else: files
    saved here carry no MAC and are refused by any normal load.
    """
    global _ENABLED
    before = _ENABLED
    _ENABLED = False
    try:
        yield
    finally:
        _ENABLED = before


# -- the key ------------------------------------------------------------------------------------------------------
def key_path() -> Path:
    """The key file: ``$BAYESPRIV_KEY_FILE`` when set, else ``~/.config/bayespriv/key``.

    The file need not exist (a writer creates it). When ``BAYESPRIV_KEY`` is
    set the key comes from that variable and the file is not read.

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from bayespriv.files import signing
    >>> with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, {"BAYESPRIV_KEY_FILE": folder + "/k"}):
    ...     signing.key_path().name
    'k'
    """
    named = os.environ.get(ENV_KEY_FILE)
    if named:
        return Path(named).expanduser()
    return Path.home() / ".config" / "bayespriv" / "key"


def _parse_hex(text: str, where: str) -> bytes:
    cleaned = "".join(text.split())
    try:
        key = bytes.fromhex(cleaned)
    except ValueError:
        raise SigningKeyError(f"{where} must hold the key in hexadecimal (at least {2 * KEY_BYTES} hex digits); got "
                              f"{len(cleaned)} characters that are not all hex digits") from None
    if len(key) < KEY_BYTES:
        raise SigningKeyError(f"{where} must hold a key of at least {KEY_BYTES} bytes ({2 * KEY_BYTES} hex digits); "
                              f"got {len(key)} bytes")
    return key


def _read_key_file(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SigningKeyError(f"key file {str(path)!r} must be readable; got {type(exc).__name__}: {exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SigningKeyError(f"key file {str(path)!r} must be a regular file")
        if os.name == "posix":
            _check_key_owner(path, info)
        if os.name == "posix" and info.st_mode & 0o077:
            raise SigningKeyError(
                f"key file {str(path)!r} must be readable by its owner only (mode 0600); got mode "
                f"{stat.S_IMODE(info.st_mode):04o}. Anyone who can read it can forge calibration files: run "
                f"`chmod 600 {path}` (and rotate the key with `bayespriv key --rotate` if others may have read it)")
        with os.fdopen(fd, "r", encoding="ascii", closefd=False) as handle:
            text = handle.read()
    finally:
        os.close(fd)
    return _parse_hex(text, f"key file {str(path)!r}")


def _check_key_owner(path: Path, info: os.stat_result) -> None:
    """The key file must be the current user's, in a directory nobody else can write to (or own): whoever can
    replace the key can sign forged calibration files."""
    me = os.geteuid()
    if info.st_uid != me:
        raise SigningKeyError(
            f"key file {str(path)!r} must be owned by the user running bayespriv (uid {me}); got uid {info.st_uid}. "
            "Its owner can replace the key and forge calibration files: use a key file of your own "
            "(BAYESPRIV_KEY_FILE), created by `bayespriv key`")
    folder = path.parent
    try:
        where = os.stat(folder)
    except OSError as exc:
        raise SigningKeyError(f"the directory of the key file {str(path)!r} must be readable; got "
                              f"{type(exc).__name__}: {exc}") from exc
    if where.st_uid not in (me, 0):
        raise SigningKeyError(
            f"the directory of the key file {str(path)!r} must be owned by you (uid {me}) or root; got uid "
            f"{where.st_uid}, who can replace the key: move the key file to a directory of your own")
    if where.st_mode & 0o022:
        raise SigningKeyError(
            f"the directory of the key file {str(path)!r} must be writable by its owner only; got mode "
            f"{stat.S_IMODE(where.st_mode):04o}, so others can replace the key and forge calibration files: run "
            f"`chmod go-w {folder}` (and rotate the key with `bayespriv key --rotate` if it may have been replaced)")


def _new_key_file(path: Path, key: bytes, *, replace: bool) -> None:
    """Write ``key`` to ``path`` atomically: a fresh 0600 file in the same directory (0700 when created), then
    linked into place (``replace=False``: fails if another process created the key first) or renamed over it."""
    folder = path.parent
    if not folder.is_dir():
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise SigningKeyError(f"the directory of the key file {str(path)!r} must be creatable; got "
                                  f"{type(exc).__name__}: {exc}") from exc
    tmp = folder / f".key-{os.urandom(8).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise SigningKeyError(f"the key file {str(path)!r} must be writable; got {type(exc).__name__}: {exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(key.hex() + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # atomic, and fails if the key appeared meanwhile
    finally:
        if tmp.exists():
            tmp.unlink()


def load_key(create: bool = False) -> bytes:
    """The data owner's secret key.

    Parameters
    ----------
    create : bool
        True for a writer: create the key file (mode 0600, directory 0700)
        when there is no key yet. False for a reader: never create one.

    Returns
    -------
    bytes
        The key (from ``BAYESPRIV_KEY`` when set, else from :func:`key_path`).

    Raises
    ------
    SigningKeyError
        No key and ``create=False``; a malformed key; a key file readable by
        group or others; a key file that cannot be read or written.

    Examples
    --------
    >>> import os, tempfile
    >>> from unittest import mock
    >>> from bayespriv.files import signing
    >>> with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, {"BAYESPRIV_KEY_FILE": folder + "/k"}):
    ...     key = signing.load_key(create=True)
    ...     len(key), signing.load_key() == key, oct(os.stat(signing.key_path()).st_mode & 0o777)
    (32, True, '0o600')
    """
    if not isinstance(create, bool):
        raise SigningKeyError(f"create must be True or False; got {create!r}")
    given = os.environ.get(ENV_KEY)
    if given:
        return _parse_hex(given, f"the environment variable {ENV_KEY}")
    path = key_path()
    try:
        return _read_key_file(path)
    except FileNotFoundError:
        if not create:
            raise SigningKeyError(
                f"a signing key must exist to verify calibration files; there is none at {str(path)!r} and "
                f"{ENV_KEY} is not set. Readers never create a key: run calibrate and save with your key (the first "
                f"save creates it), set {ENV_KEY_FILE} to your key file, or load with trust='unverified' to inspect "
                "the file") from None
    try:
        _new_key_file(path, os.urandom(KEY_BYTES), replace=False)
    except FileExistsError:
        pass  # another process created it first: use theirs
    return _read_key_file(path)


def rotate_key() -> str:
    """Replace the key file's key with a new random one; return its fingerprint.

    Nothing of the old key is kept: every file signed with it stops verifying
    (re-run :func:`~bayespriv.calibrate` and save, or load old files with
    ``trust="unverified"`` to inspect them). Warns with the old and new
    fingerprints. Creates the key when there was none.

    Returns
    -------
    str
        The new key's :func:`key_fingerprint`.

    Raises
    ------
    SigningKeyError
        The key comes from ``BAYESPRIV_KEY`` (change that variable instead), or
        the key file cannot be written.

    Examples
    --------
    >>> import os, tempfile, warnings
    >>> from unittest import mock
    >>> from bayespriv.files import signing
    >>> with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, {"BAYESPRIV_KEY_FILE": folder + "/k"}):
    ...     old = signing.key_fingerprint(signing.load_key(create=True))
    ...     with warnings.catch_warnings(record=True) as caught:
    ...         warnings.simplefilter("always")
    ...         new = signing.rotate_key()
    ...     new != old and new == signing.key_fingerprint(), "no longer verify" in str(caught[0].message)
    (True, True)
    """
    if os.environ.get(ENV_KEY):
        raise SigningKeyError(f"the key comes from the environment variable {ENV_KEY}: rotate it by setting a new "
                              f"value there (64 random hex digits); nothing was changed")
    path = key_path()
    try:
        old = key_fingerprint(_read_key_file(path))
    except FileNotFoundError:
        old = None
    _new_key_file(path, os.urandom(KEY_BYTES), replace=True)
    new = key_fingerprint()
    if old is not None:
        warn(f"signing key {str(path)!r} rotated ({old} -> {new}): calibration files signed with the old key no longer "
             "verify; re-run calibrate and save them, or load them with trust='unverified' to inspect them",
             BayesPrivWarning)
    return new


def key_fingerprint(key: bytes | None = None) -> str:
    """A short, non-secret name of a key: the first 16 hex digits of SHA-256 of it (domain-separated).

    Parameters
    ----------
    key : bytes, optional
        Default: the owner's key (:func:`load_key`, never created here).

    Returns
    -------
    str
        16 hexadecimal digits.

    Examples
    --------
    >>> from bayespriv.files.signing import key_fingerprint
    >>> key_fingerprint(bytes(32))
    '7dc65d849c71e6f7'
    """
    if key is None:
        key = load_key(create=False)
    return hashlib.sha256(_FINGERPRINT_DOMAIN + _checked_key(key)).hexdigest()[:16]


def _checked_key(key: Any) -> bytes:
    if not isinstance(key, (bytes, bytearray)) or len(key) < KEY_BYTES:
        raise SigningKeyError(f"key must be bytes of length >= {KEY_BYTES}; got "
                              f"{type(key).__name__}{f' of length {len(key)}' if isinstance(key, (bytes, bytearray)) else ''}")
    return bytes(key)


# -- the canonical encoding ----------------------------------------------------------------------------------------
class _Writer:
    """Feeds tagged, length-prefixed fields to a hash."""

    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.h.update(_MAGIC)

    def field(self, tag: bytes, payload: Any, size: int | None = None) -> None:
        n = len(payload) if size is None else size
        self.h.update(tag + n.to_bytes(8, "big"))
        self.h.update(payload)

    def text(self, tag: bytes, value: str) -> None:
        self.field(tag, value.encode("utf-8"))

    def count(self, tag: bytes, n: int) -> None:
        self.field(tag, int(n).to_bytes(8, "big"))


def _is_text(value: Any) -> bool:
    return isinstance(value, (str, np.str_))


def _array(w: _Writer, value: Any, where: str) -> None:
    """Dtype, shape and bytes of an array (strings element by element)."""
    arr = np.asarray(value)
    if arr.dtype.kind in "biufcmM":
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("<"))
        arr = np.ascontiguousarray(arr)
        w.text(b"T", arr.dtype.str)
        w.text(b"S", json.dumps(list(arr.shape)))
        w.field(b"B", arr.reshape(-1).view(np.uint8) if arr.size else b"", arr.nbytes)
        return
    if arr.dtype.kind in "US" or arr.dtype == object:
        w.text(b"T", "text")
        w.text(b"S", json.dumps(list(arr.shape)))
        for item in arr.reshape(-1).tolist():
            if _is_text(item):
                w.text(b"s", str(item))
            elif isinstance(item, (bytes, np.bytes_)):
                w.field(b"y", bytes(item))
            else:
                raise ValueError(f"{where} holds a {type(item).__name__}, which has no canonical encoding")
        return
    raise ValueError(f"{where} has dtype {arr.dtype}, which has no canonical encoding")


def _attr(w: _Writer, name: str, value: Any, where: str) -> None:
    """An attribute: its name and its value, flattened (netCDF keeps attribute values as flat arrays)."""
    w.text(b"A", str(name))
    if _is_text(value):
        value = [str(value)]
    elif isinstance(value, (bytes, np.bytes_)):
        value = [bytes(value)]
    _array(w, np.asarray(value).reshape(-1), f"{where} attribute {name!r}")


def _nodes(tree: Any) -> dict[str, Any]:
    """path -> Dataset of a DataTree (each node's own variables) or of a mapping."""
    subtree = getattr(tree, "subtree", None)
    if subtree is not None:
        return {node.path: node.to_dataset(inherit=False) for node in subtree}
    if isinstance(tree, Mapping):
        return dict(tree)
    raise TypeError(f"tree must be an xarray DataTree or a mapping of group paths to Datasets; got {type(tree).__name__}")


def _encode(w: _Writer, nodes: Mapping[str, Any]) -> None:
    w.count(b"G", len(nodes))
    for path in sorted(nodes):
        ds = nodes[path]
        w.text(b"N", str(path))
        attrs = {k: v for k, v in ds.attrs.items() if not (path == "/" and k in SIGNATURE_ATTRS)}
        w.count(b"a", len(attrs))
        for name in sorted(attrs, key=str):
            _attr(w, name, attrs[name], f"group {path}")
        coords = set(ds.coords)
        names = sorted(ds.variables, key=str)
        w.count(b"v", len(names))
        for name in names:
            var = ds.variables[name]
            where = f"group {path} variable {name!r}"
            w.text(b"V", str(name))
            w.text(b"R", "coordinate" if name in coords else "data")
            w.text(b"D", json.dumps([str(d) for d in var.dims]))
            w.count(b"a", len(var.attrs))
            for attr in sorted(var.attrs, key=str):
                _attr(w, attr, var.attrs[attr], where)
            _array(w, var.values, where)


def content_digest(tree: Any) -> str:
    """SHA-256 (hex) of the canonical encoding of every group, variable and attribute of ``tree``.

    Parameters
    ----------
    tree : xarray.DataTree or mapping of str to xarray.Dataset
        A calibration file's contents (group path -> the group's own
        variables), as written or as read back. The root's signature
        attributes (:data:`SIGNATURE_ATTRS`) are left out.

    Returns
    -------
    str
        64 hex digits: the calibration's ``content_hash``.

    Raises
    ------
    ValueError
        A variable or attribute holding objects other than strings or bytes.

    Examples
    --------
    >>> import xarray as xr
    >>> from bayespriv.files.signing import content_digest
    >>> a = {"/": xr.Dataset({"mean": ("secret", [0.0, 1.0])})}
    >>> b = {"/": xr.Dataset({"mean": ("secret", [0.0, 1.0000000000000002])})}
    >>> len(content_digest(a)), content_digest(a) == content_digest(b)
    (64, False)
    """
    w = _Writer()
    _encode(w, _nodes(tree))
    return w.h.hexdigest()


# -- signing and verifying -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Signature:
    """What :func:`sign` computed: the MAC, the key's fingerprint and the content digest.

    Attributes
    ----------
    mac : str
        HMAC-SHA-256 (hex) of the content digest under the key.
    key_fingerprint : str
    content_hash : str
        :func:`content_digest` of the signed tree.
    """

    mac: str
    key_fingerprint: str
    content_hash: str

    def attrs(self) -> dict[str, str]:
        """The root attributes that carry the signature in a file."""
        return {MAC_ATTR: self.mac, KEY_ID_ATTR: self.key_fingerprint, SCHEME_ATTR: SCHEME}


def _mac(key: bytes, digest: str) -> str:
    return hmac.new(key, _MAC_DOMAIN + bytes.fromhex(digest), hashlib.sha256).hexdigest()


def sign(tree: Any, key: bytes | None = None) -> Signature:
    """The signature of ``tree`` under ``key`` (default: the owner's key, created if missing).

    The caller stores :meth:`Signature.attrs` as root attributes; they are
    not part of what is signed.

    Parameters
    ----------
    tree : xarray.DataTree or mapping of str to xarray.Dataset
    key : bytes, optional

    Returns
    -------
    Signature

    Examples
    --------
    >>> import xarray as xr
    >>> from bayespriv.files import signing
    >>> tree = {"/": xr.Dataset({"mean": ("secret", [0.0, 1.0])})}
    >>> sig = signing.sign(tree, key=bytes(32))
    >>> tree["/"].attrs.update(sig.attrs())
    >>> signing.verify(tree, key=bytes(32)) == sig.content_hash
    True
    """
    key = load_key(create=True) if key is None else _checked_key(key)
    digest = content_digest(tree)
    return Signature(_mac(key, digest), key_fingerprint(key), digest)


def verify(tree: Any, key: bytes | None = None, *, source: str = "the calibration file") -> str:
    """Check the signature of ``tree`` (as read) under ``key``; return its content digest.

    Parameters
    ----------
    tree : xarray.DataTree or mapping of str to xarray.Dataset
        The file's contents as read, signature attributes included.
    key : bytes, optional
        Default: the owner's key (never created here).
    source : str
        Names the file in messages.

    Returns
    -------
    str
        The verified :func:`content_digest`.

    Raises
    ------
    UnverifiedCalibrationError
        No MAC, an unknown scheme, no key on this machine, a file signed with
        another key (both fingerprints named), or contents changed since
        signing. The message says what to do.

    Examples
    --------
    >>> import xarray as xr
    >>> from bayespriv.files import signing
    >>> tree = {"/": xr.Dataset({"mean": ("secret", [0.0, 1.0])})}
    >>> tree["/"].attrs.update(signing.sign(tree, key=bytes(32)).attrs())
    >>> tree["/"]["mean"].values[1] = 0.0
    >>> signing.verify(tree, key=bytes(32))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    bayespriv.errors.UnverifiedCalibrationError: the calibration file must carry a valid MAC ...contents changed...
    """
    nodes = _nodes(tree)
    root = nodes.get("/")
    attrs = {} if root is None else root.attrs
    remedy = ("Load it with trust='unverified' to inspect it (a release from it then needs an explicit opt-in), or "
              "re-run calibrate and save it with your key")
    mac, claimed, scheme = attrs.get(MAC_ATTR), attrs.get(KEY_ID_ATTR), attrs.get(SCHEME_ATTR)
    if not (_is_text(mac) and _is_text(claimed) and _is_text(scheme)):
        raise UnverifiedCalibrationError(
            f"{source} must carry a MAC under the data owner's key; got a file with no MAC (unsigned: written by "
            f"another tool or an older bayespriv, or its signature was removed). {remedy}")
    if scheme != SCHEME:
        raise UnverifiedCalibrationError(f"{source} must be signed with the scheme {SCHEME!r}; got {str(scheme)!r}. "
                                         f"{remedy}")
    if key is None:
        try:
            key = load_key(create=False)
        except SigningKeyError as exc:
            raise UnverifiedCalibrationError(f"{source} cannot be verified: {exc}") from exc
    key = _checked_key(key)
    mine = key_fingerprint(key)
    if claimed != mine:
        raise UnverifiedCalibrationError(
            f"{source} must be signed with your key; got a file signed with key {claimed}…, yours is {mine}… (another "
            f"owner's file, or signed before `bayespriv key --rotate`). {remedy}")
    try:
        digest = content_digest(nodes)
    except ValueError as exc:
        raise UnverifiedCalibrationError(f"{source} must hold only numbers and strings; got {exc}. {remedy}") from exc
    if not hmac.compare_digest(_mac(key, digest), str(mac)):
        raise UnverifiedCalibrationError(
            f"{source} must carry a valid MAC under your key {mine}…; got a MAC that does not match: its contents "
            f"changed after signing (an edit, a copy from another file, or damage). {remedy}")
    return digest
