"""The ledger file is checked at open: its schema must be exactly the library's (an added trigger, view or
index, a changed table) and its rows must keep the cheap invariants; older schemas (the ledgers of earlier
bayespriv versions) are migrated in one transaction and nothing else is accepted."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import bayespriv as bp
from bayespriv.ledger import Ledger
from bayespriv.ledger import ledger_schema as ledger_module
from bayespriv.errors import LedgerError

HERE = Path(__file__).resolve().parent
MAIN_V2 = HERE / "data" / "ledger_v2_main.db"  # written by bayespriv before budget_events (schema version 2)
from tests.ledger import _ledger_workers as workers


@dataclass(frozen=True)
class FakeGuarantee:
    epsilon: float
    delta: float = 0.0
    confidence: float | None = 1.0
    assumptions: tuple[str, ...] = ()
    theorem: str = "a theorem"


@dataclass(frozen=True)
class FakeMech:
    guarantee: object
    protected: tuple[str, ...] = ("income",)
    variables: tuple[str, ...] = ("income",)


def _master(path: Path) -> list:
    with sqlite3.connect(path) as con:
        return sorted(con.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall(), key=repr)


def _sql(path: Path, *statements: str) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    try:
        for stmt in statements:
            con.execute(stmt)
    finally:
        con.close()


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(LedgerError) as exc:
        Ledger(path)
    msg = str(exc.value)
    assert str(path) in msg and "Nothing was spent" in msg, msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


# -- the attack: a trigger that resets what is spent ------------------------------------------------------------

RESET = ("CREATE TRIGGER reset_spent AFTER UPDATE ON budgets BEGIN "
         "UPDATE budgets SET epsilon_spent = 0 WHERE name = NEW.name; END")


def test_the_trigger_attack_works_on_the_raw_file(tmp_path):
    """What the open-time check prevents: with the trigger, 50 releases of ε = 0.5 pass a budget of 1 and the
    file still passes SQLite's checks."""
    path = tmp_path / "raw.sqlite"
    Ledger(path).set_budget("income", 1.0)
    _sql(path, RESET)
    con = sqlite3.connect(path, isolation_level=None)
    for _ in range(50):
        con.execute("BEGIN IMMEDIATE")
        spent, total = con.execute("SELECT epsilon_spent, epsilon_total FROM budgets WHERE name = 'income'").fetchone()
        assert spent + 500_000_000 <= total  # the check the ledger makes before each spend passes every time
        con.execute("UPDATE budgets SET epsilon_spent = epsilon_spent + 500000000 WHERE name = 'income'")
        con.execute("COMMIT")
    assert con.execute("PRAGMA quick_check").fetchone() == ("ok",)
    con.close()


def test_a_trigger_resetting_the_spend_is_refused_at_open(ledger):
    workers.make_mechanism(0.5).release_value(workers.ANSWER, ledger=ledger)
    _sql(ledger.path, RESET)
    before = _master(ledger.path)
    _refused(ledger.path, "trigger 'reset_spent' on table 'budgets'", "which a bayespriv ledger (schema version 4) "
             "does not have", "CREATE TRIGGER reset_spent AFTER UPDATE ON budgets", "restore the file from a backup")
    assert _master(ledger.path) == before  # refused, not repaired behind the owner's back
    # The Ledger opened before the trigger was added refuses too (SQLite's schema cookie moved) ...
    mech = workers.make_mechanism(0.5)
    for _ in range(3):
        with pytest.raises(LedgerError, match="trigger 'reset_spent'.*changed after this Ledger opened"):
            mech.release_value(workers.ANSWER, ledger=ledger)
    with sqlite3.connect(ledger.path) as con:  # ... and nothing was spent or recorded
        assert con.execute("SELECT epsilon_spent FROM budgets").fetchall() == [(500_000_000,)]
        assert con.execute("SELECT COUNT(*) FROM releases").fetchone() == (1,)


@pytest.mark.parametrize("statement, words", [
    ("CREATE VIEW spent AS SELECT name, epsilon_spent FROM budgets", ["view 'spent'"]),
    ("CREATE INDEX by_budget ON charges(budget)", ["index 'by_budget' on table 'charges'"]),
    ("CREATE TABLE notes (x)", ["table 'notes'"]),
    ("CREATE TRIGGER no_refusals BEFORE INSERT ON refusals BEGIN SELECT RAISE(IGNORE); END",
     ["trigger 'no_refusals' on table 'refusals'"]),
    ("ALTER TABLE releases ADD COLUMN extra TEXT",
     ["table 'releases' defined otherwise", "joint text,extra text)", "(expected:"]),
    ("DROP TABLE refusals", ["lacks the table 'refusals'"]),
    ("ANALYZE", ["table 'sqlite_stat1'"]),
])
def test_any_object_the_library_does_not_create_is_refused(ledger, statement, words):
    _sql(ledger.path, statement)
    _refused(ledger.path, *words)


