"""Calibrate once, release later: a :class:`Calibration` in a netCDF-4 file and back, bit for bit.

The file is an xarray ``DataTree`` written with the ``h5netcdf`` engine (a
standard netCDF-4 / HDF5 file that ``xarray.open_datatree`` or any netCDF tool
reads). Its root holds the calibration; a family
(:class:`~bayespriv.DataModelFamily`) adds one group per member θ
(``member_000``, ``member_001``, …).

What a node holds
-----------------
* variables ``mean (secret, component)``, ``cov (secret, component,
  component_b)``, ``mean_se``, ``cov_se``, ``cov_se_white`` and, for a
  sampled calibration, ``samples (secret, draw, component)`` — float64, stored
  without fill values or compression filters that alter bits;
* for a calibration with exact laws (:attr:`Calibration.finite_laws`, format
  version 2): ``law_size (secret,)`` (int64, the number of values of each
  secret's law), and the laws one after the other in the order of the
  secrets, ``law_points (law_atom, component)`` and ``law_weights
  (law_atom,)`` (float64, bit for bit: read back without rescaling);
* the secrets, one per ``secret``: ``secret_kind`` ("dataset" /
  "distribution"), ``secret_attribute`` (column or parameter),
  ``secret_statistic``, ``secret_value``, ``secret_category`` (JSON) and
  ``secret_label``; the pairs as indices ``pair_secret (pair, side)``;
* ``component_name (component)``;
* the attribute ``bayespriv_metadata`` (JSON): confidence, z, n_draws,
  n_records, θ, diagnostics, query name, columns and fingerprint, and at the
  root the library and Python versions, the seed (when the caller knew it:
  :func:`~bayespriv.calibrate` does not keep it) and the format version. A few
  of these are repeated as plain attributes for other tools.

MCMC posteriors (:attr:`Calibration.posteriors`, one
:class:`arviz.InferenceData` per secret that needed MCMC) are saved as groups
``posterior_000``, ``posterior_001``, … under the node of their calibration
(the root, or ``member_XXX``), each holding the InferenceData's own groups
(``posterior``, ``sample_stats``, ``observed_data``, …) with their dimensions
prefixed ``mcmc__`` (netCDF groups must agree with their parents on the sizes
of dimensions of the same name, and the calibration already has a ``draw``);
the group's attribute ``bayespriv_secret_label`` names the secret. Loading
strips the prefix and gives back InferenceData with the same values.

A query is code, so it is not saved: :func:`load_calibration` returns a
calibration whose ``query`` is None (it keeps ``query_fingerprint``) unless the
caller passes the query again, which must have the saved fingerprint
(:attr:`bayespriv.Query.fingerprint`). Diagnostics that are not plain data
(numbers, strings, arrays, mappings and sequences of them) are saved as a
string naming their type and listed in the metadata's ``dropped``.

A :class:`~bayespriv.networks.ChainCalibration` (for MQM, ``kind:
"chain"``) and a :class:`~bayespriv.networks.QuiltCalibration` (for APMQM)
of a discrete parameter network (``kind: "quilt"``) are saved too, by
:mod:`bayespriv.files.quilt_io`, whose docstring describes their
layout; the JSON codec, the root's stamp and the signed write they share
with every other file are in :mod:`bayespriv.files.fileformat`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail, thaw
from bayespriv.errors import ParameterTypeError, ReleaseMismatchError, UnverifiedCalibrationError, ValidationError
from bayespriv.queries import Query
from bayespriv.queries.query import fingerprint_matches
from bayespriv.secrets import DatasetSecret, DistributionSecret, Secret, SecretPair
import bayespriv.files.consistency as consistency  # the modules (a flag and a check read at call time)
import bayespriv.files.signing as signing

from .fileformat import (
    ENGINE,
    FORMAT,
    FORMAT_VERSION,
    _decode,
    _dumps,
    _Encoder,
    _library_version,
    _stamp,
    _write,
)
from bayespriv.calibration.result import Calibration
from bayespriv.calibration.provenance import FileProvenance

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import xarray as xr
    from collections.abc import Sequence
    from bayespriv.networks.quilts import ChainCalibration, QuiltCalibration

__all__ = ["save_calibration", "load_calibration", "read_metadata", "check_query", "FORMAT", "FORMAT_VERSION", "ENGINE"]

_ARRAYS = (("mean", "mean_array", ("secret", "component")),
           ("cov", "cov_array", ("secret", "component", "component_b")),
           ("mean_se", "mean_se", ("secret", "component")),
           ("cov_se", "cov_se", ("secret", "component", "component_b")),
           ("cov_se_white", "cov_se_white", ("secret", "component", "component_b")))


# -- saving ------------------------------------------------------------------------------------
def _secret_table(secrets: tuple[Secret, ...], enc: _Encoder) -> dict[str, tuple[str, list]]:
    kinds, attrs, stats, values, cats, labels = [], [], [], [], [], []
    for i, s in enumerate(secrets):
        dataset = isinstance(s, DatasetSecret)
        kinds.append("dataset" if dataset else "distribution")
        attrs.append(s.column if dataset else s.parameter)
        stats.append(s.statistic if dataset else "")
        values.append(float(s.value))
        category = s.category if dataset else None
        before = len(enc.dropped)
        cats.append(_dumps(enc.encode(category, f"secrets[{i}].category")))
        if len(enc.dropped) > before:
            raise fail(f"secrets[{i}].category", "plain data (str, number, bool or None) to be saved", category)
        labels.append(s.label)
    return {"secret_kind": ("secret", kinds), "secret_attribute": ("secret", attrs),
            "secret_statistic": ("secret", stats), "secret_value": ("secret", values),
            "secret_category": ("secret", cats), "secret_label": ("secret", labels)}


def _node(cal: Calibration, enc: _Encoder, where: str, *, with_samples: bool = True) -> xr.Dataset:
    """One calibration (without its family) as a Dataset."""
    import xarray as xr
    data: dict[str, Any] = {}
    for name, attr, dims in _ARRAYS:
        data[name] = (dims, np.asarray(getattr(cal, attr), dtype=np.float64))
    if cal.sample_array is not None and with_samples:
        data["samples"] = (("secret", "draw", "component"), np.asarray(cal.sample_array, dtype=np.float64))
    if cal.finite_laws:
        laws = [cal.finite_laws[s.label] for s in cal.secrets]
        data["law_size"] = (("secret",), np.array([law.weights.size for law in laws], dtype=np.int64))
        data["law_points"] = (("law_atom", "component"), np.concatenate([law.points for law in laws]).astype(np.float64))
        data["law_weights"] = (("law_atom",), np.concatenate([law.weights for law in laws]).astype(np.float64))
    for name, (dim, values) in _secret_table(cal.secrets, enc).items():
        data[name] = ((dim,), np.array(values, dtype=object if name != "secret_value" else np.float64))
    index = {s: i for i, s in enumerate(cal.secrets)}
    data["pair_secret"] = (("pair", "side"), np.array([[index[p.a], index[p.b]] for p in cal.pairs], dtype=np.int64))
    data["component_name"] = (("component",), np.array(cal.component_names, dtype=object))
    q = cal.query
    meta = {
        "confidence": cal.confidence, "z": cal.z, "n_draws": cal.n_draws, "n_records": cal.n_records,
        "theta": enc.encode(None if cal.theta is None else thaw(cal.theta), f"{where}theta"),
        "diagnostics": enc.encode(thaw(cal.diagnostics), f"{where}diagnostics"),
        "has_samples": cal.sample_array is not None,
        "has_laws": bool(cal.finite_laws),
        "query_name": cal.query_name,
        "query_columns": list(q.columns) if q is not None else None,
        "query_fingerprint": cal.query_fingerprint,
        "posteriors": list(cal.posteriors),
    }
    ds = xr.Dataset(data)
    ds.attrs["bayespriv_metadata"] = _dumps(meta)
    return ds


def _same_arrays(a: Calibration, b: Calibration) -> bool:
    names = ("mean_array", "cov_array", "mean_se", "cov_se", "cov_se_white", "sample_array")
    return all((getattr(a, n) is None and getattr(b, n) is None) or
               (getattr(a, n) is not None and getattr(b, n) is not None
                and np.array_equal(getattr(a, n), getattr(b, n))) for n in names)


def _check_savable(calibration: Any) -> Calibration:
    if isinstance(calibration, Calibration):
        return calibration
    raise ParameterTypeError(f"calibration must be a bayespriv Calibration, ChainCalibration or QuiltCalibration; "
                             f"got {type(calibration).__name__}")


def _check_path(path: Any, *, must_exist: bool) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterTypeError(f"path must be a str or path-like; got {type(path).__name__}")
    p = Path(path)
    if must_exist and not p.is_file():
        raise ValidationError(f"path must be an existing file written by Calibration.to_netcdf; got {str(p)!r}")
    if not must_exist and not p.parent.is_dir():
        raise ValidationError(f"path must be in an existing directory; got {str(p)!r}")
    return p


def save_calibration(calibration: Calibration | QuiltCalibration | ChainCalibration, path: str | os.PathLike, *,
                     seed: int | Sequence[int] | np.random.SeedSequence | None = None,
                     key: bytes | None = None) -> Path:
    """Write ``calibration`` to ``path`` (netCDF-4, h5netcdf engine), signed; overwrites.

    The file carries an HMAC-SHA-256 of the canonical encoding of all its
    contents under the data owner's key (:mod:`bayespriv.files.signing`),
    which :func:`load_calibration` verifies before using anything in it.

    Parameters
    ----------
    calibration : Calibration, ChainCalibration or QuiltCalibration
        A sampled, plug-in, exact or family calibration, a chain
        calibration for MQM, or a quilt calibration for APMQM of a discrete
        parameter network (others are refused, see the module docstring).
    path : str or path-like
        The file (conventionally ``*.nc``); its directory must exist.
    seed : int, sequence of int or None
        The seed the calibration was drawn with, when the caller knows it
        (the calibration does not keep it); recorded in the metadata.
    key : bytes, optional
        The signing key (32 bytes or more). Default: the data owner's key
        (:func:`~bayespriv.files.signing.load_key` with
        ``create=True``: ``BAYESPRIV_KEY``, else the key file, created with
        mode 0600 on first use).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ValidationError
        Quilt calibrations of non-discrete parameter networks; a secret
        category, chain state, network node or parameter state that is not
        plain data; a path in a missing directory.
    ParameterTypeError
        Not a Calibration; ``path`` not path-like; ``seed`` not integers.
    SigningKeyError
        No usable key (malformed, readable by others, cannot be created).
        Nothing is written.
    UnverifiedCalibrationError
        A calibration loaded with ``trust="unverified"`` from a file that did
        not verify: saving it would sign it as yours. Nothing is written.
    """
    from bayespriv.networks.quilts import ChainCalibration, QuiltCalibration
    from .quilt_io import _save_chain, _save_quilt

    p = _check_path(path, must_exist=False)
    seed_value = _checked_seed(seed)
    _refuse_unverified(calibration, p)
    key = _signing_key(key)
    if isinstance(calibration, ChainCalibration):
        return _save_chain(calibration, p, seed_value, key)
    if isinstance(calibration, QuiltCalibration):
        return _save_quilt(calibration, p, seed_value, key)
    cal = _check_savable(calibration)
    enc = _Encoder()
    members = cal.family
    from_member = next((i for i, m in enumerate(members) if _same_arrays(m, cal)), None) if members else None
    root = _node(cal, enc, "", with_samples=from_member is None)
    tree: dict[str, xr.Dataset] = _posterior_groups(cal, "")
    for i, m in enumerate(members):
        tree[f"/member_{i:03d}"] = _node(m, enc, f"family[{i}].")
        tree.update(_posterior_groups(m, f"/member_{i:03d}"))
    meta = json.loads(root.attrs["bayespriv_metadata"])
    meta.update({"kind": "calibration", "family_members": len(members), "samples_from_member": from_member,
                 "dropped": enc.dropped, "model": _model_signature(cal)})
    tree["/"] = _stamp(root, meta, seed_value)
    return _write(tree, p, key)


def _model_signature(cal: Calibration) -> dict[str, Any] | None:
    """The signature of the data model ``cal`` was drawn from (:mod:`bayespriv.datamodels.signature`), which
    ``bayespriv release`` compares with the script's model; None when the model is not at hand (built by hand)."""
    from bayespriv.datamodels.signature import model_signature
    from bayespriv.calibration.engine import model_of

    model = model_of(cal)
    return None if model is None else model_signature(model)


