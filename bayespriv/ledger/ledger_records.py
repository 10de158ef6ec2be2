"""What the ledger records of a release: the request a mechanism makes, the receipt of a granted charge,
and how a mechanism declares its composition (which decides how its charges add up).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail
from bayespriv.errors import ParameterTypeError, ValidationError
from bayespriv.mechanisms.release_path import LEGACY_TABLE_PREFIX, UNVERIFIED
from .joint import DECLARED_INDEPENDENT

if TYPE_CHECKING:
    from bayespriv.calibration import CalibrationLike
    from bayespriv.mechanisms import Mechanism
    from .composition import JointGaussian


#: The assumption recorded on release rows whose ε, δ are summed with others only by assuming
#: sequential composition (every Pufferfish mechanism; see :mod:`bayespriv.ledger.ledger`).
COMPOSITION_ASSUMPTION = "sequential_composition"


def calibration_hash(calibration: CalibrationLike | None) -> str | None:
    """sha256 of a calibration's moments, errors, pairs and confidence (None without one)."""
    if calibration is None:
        return None
    h = hashlib.sha256()
    for name in ("mean_array", "cov_array", "mean_se", "cov_se"):
        arr = getattr(calibration, name, None)
        if arr is not None:
            arr = np.ascontiguousarray(np.asarray(arr, dtype="<f8"))
            h.update(name.encode())
            h.update(repr(arr.shape).encode())
            h.update(arr.tobytes())
    pairs = getattr(calibration, "pairs", ())
    h.update(json.dumps([getattr(p, "label", str(p)) for p in pairs]).encode())
    h.update(repr((getattr(calibration, "confidence", None), getattr(calibration, "z", None),
                   tuple(getattr(calibration, "component_names", ())))).encode())
    fingerprint = getattr(calibration, "query_fingerprint", None)  # survives save/load without the query
    if fingerprint is None:
        fingerprint = getattr(getattr(calibration, "query", None), "name", None)
    h.update(repr(fingerprint).encode())
    return h.hexdigest()


def composition_of(mechanism: Mechanism | JointGaussian) -> str | None:
    """How ``mechanism`` composes, as it declares it (``mechanism.composition``): a key of
    :data:`~bayespriv.ledger.joint.COMPOSITIONS`, or None for an object that declares nothing
    (its charges are then summed under :data:`COMPOSITION_ASSUMPTION`)."""
    from .joint import COMPOSITIONS

    declared = getattr(mechanism, "composition", None)
    if declared is None:
        return None
    if declared not in COMPOSITIONS:
        raise fail("mechanism.composition", f"one of {tuple(COMPOSITIONS)}", declared)
    return declared


def composes_unconditionally(mechanism: Mechanism | JointGaussian) -> bool:
    """True when summing ``mechanism``'s (ε, δ) with other releases is a theorem: it declares a
    differential-privacy (``"dp"``, or ``"dataset_dp"`` for a mechanism whose noise alone covers its query's
    whole range), subset-of-variables (``"subset"``), Markov-chain MQM (``"chain"``) or Markov-quilt
    (``"quilt"``, the ledger checks the common quilt) composition.
    Pufferfish mechanisms (``"joint"``) are accounted jointly with the other releases on the same
    data instead."""
    return composition_of(mechanism) in _SUMMED


#: Compositions whose charges add by a theorem (``"quilt"``: once the ledger found a common quilt).
_SUMMED = ("dp", "dataset_dp", "subset", "chain", "quilt")


#: The ledger's default account: the data of every release that names none (``dataset_name=None``). All of them
#: are accounted together, whatever frame, copy, column subset or row order each one read: the conservative default.
UNNAMED_DATASET = "unnamed"
#: The assumption recorded on a release made under a declared dataset name: its data is not the data of the releases
#: on the ledger's other accounts (if it is, they were not accounted together and their joint ε is unbounded).
DECLARED_SEPARATE_DATA = "declared_separate_data"


