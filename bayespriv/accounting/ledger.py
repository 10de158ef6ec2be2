"""A privacy-budget ledger on SQLite that never overspends.

``Ledger(path)`` keeps, in one SQLite file,

* ``budgets``: the ε and δ budget of each protected attribute or variable and what is spent, and
  ``budget_events``: every creation and change of a budget (old and new totals, what was spent then,
  why);
* ``releases``: every granted release (mechanism, guarantee, its failed and unchecked assumptions and
  whether it is *established*, protected budgets, variables, query, UTC time, seeded flag, hash of the
  calibration and SHA-256 of the calibration file it was loaded from, and whether it was *voided*),
  and ``charges``: what it took from each budget;
* ``refusals``: every release refused (budget exceeded or missing), which spent nothing.

Check-and-spend is one ``BEGIN IMMEDIATE`` transaction: SQLite then holds the database's write lock
from the first read, so two processes cannot both read "0.99 spent" and both spend 0.01. The
journal is WAL with ``synchronous=FULL``: a transaction that returned is on disk, and a process
killed in the middle of one leaves the database as it was before it (the spend, the release record
and the counters are written together or not at all). Amounts are integers — nano-ε (10⁻⁹) and
atto-δ (10⁻¹⁸) — so 100 spends of 0.01 add up to exactly 1.0; a spend is rounded up and a budget
down, so rounding never grants more than the budget. The integers are SQLite's 64-bit ones, so an
ε budget is at most :data:`MAX_BUDGET_EPSILON` (≈ 9.2e9).

One connection per ``Ledger`` object and process, kept open between operations
(:meth:`Ledger.close`, or ``with Ledger(path) as ledger:``, closes it; the next operation opens a new
one). Opening and closing a connection per operation cost more than the operation: closing the last
connection of a WAL database checkpoints the log into the file (two more ``fsync``) and deletes it,
so a ledger-backed release ran at about half the rate (``benchmarks/RESULTS_ledger.md``). The
connection is never shared across processes: a forked child (``os.fork``, ``multiprocessing``'s fork
context) drops the parent's connection without closing it — it belongs to the parent — and opens
its own at its first operation (``os.register_at_fork``, and a process-id check before every
operation for forks that bypass it); a spawned process unpickles the ledger as its path and identity.
Threads share the connection under a lock, one operation at a time (SQLite serialises writers
anyway). Before every operation the ledger checks that its path still names the file it opened
(device and inode): a file deleted, moved or replaced under an open ``Ledger`` is refused, as below,
and never written through a stale handle. While a ledger is open its write-ahead log (``-wal``) and
index (``-shm``) stay beside the file: move or copy a ledger closed, or with both. A waiting writer
retries for ``timeout`` seconds (SQLite's busy timeout) instead of failing.

File problems
-------------
Every problem with the file (missing directory, read-only file or directory, garbage bytes, a file
cut short, an SQLite file of another application, a newer schema, the file deleted or replaced while
the ledger is in use) raises :class:`~bayespriv.errors.LedgerError` naming the path and what to do;
nothing is spent. Only ``Ledger(path)`` (with ``create=True``, the default) creates a file: every
later operation opens the existing file (SQLite ``mode=rw``) and checks that it is the same ledger
(a random ``ledger_id`` kept in the file), so a ledger whose file vanished is never silently
replaced by an empty one that forgets the spent budget.

Budgets change only on purpose
------------------------------
:meth:`Ledger.create_budget` creates a budget and never changes one: asked again with the same value
it does nothing, asked with another value it refuses, naming the budget, its value and the call that
changes it. That call is :meth:`Ledger.set_budget`, the explicit one: it creates or changes (raise or
lower — below what is already spent too, which is stated by a warning and blocks every further
release on the budget). Every creation and change is a row of :meth:`Ledger.budget_events`, written in
the same transaction as the change, and counted in :meth:`Ledger.report`.

The file is checked at open
---------------------------
An SQLite file can carry more than tables: an ``AFTER UPDATE`` trigger that resets ``epsilon_spent``
would let any number of releases through while every count looks normal, and SQLite's own checks do
not see it. ``Ledger(path)`` therefore accepts an existing file only if its ``sqlite_master`` —
tables, indexes, triggers, views, by name and (normalised) SQL text — is exactly what this library
creates for the schema version the file states; anything else raises
:class:`~bayespriv.errors.LedgerError` naming the object and the file. It then checks the cheap
invariants of :meth:`Ledger.verify` (spent = the charges of releases not voided, totals = the last
budget event, ...): opening a ledger of 10,000 releases takes about 6 ms instead of 4 ms without
these checks (100,000 releases: 52 ms instead of 39 ms; SQLite's ``quick_check`` is most of both).
Files of schema versions 1 and 2 (earlier bayespriv) are accepted exactly as those versions and
migrated in one transaction; each later operation re-checks the schema when SQLite's schema cookie
moved.

Composition
-----------
The ledger *adds* ε and δ over the releases charged to a budget: that is sequential composition.
It is a theorem for differential privacy (Dwork & Roth 2014, Theorem 3.16) and for privacy on a
subset of variables (Tan, *Privacy on a subset of dataset variables*, Proposition 3.4, for
independent mechanisms), and the group-DP baseline and Algorithm 1 count tables inherit it. For a
Pufferfish instantiation in general it is *not* a theorem: the outputs of two mechanisms are
dependent through the same data X, and Kifer & Machanavajjhala (2014, *Pufferfish: A framework for
mathematical privacy definitions*, ACM TODS 39(1), the section on composition) show that a
Pufferfish instantiation need not compose linearly with itself — it does under conditions on the
data-generating distributions Θ and the mechanisms; Bai, He, Gu, Kifer & Maeng (2026, *Composition
for Pufferfish Privacy*, arXiv:2602.02718) give necessary and sufficient conditions, which are
differential-privacy-style inequalities. The attribute-privacy papers (Zhang, Ohrimenko & Cummings,
FAccT 2022 and its arXiv version) and the distribution-privacy paper (Chen & Ohrimenko, AISTATS 2023)
state no composition result for their mechanisms. So every release row of a Pufferfish mechanism
carries the assumption ``"sequential_composition"`` (:data:`COMPOSITION_ASSUMPTION`), and
:meth:`Ledger.report` and the notebook view count the releases whose sum rests on it. For several
Gaussian releases on the same data the sum can be replaced by an exact joint accounting of the
stacked query (:mod:`bayespriv.accounting.composition`), which needs no composition theorem for the
releases it covers.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import sqlite3
import threading
import weakref
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._display import frame_html
from .._validation import check_real, fail
from ..errors import BudgetExceededError, LedgerError, ParameterTypeError, ValidationError, warn
from .epsilon import UNPROTECTED, VariableRelease, epsilon_table
from .joint import DECLARED_INDEPENDENT, PriorRelease, joint_guarantee
from .ledger_schema import (_ALTERED_REMEDY, _MAX_UNITS, _SCHEMA_VERSION, DELTA_UNIT, EPSILON_UNIT, _dlt, _eps,
                            _from_units, _install_schema, _invariant_problem, _now, _schema_problem, _units)

__all__ = [
    "Ledger",
    "Charge",
    "calibration_hash",
    "composes_unconditionally",
    "EPSILON_UNIT",
    "DELTA_UNIT",
    "MAX_BUDGET_EPSILON",
    "COMPOSITION_ASSUMPTION",
]

#: The assumption recorded on release rows whose ε, δ are summed with others only by assuming
#: sequential composition (every Pufferfish mechanism; see the module docstring).
COMPOSITION_ASSUMPTION = "sequential_composition"

def _largest_budget() -> float:
    x = float(Decimal(_MAX_UNITS) * EPSILON_UNIT)
    while _units(x, EPSILON_UNIT, ROUND_FLOOR) > _MAX_UNITS:
        x = math.nextafter(x, 0.0)
    return x


#: Largest ε budget the ledger can hold (2⁶³ − 1 nano-ε, as a float rounded down).
MAX_BUDGET_EPSILON = _largest_budget()


def calibration_hash(calibration: Any) -> str | None:
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


def composition_of(mechanism: Any) -> str | None:
    """How ``mechanism`` composes, as it declares it (``mechanism.composition``): a key of
    :data:`~bayespriv.accounting.joint.COMPOSITIONS`, or None for an object that declares nothing
    (its charges are then summed under :data:`COMPOSITION_ASSUMPTION`)."""
    from .joint import COMPOSITIONS

    declared = getattr(mechanism, "composition", None)
    if declared is None:
        return None
    if declared not in COMPOSITIONS:
        raise fail("mechanism.composition", f"one of {tuple(COMPOSITIONS)}", declared)
    return declared


def composes_unconditionally(mechanism: Any) -> bool:
    """True when summing ``mechanism``'s (ε, δ) with other releases is a theorem: it declares a
    differential-privacy (``"dp"``, or ``"dataset_dp"`` for a mechanism whose noise alone covers its query's
    whole range), subset-of-variables (``"subset"``), Markov-chain MQM (``"chain"``) or Markov-quilt
    (``"quilt"``, the ledger checks the common quilt) composition.
    Pufferfish mechanisms (``"joint"``) are accounted jointly with the other releases on the same
    data instead."""
    return composition_of(mechanism) in _SUMMED


#: Every Ledger of this process, to reset in a forked child (:meth:`Ledger._forget_connection`).
_LEDGERS: "weakref.WeakSet[Ledger]" = weakref.WeakSet()
#: Connections a forked child inherited: kept referenced, never closed or used in the child.
_INHERITED: list[sqlite3.Connection] = []


def _after_fork_in_child() -> None:
    for ledger in list(_LEDGERS):
        ledger._forget_connection()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

#: Compositions whose charges add by a theorem (``"quilt"``: once the ledger found a common quilt).
_SUMMED = ("dp", "dataset_dp", "subset", "chain", "quilt")
#: Relative tolerance under which two rows' max-influences of the same quilt are the same number.
_QUILT_RTOL = 1e-12

#: What the joint columns of :meth:`Ledger.joint_guarantees` read in a view when no release was accounted jointly.
_NOT_JOINT = dict.fromkeys(("joint epsilon", "joint delta", "method"), "none accounted jointly")
#: The dataset of releases made without one (``release_value`` without ``dataset=``): all accounted together.
UNNAMED_DATASET = "unnamed"
#: Attempts at accounting a release jointly while other processes keep granting releases on its dataset.
_JOINT_RETRIES = 5


def _noise_json(mechanism: Any) -> str | None:
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


def _noise_of(text: str | None) -> Any:
    from ..mechanisms.accountant import GaussianNoise, LaplaceNoise

    if text is None:
        return None
    d = json.loads(text)
    if d.get("kind") == "gaussian":
        return GaussianNoise(np.array(d["cov"], dtype=float))
    return LaplaceNoise(np.array(d["scale"], dtype=float), np.array(d["basis"], dtype=float))


def _shared_quilts(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per ``"θ|node"`` key of ``a``, its quilts valid in ``b`` too with the same max-influence (a key
    ``b`` lacks keeps none: no common quilt is known for it)."""
    out = {}
    for key, quilts in a.items():
        other = b.get(key, {})
        out[key] = {q: e for q, e in quilts.items()
                    if q in other and abs(other[q] - e) <= _QUILT_RTOL * max(1.0, abs(e))}
    return out