def _refuse_unverified(calibration: Calibration | QuiltCalibration | ChainCalibration, p: Path) -> None:
    """Signing a calibration from a file that did not verify would vouch for numbers nothing vouches for."""
    provenance = getattr(calibration, "provenance", None)
    if provenance is not None and not provenance.verified:
        raise UnverifiedCalibrationError(
            f"calibration must be computed in this process or loaded from a verified file to be saved (signed with "
            f"your key) as {str(p)!r}; got one loaded with trust='unverified' from {provenance.path!r}: signing it "
            "would make a file nothing vouches for verify as yours. Re-run calibrate and save that")


def _signing_key(key: Any) -> bytes | None:
    """The key to sign with, resolved before anything is written (None only when signing is disabled)."""
    if not signing._ENABLED:
        return None
    return signing.load_key(create=True) if key is None else signing._checked_key(key)


#: Prefix of the dimensions of saved MCMC posteriors (see the module docstring).
_MCMC_DIM = "mcmc__"


def _posterior_groups(cal: Calibration, base: str) -> dict[str, xr.Dataset]:
    """The groups of the MCMC posteriors of ``cal`` under the node ``base`` ("" for the root)."""
    import xarray as xr
    from bayespriv.datamodels.compat import group, group_names

    out: dict[str, xr.Dataset] = {}
    for i, (label, idata) in enumerate(cal.posteriors.items()):
        where = f"{base}/posterior_{i:03d}"
        out[where] = xr.Dataset(attrs={"bayespriv_secret_label": label})
        for name in group_names(idata):
            ds = group(idata, name)
            out[f"{where}/{name}"] = ds.rename({d: _MCMC_DIM + str(d) for d in ds.dims})
    return out


