"""The ledger's storage: units of ε and δ, the SQLite schema, its migrations, the exact check of a file's schema
at open and the invariants that :meth:`Ledger.verify <bayespriv.ledger.Ledger.verify>` checks.

Budgets are stored as integers (nano-ε, atto-δ): float sums of 100 × 0.01 exceed 1.0. Every statement here
runs on a connection the :class:`~bayespriv.ledger.Ledger` opened, inside its transactions.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

__all__ = ["EPSILON_UNIT", "DELTA_UNIT"]

EPSILON_UNIT = Decimal("1e-9")  # nano-ε
DELTA_UNIT = Decimal("1e-18")  # atto-δ
MAX_UNITS = 2**63 - 1  # SQLite INTEGER
SCHEMA_VERSION = 4
_APPLICATION_ID = 0x42505256  # "BPRV" in the SQLite header (new files; version-1 files have 0)

# Version 1 of the schema; version 2 adds the columns of _V2_COLUMNS, version 3 runs _V3_STEPS (see
# _migrate). A new file is created through the same steps, so its schema text is, byte for byte, that of
# a migrated one, and the open-time check compares a file with exactly one expected schema per version.
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

# Version 3: budgets change only on purpose and every change is an audit row (budget_events);
# a budget may be lowered below what is spent (its table no longer has the CHECK spent <= total of
# versions 1-2, so it is rebuilt: SQLite cannot drop a constraint); release rows record the SHA-256
# of the calibration file (``calibration_content_hash``; NULL for in-memory calibrations and rows
# written before version 3). Rebuilding ``budgets`` keeps its name, so the foreign keys of
# ``charges`` still point at it.
_V3_STEPS = (
    """CREATE TABLE budgets_v3 (
    name TEXT PRIMARY KEY,
    epsilon_total INTEGER NOT NULL CHECK (epsilon_total >= 0),
    delta_total INTEGER NOT NULL CHECK (delta_total >= 0),
    epsilon_spent INTEGER NOT NULL DEFAULT 0 CHECK (epsilon_spent >= 0),
    delta_spent INTEGER NOT NULL DEFAULT 0 CHECK (delta_spent >= 0),
    updated_utc TEXT NOT NULL
)""",
    "INSERT INTO budgets_v3 (name, epsilon_total, delta_total, epsilon_spent, delta_spent, updated_utc) "
    "SELECT name, epsilon_total, delta_total, epsilon_spent, delta_spent, updated_utc FROM budgets",
    "DROP TABLE budgets",
    "ALTER TABLE budgets_v3 RENAME TO budgets",
    "ALTER TABLE releases ADD COLUMN calibration_content_hash TEXT",
    """CREATE TABLE budget_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time_utc TEXT NOT NULL,
    name TEXT NOT NULL REFERENCES budgets(name),
    action TEXT NOT NULL,
    old_epsilon_units INTEGER,
    old_delta_units INTEGER,
    new_epsilon_units INTEGER NOT NULL CHECK (new_epsilon_units >= 0),
    new_delta_units INTEGER NOT NULL CHECK (new_delta_units >= 0),
    epsilon_spent_units INTEGER NOT NULL,
    delta_spent_units INTEGER NOT NULL,
    reason TEXT,
    pid INTEGER NOT NULL
)""",
    # The open-time check sums the charges per budget and reads the voided releases: both stay a
    # streaming pass (no sort of the charges, no scan of the releases) with these two indexes.
    "CREATE INDEX charges_by_budget ON charges(budget, epsilon_units, delta_units)",
    "CREATE INDEX releases_voided ON releases(id) WHERE voided != 0",
)

# Version 4: releases on the same data are accounted together (bayespriv.ledger.joint). A row records the
# dataset it was made on, how it composed (``dp``, ``subset``, ``chain``, ``joint``, ``independent`` or NULL:
# summed under the sequential-composition assumption), what joint accounting needs of it later (the query's
# fingerprint, the Gaussian noise covariance as JSON, the secret pairs) and, for joint rows, the joint
# guarantee per budget after it and the units it was charged ({budget: {"epsilon", "delta", "units"}}).
_V4_COLUMNS = (
    ("releases", "dataset", "TEXT"),
    ("releases", "composition", "TEXT"),
    ("releases", "query_fingerprint", "TEXT"),
    ("releases", "noise", "TEXT"),
    ("releases", "pairs", "TEXT"),
    ("releases", "joint", "TEXT"),
)

#: ``budget_events.action`` of the row recorded, at migration, for a budget of a version-1/2 ledger
#: (its earlier history was not recorded).
_MIGRATED = "existing at migration"

def to_units(value: float, unit: Decimal, rounding: str) -> int:
    """``value`` in whole ``unit`` (nano-ε, atto-δ), rounded as ``rounding`` says (a ``decimal`` rounding mode)."""
    # Decimal(repr(x)) is the shortest decimal that round-trips: 0.01 -> exactly 10_000_000 nano-ε.
    return int((Decimal(repr(float(value))) / unit).to_integral_value(rounding=rounding))


def from_units(units: int, unit: Decimal) -> float:
    """The float of ``units`` whole ``unit``."""
    return float(Decimal(units) * unit)


def utc_now() -> str:
    """The time now in UTC, ISO 8601 to the microsecond (what the ledger's rows record)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# -- the schema: creation, migration and the exact check at open ---------------------------------------------------
def _migrate(con: sqlite3.Connection, version: int, now: str, target: int = SCHEMA_VERSION) -> None:
    """Inside a transaction, with foreign keys off: bring a ledger of schema ``version`` to ``target``.

    A new file is created as version 1 and migrated through here too (see :func:`_create`), and so is
    the in-memory model of each version that the open-time check compares files with.
    """
    if version < 2 <= target:
        for table, col, decl in _V2_COLUMNS:  # ALTER TABLE is transactional in SQLite
            con.execute(f"ALTER TABLE {table} ADD COLUMN {col} {decl}")
    if version < 3 <= target:
        for stmt in _V3_STEPS:
            con.execute(stmt)
        con.execute("INSERT INTO budget_events (time_utc, name, action, old_epsilon_units, old_delta_units, "
                    "new_epsilon_units, new_delta_units, epsilon_spent_units, delta_spent_units, reason, pid) "
                    "SELECT ?, name, ?, NULL, NULL, epsilon_total, delta_total, epsilon_spent, delta_spent, ?, ? "
                    "FROM budgets ORDER BY name",
                    (now, _MIGRATED, f"ledger migrated from schema version {version}; earlier changes of this budget "
                                     "were not recorded", os.getpid()))
    if version < 4 <= target:
        for table, col, decl in _V4_COLUMNS:
            con.execute(f"ALTER TABLE {table} ADD COLUMN {col} {decl}")
        con.execute("CREATE INDEX releases_by_dataset ON releases(dataset, composition) WHERE voided = 0")


def _create(con: sqlite3.Connection, now: str) -> None:
    """Inside a transaction: the tables of an empty database (version 1, then every migration)."""
    for stmt in filter(str.strip, _SCHEMA.split(";")):
        con.execute(stmt)
    _migrate(con, 1, now)


def _normal_sql(sql: str | None) -> str | None:
    """SQL text up to what SQLite ignores: whitespace, letter case, quotes around plain identifiers.

    Case folding is safe here because the ledger's own schema has no string literals: a file whose
    text differs from it only in case has the same tables.
    """
    if sql is None:
        return None
    text = re.sub(r"\s+", " ", sql.strip())
    text = re.sub(r"\s*([(),])\s*", r"\1", text)
    text = re.sub(r'"([A-Za-z_][A-Za-z0-9_]*)"', r"\1", text)
    return text.casefold()


_Schema = dict[tuple[str, str], tuple[str, str, str | None]]  # (type, folded name) -> (name, table, sql)


def _schema_of(con: sqlite3.Connection) -> _Schema:
    return {(kind, name.casefold()): (name, table, sql)
            for kind, name, table, sql in con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")}


@functools.lru_cache(maxsize=None)
def _expected_schema(version: int) -> _Schema:
    """What a ledger of schema ``version`` holds in ``sqlite_master``: built once per process in memory."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for stmt in filter(str.strip, _SCHEMA.split(";")):
            con.execute(stmt)
        _migrate(con, 1, utc_now(), target=version)
        return _schema_of(con)
    finally:
        con.close()


_KIND_ORDER = {"trigger": 0, "view": 1, "index": 2, "table": 3}


def schema_problem(con: sqlite3.Connection, version: int) -> str | None:
    """How the file's ``sqlite_master`` differs from a version-``version`` ledger's, or None.

    Every object counts — tables, indexes, triggers, views — by type, name, table and SQL text
    (normalised by :func:`_normal_sql`): an added trigger can rewrite what is spent after each
    update, an added view or index is not the library's, a changed table may drop a constraint.
    """
    found, expected = _schema_of(con), _expected_schema(version)
    clip = lambda sql: (sql if len(sql) <= 240 else sql[:240] + " …") if sql else "(no SQL)"  # noqa: E731
    what = f"a bayespriv ledger (schema version {version})"
    for key in sorted(found.keys() - expected.keys(), key=lambda k: (_KIND_ORDER.get(k[0], 9), k[1])):
        name, table, sql = found[key]
        on = f" on table {table!r}" if key[0] in ("trigger", "index") else ""
        return f"holds {key[0]} {name!r}{on}, which {what} does not have: {clip(sql)}"
    for key in sorted(found.keys() & expected.keys(), key=lambda k: (_KIND_ORDER.get(k[0], 9), k[1])):
        name, table, sql = found[key]
        _, e_table, e_sql = expected[key]
        got, want = _normal_sql(sql), _normal_sql(e_sql)
        if table.casefold() != e_table.casefold() or got != want:
            at = next((i for i, (a, b) in enumerate(zip(got or "", want or "")) if a != b),
                      min(len(got or ""), len(want or "")))
            window = lambda text: ("…" if at > 60 else "") + (text or "")[max(at - 60, 0):at + 120]  # noqa: E731
            return f"holds {key[0]} {name!r} defined otherwise than in {what}: {window(got)} (expected: {window(want)})"
    for key in sorted(expected.keys() - found.keys(), key=lambda k: (_KIND_ORDER.get(k[0], 9), k[1])):
        return f"lacks the {key[0]} {expected[key][0]!r} of {what}"
    return None


def _stored_version(con: sqlite3.Connection, owner: Any, not_ledger: str, remedy: str) -> int:
    try:
        row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError as exc:  # a table named meta, but not ours
        raise owner.error(not_ledger.format(f"its meta table cannot be read: {exc}"), remedy) from exc
    if row is None or not str(row[0]).isdigit() or int(row[0]) < 1:
        raise owner.error(not_ledger.format("no schema_version in its meta table"), remedy)
    if int(row[0]) > SCHEMA_VERSION:
        raise owner.error(f"was written with a newer ledger schema (version {row[0]}; this bayespriv reads up "
                          f"to {SCHEMA_VERSION})", "upgrade bayespriv")
    return int(row[0])


ALTERED_REMEDY = ("restore the file from a backup. A ledger whose schema was changed cannot be trusted to count the "
                  "budget (a trigger or a changed table can rewrite what was spent); inspect it with the sqlite3 shell "
                  "before removing anything")


def install_schema(con: sqlite3.Connection, owner: Any) -> str:
    """Inside a ``BEGIN IMMEDIATE`` transaction with foreign keys off: refuse a foreign or altered file,
    create or migrate it to the current version, check its invariants, return the ledger id.

    ``owner`` is the :class:`~bayespriv.ledger.ledger_connection.LedgerConnection` that opened ``con``: its
    ``error(problem, remedy)`` makes the :class:`~bayespriv.errors.LedgerError` naming the file.

    An existing file is accepted only when its ``sqlite_master`` is exactly that of a ledger of the
    version its ``meta`` table states (:func:`schema_problem`); older versions are then migrated in
    the same transaction (all or nothing) and must come out exactly as the current schema.
    """
    objects = con.execute("SELECT type, name FROM sqlite_master").fetchall()
    tables = sorted(n for t, n in objects if t == "table" and not n.startswith("sqlite_"))
    app_id = con.execute("PRAGMA application_id").fetchone()[0]
    not_ledger = "is an SQLite database but not a bayespriv ledger ({})"
    remedy = "choose another path for the ledger (a bayespriv ledger is created in a new file)"
    if app_id not in (0, _APPLICATION_ID):
        raise owner.error(not_ledger.format(f"application_id={app_id:#x}"), remedy)
    now = utc_now()
    if not objects:
        _create(con, now)
        con.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        if app_id == 0:
            con.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
    else:
        if "meta" not in tables:
            listed = f"tables {tables!r}" if tables else f"objects {sorted(n for _, n in objects)!r}"
            raise owner.error(not_ledger.format(listed), remedy)
        version = _stored_version(con, owner, not_ledger, remedy)
        problem = schema_problem(con, version)
        if problem is not None:
            raise owner.error(problem, ALTERED_REMEDY)
        if version < SCHEMA_VERSION:
            _migrate(con, version, now)
            con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
            problem = schema_problem(con, SCHEMA_VERSION)
            dangling = con.execute("PRAGMA foreign_key_check").fetchone()
            if problem is not None or dangling is not None:  # pragma: no cover - a bug of the migration itself
                raise owner.error(f"could not be migrated to schema version {SCHEMA_VERSION} "
                                  f"({problem or f'foreign key check: {dangling!r}'})",
                                  "report this with the file; it was left unchanged")
    row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
    if row is None:
        row = (uuid.uuid4().hex,)
        con.execute("INSERT INTO meta VALUES ('ledger_id', ?)", row)
    problem = invariant_problem(con)
    if problem is not None:
        raise owner.error(f"fails a ledger invariant: {problem}", "restore it from a backup; do not start a new "
                          "ledger in its place, since it holds the spent budget")
    return str(row[0])


def epsilon_text(units: int) -> str:
    """ε of ``units`` nano-ε, as messages show it."""
    return f"{from_units(units, EPSILON_UNIT):g}"


def delta_text(units: int) -> str:
    """δ of ``units`` atto-δ, as messages show it."""
    return f"{from_units(units, DELTA_UNIT):g}"


def invariant_problem(con: sqlite3.Connection, *, thorough: bool = False) -> str | None:
    """The first broken invariant of the ledger's rows, or None.

    Always (at every open, so one streaming pass over the index of the charges per budget, one over
    the voided releases, and a few small queries — about 2 ms for 10,000 releases here):

    * ``meta`` holds only ``schema_version`` and ``ledger_id``;
    * every budget's spent (ε, δ) equals the sum of its charges minus those of voided releases, and
      every charge names a budget; a voided release says why;
    * every budget's totals are those of its last ``budget_events`` row, and spent exceeds total only
      when that row lowered the budget below what was spent and nothing was spent since.

    With ``thorough`` (:meth:`Ledger.verify`), also: the releases protect, in all, as many budgets as
    there are charges; every charge belongs to a release; every release charged exactly the budgets
    it protects, each with its own (ε, δ) units.
    """
    problem = _meta_problem(con) or _spent_problem(con) or _budget_event_problem(con)
    if problem is not None or not thorough:
        return problem
    return _release_charge_problem(con)


def _meta_problem(con: sqlite3.Connection) -> str | None:
    """A key of ``meta`` other than ``schema_version`` and ``ledger_id``, described, or None."""
    extra = con.execute("SELECT key FROM meta WHERE key NOT IN ('schema_version', 'ledger_id') LIMIT 1").fetchone()
    if extra is not None:
        return f"its meta table holds the unknown key {extra[0]!r}"
    return None


@dataclass(frozen=True)
class _NetCharges:
    """The (ε, δ) units charged to each budget by releases not voided, and the first voided release
    that does not say why (its id, or None)."""

    units: dict[str, tuple[int, int]]
    unexplained_void: int | None


def _net_charges(con: sqlite3.Connection) -> _NetCharges:
    """Sum the charges per budget, then take back those of voided releases (one pass over them)."""
    charged = {b: [e, d] for b, e, d in con.execute(
        "SELECT budget, SUM(epsilon_units), SUM(delta_units) FROM charges GROUP BY budget")}
    unexplained = None
    for rid, why, b, e, d in con.execute(  # one pass over the releases: the voided ones and their charges
            "SELECT r.id, r.void_reason, c.budget, c.epsilon_units, c.delta_units FROM releases r "
            "LEFT JOIN charges c ON c.release_id = r.id WHERE r.voided != 0"):
        if not (why or "").strip() and unexplained is None:
            unexplained = rid
        if b is not None:
            charged[b][0] -= e
            charged[b][1] -= d
    return _NetCharges({b: (e, d) for b, (e, d) in charged.items()}, unexplained)


def _spent_problem(con: sqlite3.Connection) -> str | None:
    """A charge to no budget, a budget whose spent is not its net charges, or a voided release
    without a reason, described (in that order), or None."""
    spent = {name: (es, ds) for name, _, _, es, ds in con.execute(
        "SELECT name, epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets")}
    net = _net_charges(con)
    for b in net.units.keys() - spent.keys():
        return f"charges name {b!r}, which is not a budget"
    for name, (es, ds) in spent.items():
        ce, cd = net.units.get(name, (0, 0))
        if (es, ds) != (ce, cd):
            return (f"budget {name!r} records ε={epsilon_text(es)}, δ={delta_text(ds)} spent, but the charges of its "
                    f"releases not voided add up to ε={epsilon_text(ce)}, δ={delta_text(cd)}")
    if net.unexplained_void is not None:
        return f"voided release {net.unexplained_void} does not say why (no void_reason)"
    return None


def _budget_event_problem(con: sqlite3.Connection) -> str | None:
    """A budget whose totals or overspending its last ``budget_events`` row does not explain, or a
    budget event of no budget, described, or None."""
    for name, et, dt, es, ds, eid, ne, nd, se, sd in con.execute(
            "SELECT b.name, b.epsilon_total, b.delta_total, b.epsilon_spent, b.delta_spent, e.id, e.new_epsilon_units, "
            "e.new_delta_units, e.epsilon_spent_units, e.delta_spent_units FROM budgets b LEFT JOIN budget_events e "
            "ON e.id = (SELECT MAX(x.id) FROM budget_events x WHERE x.name = b.name)"):
        if eid is None:
            return f"budget {name!r} has no budget_events row (its creation was not recorded)"
        if (ne, nd) != (et, dt):
            return (f"budget {name!r} has totals ε={epsilon_text(et)}, δ={delta_text(dt)}, but its last recorded change "
                    f"(budget event {eid}) set ε={epsilon_text(ne)}, δ={delta_text(nd)}")
        if (es > et or ds > dt) and not ((se > ne or sd > nd) and es <= se and ds <= sd):
            return (f"budget {name!r} has spent ε={epsilon_text(es)}, δ={delta_text(ds)} of ε={epsilon_text(et)}, "
                    f"δ={delta_text(dt)}, more than its total, without a recorded change that lowered it below what "
                    "was spent")
    row = con.execute("SELECT name FROM budget_events WHERE name NOT IN (SELECT name FROM budgets) LIMIT 1").fetchone()
    if row is not None:
        return f"a budget event names {row[0]!r}, which is not a budget"
    return None


def _release_charge_problem(con: sqlite3.Connection) -> str | None:
    """The thorough checks: the charges are exactly those the releases' protected budgets call for
    (count, owner, and each one's (ε, δ) units); the first mismatch described, or None."""
    n_protected = con.execute("SELECT COALESCE(SUM(CASE WHEN json_valid(protected) THEN json_array_length(protected) "
                              "ELSE -1e18 END), 0) FROM releases").fetchone()[0]
    n_charges = con.execute("SELECT COUNT(*) FROM charges").fetchone()[0]
    if n_protected != n_charges:
        return (f"the releases protect {n_protected:g} budgets in all (or a protected list is not JSON), but there are "
                f"{n_charges} charges")
    row = con.execute("SELECT c.release_id, c.budget FROM charges c WHERE NOT EXISTS "
                      "(SELECT 1 FROM releases r WHERE r.id = c.release_id) LIMIT 1").fetchone()
    if row is not None:
        return f"a charge (release {row[0]}, budget {row[1]!r}) belongs to no release"
    row = con.execute(
        "SELECT r.id FROM releases r WHERE CASE WHEN json_valid(r.protected) AND json_type(r.protected) = 'array' "
        "THEN json_array_length(r.protected) != (SELECT COUNT(*) FROM charges c WHERE c.release_id = r.id) "
        "OR EXISTS (SELECT 1 FROM json_each(r.protected) j WHERE NOT EXISTS (SELECT 1 FROM charges c WHERE "
        "c.release_id = r.id AND c.budget = j.value AND c.delta_units = r.delta_units AND c.epsilon_units = "
        "CASE WHEN r.joint IS NULL THEN r.epsilon_units "
        "ELSE json_extract(r.joint, '$.' || json_quote(j.value) || '.units') END)) ELSE 1 END LIMIT 1").fetchone()
    if row is not None:
        return (f"release {row[0]} did not charge exactly each budget it protects, with its own δ and its own ε "
                "(or, accounted jointly, the increase of the joint ε it recorded)")
    return None
