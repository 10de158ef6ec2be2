"""A privacy-budget ledger on SQLite that never overspends.

``Ledger(path)`` keeps, in one SQLite file,

* ``budgets``: the ε and δ budget of each protected attribute or variable and what is spent;
* ``releases``: every granted release (mechanism, guarantee, its failed and unchecked assumptions and
  whether it is *established*, protected budgets, variables, query, UTC time, seeded flag, hash of the
  calibration, and whether it was *voided*), and ``charges``: what it took from each budget;
* ``refusals``: every release refused (budget exceeded or missing), which spent nothing.

Check-and-spend is one ``BEGIN IMMEDIATE`` transaction: SQLite then holds the database's write lock
from the first read, so two processes cannot both read "0.99 spent" and both spend 0.01. The
journal is WAL with ``synchronous=FULL``: a transaction that returned is on disk, and a process
killed in the middle of one leaves the database as it was before it (the spend, the release record
and the counters are written together or not at all). Amounts are integers — nano-ε (10⁻⁹) and
atto-δ (10⁻¹⁸) — so 100 spends of 0.01 add up to exactly 1.0; a spend is rounded up and a budget
down, so rounding never grants more than the budget. The integers are SQLite's 64-bit ones, so an
ε budget is at most :data:`MAX_BUDGET_EPSILON` (≈ 9.2e9).

Each operation opens its own short-lived connection, so a ``Ledger`` can be used from threads,
forked or spawned processes (it pickles as its path and identity), and a waiting writer retries for
``timeout`` seconds (SQLite's busy timeout) instead of failing.

File problems
-------------
Every problem with the file (missing directory, read-only file or directory, garbage bytes, a file
cut short, an SQLite file of another application, a newer schema, the file deleted or replaced while
the ledger is in use) raises :class:`~bayespriv.errors.LedgerError` naming the path and what to do;
nothing is spent. Only ``Ledger(path)`` (with ``create=True``, the default) creates a file: every
later operation opens the existing file (SQLite ``mode=rw``) and checks that it is the same ledger
(a random ``ledger_id`` kept in the file), so a ledger whose file vanished is never silently
replaced by an empty one that forgets the spent budget.

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
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_real, fail
from ..errors import BudgetExceededError, LedgerError, ParameterTypeError, ValidationError
from .epsilon import VariableRelease, epsilon_table

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

EPSILON_UNIT = Decimal("1e-9")  # nano-ε
DELTA_UNIT = Decimal("1e-18")  # atto-δ
_MAX_UNITS = 2**63 - 1  # SQLite INTEGER
_SCHEMA_VERSION = 2
_APPLICATION_ID = 0x42505256  # "BPRV" in the SQLite header (new files; version-1 files have 0)

#: The assumption recorded on release rows whose ε, δ are summed with others only by assuming
#: sequential composition (every Pufferfish mechanism; see the module docstring).
COMPOSITION_ASSUMPTION = "sequential_composition"

#: Mechanisms whose guarantee is differential privacy (for the neighbour relation they state) or
#: privacy on a subset of variables: sequential composition is a theorem for them.
_COMPOSING_MECHANISMS = frozenset({"SubsetCountMechanism", "GroupDP"})

# Version 1 of the schema; version 2 adds the columns of _V2_COLUMNS (see _install_schema).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS budgets (
    name TEXT PRIMARY KEY,
    epsilon_total INTEGER NOT NULL CHECK (epsilon_total >= 0),
    delta_total INTEGER NOT NULL CHECK (delta_total >= 0),
    epsilon_spent INTEGER NOT NULL DEFAULT 0 CHECK (epsilon_spent >= 0),
    delta_spent INTEGER NOT NULL DEFAULT 0 CHECK (delta_spent >= 0),
    updated_utc TEXT NOT NULL,
    CHECK (epsilon_spent <= epsilon_total AND delta_spent <= delta_total)
);
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    epsilon_units INTEGER NOT NULL,
    delta_units INTEGER NOT NULL,
    confidence REAL,
    assumptions TEXT NOT NULL,
    theorem TEXT NOT NULL,
    protected TEXT NOT NULL,
    variables TEXT NOT NULL,
    query TEXT,
    seeded INTEGER,
    calibration_hash TEXT,
    pid INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS charges (
    release_id INTEGER NOT NULL REFERENCES releases(id),
    budget TEXT NOT NULL REFERENCES budgets(name),
    epsilon_units INTEGER NOT NULL,
    delta_units INTEGER NOT NULL,
    PRIMARY KEY (release_id, budget)
);
CREATE TABLE IF NOT EXISTS refusals (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    protected TEXT NOT NULL,
    variables TEXT NOT NULL,
    query TEXT,
    budget TEXT,
    reason TEXT NOT NULL,
    pid INTEGER NOT NULL
);
"""