def _read_posteriors(nodes: dict[str, xr.Dataset], base: str, labels: list[str], p: Path) -> dict[str, Any]:
    """The runs saved by :func:`_posterior_groups` under ``base``, by secret label (the installed ArviZ's type)."""
    from bayespriv.datamodels.compat import make_inference_data

    out: dict[str, Any] = {}
    for i, label in enumerate(labels):
        where = f"{base}/posterior_{i:03d}"
        head = nodes.get(where)
        if head is None or head.attrs.get("bayespriv_secret_label") != label:
            raise ValidationError(f"path must be a complete calibration file; got {str(p)!r} without the MCMC "
                                  f"posterior group {where} of secret {label!r}")
        groups = {}
        for path, ds in nodes.items():
            parent, _, group = path.rpartition("/")
            if parent == where:
                groups[group] = ds.rename({d: str(d)[len(_MCMC_DIM):] for d in ds.dims if str(d).startswith(_MCMC_DIM)})
        out[label] = make_inference_data(groups)
    return out  # never put in the process's posterior cache: calibrate(execution=ExecutionOptions(reuse=...)) offers it


def _checked_seed(seed: Any) -> Any:
    if seed is None:
        return None
    if isinstance(seed, np.random.SeedSequence):
        seed = seed.entropy
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        return int(seed)
    if isinstance(seed, (list, tuple)) and seed and all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                                        for s in seed):
        return [int(s) for s in seed]
    raise ParameterTypeError(f"seed must be None, an int, a sequence of ints or a SeedSequence; got {seed!r}")