def _dataset_name(dataset: Any) -> str:
    if dataset is None:
        return UNNAMED_DATASET
    if not isinstance(dataset, str) or not dataset.strip():
        raise fail("dataset", "None or a non-empty string naming the data the release reads", dataset)
    return dataset


@dataclass(frozen=True)
class _JointPlan:
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
class _Request:
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
        return not self.failed

    @classmethod
    def for_release(cls, mechanism: Any, dataset: Any, independent: bool) -> "_Request":
        """The request, with what joint accounting records of the release (its dataset, how it composes, its
        query's fingerprint, Gaussian noise covariance and pairs)."""
        req = cls.of(mechanism)
        kind = composition_of(mechanism)
        if independent:
            if not isinstance(independent, bool):
                raise ParameterTypeError(f"independent must be a bool; got {type(independent).__name__}")
            kind = "independent" if kind in ("joint", "quilt", None) else kind
        cal = getattr(mechanism, "calibration", None)
        pairs = [p.label for p in getattr(cal, "pairs", ())]
        noise = _noise_json(mechanism) if kind in ("joint", "quilt") else None
        assumptions = req.assumptions
        if kind in ("joint", "independent") + _SUMMED:
            assumptions = tuple(a for a in assumptions if a != COMPOSITION_ASSUMPTION)
        if kind == "independent":
            assumptions += (DECLARED_INDEPENDENT,)
        return dataclasses.replace(req, assumptions=assumptions, composition=kind, dataset=_dataset_name(dataset),
                                   query_fingerprint=getattr(cal, "query_fingerprint", None), noise=noise,
                                   pairs=json.dumps(pairs))

    @classmethod
    def of(cls, mechanism: Any) -> "_Request":
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
        return cls(type(mechanism).__name__, eps, delta, g.confidence, assumptions,
                   tuple(getattr(g, "failed_assumptions", ()) or ()),
                   tuple(getattr(g, "unchecked_assumptions", ()) or ()),
                   str(getattr(g, "theorem", "")), protected, tuple(getattr(mechanism, "variables", ()) or ()),
                   query, chash, content)


def _reopen(cls: type, path: str, timeout: float, ledger_id: str | None) -> "Ledger":
    """Unpickle: open the existing file (never create one) and check it is the same ledger."""
    led = cls(path, timeout=timeout, create=False)
    if ledger_id is not None and led._ledger_id != ledger_id:
        raise LedgerError(f"ledger file {str(led.path)!r} is not the ledger that was pickled (its ledger_id "
                          f"changed: the file was replaced). Restore the original file; nothing was spent.")
    return led