_V1_COLUMNS = {
    "meta": ("key", "value"),
    "budgets": ("name", "epsilon_total", "delta_total", "epsilon_spent", "delta_spent", "updated_utc"),
    "releases": ("id", "time_utc", "mechanism", "epsilon", "delta", "epsilon_units", "delta_units", "confidence",
                 "assumptions", "theorem", "protected", "variables", "query", "seeded", "calibration_hash", "pid"),
    "charges": ("release_id", "budget", "epsilon_units", "delta_units"),
    "refusals": ("id", "time_utc", "mechanism", "epsilon", "delta", "protected", "variables", "query", "budget",
                 "reason", "pid"),
}

# Added by version 2. Rows of a migrated version-1 ledger keep NULL in the assumption columns
# ("not recorded": the release predates the record), never a guessed value.
_V2_COLUMNS = (
    ("releases", "failed_assumptions", "TEXT"),
    ("releases", "unchecked_assumptions", "TEXT"),
    ("releases", "established", "INTEGER"),
    ("releases", "voided", "INTEGER NOT NULL DEFAULT 0"),
    ("releases", "void_reason", "TEXT"),
    ("releases", "voided_utc", "TEXT"),
)


def _units(value: float, unit: Decimal, rounding: str) -> int:
    # Decimal(repr(x)) is the shortest decimal that round-trips: 0.01 -> exactly 10_000_000 nano-ε.
    return int((Decimal(repr(float(value))) / unit).to_integral_value(rounding=rounding))


def _from_units(units: int, unit: Decimal) -> float:
    return float(Decimal(units) * unit)


def _largest_budget() -> float:
    x = float(Decimal(_MAX_UNITS) * EPSILON_UNIT)
    while _units(x, EPSILON_UNIT, ROUND_FLOOR) > _MAX_UNITS:
        x = math.nextafter(x, 0.0)
    return x


#: Largest ε budget the ledger can hold (2⁶³ − 1 nano-ε, as a float rounded down).
MAX_BUDGET_EPSILON = _largest_budget()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


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