# -- loading -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Node:
    """The plain content of one node, read into memory."""

    arrays: dict[str, np.ndarray]
    samples: np.ndarray | None
    laws: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (law_size, law_points, law_weights) as stored
    secrets: tuple[Secret, ...]
    pairs: tuple[SecretPair, ...]
    component_names: tuple[str, ...]
    meta: dict[str, Any]


def _read_node(ds: xr.Dataset, where: str) -> _Node:
    try:
        meta = json.loads(ds.attrs["bayespriv_metadata"])
        arrays = {attr: np.array(ds[name].values, dtype=np.float64) for name, attr, _ in _ARRAYS}
        samples = np.array(ds["samples"].values, dtype=np.float64) if "samples" in ds else None
        laws = None
        if any(name in ds for name in _LAW_VARIABLES):
            laws = (np.array(ds["law_size"].values), np.array(ds["law_points"].values, dtype=np.float64),
                    np.array(ds["law_weights"].values, dtype=np.float64))
        secrets = tuple(_secret(*row) for row in zip(
            ds["secret_kind"].values.tolist(), ds["secret_attribute"].values.tolist(),
            ds["secret_statistic"].values.tolist(), ds["secret_value"].values.tolist(),
            ds["secret_category"].values.tolist()))
        pairs = tuple(SecretPair(secrets[a], secrets[b]) for a, b in ds["pair_secret"].values.tolist())
        names = tuple(str(n) for n in ds["component_name"].values.tolist())
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        raise ValidationError(f"{where} must be a calibration written by Calibration.to_netcdf; got a node "
                              f"missing or mangling {exc}") from exc
    return _Node(arrays, samples, laws, secrets, pairs, names, meta)