class Ledger:
    """Privacy budgets per protected attribute or variable, in a SQLite file.

    Parameters
    ----------
    path : str or path-like
        The database file. Use one file per dataset.
    timeout : float
        Seconds a writer waits for another process's transaction before failing.
    create : bool
        Create the file when it does not exist (default). With ``False`` the file must exist
        (workers and unpickled ledgers open it this way).

    Raises
    ------
    ParameterTypeError
        ``path`` is not a str or path-like.
    LedgerError
        The file cannot be used as a ledger (see the module docstring), or its schema is not exactly
        the library's (an added trigger, view, index or a changed table), or its rows break an
        invariant; the message names the path, the object or the row, and what to do.

    Notes
    -----
    Sums of (ε, δ) over releases are sequential composition: a theorem for DP and for privacy on
    a subset of variables, an *assumption* (``"sequential_composition"`` on the release row) for
    Pufferfish mechanisms — see the module docstring.

    Budgets: :meth:`create_budget` creates and never changes (what a script run again should call);
    :meth:`set_budget` creates or changes on purpose; both record the change in
    :meth:`budget_events`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> a, b = bp.DatasetSecret.mean("income", 40.0), bp.DatasetSecret.mean("income", 41.0)
    >>> cal = bp.Calibration.from_moments({a: [40.0], b: [41.0]}, {a: [[1.0]], b: [[1.0]]},
    ...                                   bp.SecretPair(a, b), query=bp.mean("income"), n_records=3)
    >>> mech = bp.mechanisms.APGM(cal, epsilon=0.5, delta=1e-6)
    >>> folder = tempfile.TemporaryDirectory()
    >>> ledger = Ledger(pathlib.Path(folder.name) / "budget.sqlite")
    >>> ledger.create_budget("income", epsilon=1.0, delta=1e-5)    # created
    True
    >>> ledger.create_budget("income", epsilon=1.0, delta=1e-5)    # run again: nothing to do
    False
    >>> df = pd.DataFrame({"income": [39.0, 40.0, 42.0]})
    >>> release = mech.release(df, ledger=ledger)   # checks, spends, then draws
    >>> ledger.spent("income")
    (0.5, 1e-06)
    >>> ledger.remaining("income")
    (0.5, 9e-06)
    >>> ledger.set_budget("income", epsilon=2.0, delta=None, reason="approved")  # on purpose (δ kept)
    >>> ledger.budget_events()[["action", "new epsilon", "reason"]].values.tolist()
    [['created', 1.0, None], ['raised', 2.0, 'approved']]
    >>> folder.cleanup()
    """

    #: Keep one connection open per object and process (False: open and close one per operation, as the
    #: ledger did before; kept for the side-by-side benchmark ``benchmarks/bench_ledger.py``).
    _persistent: ClassVar[bool] = True

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0, create: bool = True) -> None:
        self.path = _ledger_path(path)
        t = check_real("timeout", timeout)
        if not (t > 0 and math.isfinite(t)):
            raise fail("timeout", "a finite number of seconds > 0", timeout)
        self.timeout = t
        if not isinstance(create, bool):
            raise ParameterTypeError(f"create must be a bool; got {create!r} of type {type(create).__name__}")
        self._ledger_id: str | None = None
        self._schema_cookie: int | None = None
        #: Releases granted through this object whose query and data model are at hand (joint accounting
        #: of later releases with other queries on the same data): release id -> (query, model, pairs).
        self._live: dict[int, tuple[Any, Any, tuple[Any, ...]]] = {}
        self._lock = threading.RLock()
        #: The open connection, the process that opened it and the (device, inode) of the file it opened.
        self._con: sqlite3.Connection | None = None
        self._con_pid: int | None = None
        self._con_file: tuple[int, int] | None = None
        #: (device, inode) of the file this object opened: a different file at ``path`` later is refused.
        self._file_id: tuple[int, int] | None = None
        _LEDGERS.add(self)
        self._open(create)
        self._file_id = self._file_identity()

    # -- opening -----------------------------------------------------------------------------------
    def _open(self, create: bool) -> None:
        """Stages: the file system allows it; SQLite reads it; WAL; the schema is exactly a ledger's
        (migrate an older one); the rows keep the ledger's invariants (:func:`_invariant_problem`)."""
        self._check_file_system(create)
        with self._connect("rwc" if create else "rw") as con:
            check = con.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise self._error("is damaged (SQLite's quick_check failed: " + str(check)[:200] + ")",
                                  "restore it from a backup")
            mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise self._error(f"cannot use SQLite's WAL journal here (journal_mode={mode!r})",
                                  "put the ledger on a local file system")
            con.execute("PRAGMA foreign_keys = OFF")  # a migration rebuilds `budgets` (a no-op inside a transaction)
            try:
                with self._transaction(con):
                    ledger_id = _install_schema(con, self)
                    cookie = con.execute("PRAGMA schema_version").fetchone()[0]
            finally:
                con.execute("PRAGMA foreign_keys = ON")  # the connection stays open for the next operations
            self._ledger_id, self._schema_cookie = ledger_id, cookie

    def _check_file_system(self, create: bool) -> None:
        parent = self.path.parent
        if self.path.is_dir():
            raise fail("path", "a file, not a directory", str(self.path))
        if not parent.is_dir():
            raise self._error(f"is in a directory that does not exist ({str(parent)!r})",
                              "create the directory first (mkdir -p) or choose another path")
        if not self.path.exists():
            if not create:
                raise self._error("does not exist", "pass the path of an existing ledger, or create=True to start one")
            if Path(str(self.path) + "-wal").exists():
                raise self._error("is missing but its write-ahead log (-wal) is still there: the ledger was deleted "
                                  "and the log may hold spent budget", "restore the ledger file from a backup")
        elif not os.access(self.path, os.R_OK | os.W_OK):
            raise self._read_only_error()
        if not os.access(parent, os.W_OK | os.X_OK):
            raise self._read_only_error()

    # -- connections -------------------------------------------------------------------------------
    @contextmanager
    def _connect(self, mode: str = "rw") -> Iterator[sqlite3.Connection]:
        """The connection of this object and process, for one operation (``mode="rw"``: SQLite never
        creates the file here).

        Holds the object's lock for the whole operation (threads take turns). Every sqlite3 error
        inside becomes a :class:`LedgerError` naming the path, and the connection is closed (the next
        operation opens a new one); a file that is no longer this ledger (deleted, replaced) is refused
        before anything is read or written.
        """
        if not self._persistent:
            with self._connect_once(mode) as con:
                yield con
            return
        if self._con_pid is not None and self._con_pid != os.getpid():
            self._forget_connection()  # forked without os.register_at_fork's hook (e.g. from C code)
        with self._lock:
            con = None
            try:
                con = self._connection(mode)
                if self._ledger_id is not None:
                    self._check_identity(con)
                    self._check_schema(con)
                yield con
            except sqlite3.Error as exc:
                self._drop_connection()
                raise self._sqlite_error(exc) from exc
            except LedgerError:
                self._drop_connection()
                raise
            finally:
                if con is not None and self._con is con and con.in_transaction:  # a failed ROLLBACK: start afresh
                    self._drop_connection()

    def _connection(self, mode: str) -> sqlite3.Connection:
        """Inside the lock: the open connection, or a new one, to the file this object opened.

        A file deleted, moved or replaced since is refused before SQLite opens anything at the path
        (which would read a log left beside it by the file that was there).
        """
        found = self._file_identity()
        if self._file_id is not None and found != self._file_id:
            self._drop_connection()  # SQLite neither checkpoints nor deletes the log of a moved file on close
            if found is None:
                raise self._missing_error()
            raise self._replaced_error()
        if self._con is not None and found != self._con_file:  # pragma: no cover - bound file, other connection
            self._drop_connection()
        if self._con is None:
            con = self._new_connection(mode)
            self._con, self._con_pid, self._con_file = con, os.getpid(), self._file_identity()
        return self._con

    def _file_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the file at ``path``, or None when there is none."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _new_connection(self, mode: str) -> sqlite3.Connection:
        """A new connection with the ledger's settings: busy timeout, ``synchronous=FULL``, foreign keys."""
        try:
            con = sqlite3.connect(f"{self.path.as_uri()}?mode={mode}", uri=True, timeout=self.timeout,
                                  isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc) from exc
        try:
            con.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            con.execute("PRAGMA synchronous = FULL")
            con.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            con.close()
            raise self._sqlite_error(exc) from exc
        return con

    @contextmanager
    def _connect_once(self, mode: str = "rw") -> Iterator[sqlite3.Connection]:
        """A new connection for one operation, closed after it (what every operation did before the
        ledger kept its connection: reachable through ``_persistent = False``)."""
        con = self._new_connection(mode)
        try:
            if self._ledger_id is not None:
                self._check_identity(con)
                self._check_schema(con)
            yield con
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc) from exc
        finally:
            con.close()

    def _drop_connection(self) -> None:
        """Close this process's connection (the next operation opens a new one)."""
        con, self._con, self._con_pid, self._con_file = self._con, None, None, None
        if con is not None:
            try:
                con.close()
            except sqlite3.Error:  # pragma: no cover - closing a broken connection
                pass

    def _forget_connection(self) -> None:
        """In a forked child: a fresh lock (another thread may have held the parent's at the fork), and
        the parent's connection set aside unclosed — SQLite forbids using a connection across
        ``fork()``, and closing it could checkpoint the parent's log from a stale copy of its state."""
        self._lock = threading.RLock()
        if self._con is not None:
            _INHERITED.append(self._con)
        self._con, self._con_pid, self._con_file = None, None, None

    def close(self) -> None:
        """Close this process's connection to the file; idempotent.

        Closing the last connection to the file checkpoints the write-ahead log into it. A later
        operation on this object opens a new connection (and checks again that the file is this
        ledger), so closing never loses anything; ``with Ledger(path) as ledger:`` closes on exit.
        """
        if self._con_pid is not None and self._con_pid != os.getpid():
            self._forget_connection()
            return
        with self._lock:
            self._drop_connection()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _check_identity(self, con: sqlite3.Connection) -> None:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is None or row[0] != self._ledger_id:
            raise self._replaced_error()

    def _replaced_error(self) -> LedgerError:
        return self._error("is no longer the ledger this object opened (the file was replaced, e.g. deleted and "
                           "created again, or moved: another file or another ledger_id is at its path)",
                           "restore the original file from a backup; to use the new file deliberately, open it "
                           "with Ledger(path)")

    def _missing_error(self) -> LedgerError:
        return self._error("no longer exists (deleted or moved while this Ledger was in use). A new, empty ledger "
                           "is NOT created, because it would forget the budget already spent",
                           "restore the file from a backup; to start a new ledger deliberately, call Ledger(path)")

    def _check_schema(self, con: sqlite3.Connection) -> None:
        """Re-check the schema when SQLite's schema cookie moved since open (one PRAGMA otherwise)."""
        cookie = con.execute("PRAGMA schema_version").fetchone()[0]
        if cookie == self._schema_cookie:
            return
        problem = _schema_problem(con, _SCHEMA_VERSION)
        if problem is not None:
            raise self._error(f"{problem} (the schema changed after this Ledger opened the file)", _ALTERED_REMEDY)
        self._schema_cookie = cookie

    @staticmethod
    @contextmanager
    def _transaction(con: sqlite3.Connection) -> Iterator[None]:
        con.execute("BEGIN IMMEDIATE")  # take the write lock before reading what is spent
        try:
            yield
        except BaseException:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is broken: SQLite rolls back on its own; keep the first error
                pass
            raise
        con.execute("COMMIT")

    def __reduce__(self):
        return (_reopen, (type(self), str(self.path), self.timeout, self._ledger_id))

    # -- errors ------------------------------------------------------------------------------------
    def _error(self, problem: str, remedy: str) -> LedgerError:
        return LedgerError(f"ledger file {str(self.path)!r} {problem}; {remedy}. Nothing was spent.")

    def _read_only_error(self) -> LedgerError:
        return self._error("is read-only (the file, or its directory, where SQLite writes the -wal and -shm files "
                           "next to it)", "give this user write access to both, or copy the ledger to a writable "
                           "directory (copy the -wal file with it)")

    def _sqlite_error(self, exc: sqlite3.Error) -> LedgerError:
        """Translate a sqlite3 error into what happened to the file and what to do."""
        msg = str(exc)
        low = msg.lower()
        if not self.path.parent.is_dir():
            return self._error(f"is in a directory that does not exist ({str(self.path.parent)!r})",
                               "create the directory or restore it")
        if not self.path.exists():
            return self._missing_error()
        if "readonly" in low or "read-only" in low or not os.access(self.path, os.W_OK):
            return self._read_only_error()
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            return self._error(f"is corrupt or truncated (SQLite: {msg})", "restore it from a backup; do not delete "
                               "it or start a new ledger in its place, since it holds the spent budget")
        if "locked" in low or "busy" in low:
            return self._error(f"stayed locked by another process for more than timeout={self.timeout:g} s "
                               f"(SQLite: {msg})", "retry, or pass a larger timeout")
        if "no such table" in low or "no such column" in low:
            return self._error(f"is not a bayespriv ledger of this version (SQLite: {msg})",
                               "open it with Ledger(path) to check and migrate it, or use the right file")
        return self._error(f"cannot be used (SQLite: {type(exc).__name__}: {msg})",
                           "check the disk and the file's permissions")

    # -- budgets -----------------------------------------------------------------------------------
    def set_budget(self, name: str, epsilon: float, delta: float | None = 0.0, *, reason: str | None = None) -> None:
        """Create budget ``name`` or change its total (ε, δ), on purpose: the explicit way to raise or lower it.

        Every creation and change is recorded in :meth:`budget_events` (old and new totals, what was
        spent, ``reason``) in the same transaction; setting the value a budget already has records
        nothing. A budget may be lowered below what is already spent — its releases stay on record and
        every further release on it is refused — and that is stated: a
        :class:`~bayespriv.errors.BayesPrivWarning`, and the action ``"lowered below spent"`` in the
        event. To create a budget without ever changing an existing one (what a repeated script or
        command line wants), use :meth:`create_budget`.

        Parameters
        ----------
        name : str
            The protected attribute or variable (a mechanism protecting ``c`` charges budget ``c``).
        epsilon : float
            Total ε, finite, >= 0 and at most :data:`MAX_BUDGET_EPSILON` (the ledger counts integer
            nano-ε in SQLite's 64-bit integers; rounded down to a whole nano-ε).
        delta : float or None
            Total δ in [0, 1) (rounded down to a whole atto-δ). ``None`` keeps the budget's current
            δ (0 for a new budget): raising ε alone then leaves δ as it is.
        reason : str, optional
            Why, kept in the event row (e.g. "approved by the data owner, ticket 12").
        """
        name, e_units, d_units = self._budget_args(name, epsilon, delta)
        note = _reason(reason)
        with self._connect() as con, self._transaction(con):
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
            if row is None:
                self._insert_budget(con, name, e_units, 0 if d_units is None else d_units, note)
                return
            et, dt, es, ds = row
            d_units = dt if d_units is None else d_units
            if (et, dt) == (e_units, d_units):
                return
            if e_units >= et and d_units >= dt:
                action = "raised"
            elif e_units <= et and d_units <= dt:
                action = "lowered"
            else:
                action = "changed"
            below = e_units < es or d_units < ds
            if below:
                action += " below spent"
            con.execute("UPDATE budgets SET epsilon_total = ?, delta_total = ?, updated_utc = ? WHERE name = ?",
                        (e_units, d_units, _now(), name))
            _record_event(con, name, action, (et, dt), (e_units, d_units), (es, ds), note)
        if below:
            warn(f"budget {name!r} of {str(self.path)!r} set to ε={_eps(e_units)}, δ={_dlt(d_units)}, below what is "
                 f"already spent (ε={_eps(es)}, δ={_dlt(ds)}): every further release on it is refused")

    def create_budget(self, name: str, epsilon: float, delta: float | None = None, *,
                      reason: str | None = None) -> bool:
        """Create budget ``name`` if it does not exist; never change an existing one.

        Returns True when it created the budget (recorded in :meth:`budget_events`), False when the
        budget already has this ε and δ (after rounding to whole nano-ε / atto-δ; nothing is
        written). ``delta=None`` (the default) creates with δ = 0 and, for an existing budget, leaves
        δ out of the comparison. A budget that exists with another value is refused — a script or a
        command run again with another number must not silently raise a spent budget — and the error
        (a :class:`~bayespriv.ValidationError`) names the budget, its current value and the call that
        changes it on purpose (:meth:`set_budget`); it carries ``budget``, ``current`` and
        ``requested`` attributes (name, (ε, δ), (ε, δ)). Other arguments as :meth:`set_budget`.
        """
        name, e_units, d_units = self._budget_args(name, epsilon, delta)
        note = _reason(reason)
        with self._connect() as con, self._transaction(con):
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
            if row is None:
                self._insert_budget(con, name, e_units, 0 if d_units is None else d_units, note)
                return True
        et, dt, es, ds = row
        d_units = dt if d_units is None else d_units
        if (et, dt) == (e_units, d_units):
            return False
        current = (_from_units(et, EPSILON_UNIT), _from_units(dt, DELTA_UNIT))
        requested = (_from_units(e_units, EPSILON_UNIT), _from_units(d_units, DELTA_UNIT))
        exc = ValidationError(
            f"the budget {name!r} must keep its value when create_budget finds it in {str(self.path)!r}: it is "
            f"ε={_eps(et)}, δ={_dlt(dt)} (spent ε={_eps(es)}, δ={_dlt(ds)}); got ε={_eps(e_units)}, δ={_dlt(d_units)}. "
            f"Nothing was changed. To change it on purpose, call ledger.set_budget({name!r}, epsilon={requested[0]!r}, "
            f"delta={requested[1]!r}) (recorded in budget_events)")
        exc.budget, exc.current, exc.requested = name, current, requested  # type: ignore[attr-defined]
        raise exc

    def _budget_args(self, name: Any, epsilon: Any, delta: Any) -> tuple[str, int, int | None]:
        name = _budget_name(name)
        eps = check_real("epsilon", epsilon)
        if not (math.isfinite(eps) and eps >= 0):
            raise fail("epsilon", "a finite number >= 0", epsilon)
        if eps > MAX_BUDGET_EPSILON:
            raise fail("epsilon", f"at most {MAX_BUDGET_EPSILON!r} (the ledger counts integer nano-ε in 64 bits)", epsilon)
        e_units = _units(eps, EPSILON_UNIT, ROUND_FLOOR)
        if delta is None:
            return name, e_units, None
        d = check_real("delta", delta)
        if not 0.0 <= d < 1.0:
            raise fail("delta", "in [0, 1)", delta)
        return name, e_units, _units(d, DELTA_UNIT, ROUND_FLOOR)

    @staticmethod
    def _insert_budget(con: sqlite3.Connection, name: str, e_units: int, d_units: int, note: str | None) -> None:
        con.execute("INSERT INTO budgets (name, epsilon_total, delta_total, updated_utc) VALUES (?, ?, ?, ?)",
                    (name, e_units, d_units, _now()))
        _record_event(con, name, "created", (None, None), (e_units, d_units), (0, 0), note)

    def budget_events(self) -> pd.DataFrame:
        """Every creation and change of a budget, oldest first (index: event id).

        Columns: ``time_utc``, ``budget``, ``action`` (``"created"``, ``"raised"``, ``"lowered"``,
        ``"changed"`` — ε and δ moved in opposite directions —, with ``" below spent"`` when the new
        total is below what was spent, or ``"existing at migration"`` for a budget of a ledger written
        before budget changes were recorded), ``old epsilon``, ``old delta`` (NaN on creation),
        ``new epsilon``, ``new delta``, ``epsilon spent``, ``delta spent`` (at that moment),
        ``below spent`` (bool), ``reason`` and ``pid``.
        """
        with self._connect() as con:
            rows = con.execute("SELECT id, time_utc, name, action, old_epsilon_units, old_delta_units, "
                               "new_epsilon_units, new_delta_units, epsilon_spent_units, delta_spent_units, reason, pid "
                               "FROM budget_events ORDER BY id").fetchall()
        e = lambda u: math.nan if u is None else _from_units(u, EPSILON_UNIT)  # noqa: E731
        d = lambda u: math.nan if u is None else _from_units(u, DELTA_UNIT)  # noqa: E731
        data = [(t, n, a, e(oe), d(od), e(ne), d(nd), e(se), d(sd), bool(ne < se or nd < sd), why, pid)
                for _, t, n, a, oe, od, ne, nd, se, sd, why, pid in rows]
        columns = ["time_utc", "budget", "action", "old epsilon", "old delta", "new epsilon", "new delta",
                   "epsilon spent", "delta spent", "below spent", "reason", "pid"]
        df = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="id", dtype="int64"), columns=columns)
        df["time_utc"] = pd.to_datetime(df["time_utc"], utc=True, format="ISO8601")
        df["below spent"] = df["below spent"].astype(bool)
        df["reason"] = pd.Series([r[10] for r in rows], index=df.index, dtype=object)  # None: no reason given
        return df

    def budgets(self) -> tuple[str, ...]:
        """Names of the budgets set in this ledger, sorted."""
        with self._connect() as con:
            return tuple(r[0] for r in con.execute("SELECT name FROM budgets ORDER BY name"))

    def _budget_row(self, name: str) -> tuple[int, int, int, int]:
        name = _budget_name(name)
        with self._connect() as con:
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
        if row is None:
            raise ValidationError(f"name must be a budget of this ledger {self.budgets()!r}; got {name!r}")
        return row

    def spent(self, name: str) -> tuple[float, float]:
        """(ε, δ) spent on budget ``name`` (exact: 100 spends of 0.01 give 1.0; voided releases excluded)."""
        _, _, e, d = self._budget_row(name)
        return _from_units(e, EPSILON_UNIT), _from_units(d, DELTA_UNIT)

    def remaining(self, name: str) -> tuple[float, float]:
        """(ε, δ) still available on budget ``name`` (0 where it was lowered below what is spent)."""
        et, dt, e, d = self._budget_row(name)
        return _from_units(max(et - e, 0), EPSILON_UNIT), _from_units(max(dt - d, 0), DELTA_UNIT)

    def budget(self, name: str) -> tuple[float, float]:
        """Total (ε, δ) of budget ``name``."""
        et, dt, _, _ = self._budget_row(name)
        return _from_units(et, EPSILON_UNIT), _from_units(dt, DELTA_UNIT)

    # -- check and spend -----------------------------------------------------------------------------
    def charge(self, mechanism: Any, *, seeded: bool | None = None, dataset: Any = None,
               independent: bool = False) -> Charge:
        """Check and spend the budget of every attribute ``mechanism`` protects, atomically.

        Called by ``release`` / ``release_value`` before any noise is drawn. How much is spent depends
        on how the mechanism composes (``mechanism.composition``, see :mod:`bayespriv.accounting.joint`):

        * differential-privacy (``"dp"``, and ``"dataset_dp"``: a mechanism whose noise alone covers its
          query's whole range), subset-of-variables and Markov-chain MQM releases spend their own
          (ε, δ) (sequential composition is a theorem for them; the row names it); so do Markov quilt
          (APMQM) releases when every (θ, sensitive node) has a quilt valid for them and for every
          quilt release already on the dataset — otherwise they are refused
          (:class:`~bayespriv.accounting.joint.JointAccountingError`) unless declared independent;
        * every other (Pufferfish) release is accounted **jointly** with the releases already granted
          on the same ``dataset`` (a table's fingerprint, or a name; releases without one share the
          dataset ``"unnamed"``) for each budget: it spends the increase of the joint ε of all of
          them at the sum of their δ, and its own δ. When that joint law cannot be formed the release
          is refused (:class:`~bayespriv.accounting.joint.JointAccountingError`) unless
          ``independent=True`` declares it independent of the others: it then spends its own (ε, δ)
          and the row records the assumption ``"declared_independent"``. Releases that together
          reveal the secret are refused (:class:`~bayespriv.accounting.joint.JointLeakError`).

        Records the release — with the guarantee's failed and unchecked assumptions, whether it is
        established, how it composed — or, when any budget is missing or would be exceeded, records a
        refusal, spends nothing on any budget, and raises (:class:`~bayespriv.BudgetExceededError`, or
        :class:`~bayespriv.ValidationError` for a missing budget). An ε beyond
        :data:`MAX_BUDGET_EPSILON` exceeds every budget.
        """
        req = _Request.for_release(mechanism, dataset, independent)
        own = (_units(req.epsilon, EPSILON_UNIT, ROUND_CEILING), _units(req.delta, DELTA_UNIT, ROUND_CEILING))
        for _ in range(_JOINT_RETRIES):
            plan = self._joint_plan(mechanism, req) if req.composition == "joint" else None
            units = {name: own if plan is None else (plan.units[name], own[1]) for name in req.protected}
            with self._connect() as con, self._transaction(con):
                if plan is not None and self._priors_moved(con, req, plan):
                    continue  # another process granted a release on this dataset meanwhile: account again
                refusal = self._no_common_quilt(con, req) if req.composition == "quilt" else None
                refusal = refusal or self._check_budgets(con, req, units)
                if refusal is None:
                    rid = self._record_release(con, req, units, seeded, None if plan is None else plan.record)
            break
        else:  # pragma: no cover - needs a stream of concurrent releases on the same dataset
            raise LedgerError(f"ledger {str(self.path)!r}: the releases on dataset {req.dataset!r} kept changing "
                              f"while this one was accounted ({_JOINT_RETRIES} attempts); try again")
        if refusal is not None:
            raise refusal  # after COMMIT: the refusal is recorded, nothing spent
        if plan is not None:
            self._remember(rid, mechanism)
        spent = max(units[name][0] for name in req.protected)
        return Charge(rid, req.protected, _from_units(spent, EPSILON_UNIT), req.delta)

    def _check_budgets(self, con: sqlite3.Connection, req: _Request, units: dict[str, tuple[int, int]]) -> Exception | None:
        """Inside the transaction: the first budget that refuses (recorded), or None."""
        for name in req.protected:
            e_units, d_units = units[name]
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets "
                              "WHERE name = ?", (name,)).fetchone()
            if row is None:
                self._refuse(con, req, name, "missing budget")
                return ValidationError(
                    f"mechanism must charge budgets that exist; got protected attribute {name!r} with no budget "
                    f"in {str(self.path)!r} (call ledger.set_budget({name!r}, epsilon=...) first)")
            et, dt, es, ds = row
            if es + e_units > et or ds + d_units > dt:
                self._refuse(con, req, name, "budget exceeded")
                return BudgetExceededError(
                    f"releasing {req.mechanism} (ε={req.epsilon:g}, δ={req.delta:g}) would exceed the budget of "
                    f"{name!r}: spent ε={_from_units(es, EPSILON_UNIT):g}, δ={_from_units(ds, DELTA_UNIT):g} of "
                    f"ε={_from_units(et, EPSILON_UNIT):g}, δ={_from_units(dt, DELTA_UNIT):g}; nothing was spent")
        return None

    @staticmethod
    def _record_release(con: sqlite3.Connection, req: _Request, units: dict[str, tuple[int, int]],
                        seeded: bool | None, joint: str | None) -> int:
        """Inside the transaction: the release row, its charges and the budgets' counters."""
        e_own = _units(req.epsilon, EPSILON_UNIT, ROUND_CEILING)
        d_own = _units(req.delta, DELTA_UNIT, ROUND_CEILING)
        cur = con.execute(
            "INSERT INTO releases (time_utc, mechanism, epsilon, delta, epsilon_units, delta_units, confidence, "
            "assumptions, theorem, protected, variables, query, seeded, calibration_hash, pid, "
            "failed_assumptions, unchecked_assumptions, established, voided, calibration_content_hash, "
            "dataset, composition, query_fingerprint, noise, pairs, joint) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
            (_now(), req.mechanism, req.epsilon, req.delta, e_own, d_own, req.confidence,
             json.dumps(req.assumptions), req.theorem, json.dumps(req.protected), json.dumps(req.variables),
             req.query, None if seeded is None else int(bool(seeded)), req.calibration_hash, os.getpid(),
             json.dumps(req.failed), json.dumps(req.unchecked), int(req.established), req.content_hash,
             req.dataset, req.composition, req.query_fingerprint, req.noise, req.pairs, joint))
        rid = int(cur.lastrowid)
        for name in req.protected:
            e_units, d_units = units[name]
            con.execute("INSERT INTO charges VALUES (?, ?, ?, ?)", (rid, name, e_units, d_units))
            con.execute("UPDATE budgets SET epsilon_spent = epsilon_spent + ?, delta_spent = delta_spent + ?, "
                        "updated_utc = ? WHERE name = ?", (e_units, d_units, _now(), name))
        return rid

    @staticmethod
    def _refuse(con: sqlite3.Connection, req: _Request, budget: str, reason: str) -> None:
        con.execute("INSERT INTO refusals (time_utc, mechanism, epsilon, delta, protected, variables, query, budget, "
                    "reason, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (_now(), req.mechanism, req.epsilon, req.delta, json.dumps(req.protected),
                     json.dumps(req.variables), req.query, budget, reason, os.getpid()))

    def _no_common_quilt(self, con: sqlite3.Connection, req: _Request) -> Exception | None:
        """Inside the transaction: for a Markov quilt release, None when every (θ, sensitive node) has a
        quilt valid for it and for every quilt release already granted on its dataset and budgets
        (:mod:`bayespriv.accounting.joint`, ``"quilt"``); else the error refusing it (nothing recorded)."""
        from .joint import JointAccountingError

        common = json.loads(req.noise)["valid"]
        for name in req.protected:
            rows = con.execute(
                "SELECT r.id, r.noise FROM releases r JOIN charges c ON c.release_id = r.id WHERE r.voided = 0 "
                "AND r.dataset = ? AND r.composition = 'quilt' AND c.budget = ? ORDER BY r.id",
                (req.dataset, name)).fetchall()
            for rid, text in rows:
                common = _shared_quilts(common, json.loads(text)["valid"])
                empty = sorted(key for key, quilts in common.items() if not quilts)
                if empty:
                    return JointAccountingError(
                        f"releasing {req.mechanism} on dataset {req.dataset!r} needs, for every member θ and "
                        f"sensitive node, a Markov quilt valid for it and for every earlier quilt release there "
                        f"(linear composition conditions on one quilt); none is shared with release {rid} for "
                        f"{empty}. Use the same ε and quilts (quilts=...), more noise, or pass independent=True "
                        "to declare the releases independent (recorded as an assumption); nothing was spent")
        return None

    # -- joint accounting of the releases on the same data --------------------------------------------
    def _priors(self, con: sqlite3.Connection, dataset: str, budget: str) -> list[tuple]:
        return con.execute(
            "SELECT r.id, r.query_fingerprint, r.noise, r.epsilon, r.delta, r.pairs, r.joint FROM releases r "
            "JOIN charges c ON c.release_id = r.id WHERE r.voided = 0 AND r.dataset = ? AND r.composition = 'joint' "
            "AND c.budget = ? ORDER BY r.id", (dataset, budget)).fetchall()

    def _joint_plan(self, mechanism: Any, req: _Request) -> "_JointPlan":
        """Outside any transaction (it takes seconds): the joint guarantee per budget with the releases
        already granted on the dataset, and the units each budget is charged."""
        with self._connect() as con:
            rows = {name: self._priors(con, req.dataset, name) for name in req.protected}
        new_noise = _noise_of(req.noise)
        own = _units(req.epsilon, EPSILON_UNIT, ROUND_CEILING)
        units, record, last, cache, seeds = {}, {}, {}, {}, {}
        for name, prior_rows in rows.items():
            last[name] = prior_rows[-1][0] if prior_rows else 0
            if not prior_rows:  # the first release on this dataset: its own guarantee is the joint one
                units[name] = own
                record[name] = {"epsilon": req.epsilon, "delta": req.delta, "units": own, "method": "first",
                                "releases": []}
                continue
            key = tuple(r[0] for r in prior_rows)
            if key not in cache:
                priors = [PriorRelease(r[0], r[1], _noise_of(r[2]), float(r[3]), float(r[4]),
                                       tuple(json.loads(r[5] or "[]"))) for r in prior_rows]
                # The seed of a stacked calibration, recorded on the row: anyone can redraw the same joint law.
                seeds[key] = int.from_bytes(hashlib.sha256(f"{req.dataset}|{key}".encode()).digest()[:8], "little")
                cache[key] = joint_guarantee(mechanism, priors, live=self._live, new_noise=new_noise, seed=seeds[key])
            joint = cache[key]
            before = json.loads(prior_rows[-1][6] or "{}").get(name, {}).get("epsilon", 0.0)
            increase = max(0.0, joint.epsilon - float(before))
            units[name] = _units(increase, EPSILON_UNIT, ROUND_CEILING)
            record[name] = {"epsilon": joint.epsilon, "delta": joint.delta, "units": units[name],
                            "method": joint.method, "releases": list(joint.releases),
                            "assumptions": list(joint.assumptions),
                            "seed": seeds[key] if joint.method == "stacked calibration" else None}
        return _JointPlan(units, json.dumps(record, sort_keys=True), last)

    def _priors_moved(self, con: sqlite3.Connection, req: _Request, plan: "_JointPlan") -> bool:
        """Inside the transaction: whether a release was granted (or voided) on the dataset since the plan."""
        for name in req.protected:
            rows = self._priors(con, req.dataset, name)
            if (rows[-1][0] if rows else 0) != plan.last[name] or len(rows) != len(json.loads(plan.record)[name]["releases"]):
                return True
        return False

    def _remember(self, release_id: int, mechanism: Any) -> None:
        """Keep the query and data model of a granted release for the joint accounting of later ones."""
        from ..calibration.engine import model_of

        cal = getattr(mechanism, "calibration", None)
        model = model_of(cal) if cal is not None else None
        if model is not None and getattr(cal, "query", None) is not None:
            self._live[release_id] = (cal.query, model, tuple(cal.pairs))

    def void(self, release_id: int, reason: str) -> None:
        """Mark a granted release void and refund its charges, in one transaction.

        The safety net of the release path: if anything fails between the spend and the noisy value
        (so nothing was released), the caller voids the row. The row and its charges stay (an audit
        trail: ``voided``, ``void_reason``, ``voided_utc`` in :meth:`releases`); the spent totals no
        longer include it, and :meth:`verify` checks spent = charges of the releases not voided. A
        process killed inside ``void`` leaves the release charged and not voided (all or nothing).

        Parameters
        ----------
        release_id : int
            ``Charge.release_id`` of the release.
        reason : str
            Why (non-empty), e.g. the exception raised after the spend.

        Raises
        ------
        ValidationError
            No such release, or it is already void.
        """
        if isinstance(release_id, bool) or not isinstance(release_id, (int, np.integer)):
            raise ParameterTypeError(f"release_id must be an int (Charge.release_id); got {release_id!r} "
                                     f"of type {type(release_id).__name__}")
        if not isinstance(reason, str) or not reason.strip():
            raise fail("reason", "a non-empty string saying why the release is void", reason)
        rid, now = int(release_id), _now()
        with self._connect() as con, self._transaction(con):
            row = con.execute("SELECT voided, void_reason FROM releases WHERE id = ?", (rid,)).fetchone()
            if row is None:
                raise fail("release_id", "the id of a release in this ledger", rid)
            if row[0]:
                raise fail("release_id", f"a release not already voided (it was: {row[1]!r})", rid)
            con.execute("UPDATE releases SET voided = 1, void_reason = ?, voided_utc = ? WHERE id = ?", (reason, now, rid))
            for budget, e_units, d_units in con.execute(
                    "SELECT budget, epsilon_units, delta_units FROM charges WHERE release_id = ?", (rid,)).fetchall():
                con.execute("UPDATE budgets SET epsilon_spent = epsilon_spent - ?, delta_spent = delta_spent - ?, "
                            "updated_utc = ? WHERE name = ?", (e_units, d_units, now, budget))

    # -- reading -------------------------------------------------------------------------------------
    def releases(self) -> pd.DataFrame:
        """Every granted release, oldest first (index: release id), voided ones included.

        ``failed_assumptions`` / ``unchecked_assumptions`` are tuples and ``established`` a boolean
        (missing — ``None`` / ``<NA>`` — on rows written before the ledger recorded them);
        ``voided`` marks releases refunded by :meth:`void`, with ``void_reason``.
        ``calibration_hash`` is the hash of the calibration's moments (:func:`calibration_hash`);
        ``calibration_content_hash`` the SHA-256 of the calibration file the mechanism was built from
        (``Calibration.content_hash``; None for an in-memory calibration and rows written before the
        ledger recorded it). ``dataset`` is the data the release read (a table's fingerprint or a
        name), ``composition`` how it composed (``"joint"``, ``"dp"``, ``"dataset_dp"``, ``"subset"``, ``"chain"``,
        ``"independent"``; None: summed under ``"sequential_composition"``) and ``joint``, for joint
        rows, the joint guarantee per budget after it: ``{budget: {"epsilon", "delta", "units",
        "method", "releases", "assumptions", "seed"}}`` (``seed``: of the stacked calibration the joint law
        was drawn from, None when it was not needed).
        """
        cols = ["time_utc", "mechanism", "epsilon", "delta", "confidence", "assumptions", "failed_assumptions",
                "unchecked_assumptions", "established", "theorem", "protected", "variables", "query", "seeded",
                "calibration_hash", "calibration_content_hash", "pid", "voided", "void_reason", "dataset",
                "composition", "joint"]
        with self._connect() as con:
            rows = con.execute(f"SELECT id, {', '.join(cols)} FROM releases ORDER BY id").fetchall()
        raw = {c: [r[i + 1] for r in rows] for i, c in enumerate(cols)}
        df = pd.DataFrame(rows, columns=["id"] + cols).set_index("id")
        for c in ("assumptions", "protected", "variables"):
            df[c] = [tuple(json.loads(v)) for v in raw[c]]
        for c in ("failed_assumptions", "unchecked_assumptions"):  # None: not recorded (version-1 row)
            df[c] = pd.Series([None if v is None else tuple(json.loads(v)) for v in raw[c]], index=df.index, dtype=object)
        for c in ("seeded", "established"):
            df[c] = pd.array([None if v is None else bool(v) for v in raw[c]], dtype="boolean")
        df["calibration_content_hash"] = pd.Series(raw["calibration_content_hash"], index=df.index, dtype=object)
        df["joint"] = pd.Series([None if v is None else json.loads(v) for v in raw["joint"]], index=df.index,
                                dtype=object)
        for c in ("dataset", "composition"):  # None (not NaN) for rows that record none
            df[c] = pd.Series(raw[c], index=df.index, dtype=object)
        df["voided"] = np.array([bool(v) for v in raw["voided"]], dtype=bool)
        df["time_utc"] = pd.to_datetime(df["time_utc"], utc=True, format="ISO8601")
        return df

    def refusals(self) -> pd.DataFrame:
        """Every refused release (nothing spent), oldest first."""
        cols = ["time_utc", "mechanism", "epsilon", "delta", "protected", "variables", "query", "budget", "reason", "pid"]
        with self._connect() as con:
            rows = con.execute(f"SELECT id, {', '.join(cols)} FROM refusals ORDER BY id").fetchall()
        df = pd.DataFrame(rows, columns=["id"] + cols).set_index("id")
        for c in ("protected", "variables"):
            df[c] = [tuple(json.loads(v)) for v in df[c]]
        df["time_utc"] = pd.to_datetime(df["time_utc"], utc=True, format="ISO8601")
        return df

    def report(self) -> pd.DataFrame:
        """Spent and remaining (ε, δ) per budget, with counts of releases and refusals.

        Columns ``releases`` (granted, not voided), ``not established`` (of those, released with a
        failed assumption check: their (ε, δ) is not established), ``composition assumed`` (of those,
        rows whose ε and δ are added to the others only under the assumption
        ``"sequential_composition"``, i.e. Pufferfish mechanisms — see the module docstring),
        ``voided``, ``refusals``, ``budget changes`` (changes recorded after the budget was created;
        the rows are :meth:`budget_events`) and ``calibration files`` (the first 12 hex digits of the
        SHA-256 of each calibration file its releases not voided were built from, comma-separated;
        ``-`` for none). ``remaining`` is 0 for a budget lowered below what is spent.
        ``attrs["composition"]`` says in words how the releases were added up; ``attrs["budget_events"]``
        holds :meth:`budget_events` and ``attrs["joint"]`` :meth:`joint_guarantees` (per dataset and budget).
        """
        assumed = json.dumps(COMPOSITION_ASSUMPTION)
        with self._connect() as con:
            rows = con.execute(
                "SELECT b.name, b.epsilon_total, b.epsilon_spent, b.delta_total, b.delta_spent, "
                "COALESCE(SUM(r.voided = 0), 0), COALESCE(SUM(r.voided = 0 AND r.established = 0), 0), "
                "COALESCE(SUM(r.voided = 0 AND instr(r.assumptions, ?) > 0), 0), COALESCE(SUM(r.voided = 1), 0), "
                "(SELECT COUNT(*) FROM refusals f WHERE f.budget = b.name), "
                "(SELECT COUNT(*) FROM budget_events e WHERE e.name = b.name AND e.old_epsilon_units IS NOT NULL), "
                "GROUP_CONCAT(DISTINCT CASE WHEN r.voided = 0 THEN substr(r.calibration_content_hash, 1, 12) END) "
                "FROM budgets b LEFT JOIN charges c ON c.budget = b.name LEFT JOIN releases r ON r.id = c.release_id "
                "GROUP BY b.name ORDER BY b.name", (assumed,)).fetchall()
        columns = ["epsilon budget", "epsilon spent", "epsilon remaining", "delta budget", "delta spent",
                   "delta remaining", "releases", "not established", "composition assumed", "voided", "refusals",
                   "budget changes", "calibration files"]
        data = [(_from_units(et, EPSILON_UNIT), _from_units(es, EPSILON_UNIT), _from_units(max(et - es, 0), EPSILON_UNIT),
                 _from_units(dt, DELTA_UNIT), _from_units(ds, DELTA_UNIT), _from_units(max(dt - ds, 0), DELTA_UNIT),
                 int(n), int(bad), int(comp), int(void), int(ref), int(changes),
                 ",".join(sorted(files.split(","))) if files else "-")
                for _, et, es, dt, ds, n, bad, comp, void, ref, changes, files in rows]
        out = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="budget"), columns=columns)
        out.attrs["composition"] = _COMPOSITION_NOTE
        out.attrs["budget_events"] = self.budget_events()
        out.attrs["joint"] = self.joint_guarantees()
        return out

    def joint_guarantees(self) -> pd.DataFrame:
        """What the releases on each dataset cost each budget together, releases not voided.

        One row per (dataset, budget): ``releases`` (how many), ``jointly accounted`` (of those, accounted
        together), ``joint epsilon`` / ``joint delta`` (the joint guarantee after the last jointly accounted
        release: see :mod:`bayespriv.accounting.joint`), ``method``, ``charged epsilon`` / ``charged delta``
        (what the dataset's releases took from the budget: the largest joint ε reached plus what the others
        added by a theorem or a declared independence), and ``compositions`` (how its releases composed).
        """
        with self._connect() as con:
            rows = con.execute(
                "SELECT r.id, COALESCE(r.dataset, ?), c.budget, r.composition, r.joint, c.epsilon_units, c.delta_units "
                "FROM releases r JOIN charges c ON c.release_id = r.id WHERE r.voided = 0 ORDER BY r.id",
                (UNNAMED_DATASET,)).fetchall()
        table: dict[tuple[str, str], dict[str, Any]] = {}
        for _, dataset, budget, composition, joint, e_units, d_units in rows:
            t = table.setdefault((dataset, budget), {"releases": 0, "jointly accounted": 0, "joint epsilon": np.nan,
                                                     "joint delta": np.nan, "method": "-", "charged epsilon": 0,
                                                     "charged delta": 0, "compositions": set()})
            t["releases"] += 1
            t["charged epsilon"] += e_units
            t["charged delta"] += d_units
            t["compositions"].add(composition or COMPOSITION_ASSUMPTION)
            if joint is not None:
                record = json.loads(joint).get(budget, {})
                t["jointly accounted"] += 1
                t["joint epsilon"], t["joint delta"] = record.get("epsilon", np.nan), record.get("delta", np.nan)
                t["method"] = record.get("method", "-")
        out = pd.DataFrame.from_dict(table, orient="index")
        if out.empty:
            return pd.DataFrame(columns=["releases", "jointly accounted", "joint epsilon", "joint delta", "method",
                                         "charged epsilon", "charged delta", "compositions"],
                                index=pd.MultiIndex.from_tuples([], names=["dataset", "budget"]))
        out.index = pd.MultiIndex.from_tuples(out.index, names=["dataset", "budget"])
        out["charged epsilon"] = [_from_units(int(u), EPSILON_UNIT) for u in out["charged epsilon"]]
        out["charged delta"] = [_from_units(int(u), DELTA_UNIT) for u in out["charged delta"]]
        out["compositions"] = [", ".join(sorted(c)) for c in out["compositions"]]
        return out.sort_index()

    def variable_releases(self) -> list[VariableRelease]:
        """The recorded releases, voided ones excluded, as :class:`VariableRelease` records."""
        df = self.releases()
        out = []
        for rid, r in df[~df["voided"]].iterrows():
            variables = tuple(dict.fromkeys(r["variables"] + r["protected"])) if r["variables"] else None
            label = f"#{rid} {r['mechanism']}" + (f" ({r['query']})" if r["query"] else "")
            out.append(VariableRelease(label, r["epsilon"], variables, r["protected"], r["delta"]))
        return out

    def epsilon_table(self, variables: Any = None, *, total: str | None = "Total") -> pd.DataFrame:
        """ε of each recorded release on each variable, and composed (Propositions 3.3–3.5)."""
        return epsilon_table(self.variable_releases(), variables, total=total)

    def verify(self) -> None:
        """Check the ledger's invariants; raise :class:`~bayespriv.ValidationError` if one fails.

        SQLite's full integrity check passes; the schema is exactly the library's (no added trigger,
        view, index or changed table); ``meta`` holds only its two keys; for every budget, spent = sum
        of the charges of its releases not voided, and spent ≤ total unless the last budget event
        lowered the total below what was spent (and nothing was spent since); the totals are those of
        the budget's last event; every release (voided or not) charged each budget it protects with
        its own (ε, δ); a voided release has a reason. Everything but the integrity check also runs
        at every open, where a failure raises :class:`~bayespriv.errors.LedgerError`.
        """
        with self._connect() as con:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                raise ValidationError(f"ledger must pass SQLite's integrity check; got {ok!r}")
            problem = _schema_problem(con, _SCHEMA_VERSION) or _invariant_problem(con, thorough=True)
        if problem is not None:
            raise ValidationError(f"ledger {str(self.path)!r} must keep its invariants; got: {problem}")

    # -- presentation ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def _repr_html_(self) -> str:
        report = self.report()
        fmt = lambda x: f"{x:.6g}"  # noqa: E731
        parts = [f"<div><strong>Ledger</strong> <code>{html.escape(str(self.path))}</code></div>",
                 "<div><em>Budget per protected attribute</em></div>", report.to_html(float_format=fmt)]
        if len(report) and report["composition assumed"].sum():
            parts.append(f"<p><strong>Composition assumed.</strong> {html.escape(_COMPOSITION_NOTE)}</p>")
        parts.append(self._not_established_html())
        events = report.attrs["budget_events"]
        if len(events):
            shown = events.drop(columns=["pid"]).fillna({"reason": ""})
            parts += ["<div><em>Budget creations and changes</em></div>",
                      shown.to_html(float_format=fmt, na_rep="")]
        joint = report.attrs["joint"]
        if len(joint):
            parts += ["<div><em>Releases on the same data, accounted together (per dataset and budget)</em></div>",
                      frame_html(joint.replace({"method": {"-": None}}), missing=_NOT_JOINT, digits=6)]
        if len(report) and report["releases"].sum():
            parts += ["<div><em>ε per variable (Tan, Propositions 3.3–3.5)</em></div>",
                      frame_html(self.epsilon_table(), infinite=UNPROTECTED, digits=6)]
        return "\n".join(p for p in parts if p)

    def _not_established_html(self) -> str:
        df = self.releases()
        bad = df[(~df["voided"]) & (df["established"] == False)]  # noqa: E712 (pandas boolean with NA)
        if not len(bad):
            return ""
        items = "".join(f"<li>#{rid} {html.escape(str(r['mechanism']))} (ε={r['epsilon']:g}, δ={r['delta']:g}): "
                        f"failed check of {html.escape(', '.join(r['failed_assumptions']))}</li>"
                        for rid, r in bad.iterrows())
        return ("<p style='color:#b00'><strong>NOT ESTABLISHED</strong>: released with a failed assumption check "
                f"(accept_failed_assumptions=True); their (ε, δ) is not established:</p><ul>{items}</ul>")