def account_of(dataset: str | None) -> str:
    """The account a recorded ``dataset`` belongs to: its name, or :data:`UNNAMED_DATASET` for the default account
    (no name, or a table fingerprint recorded by an older version)."""
    if dataset is None or dataset.startswith(LEGACY_TABLE_PREFIX):
        return UNNAMED_DATASET
    return dataset


def account_sql(dataset: str) -> tuple[str, tuple[str, ...]]:
    """SQL condition (on ``releases r``) and parameters selecting the rows of account ``dataset``."""
    if dataset == UNNAMED_DATASET:
        return "(r.dataset IS NULL OR r.dataset = ? OR substr(r.dataset, 1, 6) = ?)", (UNNAMED_DATASET,
                                                                                     LEGACY_TABLE_PREFIX)
    return "r.dataset = ?", (dataset,)


def _noise_json(mechanism: Mechanism | JointGaussian) -> str | None:
    """What joint accounting needs of a release's noise, as JSON (exact floats), or None (no usable noise);
    for a Markov quilt mechanism, the quilts its noise is valid for (``{"kind": "quilts", ...}``)."""
    if composition_of(mechanism) == "quilt":
        return json.dumps({"kind": "quilts", "valid": mechanism.valid_quilts()}, sort_keys=True)
    kind = getattr(mechanism, "noise", None)
    if kind == "gaussian" and callable(getattr(mechanism, "_noise_covariance", None)):
        return json.dumps({"kind": "gaussian", "cov": np.asarray(mechanism._noise_covariance(), float).tolist()})
    if kind == "laplace" and getattr(mechanism, "noise_scale", None) is not None:
        return json.dumps({"kind": "laplace", "scale": np.asarray(mechanism.noise_scale, float).tolist(),
                           "basis": np.asarray(mechanism.noise_basis, float).tolist()})
    return None


def checked_account(dataset: Any) -> str:
    """The account a release declares with ``dataset``, checked: :data:`UNNAMED_DATASET` for None, else the name
    (a non-empty string not starting with the prefix of older versions' table fingerprints)."""
    if dataset is None:
        return UNNAMED_DATASET
    if not isinstance(dataset, str) or not dataset.strip():
        raise fail("dataset", "None or a non-empty string naming the data the release reads", dataset)
    if dataset.startswith(LEGACY_TABLE_PREFIX):
        raise fail("dataset", f"a name not starting with {LEGACY_TABLE_PREFIX!r} (older versions' table fingerprints, "
                   "now read as the default account)", dataset)
    return dataset


@dataclass(frozen=True)
class JointPlan:
    """Units to charge per budget, the row's ``joint`` record, and the last prior release id per budget."""

    units: dict[str, int]
    record: str
    last: dict[str, int]


@dataclass(frozen=True)
class Charge:
    """Receipt of a granted spend: the release's id in the ledger and what it took."""

    release_id: int
    budgets: tuple[str, ...]
    epsilon: float
    delta: float