#: The variables of a node's exact laws (see the module docstring).
_LAW_VARIABLES = ("law_size", "law_points", "law_weights")


def _laws(node: _Node, source: str) -> dict[str, Any]:
    """The stored exact laws of a node by secret label, bit for bit (validated, never rescaled)."""
    from bayespriv.calibration.laws import FiniteLaw

    if node.laws is None:
        if node.meta.get("has_laws"):
            raise consistency._refuse(source, "no exact laws in a node whose metadata says it has them")
        return {}
    size, points, weights = node.laws
    S = len(node.secrets)
    ok = (size.dtype.kind in "iu" and size.shape == (S,) and np.all(size >= 1) and points.ndim == 2
          and points.shape[0] == weights.shape[0] == int(size.sum()))
    if not ok:
        raise consistency._refuse(source, f"exact laws of sizes {size.tolist()!r} for {S} secrets with "
                                          f"{points.shape[0]} points and {weights.shape[0]} weights")
    out, start = {}, 0
    for secret, m in zip(node.secrets, size.tolist()):
        try:
            out[secret.label] = FiniteLaw.stored(points[start:start + m], weights[start:start + m])
        except ValidationError as exc:
            raise consistency._refuse(source, f"a stored law of secret {secret.label!r} that is not a law ({exc})") \
                from exc
        start += m
    return out


def _secret(kind: str, attribute: str, statistic: str, value: float, category: str) -> Secret:
    if kind == "dataset":
        return DatasetSecret(attribute, statistic, float(value), _decode(json.loads(category)))
    if kind == "distribution":
        return DistributionSecret(attribute, float(value))
    raise ValueError(f"secret_kind {kind!r}")


def _build(node: _Node, *, query: Query | None, samples: np.ndarray | None,
           family: tuple[Calibration, ...] = (), posteriors: dict[str, Any] | None = None,
           provenance: FileProvenance | None = None) -> Calibration:
    m = node.meta
    theta = _decode(m["theta"])
    laws = _laws(node, f"the calibration file {provenance.path if provenance else ''!r}")
    try:
        return Calibration(
            secrets=node.secrets, pairs=node.pairs, confidence=m["confidence"], z=m["z"], query=query,
            n_draws=m["n_draws"], n_records=m["n_records"], sample_array=samples,
            component_names=node.component_names, theta=theta, diagnostics=_decode(m["diagnostics"]), family=family,
            query_fingerprint=m["query_fingerprint"], posteriors=posteriors or {}, provenance=provenance,
            query_name=m.get("query_name"), finite_laws=laws, **node.arrays)
    except ReleaseMismatchError:
        raise
    except ValidationError as exc:  # e.g. a z too small for the stated confidence, shapes that disagree
        if not signing._ENABLED:
            raise
        raise consistency._refuse(f"the calibration file {provenance.path if provenance else ''!r}",
                                  f"stored values that no calibration can hold ({exc})") from exc


