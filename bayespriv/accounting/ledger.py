"""A privacy-budget ledger on SQLite that never overspends.

``Ledger(path)`` keeps, in one SQLite file,

* ``budgets``: the ε and δ budget of each protected attribute or variable and what is spent;
* ``releases``: every granted release (mechanism, guarantee, protected budgets, variables, query,
  UTC time, seeded flag, hash of the calibration), and ``charges``: what it took from each budget;
* ``refusals``: every release refused (budget exceeded or missing), which spent nothing.

Check-and-spend is one ``BEGIN IMMEDIATE`` transaction: SQLite then holds the database's write lock
from the first read, so two processes cannot both read "0.99 spent" and both spend 0.01. The
journal is WAL with ``synchronous=FULL``: a transaction that returned is on disk, and a process
killed in the middle of one leaves the database as it was before it (the spend, the release record
and the counters are written together or not at all). Amounts are integers — nano-ε (10⁻⁹) and
atto-δ (10⁻¹⁸) — so 100 spends of 0.01 add up to exactly 1.0; a spend is rounded up and a budget
down, so rounding never grants more than the budget.

Each operation opens its own short-lived connection, so a ``Ledger`` can be used from threads,
forked or spawned processes (it pickles as its path), and a waiting writer retries for ``timeout``
seconds (SQLite's busy timeout) instead of failing.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import sqlite3
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
from ..errors import BudgetExceededError, ParameterTypeError, ValidationError
from .epsilon import VariableRelease, epsilon_table

__all__ = ["Ledger", "Charge", "calibration_hash", "EPSILON_UNIT", "DELTA_UNIT"]

EPSILON_UNIT = Decimal("1e-9")  # nano-ε
DELTA_UNIT = Decimal("1e-18")  # atto-δ
_SCHEMA_VERSION = 1

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


def _units(value: float, unit: Decimal, rounding: str) -> int:
    # Decimal(repr(x)) is the shortest decimal that round-trips: 0.01 -> exactly 10_000_000 nano-ε.
    return int((Decimal(repr(float(value))) / unit).to_integral_value(rounding=rounding))


def _from_units(units: int, unit: Decimal) -> float:
    return float(Decimal(units) * unit)


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
    query = getattr(calibration, "query", None)
    h.update(repr(getattr(query, "name", None)).encode())
    return h.hexdigest()


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
    theorem: str
    protected: tuple[str, ...]
    variables: tuple[str, ...]
    query: str | None
    calibration_hash: str | None

    @classmethod
    def of(cls, mechanism: Any) -> "_Request":
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
        return cls(type(mechanism).__name__, eps, delta, g.confidence, tuple(g.assumptions),
                   str(getattr(g, "theorem", "")), protected, tuple(getattr(mechanism, "variables", ()) or ()),
                   query, chash)


class Ledger:
    """Privacy budgets per protected attribute or variable, in a SQLite file.

    Parameters
    ----------
    path : str or path-like
        The database file (created if missing). Use one file per dataset.
    timeout : float
        Seconds a writer waits for another process's transaction before failing.

    Examples
    --------
    >>> ledger = Ledger(tmp / "budget.sqlite")                          # doctest: +SKIP
    >>> ledger.set_budget("income", epsilon=1.0)                        # doctest: +SKIP
    >>> mech.release(df, ledger=ledger)   # checks, spends, then draws  # doctest: +SKIP
    >>> ledger.spent("income")                                          # doctest: +SKIP
    (0.01, 0.0)
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise ParameterTypeError(f"path must be a file path; got {type(path).__name__}")
        text = os.fspath(path)
        if text in ("", ":memory:") or text.startswith("file::memory:"):
            raise fail("path", "a file path (an in-memory database cannot be shared or survive a crash)", text)
        self.path = Path(text).resolve()
        if self.path.is_dir():
            raise fail("path", "a file, not a directory", str(self.path))
        t = check_real("timeout", timeout)
        if not (t > 0 and math.isfinite(t)):
            raise fail("timeout", "a finite number of seconds > 0", timeout)
        self.timeout = t
        with self._connect() as con:
            mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise ValidationError(f"path must be on a file system where SQLite can use WAL; got journal_mode={mode!r}")
            with self._transaction(con):
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    con.execute(stmt)
                row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if row is None:
                    con.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(_SCHEMA_VERSION),))
                elif int(row[0]) != _SCHEMA_VERSION:
                    raise ValidationError(f"path must hold a ledger of schema version {_SCHEMA_VERSION}; got version {row[0]}")

    # -- connections -------------------------------------------------------------------------------
    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            con.execute("PRAGMA synchronous = FULL")
            con.execute("PRAGMA foreign_keys = ON")
            yield con
        finally:
            con.close()

    @staticmethod
    @contextmanager
    def _transaction(con: sqlite3.Connection) -> Iterator[None]:
        con.execute("BEGIN IMMEDIATE")  # take the write lock before reading what is spent
        try:
            yield
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def __reduce__(self):
        return (type(self), (str(self.path),), {"timeout": self.timeout})

    def __setstate__(self, state: dict) -> None:
        self.timeout = state.get("timeout", self.timeout)

    # -- budgets -----------------------------------------------------------------------------------
    def set_budget(self, name: str, epsilon: float, delta: float = 0.0) -> None:
        """Set the total ε (and δ) that releases protecting ``name`` may spend.

        Can raise or lower an existing budget, but not below what is already spent.
        """
        name = _budget_name(name)
        eps = check_real("epsilon", epsilon)
        if not (math.isfinite(eps) and eps >= 0):
            raise fail("epsilon", "a finite number >= 0", epsilon)
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
        """(ε, δ) spent on budget ``name`` (exact: 100 spends of 0.01 give 1.0)."""
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
        guarantee (ε, δ) on each budget named in ``mechanism.protected`` and records the release, or
        — when any budget is missing or would be exceeded — records a refusal, spends nothing on
        any budget, and raises (:class:`~bayespriv.BudgetExceededError`, or
        :class:`~bayespriv.ValidationError` for a missing budget).
        """
        req = _Request.of(mechanism)
        e_units = _units(req.epsilon, EPSILON_UNIT, ROUND_CEILING)
        d_units = _units(req.delta, DELTA_UNIT, ROUND_CEILING)
        refusal: Exception | None = None
        with self._connect() as con, self._transaction(con):
            rows = {}
            for name in req.protected:
                row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets "
                                  "WHERE name = ?", (name,)).fetchone()
                if row is None:
                    self._refuse(con, req, name, "missing budget")
                    refusal = ValidationError(
                        f"mechanism must charge budgets that exist; got protected attribute {name!r} with no budget "
                        f"in {str(self.path)!r} (call ledger.set_budget({name!r}, epsilon=...) first)")
                    break
                et, dt, es, ds = row
                if es + e_units > et or ds + d_units > dt:
                    self._refuse(con, req, name, "budget exceeded")
                    refusal = BudgetExceededError(
                        f"releasing {req.mechanism} (ε={req.epsilon:g}, δ={req.delta:g}) would exceed the budget of "
                        f"{name!r}: spent ε={_from_units(es, EPSILON_UNIT):g}, δ={_from_units(ds, DELTA_UNIT):g} of "
                        f"ε={_from_units(et, EPSILON_UNIT):g}, δ={_from_units(dt, DELTA_UNIT):g}; nothing was spent")
                    break
                rows[name] = row
            if refusal is None:
                cur = con.execute(
                    "INSERT INTO releases (time_utc, mechanism, epsilon, delta, epsilon_units, delta_units, confidence, "
                    "assumptions, theorem, protected, variables, query, seeded, calibration_hash, pid) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (_now(), req.mechanism, req.epsilon, req.delta, e_units, d_units, req.confidence,
                     json.dumps(req.assumptions), req.theorem, json.dumps(req.protected), json.dumps(req.variables),
                     req.query, None if seeded is None else int(bool(seeded)), req.calibration_hash, os.getpid()))
                rid = int(cur.lastrowid)
                for name in req.protected:
                    con.execute("INSERT INTO charges VALUES (?, ?, ?, ?)", (rid, name, e_units, d_units))
                    con.execute("UPDATE budgets SET epsilon_spent = epsilon_spent + ?, delta_spent = delta_spent + ?, "
                                "updated_utc = ? WHERE name = ?", (e_units, d_units, _now(), name))
        if refusal is not None:
            raise refusal  # after COMMIT: the refusal is recorded, nothing spent
        return Charge(rid, req.protected, req.epsilon, req.delta)

    @staticmethod
    def _refuse(con: sqlite3.Connection, req: _Request, budget: str, reason: str) -> None:
        con.execute("INSERT INTO refusals (time_utc, mechanism, epsilon, delta, protected, variables, query, budget, "
                    "reason, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (_now(), req.mechanism, req.epsilon, req.delta, json.dumps(req.protected),
                     json.dumps(req.variables), req.query, budget, reason, os.getpid()))

    # -- reading -------------------------------------------------------------------------------------
    def releases(self) -> pd.DataFrame:
        """Every granted release, oldest first (index: release id)."""
        cols = ["time_utc", "mechanism", "epsilon", "delta", "confidence", "assumptions", "theorem", "protected",
                "variables", "query", "seeded", "calibration_hash", "pid"]
        with self._connect() as con:
            rows = con.execute(f"SELECT id, {', '.join(cols)} FROM releases ORDER BY id").fetchall()
        df = pd.DataFrame(rows, columns=["id"] + cols).set_index("id")
        for c in ("assumptions", "protected", "variables"):
            df[c] = [tuple(json.loads(v)) for v in df[c]]
        df["seeded"] = pd.array([None if v is None else bool(v) for v in df["seeded"]], dtype="boolean")
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
        """Spent and remaining (ε, δ) per budget, with the number of releases and refusals."""
        with self._connect() as con:
            rows = con.execute(
                "SELECT b.name, b.epsilon_total, b.epsilon_spent, b.delta_total, b.delta_spent, "
                "(SELECT COUNT(*) FROM charges c WHERE c.budget = b.name), "
                "(SELECT COUNT(*) FROM refusals r WHERE r.budget = b.name) FROM budgets b ORDER BY b.name").fetchall()
        data = [{
            "epsilon budget": _from_units(et, EPSILON_UNIT), "epsilon spent": _from_units(es, EPSILON_UNIT),
            "epsilon remaining": _from_units(et - es, EPSILON_UNIT),
            "delta budget": _from_units(dt, DELTA_UNIT), "delta spent": _from_units(ds, DELTA_UNIT),
            "delta remaining": _from_units(dt - ds, DELTA_UNIT), "releases": n, "refusals": r,
        } for _, et, es, dt, ds, n, r in rows]
        return pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="budget"),
                            columns=["epsilon budget", "epsilon spent", "epsilon remaining", "delta budget",
                                     "delta spent", "delta remaining", "releases", "refusals"])

    def variable_releases(self) -> list[VariableRelease]:
        """The recorded releases as :class:`VariableRelease` records (for :func:`epsilon_table`)."""
        df = self.releases()
        out = []
        for rid, r in df.iterrows():
            variables = tuple(dict.fromkeys(r["variables"] + r["protected"])) if r["variables"] else None
            label = f"#{rid} {r['mechanism']}" + (f" ({r['query']})" if r["query"] else "")
            out.append(VariableRelease(label, r["epsilon"], variables, r["protected"], r["delta"]))
        return out

    def epsilon_table(self, variables: Any = None, *, total: str | None = "Total") -> pd.DataFrame:
        """ε of each recorded release on each variable, and composed (Propositions 3.3–3.5)."""
        return epsilon_table(self.variable_releases(), variables, total=total)

    def verify(self) -> None:
        """Check the ledger's invariants; raise :class:`~bayespriv.ValidationError` if one fails.

        For every budget: spent = sum of its charges ≤ total; every release charged each budget it
        protects; SQLite's own integrity check passes.
        """
        with self._connect() as con:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                raise ValidationError(f"ledger must pass SQLite's integrity check; got {ok!r}")
            bad = con.execute(
                "SELECT b.name, b.epsilon_spent, b.epsilon_total, COALESCE(SUM(c.epsilon_units), 0), "
                "b.delta_spent, b.delta_total, COALESCE(SUM(c.delta_units), 0) FROM budgets b "
                "LEFT JOIN charges c ON c.budget = b.name GROUP BY b.name "
                "HAVING b.epsilon_spent != COALESCE(SUM(c.epsilon_units), 0) "
                "OR b.delta_spent != COALESCE(SUM(c.delta_units), 0) "
                "OR b.epsilon_spent > b.epsilon_total OR b.delta_spent > b.delta_total").fetchall()
            if bad:
                raise ValidationError(f"ledger budgets must equal the sum of their charges and stay within total; got {bad!r}")
            rows = con.execute("SELECT id, protected FROM releases").fetchall()
            charged: dict[int, set] = {}
            for rid, budget in con.execute("SELECT release_id, budget FROM charges"):
                charged.setdefault(rid, set()).add(budget)
            for rid, prot in rows:
                if set(json.loads(prot)) != charged.get(rid, set()):
                    raise ValidationError(f"every release must charge each budget it protects; release {rid} did not")

    # -- presentation ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def _repr_html_(self) -> str:
        report = self.report()
        n_rel = int(report["releases"].sum()) if len(report) else 0
        parts = [f"<div><strong>Ledger</strong> <code>{html.escape(str(self.path))}</code></div>",
                 "<div><em>Budget per protected attribute</em></div>",
                 report.to_html(float_format=lambda x: f"{x:.6g}")]
        if n_rel:
            parts += ["<div><em>ε per variable (Tan, Propositions 3.3–3.5)</em></div>",
                      self.epsilon_table().to_html(float_format=lambda x: f"{x:.6g}")]
        return "\n".join(parts)


def _budget_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterTypeError(f"name must be a non-empty string naming a budget; got {name!r}")
    return name