def test_a_table_rebuilt_without_its_constraint_is_refused(ledger):
    """The budgets table rebuilt without CHECK (epsilon_spent >= 0): same columns, different SQL."""
    _sql(ledger.path, "PRAGMA foreign_keys = OFF",
         "CREATE TABLE b2 (name TEXT PRIMARY KEY, epsilon_total INTEGER NOT NULL CHECK (epsilon_total >= 0), "
         "delta_total INTEGER NOT NULL CHECK (delta_total >= 0), epsilon_spent INTEGER NOT NULL DEFAULT 0, "
         "delta_spent INTEGER NOT NULL DEFAULT 0 CHECK (delta_spent >= 0), updated_utc TEXT NOT NULL)",
         "INSERT INTO b2 SELECT * FROM budgets", "DROP TABLE budgets", "ALTER TABLE b2 RENAME TO budgets")
    _refused(ledger.path, "table 'budgets' defined otherwise than in a bayespriv ledger (schema version 4)")


def test_whitespace_case_and_quotes_do_not_matter(ledger):
    """SQLite ignores them; a legitimate tool that rewrote the text (e.g. a dump and restore) still opens."""
    ledger_module._expected_schema.cache_clear()
    real = ledger_module._expected_schema(3)
    twisted = {k: (n, t, None if s is None else s.replace("(", " ( ").replace("budgets", '"BUDGETS"').lower())
               for k, (n, t, s) in real.items()}
    try:
        ledger_module._expected_schema.cache_clear()
        original = ledger_module._schema_of
        ledger_module._schema_of = lambda con: twisted  # the file "has" the twisted text
        assert ledger_module.schema_problem(None, 3) is None
    finally:
        ledger_module._schema_of = original
        ledger_module._expected_schema.cache_clear()
    Ledger(ledger.path)


# -- the invariants, checked at open ------------------------------------------------------------------------------


@pytest.mark.parametrize("statement, words", [
    ("UPDATE budgets SET epsilon_spent = 0", ["budget 'income' records ε=0, δ=0 spent, but the charges of its "
                                              "releases not voided add up to ε=0.5"]),
    ("UPDATE budgets SET epsilon_total = 1000000000000", ["budget 'income' has totals ε=1000, δ=0, but its last "
                                                          "recorded change (budget event 1) set ε=1"]),
    ("DELETE FROM charges", ["records ε=0.5, δ=0 spent, but the charges"]),
    ("UPDATE releases SET voided = 1", ["records ε=0.5, δ=0 spent, but the charges"]),
    ("INSERT INTO meta VALUES ('owner', 'me')", ["its meta table holds the unknown key 'owner'"]),
    ("DELETE FROM budget_events", ["budget 'income' has no budget_events row"]),
    ("UPDATE releases SET voided = 1, void_reason = NULL", ["records ε=0.5, δ=0 spent, but the charges"]),
])
def test_rows_that_break_an_invariant_are_refused_at_open(ledger, statement, words):
    workers.make_mechanism(0.5).release_value(workers.ANSWER, ledger=ledger)
    _sql(ledger.path, statement)
    _refused(ledger.path, "fails a ledger invariant", *words)
    with pytest.raises(bp.ValidationError):
        ledger.verify()


def test_verify_checks_what_open_skips(ledger):
    """Swapping the budget a charge names keeps every total: only verify's per-release pass sees it."""
    ledger.set_budget("sex", 1.0)
    workers.make_mechanism(0.5).release_value(workers.ANSWER, ledger=ledger)
    workers.make_mechanism(0.25, attributes=("sex",)).release_value(workers.ANSWER, ledger=ledger)
    _sql(ledger.path, "UPDATE charges SET budget = CASE budget WHEN 'income' THEN 'sex' ELSE 'income' END",
         "UPDATE budgets SET epsilon_spent = CASE name WHEN 'income' THEN 250000000 ELSE 500000000 END")
    Ledger(ledger.path)
    with pytest.raises(bp.ValidationError, match="release 1 did not charge exactly each budget it protects"):
        ledger.verify()
    _sql(ledger.path, "UPDATE charges SET budget = CASE budget WHEN 'income' THEN 'sex' ELSE 'income' END",
         "UPDATE budgets SET epsilon_spent = CASE name WHEN 'income' THEN 500000000 ELSE 250000000 END")
    ledger.verify()
    _sql(ledger.path, "UPDATE releases SET protected = '[\"income\", \"sex\"]' WHERE id = 1")
    Ledger(ledger.path)
    with pytest.raises(bp.ValidationError, match="the releases protect 3 budgets in all .* but there are 2 charges"):
        ledger.verify()


def test_a_voided_release_must_say_why(ledger):
    charge = ledger.charge(FakeMech(FakeGuarantee(0.5)))
    ledger.void(charge.release_id, "failed after the spend")
    _sql(ledger.path, "UPDATE releases SET void_reason = ' '")
    _refused(ledger.path, "voided release 1 does not say why")