def _open_tree(p: Path) -> dict[str, xr.Dataset]:
    """Every group of the file, read into memory once: what is verified is what is then used."""
    import xarray as xr
    try:
        with xr.open_datatree(p, engine=ENGINE) as tree:
            return {node.path: node.to_dataset(inherit=False).load() for node in tree.subtree}
    except (OSError, ValueError) as exc:
        raise ValidationError(f"path must be a netCDF-4 file written by Calibration.to_netcdf; got {str(p)!r}, which "
                              f"cannot be read as one ({type(exc).__name__}: {exc})") from exc


def read_metadata(path: str | os.PathLike) -> dict[str, Any]:
    """The root metadata of a saved calibration, without loading its arrays.

    For display only: the MAC is not checked here (:func:`load_calibration`
    checks it before using anything).

    Parameters
    ----------
    path : str or path-like
        A file written by :meth:`Calibration.to_netcdf` or :func:`save_calibration`.

    Returns
    -------
    dict
        ``kind`` ("calibration", "chain" or "quilt"), ``format_version``,
        ``bayespriv_version``, ``python_version``, ``seed``, ``query_name``,
        ``query_columns``, ``query_fingerprint``, ``confidence`` and the other
        saved settings; ``dropped`` lists the diagnostics saved only by name.

    Raises
    ------
    ValidationError
        As :func:`load_calibration`.
    """
    p = _check_path(path, must_exist=True)
    nodes = _open_tree(p)
    return _root_meta(nodes, p)


def _root_meta(nodes: dict[str, xr.Dataset], p: Path) -> dict[str, Any]:
    root = nodes.get("/")
    meta = None
    if root is not None and "bayespriv_metadata" in root.attrs:
        try:
            meta = json.loads(root.attrs["bayespriv_metadata"])
        except ValueError:
            meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValidationError(f"path must be a file written by Calibration.to_netcdf; got {str(p)!r}, which has no "
                              "bayespriv metadata")
    if not isinstance(meta.get("format_version"), int) or meta["format_version"] > FORMAT_VERSION:
        raise ValidationError(f"path must be a calibration file of format version <= {FORMAT_VERSION} (this bayespriv "
                              f"{_library_version()}); got {str(p)!r} of format version {meta.get('format_version')!r} "
                              f"(written by bayespriv {meta.get('bayespriv_version')}): upgrade bayespriv")
    return meta


def check_query(query: Any, fingerprint: str | None, *, source: str = "the calibration",
                written_by: str | None = None) -> None:
    """Refuse a query whose :attr:`~bayespriv.Query.fingerprint` is not ``fingerprint``.

    Parameters
    ----------
    query : Query
        The query about to be applied.
    fingerprint : str or None
        The calibrated one (``Calibration.query_fingerprint``).
    source : str
        Names where ``fingerprint`` comes from, in the message.
    written_by : str or None
        The Python version that wrote ``source`` (a file's ``python_version``): a refusal under another
        minor version says how to move the file to this one.

    Raises
    ------
    ParameterTypeError
        ``query`` is not a Query.
    ReleaseMismatchError
        The fingerprints differ, or ``source`` recorded none; the message names the query.
    """
    if not isinstance(query, Query):
        raise ParameterTypeError(f"query must be a bayespriv Query; got {type(query).__name__}")
    if fingerprint is None:
        raise ReleaseMismatchError(
            f"query must match the calibrated query, but {source} recorded no query fingerprint (calibrated "
            f"without a query); got query {query.name!r}")
    if not fingerprint_matches(query, fingerprint):
        raise ReleaseMismatchError(
            f"query must be the query {source} was calibrated with (fingerprint {fingerprint[:12]}…); got query "
            f"{query.name!r} with fingerprint {query.fingerprint[:12]}…: its code, columns, name or bounds differ"
            f"{_written_by_note(written_by)}. Recalibrate with this query, or pass the original one.")


