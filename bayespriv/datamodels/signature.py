"""What defines a data model's law, as plain data: the model a calibration file is bound to.

A calibration's noise hides the pairs *under the model it was drawn from*. A file saved from a
calibration records this signature of that model (:func:`~bayespriv.files.save_calibration`),
and ``bayespriv release`` compares it with the script's model, refusing any difference
(:func:`signature_differences`): the class, the records, the columns, each member's θ (the θ grid of
a family) and a digest of what the class says defines its law (:meth:`DataModel._signature_state`:
by default its public attributes — a Gaussian model's mean and covariance, a function model's
sampler with the code and values it reads; a reference table's values; a PyMC model's graph, data
and builder; a Bayesian network's conditional tables), written canonically with the query
fingerprint's encoder (:class:`~bayespriv.queries.query.CanonicalEncoder`: no ids, addresses or source
positions). A state the encoder can write only in part (an object covered by its type only) has no
digest (``None``): the rest of the signature is still compared, and the release says the digest
was not.
"""

from __future__ import annotations

import hashlib
import numbers
from typing import Any

__all__ = ["SIGNATURE_SCHEME", "model_signature", "signature_differences"]

#: Version of the signature's content (a file with another scheme is compared on type, records, columns, θ only).
SIGNATURE_SCHEME = 1


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _plain(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    return repr(value)


def _digest(model: Any) -> str | None:
    """SHA-256 of the canonical text of ``model._signature_state()``; None when it can be written only in part."""
    from ..queries.query import CanonicalEncoder

    state = model._signature_state() if callable(getattr(model, "_signature_state", None)) else \
        {k: v for k, v in vars(model).items() if not k.startswith("_")}
    canon = CanonicalEncoder()
    text = canon.encode(state)
    return hashlib.sha256(text.encode()).hexdigest() if canon.complete else None


def _member(model: Any) -> dict[str, Any]:
    return {"type": _qualname(type(model)), "n_records": int(model.n_records), "columns": list(model.columns),
            "theta": {str(k): _plain(v) for k, v in sorted(dict(getattr(model, "theta", {}) or {}).items())},
            "digest": _digest(model)}


def model_signature(model: Any) -> dict[str, Any]:
    """The signature of a data model or family (module docstring), as JSON-able data."""
    from .family import DataModelFamily

    family = isinstance(model, DataModelFamily)
    members = model.members if family else (model,)
    return {"scheme": SIGNATURE_SCHEME, "type": _qualname(type(model)), "members": [_member(m) for m in members]}


def signature_differences(saved: dict[str, Any], given: dict[str, Any]) -> tuple[list[str], bool]:
    """How ``given`` (the script's model) differs from ``saved`` (the file's), in words, and whether the digests
    were compared for every member (False when either side has none, or the schemes differ)."""
    out: list[str] = []
    if saved.get("type") != given.get("type"):
        out.append(f"the model is a {given.get('type')}, the file's a {saved.get('type')}")
    a, b = saved.get("members", []), given.get("members", [])
    if [m.get("theta") for m in a] != [m.get("theta") for m in b]:
        out.append(f"the θ grid is {[m.get('theta') for m in b]}, the file's {[m.get('theta') for m in a]}")
    compared = saved.get("scheme") == given.get("scheme") == SIGNATURE_SCHEME and len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        where = f"member {i} ({y.get('theta')})" if len(b) > 1 else "the model"
        for field in ("type", "n_records", "columns"):
            if x.get(field) != y.get(field):
                out.append(f"{where} has {field} {y.get(field)!r}, the file's {x.get(field)!r}")
        if x.get("digest") is None or y.get("digest") is None:
            compared = False
        elif compared and x["digest"] != y["digest"]:
            out.append(f"{where} has other parameters (digest {y['digest'][:12]}…, the file's {x['digest'][:12]}…)")
    return out, compared