@dataclass(frozen=True)
class ReleaseRequest:
    """What a release asks of the ledger: its mechanism's guarantee and assumptions, the budgets it charges, and
    what joint accounting records of it (:meth:`for_release`)."""

    mechanism: str
    epsilon: float
    delta: float
    confidence: float | None
    assumptions: tuple[str, ...]
    failed: tuple[str, ...]
    unchecked: tuple[str, ...]
    theorem: str
    protected: tuple[str, ...]
    variables: tuple[str, ...]
    query: str | None
    calibration_hash: str | None
    content_hash: str | None
    composition: str | None = None
    dataset: str = UNNAMED_DATASET
    query_fingerprint: str | None = None
    noise: str | None = None
    pairs: str = "[]"

    @property
    def established(self) -> bool:
        """Whether no assumption check failed (the row's ``established``)."""
        return not self.failed

    @classmethod
    def for_release(cls, mechanism: Mechanism | JointGaussian, dataset: Any, independent: bool) -> "ReleaseRequest":
        """The request, with what joint accounting records of the release (its dataset, how it composes, its
        query's fingerprint, Gaussian noise covariance and pairs)."""
        req = cls.of(mechanism)
        kind = composition_of(mechanism)
        if independent:
            if not isinstance(independent, bool):
                raise ParameterTypeError(f"independent must be a bool; got {type(independent).__name__}")
            kind = kind if kind in ("dp", "dataset_dp") else "independent"  # DP for every change adds anyway
        cal = getattr(mechanism, "calibration", None)
        pairs = [p.label for p in getattr(cal, "pairs", ())]
        noise = _noise_json(mechanism) if kind in ("joint", "quilt") else None
        assumptions = req.assumptions
        if kind in ("joint", "independent") + _SUMMED:
            assumptions = tuple(a for a in assumptions if a != COMPOSITION_ASSUMPTION)
        if kind == "independent":
            assumptions += (DECLARED_INDEPENDENT,)
        account = checked_account(dataset)
        if account != UNNAMED_DATASET:
            assumptions += (DECLARED_SEPARATE_DATA,)
        return dataclasses.replace(req, assumptions=assumptions, composition=kind, dataset=account,
                                   query_fingerprint=getattr(cal, "query_fingerprint", None), noise=noise,
                                   pairs=json.dumps(pairs))

    @classmethod
    def of(cls, mechanism: Mechanism | JointGaussian) -> "ReleaseRequest":
        """The request of ``mechanism`` alone: its guarantee, assumptions, protected budgets and calibration hashes."""
        # what the mechanism fixed at construction (a tuple no one can edit), not the Guarantee it hands out;
        # a mechanism-like object without one is charged its guarantee
        g = getattr(mechanism, "accounting_record", None)
        if g is None:
            g = getattr(mechanism, "guarantee", None)
        if g is None or not hasattr(g, "epsilon"):
            raise ParameterTypeError(f"mechanism must have a guarantee (ε, δ); got {type(mechanism).__name__}")
        protected = tuple(dict.fromkeys(getattr(mechanism, "protected", ()) or ()))
        if not protected:
            raise ValidationError(f"mechanism must protect at least one attribute (its budget is charged); "
                                  f"got {type(mechanism).__name__} with protected=()")
        cal = getattr(mechanism, "calibration", None)
        query = getattr(getattr(cal, "query", None), "name", None) or getattr(mechanism, "query_name", None)
        chash = calibration_hash(cal) if cal is not None else (
            mechanism.fingerprint() if callable(getattr(mechanism, "fingerprint", None)) else None)
        content = getattr(cal, "content_hash", None)  # SHA-256 of the file it was loaded from; None in memory
        content = content if isinstance(content, str) and content else None
        eps, delta = float(g.epsilon), float(g.delta)
        if not (math.isfinite(eps) and eps >= 0) or not (0.0 <= delta < 1.0):
            raise fail("mechanism.guarantee", "a finite ε >= 0 and δ in [0, 1)", (eps, delta))
        assumptions = tuple(g.assumptions)
        if not composes_unconditionally(mechanism) and COMPOSITION_ASSUMPTION not in assumptions:
            assumptions += (COMPOSITION_ASSUMPTION,)
        failed = tuple(getattr(g, "failed_assumptions", ()) or ())
        if UNVERIFIED in assumptions and UNVERIFIED not in failed:  # an opt-in release from a file that did not verify:
            failed += (UNVERIFIED,)  # nothing vouches for its noise, so the row (and report()) says not established
        return cls(type(mechanism).__name__, eps, delta, g.confidence, assumptions, failed,
                   tuple(getattr(g, "unchecked_assumptions", ()) or ()),
                   str(getattr(g, "theorem", "")), protected, tuple(getattr(mechanism, "variables", ()) or ()),
                   query, chash, content)