def _written_by_note(written_by: str | None) -> str:
    """What a refusal adds when the file was written by another Python minor version (fingerprints of scheme 1
    and of code known only by its bytecode hold on that version alone)."""
    import platform

    here = platform.python_version()
    if written_by is None or written_by.split(".")[:2] == here.split(".")[:2]:
        return ""
    return (f", or the file was written under Python {written_by} (this is {here}) with a fingerprint of its "
            "bytecode — files of bayespriv before fingerprint scheme 2, or a query defined without a source "
            f"file: load it under Python {'.'.join(written_by.split('.')[:2])} and save it again to give it a "
            "fingerprint of the query's source, valid on every Python version")


#: Values of ``load_calibration(trust=...)``.
TRUST = ("verified", "unverified")


def _provenance(nodes: dict[str, xr.Dataset], p: Path, trust: str, key: bytes | None) -> FileProvenance | None:
    """Verify the MAC of the tree as read, before anything in it is used (see :mod:`.signing`)."""
    if not signing._ENABLED:
        return None
    source = f"the calibration file {str(p)!r}"
    root = nodes.get("/")
    claimed = None if root is None else root.attrs.get(signing.KEY_ID_ATTR)
    claimed = claimed if isinstance(claimed, str) else None
    try:
        digest = signing.verify(nodes, key, source=source)
    except UnverifiedCalibrationError as exc:
        if trust == "verified":
            raise
        try:
            digest = signing.content_digest(nodes)
        except ValueError as err:
            raise ValidationError(f"path must be a calibration file of numbers and strings; got {str(p)!r} ({err})") \
                from err
        return FileProvenance(str(p), digest, False, claimed, str(exc))
    return FileProvenance(str(p), digest, True, claimed)