# -- migration ------------------------------------------------------------------------------------------------------


def test_a_ledger_written_by_the_previous_version_opens_and_is_migrated(tmp_path):
    path = tmp_path / "v2.sqlite"
    shutil.copy(MAIN_V2, path)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)
        ledger_id = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()[0]
    led = Ledger(path)
    assert led._connection.ledger_id == ledger_id
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
    led.verify()
    rep = led.report()
    assert rep.loc["income", ["epsilon budget", "epsilon spent", "releases", "voided", "refusals"]].tolist() == [
        1.0, 0.25, 1, 1, 1]
    assert rep.loc["sex", ["epsilon budget", "epsilon spent"]].tolist() == [2.0, 0.5]
    ev = led.budget_events()
    assert ev["action"].tolist() == ["existing at migration"] * 2 and ev["budget"].tolist() == ["income", "sex"]
    assert ev["reason"].str.contains("migrated from schema version 2").all()
    assert ev["new epsilon"].tolist() == [1.0, 2.0] and ev["epsilon spent"].tolist() == [0.25, 0.5]
    assert rep["budget changes"].tolist() == [0, 0]
    assert led.releases()["calibration_content_hash"].isna().all()
    # A lowered budget is now possible: the CHECK (spent <= total) of versions 1-2 went with the rebuild.
    with pytest.warns(bp.BayesPrivWarning, match="below what is already spent"):
        led.set_budget("sex", 0.1)
    led.verify()
    assert _master(path) == _master(_fresh(tmp_path))  # exactly the schema of a new file
    Ledger(path)  # a second open changes nothing
    assert len(led.budget_events()) == 3


def _fresh(tmp_path: Path) -> Path:
    path = tmp_path / "fresh.sqlite"
    Ledger(path)
    return path


def test_an_old_ledger_with_a_foreign_object_is_refused_and_left_unmigrated(tmp_path):
    path = tmp_path / "v2.sqlite"
    shutil.copy(MAIN_V2, path)
    _sql(path, RESET)
    before = _master(path)
    _refused(path, "trigger 'reset_spent'", "schema version 2")
    assert _master(path) == before
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("2",)


def test_a_version_2_file_claiming_version_3_is_refused(tmp_path):
    path = tmp_path / "v2.sqlite"
    shutil.copy(MAIN_V2, path)
    _sql(path, "UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    _refused(path, "table 'budgets' defined otherwise than in a bayespriv ledger (schema version 3)")


def test_a_failed_migration_leaves_the_old_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "v2.sqlite"
    shutil.copy(MAIN_V2, path)
    before = _master(path)
    monkeypatch.setattr(ledger_module, "_V3_STEPS", ledger_module._V3_STEPS[:4] + ("SELECT no_such_function()",))
    with pytest.raises(LedgerError):
        Ledger(path)
    assert _master(path) == before  # all or nothing: still version 2, budgets table not rebuilt
    monkeypatch.undo()
    Ledger(path).verify()


_OPEN = "import sys; from bayespriv.ledger import Ledger; Ledger(sys.argv[1]); print('ok')"


@pytest.mark.subprocess
def test_two_processes_migrating_at_once(tmp_path):
    path = tmp_path / "v2.sqlite"
    shutil.copy(MAIN_V2, path)
    root = str(HERE.parents[1])
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN, str(path)], cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    led = Ledger(path)
    led.verify()
    assert led.budget_events()["action"].tolist() == ["existing at migration"] * 2  # migrated once


# -- speed ------------------------------------------------------------------------------------------------------------


def test_open_stays_fast_on_a_large_ledger(tmp_path):
    """The open-time checks are a few sequential passes: a ledger of 5,000 releases opens in well under a
    second (about 6 ms here; the bound is loose so that a loaded machine does not fail it)."""
    import time

    led = Ledger(tmp_path / "big.sqlite")
    led.set_budget("income", 1e6)
    led.charge(FakeMech(FakeGuarantee(0.001)))
    con = sqlite3.connect(led.path, isolation_level=None)
    cols = [r[1] for r in con.execute("PRAGMA table_info(releases)")][1:]
    row = con.execute(f"SELECT {', '.join(cols)} FROM releases WHERE id = 1").fetchone()
    con.execute("BEGIN")
    for _ in range(4999):
        rid = con.execute(f"INSERT INTO releases ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                          row).lastrowid
        con.execute("INSERT INTO charges VALUES (?, 'income', 1000000, 0)", (rid,))
    con.execute("UPDATE budgets SET epsilon_spent = 5000000000")
    con.execute("COMMIT")
    con.close()
    t0 = time.perf_counter()
    Ledger(led.path)
    assert time.perf_counter() - t0 < 1.0
    led.verify()