_COMPOSITION_NOTE = (
    "Releases on the same data are accounted together: a Pufferfish release is charged the increase of the joint "
    "guarantee of everything released on its dataset (bayespriv.accounting.joint), DP and subset-of-variables "
    "releases add their own (ε, δ) by theorem (Dwork & Roth 2014, Theorem 3.16; Tan, Proposition 3.4), releases "
    "declared independent add theirs under that assumption, and releases on different datasets add up. Rows marked "
    "'sequential_composition' come from objects that declare no composition: they are added under that assumption, "
    "which for Pufferfish mechanisms holds only under conditions on Θ (Kifer & Machanavajjhala 2014; Bai et al. 2026)."
)


def _ledger_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterTypeError(f"path must be a file path (str or os.PathLike); got {path!r} of type "
                                 f"{type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise ParameterTypeError(f"path must be a file path (str or os.PathLike of str); got {text!r}")
    if text in ("", ":memory:") or text.startswith("file::memory:"):
        raise fail("path", "a file path (an in-memory database cannot be shared or survive a crash)", text)
    return Path(text).resolve()


def _record_event(con: sqlite3.Connection, name: str, action: str, old: tuple[int | None, int | None],
                  new: tuple[int, int], spent: tuple[int, int], note: str | None) -> None:
    """Inside the transaction that creates or changes the budget: its audit row."""
    con.execute("INSERT INTO budget_events (time_utc, name, action, old_epsilon_units, old_delta_units, "
                "new_epsilon_units, new_delta_units, epsilon_spent_units, delta_spent_units, reason, pid) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (_now(), name, action, *old, *new, *spent, note, os.getpid()))


def _reason(reason: Any) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise fail("reason", "None or a non-empty string saying why the budget is set", reason)
    return reason.strip()


def _budget_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterTypeError(f"name must be a non-empty string naming a budget; got {name!r}")
    return name