def load_calibration(path: str | os.PathLike, *, query: Query | None = None, trust: str = "verified",
                     key: bytes | None = None) -> Any:
    """Read a calibration written by :meth:`Calibration.to_netcdf`, after verifying it.

    Before anything in the file is used, its MAC (HMAC-SHA-256 of the
    canonical encoding of every group, variable and attribute, see
    :mod:`bayespriv.files.signing`) is checked under the data owner's
    key; then everything a guarantee rests on that the file determines is
    recomputed from it (moments and their standard errors from the samples,
    max-influences from the stored chains and networks, see
    :mod:`bayespriv.files.consistency`), and a file that contradicts
    itself is refused even under a valid MAC. Loading changes no state of the
    process: saved MCMC posteriors are *not* put in the posterior cache (pass
    the calibration to :func:`~bayespriv.calibrate` as
    ``execution=ExecutionOptions(reuse=...)`` to reuse them).

    Parameters
    ----------
    path : str or path-like
    query : Query, optional
        The calibrated query (a query is code and is not saved). It must have
        the saved :attr:`~bayespriv.Query.fingerprint`. Without it the loaded
        calibration has ``query=None``: mechanisms build and report their
        noise and guarantee, and ``release_value`` works, but ``release``
        needs the query.
    trust : {"verified", "unverified"}
        ``"verified"`` (default): refuse a file whose MAC does not verify.
        ``"unverified"``: load such a file anyway, to inspect a file from
        someone else; the calibration then carries the assumption
        ``"unverified_calibration"`` (so does every guarantee built on it),
        its ``content_hash`` is None, and ``release`` / ``release_value``
        refuse unless called with ``options=ReleaseOptions(accept_unverified=True)``. A file that
        contradicts itself is refused in both modes.
    key : bytes, optional
        The key to verify with. Default: the owner's key
        (:func:`~bayespriv.files.signing.load_key`; a reader never
        creates one).

    Returns
    -------
    Calibration, ChainCalibration or QuiltCalibration
        Equal to the saved one bit for bit: every array (moments, standard
        errors, samples), z, confidence, secrets, pairs, θ, plain diagnostics,
        family members; a mechanism built from it has the same ``noise_cov``
        and ``guarantee``. Its ``provenance`` names the file and its
        ``content_hash`` is the verified SHA-256 content digest. A chain
        calibration (for MQM) and a quilt calibration (for APMQM) need
        ``query``.

    Raises
    ------
    UnverifiedCalibrationError
        The file has no MAC, was signed with another key (both fingerprints
        are named), or changed since it was signed (with ``trust="verified"``);
        there is no key on this machine; or its contents contradict themselves
        (the message names the quantity and the node).
    ValidationError
        ``path`` missing, unreadable, not written by ``to_netcdf``, or of a
        newer format version; ``trust`` not one of the two values.
    ReleaseMismatchError
        ``query`` does not have the saved fingerprint (the message names it).

    Examples
    --------
    >>> import bayespriv as bp, os, tempfile
    >>> from unittest import mock
    >>> sa, sb = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    >>> cal = bp.Calibration.from_moments({sa: [0.0], sb: [1.0]}, {sa: [[1.0]], sb: [[1.0]]}, bp.SecretPair(sa, sb),
    ...                                   bp.mean("x"), n_records=10)
    >>> with tempfile.TemporaryDirectory() as folder, mock.patch.dict(os.environ, {"BAYESPRIV_KEY_FILE": folder + "/key"}):
    ...     path = cal.to_netcdf(os.path.join(folder, "cal.nc"))  # signed with the key, created on first use
    ...     loaded = bp.files.load_calibration(path, query=bp.mean("x"))
    >>> loaded.sensitivity(), len(loaded.content_hash)
    (1.0, 64)
    """
    p = _check_path(path, must_exist=True)
    if trust not in TRUST:
        raise fail("trust", "'verified' or 'unverified'", trust)
    nodes = _open_tree(p)
    provenance = _provenance(nodes, p, trust, key)
    meta = _root_meta(nodes, p)
    if provenance is not None:  # from the tree whose MAC was just checked, never from a second read of the file
        provenance = dataclasses.replace(provenance, model_signature=json.dumps(meta.get("model"), sort_keys=True))
    if query is not None:
        check_query(query, meta.get("query_fingerprint"), source=f"the calibration in {str(p)!r}",
                    written_by=meta.get("python_version"))
    check = signing._ENABLED
    source = f"the calibration file {str(p)!r}"
    from .quilt_io import _load_chain, _load_quilt

    if meta.get("kind") == "chain":
        cal = _load_chain(nodes["/"], meta, query, p, provenance)
        if check:
            consistency.check_chain(cal, source)
        return cal
    if meta.get("kind") == "quilt":
        cal = _load_quilt(nodes, meta, query, p, provenance)
        if check:
            consistency.check_quilt(cal, source)
        return cal
    members = []
    for i in range(int(meta.get("family_members") or 0)):
        where = f"/member_{i:03d}"
        if where not in nodes:
            raise ValidationError(f"path must be a complete calibration file; got {str(p)!r} without the group {where}")
        node = _read_node(nodes[where], f"{p} group {where}")
        if check and node.meta.get("has_samples") and node.samples is None:
            raise consistency._refuse(source, f"no samples in {where}, whose metadata says it has them")
        posteriors = _read_posteriors(nodes, where, node.meta.get("posteriors", []), p)
        members.append(_build(node, query=query, samples=node.samples, posteriors=posteriors, provenance=provenance))
    root = _read_node(nodes["/"], str(p))
    samples = root.samples
    if meta.get("samples_from_member") is not None:
        samples = members[int(meta["samples_from_member"])].sample_array
    if check and root.meta.get("has_samples") and samples is None:
        raise consistency._refuse(source, "no samples at the root, whose metadata says it has them")
    posteriors = _read_posteriors(nodes, "", root.meta.get("posteriors", []), p)
    cal = _build(root, query=query, samples=samples, family=tuple(members), posteriors=posteriors,
                 provenance=provenance)
    if check:
        consistency.check_calibration(cal, source)
    return cal