def composes_unconditionally(mechanism: Any) -> bool:
    """True when summing ``mechanism``'s (ε, δ) with other releases is a theorem.

    A mechanism may say so itself with a boolean attribute ``composes_unconditionally``;
    otherwise it is True for differential-privacy mechanisms (``GroupDP``) and the count tables of
    privacy on a subset of variables (``SubsetCountMechanism``, Tan, Proposition 3.4), and False
    for every Pufferfish mechanism, whose rows then carry :data:`COMPOSITION_ASSUMPTION`.
    """
    declared = getattr(mechanism, "composes_unconditionally", None)
    if isinstance(declared, bool):
        return declared
    return type(mechanism).__name__ in _COMPOSING_MECHANISMS


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

    @property
    def established(self) -> bool:
        return not self.failed

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
                   query, chash)


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
        The file cannot be used as a ledger (see the module docstring); the message names the path
        and what to do.

    Notes
    -----
    Sums of (ε, δ) over releases are sequential composition: a theorem for DP and for privacy on
    a subset of variables, an *assumption* (``"sequential_composition"`` on the release row) for
    Pufferfish mechanisms — see the module docstring.

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
    >>> ledger.set_budget("income", epsilon=1.0, delta=1e-5)
    >>> df = pd.DataFrame({"income": [39.0, 40.0, 42.0]})
    >>> release = mech.release(df, ledger=ledger)   # checks, spends, then draws
    >>> ledger.spent("income")
    (0.5, 1e-06)
    >>> ledger.remaining("income")
    (0.5, 9e-06)
    >>> folder.cleanup()
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0, create: bool = True) -> None:
        self.path = _ledger_path(path)
        t = check_real("timeout", timeout)
        if not (t > 0 and math.isfinite(t)):
            raise fail("timeout", "a finite number of seconds > 0", timeout)
        self.timeout = t
        if not isinstance(create, bool):
            raise ParameterTypeError(f"create must be a bool; got {create!r} of type {type(create).__name__}")
        self._ledger_id: str | None = None
        self._open(create)

    # -- opening -----------------------------------------------------------------------------------
    def _open(self, create: bool) -> None:
        """Stages: the file system allows it; SQLite reads it; WAL; the schema is a ledger's (migrate)."""
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
            with self._transaction(con):
                self._ledger_id = _install_schema(con, self)

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
        """A connection to the existing file (``mode="rw"``: SQLite never creates it here).

        Every sqlite3 error inside becomes a :class:`LedgerError` naming the path; a file that is
        no longer this ledger (deleted, replaced) is refused before anything is read or written.
        """
        try:
            con = sqlite3.connect(f"{self.path.as_uri()}?mode={mode}", uri=True, timeout=self.timeout,
                                  isolation_level=None)
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc) from exc
        try:
            con.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            con.execute("PRAGMA synchronous = FULL")
            con.execute("PRAGMA foreign_keys = ON")
            if self._ledger_id is not None:
                self._check_identity(con)
            yield con
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc) from exc
        finally:
            con.close()

    def _check_identity(self, con: sqlite3.Connection) -> None:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is None or row[0] != self._ledger_id:
            raise self._error("is no longer the ledger this object opened (the file was replaced, e.g. deleted and "
                              "created again: its ledger_id changed)", "restore the original file from a backup; "
                              "to use the new file deliberately, open it with Ledger(path)")

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
            return self._error("no longer exists (deleted or moved while this Ledger was in use). A new, empty ledger "
                               "is NOT created, because it would forget the budget already spent",
                               "restore the file from a backup; to start a new ledger deliberately, call Ledger(path)")
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
    def set_budget(self, name: str, epsilon: float, delta: float = 0.0) -> None:
        """Set the total ε (and δ) that releases protecting ``name`` may spend.

        Can raise or lower an existing budget, but not below what is already spent. ε is at most
        :data:`MAX_BUDGET_EPSILON` (the ledger counts integer nano-ε in SQLite's 64-bit integers).
        """
        name = _budget_name(name)
        eps = check_real("epsilon", epsilon)
        if not (math.isfinite(eps) and eps >= 0):
            raise fail("epsilon", "a finite number >= 0", epsilon)
        if eps > MAX_BUDGET_EPSILON:
            raise fail("epsilon", f"at most {MAX_BUDGET_EPSILON!r} (the ledger counts integer nano-ε in 64 bits)", epsilon)
        d = check_real("delta", delta)
        if not 0.0 <= d < 1.0:
            raise fail("delta", "in [0, 1)", delta)
        e_units, d_units = _units(eps, EPSILON_UNIT, ROUND_FLOOR), _units(d, DELTA_UNIT, ROUND_FLOOR)
        with self._connect() as con, self._transaction(con):
            row = con.execute("SELECT epsilon_spent, delta_spent FROM budgets WHERE name = ?", (name,)).fetchone()
            if row is None:
                con.execute("INSERT INTO budgets (name, epsilon_total, delta_total, updated_utc) VALUES (?, ?, ?, ?)",
                            (name, e_units, d_units, _now()))
                return
            if e_units < row[0] or d_units < row[1]:
                raise fail(f"the budget of {name!r}", "at least what is already spent "
                           f"(ε={_from_units(row[0], EPSILON_UNIT):g}, δ={_from_units(row[1], DELTA_UNIT):g})", (eps, d))
            con.execute("UPDATE budgets SET epsilon_total = ?, delta_total = ?, updated_utc = ? WHERE name = ?",
                        (e_units, d_units, _now(), name))

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
        """(ε, δ) still available on budget ``name``."""
        et, dt, e, d = self._budget_row(name)
        return _from_units(et - e, EPSILON_UNIT), _from_units(dt - d, DELTA_UNIT)

    def budget(self, name: str) -> tuple[float, float]:
        """Total (ε, δ) of budget ``name``."""
        et, dt, _, _ = self._budget_row(name)
        return _from_units(et, EPSILON_UNIT), _from_units(dt, DELTA_UNIT)

    # -- check and spend -----------------------------------------------------------------------------
    def charge(self, mechanism: Any, *, seeded: bool | None = None) -> Charge:
        """Check and spend the budget of every attribute ``mechanism`` protects, atomically.

        Called by ``release`` / ``release_value`` before any noise is drawn. Spends the mechanism's
        guarantee (ε, δ) on each budget named in ``mechanism.protected`` and records the release —
        with the guarantee's failed and unchecked assumptions, whether it is established, and
        ``"sequential_composition"`` for Pufferfish mechanisms — or, when any budget is missing or
        would be exceeded, records a refusal, spends nothing on any budget, and raises
        (:class:`~bayespriv.BudgetExceededError`, or :class:`~bayespriv.ValidationError` for a
        missing budget). An ε beyond :data:`MAX_BUDGET_EPSILON` exceeds every budget.
        """
        req = _Request.of(mechanism)
        e_units = _units(req.epsilon, EPSILON_UNIT, ROUND_CEILING)
        d_units = _units(req.delta, DELTA_UNIT, ROUND_CEILING)
        with self._connect() as con, self._transaction(con):
            refusal = self._check_budgets(con, req, e_units, d_units)
            if refusal is None:
                rid = self._record_release(con, req, e_units, d_units, seeded)
        if refusal is not None:
            raise refusal  # after COMMIT: the refusal is recorded, nothing spent
        return Charge(rid, req.protected, req.epsilon, req.delta)

    def _check_budgets(self, con: sqlite3.Connection, req: _Request, e_units: int, d_units: int) -> Exception | None:
        """Inside the transaction: the first budget that refuses (recorded), or None."""
        for name in req.protected:
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
    def _record_release(con: sqlite3.Connection, req: _Request, e_units: int, d_units: int,
                        seeded: bool | None) -> int:
        """Inside the transaction: the release row, its charges and the budgets' counters."""
        cur = con.execute(
            "INSERT INTO releases (time_utc, mechanism, epsilon, delta, epsilon_units, delta_units, confidence, "
            "assumptions, theorem, protected, variables, query, seeded, calibration_hash, pid, "
            "failed_assumptions, unchecked_assumptions, established, voided) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (_now(), req.mechanism, req.epsilon, req.delta, e_units, d_units, req.confidence,
             json.dumps(req.assumptions), req.theorem, json.dumps(req.protected), json.dumps(req.variables),
             req.query, None if seeded is None else int(bool(seeded)), req.calibration_hash, os.getpid(),
             json.dumps(req.failed), json.dumps(req.unchecked), int(req.established)))
        rid = int(cur.lastrowid)
        for name in req.protected:
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
        """
        cols = ["time_utc", "mechanism", "epsilon", "delta", "confidence", "assumptions", "failed_assumptions",
                "unchecked_assumptions", "established", "theorem", "protected", "variables", "query", "seeded",
                "calibration_hash", "pid", "voided", "void_reason"]
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
        ``voided`` and ``refusals``. ``attrs["composition"]`` says in words what the sum means.
        """
        assumed = json.dumps(COMPOSITION_ASSUMPTION)
        with self._connect() as con:
            rows = con.execute(
                "SELECT b.name, b.epsilon_total, b.epsilon_spent, b.delta_total, b.delta_spent, "
                "COALESCE(SUM(r.voided = 0), 0), COALESCE(SUM(r.voided = 0 AND r.established = 0), 0), "
                "COALESCE(SUM(r.voided = 0 AND instr(r.assumptions, ?) > 0), 0), COALESCE(SUM(r.voided = 1), 0), "
                "(SELECT COUNT(*) FROM refusals f WHERE f.budget = b.name) "
                "FROM budgets b LEFT JOIN charges c ON c.budget = b.name LEFT JOIN releases r ON r.id = c.release_id "
                "GROUP BY b.name ORDER BY b.name", (assumed,)).fetchall()
        columns = ["epsilon budget", "epsilon spent", "epsilon remaining", "delta budget", "delta spent",
                   "delta remaining", "releases", "not established", "composition assumed", "voided", "refusals"]
        data = [(_from_units(et, EPSILON_UNIT), _from_units(es, EPSILON_UNIT), _from_units(et - es, EPSILON_UNIT),
                 _from_units(dt, DELTA_UNIT), _from_units(ds, DELTA_UNIT), _from_units(dt - ds, DELTA_UNIT),
                 int(n), int(bad), int(comp), int(void), int(ref))
                for _, et, es, dt, ds, n, bad, comp, void, ref in rows]
        out = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="budget"), columns=columns)
        out.attrs["composition"] = _COMPOSITION_NOTE
        return out

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

        For every budget: spent = sum of the charges of its releases not voided ≤ total; every
        release (voided or not) charged each budget it protects; a voided release has a reason;
        SQLite's own integrity check passes.
        """
        with self._connect() as con:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                raise ValidationError(f"ledger must pass SQLite's integrity check; got {ok!r}")
            live = ("COALESCE(SUM(CASE WHEN r.voided = 0 THEN c.{0} END), 0)")
            bad = con.execute(
                f"SELECT b.name, b.epsilon_spent, b.epsilon_total, {live.format('epsilon_units')}, "
                f"b.delta_spent, b.delta_total, {live.format('delta_units')} FROM budgets b "
                "LEFT JOIN charges c ON c.budget = b.name LEFT JOIN releases r ON r.id = c.release_id GROUP BY b.name "
                f"HAVING b.epsilon_spent != {live.format('epsilon_units')} OR b.delta_spent != {live.format('delta_units')} "
                "OR b.epsilon_spent > b.epsilon_total OR b.delta_spent > b.delta_total").fetchall()
            if bad:
                raise ValidationError("ledger budgets must equal the sum of the charges of releases not voided and "
                                      f"stay within total; got {bad!r}")
            rows = con.execute("SELECT id, protected, voided, void_reason FROM releases").fetchall()
            charged: dict[int, set] = {}
            for rid, budget in con.execute("SELECT release_id, budget FROM charges"):
                charged.setdefault(rid, set()).add(budget)
        for rid, prot, voided, why in rows:
            if set(json.loads(prot)) != charged.get(rid, set()):
                raise ValidationError(f"every release must charge each budget it protects; release {rid} did not")
            if voided and not why:
                raise ValidationError(f"every voided release must say why; release {rid} has no void_reason")

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
        if len(report) and report["releases"].sum():
            parts += ["<div><em>ε per variable (Tan, Propositions 3.3–3.5)</em></div>",
                      self.epsilon_table().to_html(float_format=fmt)]
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
    "The ledger adds ε and δ over the releases charged to a budget (sequential composition). That is a theorem "
    "for differential privacy and for privacy on a subset of variables (Tan, Proposition 3.4), but for Pufferfish "
    "mechanisms it holds only under conditions on the data model Θ (Kifer & Machanavajjhala 2014; Bai et al. 2026): "
    "rows marked 'sequential_composition' are summed under that assumption. Gaussian releases of several queries "
    "on the same data can be accounted jointly instead (bayespriv.accounting.composition)."
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


def _install_schema(con: sqlite3.Connection, ledger: Ledger) -> str:
    """Inside a transaction: refuse a foreign file, create or migrate to version 2, return the ledger id."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    app_id = con.execute("PRAGMA application_id").fetchone()[0]
    not_ledger = "is an SQLite database but not a bayespriv ledger ({})"
    remedy = "choose another path for the ledger (a bayespriv ledger is created in a new file)"
    if app_id not in (0, _APPLICATION_ID):
        raise ledger._error(not_ledger.format(f"application_id={app_id:#x}"), remedy)
    if tables and "meta" not in tables:
        raise ledger._error(not_ledger.format(f"tables {sorted(tables)!r}"), remedy)
    if "meta" in tables:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or not str(row[0]).isdigit():
            raise ledger._error(not_ledger.format("no schema_version in its meta table"), remedy)
        if int(row[0]) > _SCHEMA_VERSION:
            raise ledger._error(f"was written with a newer ledger schema (version {row[0]}; this bayespriv reads up "
                                f"to {_SCHEMA_VERSION})", "upgrade bayespriv")
    for stmt in filter(str.strip, _SCHEMA.split(";")):
        con.execute(stmt)
    present = {t: {r[1] for r in con.execute(f"PRAGMA table_info({t})")} for t in _V1_COLUMNS}
    for table, cols in _V1_COLUMNS.items():
        if not set(cols) <= present[table]:
            raise ledger._error(not_ledger.format(f"table {table!r} lacks {sorted(set(cols) - present[table])!r}"),
                                remedy)
    for table, col, decl in _V2_COLUMNS:  # migration from version 1 (ALTER TABLE is transactional in SQLite)
        if col not in present[table]:
            con.execute(f"ALTER TABLE {table} ADD COLUMN {col} {decl}")
    version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if version is None or version[0] != str(_SCHEMA_VERSION):
        con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(_SCHEMA_VERSION),))
    row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
    if row is None:
        row = (uuid.uuid4().hex,)
        con.execute("INSERT INTO meta VALUES ('ledger_id', ?)", row)
    if app_id == 0 and not tables:
        con.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
    return str(row[0])


def _budget_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterTypeError(f"name must be a non-empty string naming a budget; got {name!r}")
    return name
