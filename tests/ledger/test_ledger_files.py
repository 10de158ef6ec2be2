"""Ledger file problems, the version-2 schema (assumption columns, migration), voiding, composition.

Most tests charge a tiny duck-typed mechanism (a guarantee and the budgets it protects), so they do
not depend on the mechanisms' code and stay fast; the crash test spawns two children.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.ledger import Ledger
from bayespriv.ledger.ledger import COMPOSITION_ASSUMPTION, MAX_BUDGET_EPSILON, composes_unconditionally
from bayespriv.ledger.ledger_schema import _SCHEMA
from bayespriv.errors import BayesPrivError, LedgerError, ParameterTypeError, ValidationError

from tests.ledger import _ledger_workers as workers

SPAWN = mp.get_context("spawn")


@dataclass(frozen=True)
class FakeGuarantee:
    epsilon: float
    delta: float = 0.0
    confidence: float | None = 1.0
    assumptions: tuple[str, ...] = ("gaussian_query",)
    theorem: str = "a theorem"
    failed_assumptions: tuple[str, ...] = ()
    unchecked_assumptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class FakeMech:
    """The duck type ``Ledger.charge`` reads: a guarantee and the budgets it protects."""

    guarantee: object
    protected: tuple[str, ...] = ("income",)
    variables: tuple[str, ...] = ("income",)


class GroupDP(FakeMech):
    """Named like the DP baseline: sequential composition is a theorem for it."""


#: The ``ledger`` fixture (tests/ledger/conftest.py) starts with this budget.
LEDGER_BUDGETS = {"income": (1.0, 1e-3)}


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as con:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _assert_ledger_error(exc: pytest.ExceptionInfo, path: Path, *words: str) -> None:
    assert isinstance(exc.value, BayesPrivError) and isinstance(exc.value, OSError)
    msg = str(exc.value)
    assert str(path) in msg and "Nothing was spent" in msg, msg
    for w in words:
        assert w in msg, (w, msg)


# -- 1. file problems ---------------------------------------------------------------------------------------------


def test_missing_directory(tmp_path):
    path = tmp_path / "no" / "such" / "dir" / "ledger.sqlite"
    with pytest.raises(LedgerError) as exc:
        Ledger(path)
    _assert_ledger_error(exc, path, "does not exist", "mkdir")
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("bad", [123, None, b"ledger.sqlite", ["ledger.sqlite"]])
def test_path_of_the_wrong_type(bad):
    with pytest.raises(ParameterTypeError, match="path must be a file path"):
        Ledger(bad)


def test_garbage_bytes(tmp_path):
    path = tmp_path / "garbage.sqlite"
    data = os.urandom(8192)
    path.write_bytes(data)
    with pytest.raises(LedgerError) as exc:
        Ledger(path)
    _assert_ledger_error(exc, path, "corrupt", "backup")
    assert path.read_bytes() == data  # untouched


def test_truncated_ledger(ledger):
    for _ in range(5):
        ledger.charge(FakeMech(FakeGuarantee(0.01)))
    ledger.close()  # closing the last connection checkpoints the log: the file holds everything
    size = ledger.path.stat().st_size
    assert not Path(str(ledger.path) + "-wal").exists()
    with open(ledger.path, "r+b") as f:
        f.truncate(size // 2)
    with pytest.raises(LedgerError) as exc:
        Ledger(ledger.path)
    _assert_ledger_error(exc, ledger.path, "corrupt or truncated")
    with pytest.raises(LedgerError, match="corrupt or truncated"):  # the open object too
        ledger.spent("income")


def test_sqlite_file_of_another_application(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE patients (id INTEGER, name TEXT)")
    with pytest.raises(LedgerError) as exc:
        Ledger(path)
    _assert_ledger_error(exc, path, "not a bayespriv ledger", "patients")
    assert _tables(path) == {"patients"}  # no ledger table was added to their file
    path2 = tmp_path / "other2.sqlite"
    with sqlite3.connect(path2) as con:  # a meta table, but not ours
        con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    with pytest.raises(LedgerError, match="no schema_version"):
        Ledger(path2)
    path3 = tmp_path / "other3.sqlite"
    with sqlite3.connect(path3) as con:
        con.execute("PRAGMA application_id = 1234")
        con.execute("CREATE TABLE t (x)")
        con.execute("DROP TABLE t")
    with pytest.raises(LedgerError, match="application_id=0x4d2"):
        Ledger(path3)


def test_newer_schema_is_refused(ledger):
    with sqlite3.connect(ledger.path) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(LedgerError, match=r"newer ledger schema \(version 99.*upgrade bayespriv"):
        Ledger(ledger.path)


def test_file_deleted_under_a_running_process_is_never_recreated_empty(ledger):
    ledger.charge(FakeMech(FakeGuarantee(0.75)))
    clone = pickle.dumps(ledger)
    for suffix in ("", "-wal", "-shm"):
        Path(str(ledger.path) + suffix).unlink(missing_ok=True)
    for op in (lambda: ledger.spent("income"), lambda: ledger.charge(FakeMech(FakeGuarantee(0.75))),
               lambda: ledger.set_budget("income", 5.0), ledger.releases):
        with pytest.raises(LedgerError) as exc:
            op()
        _assert_ledger_error(exc, ledger.path, "no longer exists", "is NOT created", "would forget the budget")
    assert not ledger.path.exists()  # no fresh, empty ledger appeared
    with pytest.raises(LedgerError, match="does not exist"):
        pickle.loads(clone)  # workers never create one either
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger(ledger.path, create=False)
    fresh = Ledger(ledger.path)  # deliberately starting again is possible ...
    fresh.set_budget("income", 1.0)
    with pytest.raises(LedgerError) as exc:  # ... but the old object refuses the new file
        ledger.charge(FakeMech(FakeGuarantee(0.75)))
    _assert_ledger_error(exc, ledger.path, "no longer the ledger this object opened")
    assert fresh.spent("income") == (0.0, 0.0)


def test_orphan_write_ahead_log_is_not_discarded(tmp_path):
    path = tmp_path / "ledger.sqlite"
    Path(str(path) + "-wal").write_bytes(b"\0" * 64)
    with pytest.raises(LedgerError, match=r"write-ahead log \(-wal\) is still there"):
        Ledger(path)
    assert not path.exists()


_AS_NOBODY = r"""
import json, os, sys
from bayespriv.ledger import Ledger  # imported as root: root's home (the interpreter) is closed to nobody
if os.geteuid() == 0:
    os.setgid(65534); os.setuid(65534)
try:
    Ledger(sys.argv[1]).spent("income")
    print(json.dumps(["ok", ""]))
except Exception as exc:
    print(json.dumps([type(exc).__name__, str(exc), isinstance(exc, OSError)]))
"""


def _open_as_unprivileged(path: Path) -> list:
    """Open ``path`` in a child without root's right to write anything (setuid nobody when root)."""
    out = subprocess.run([sys.executable, "-c", _AS_NOBODY, str(path)], capture_output=True, text=True, timeout=120,
                         cwd=str(Path(__file__).resolve().parents[2]))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("what", ["file", "directory"])
@pytest.mark.subprocess
def test_read_only_file_or_directory(what):
    base = Path(tempfile.mkdtemp(prefix="bp-ledger-ro-"))  # world-traversable, unlike pytest's tmp_path
    try:
        base.chmod(0o755)
        path = base / "ledger.sqlite"
        Ledger(path).set_budget("income", 1.0)
        if what == "file":
            base.chmod(0o777)
            path.chmod(0o444)
        else:
            path.chmod(0o666)
            base.chmod(0o555)
        name, msg, is_os_error = _open_as_unprivileged(path)
        assert name == "LedgerError" and is_os_error, msg
        assert "is read-only" in msg and str(path) in msg and "write access" in msg
    finally:
        base.chmod(0o755)
        shutil.rmtree(base)


# -- set_budget / charge at the limits of the integer units ---------------------------------------------------------


def test_epsilon_too_large_for_the_integer_units(ledger):
    with pytest.raises(ValidationError, match=r"epsilon must be at most 9223372036\.85477\d \(the ledger counts integer nano-ε in 64 bits\); got 9300000000\.0"):
        ledger.set_budget("big", 9.3e9)
    with pytest.raises(ValidationError, match="epsilon must be at most"):
        ledger.set_budget("big", 1e300)
    ledger.set_budget("big", MAX_BUDGET_EPSILON, delta=0.999999)
    assert ledger.budget("big") == (pytest.approx(MAX_BUDGET_EPSILON, rel=1e-15), 0.999999)
    huge = FakeMech(FakeGuarantee(1e300), protected=("big",))
    with pytest.raises(bp.BudgetExceededError, match="nothing was spent"):
        ledger.charge(huge)
    assert ledger.spent("big") == (0.0, 0.0)
    ledger.charge(FakeMech(FakeGuarantee(MAX_BUDGET_EPSILON), protected=("big",)))
    assert ledger.remaining("big")[0] == pytest.approx(0.0, abs=1e-6)
    ledger.verify()


# -- 2. assumption columns and migration -------------------------------------------------------------------------------


def test_release_rows_carry_failed_and_unchecked_assumptions(ledger):
    bad = FakeGuarantee(0.2, 1e-4, assumptions=("gaussian_query", "equal_covariance"),
                        failed_assumptions=("equal_covariance",), unchecked_assumptions=("gaussian_query",))
    ledger.charge(FakeMech(bad))
    ledger.charge(FakeMech(FakeGuarantee(0.1)))

    @dataclass(frozen=True)
    class OldGuarantee:  # a Guarantee before unchecked_assumptions existed
        epsilon: float
        delta: float
        confidence: float
        assumptions: tuple
        theorem: str = ""
        failed_assumptions: tuple = ()

    ledger.charge(FakeMech(OldGuarantee(0.1, 0.0, 1.0, ())))
    df = ledger.releases()
    assert df["failed_assumptions"].tolist() == [("equal_covariance",), (), ()]
    assert df["unchecked_assumptions"].tolist() == [("gaussian_query",), (), ()]
    assert df["established"].tolist() == [False, True, True]
    rep = ledger.report()
    assert rep.loc["income", ["releases", "not established"]].tolist() == [3, 1]
    page = ledger._repr_html_()
    assert "NOT ESTABLISHED" in page and "#1 FakeMech" in page and "equal_covariance" in page


def _old_ledger(path: Path) -> None:
    """A version-1 ledger written with raw SQL (the schema as it was), one budget and one release."""
    with sqlite3.connect(path) as con:
        con.executescript(_SCHEMA)
        con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        con.execute("INSERT INTO budgets VALUES ('income', 1000000000, 0, 250000000, 0, '2025-01-01T00:00:00+00:00')")
        con.execute("INSERT INTO releases (time_utc, mechanism, epsilon, delta, epsilon_units, delta_units, confidence, "
                    "assumptions, theorem, protected, variables, query, seeded, calibration_hash, pid) VALUES "
                    "('2025-01-01T00:00:00+00:00', 'APGM', 0.25, 0.0, 250000000, 0, 0.95, '[\"gaussian_query\"]', "
                    "'T', '[\"income\"]', '[\"income\"]', 'q', 0, NULL, 1)")
        con.execute("INSERT INTO charges VALUES (1, 'income', 250000000, 0)")


def test_old_schema_is_migrated_in_place(tmp_path):
    path = tmp_path / "v1.sqlite"
    _old_ledger(path)
    led = Ledger(path)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("4",)
        cols = {r[1] for r in con.execute("PRAGMA table_info(releases)")}
    assert {"failed_assumptions", "unchecked_assumptions", "established", "voided", "void_reason"} <= cols
    old = led.releases().loc[1]
    assert old["failed_assumptions"] is None and pd.isna(old["established"]) and not old["voided"]
    assert led.spent("income") == (0.25, 0.0)
    led.verify()
    led.charge(FakeMech(FakeGuarantee(0.5)))
    assert led.spent("income") == (0.75, 0.0)
    assert led.report().loc["income", ["releases", "not established"]].tolist() == [2, 0]
    again = Ledger(path)  # opening a migrated ledger changes nothing
    assert again._connection.ledger_id == led._connection.ledger_id and len(again.releases()) == 2


# -- 3. void ---------------------------------------------------------------------------------------------------------


def test_void_refunds_atomically_and_keeps_the_record(ledger):
    first = ledger.charge(FakeMech(FakeGuarantee(0.6, 1e-4)))
    ledger.charge(FakeMech(FakeGuarantee(0.3, 1e-4)))
    with pytest.raises(bp.BudgetExceededError):
        ledger.charge(FakeMech(FakeGuarantee(0.6)))
    ledger.void(first.release_id, "noise sampler raised after the spend")
    assert ledger.spent("income") == (0.3, 1e-4)
    ledger.charge(FakeMech(FakeGuarantee(0.6)))  # the refund is spendable
    df = ledger.releases()
    assert df["voided"].tolist() == [True, False, False]
    assert df.loc[first.release_id, "void_reason"] == "noise sampler raised after the spend"
    assert df["voided"].sum() == 1
    rep = ledger.report()
    assert rep.loc["income", ["releases", "voided", "refusals"]].tolist() == [2, 1, 1]
    assert rep.loc["income", "epsilon spent"] == pytest.approx(0.9)
    assert ledger.epsilon_table().loc["Total", "income"] == pytest.approx(0.9)  # voided row excluded
    ledger.verify()
    with pytest.raises(ValidationError, match=r"release_id must be a release not already voided .*; got 1"):
        ledger.void(first.release_id, "again")
    with pytest.raises(ValidationError, match="release_id must be the id of a release in this ledger; got 99"):
        ledger.void(99, "x")
    with pytest.raises(ParameterTypeError, match="release_id must be an int"):
        ledger.void(True, "x")
    with pytest.raises(ValidationError, match="reason must be a non-empty string"):
        ledger.void(2, " ")
    assert ledger.spent("income") == (0.9, 1e-4)


@pytest.mark.subprocess
def test_sigkill_between_charge_and_void_and_inside_void(ledger):
    """A child charges (as release does before drawing noise) and is killed before it can void: the
    ledger stays consistent (charged, not void) and the parent can void it. A second child is killed
    inside ``void`` after marking the row void but before the refund: both are rolled back."""
    charged, results = SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(target=workers.charge_then_stall, args=(str(ledger.path), charged, results))
    child.start()
    assert charged.wait(120)
    rid = results.get(timeout=60)
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    ledger.verify()
    assert ledger.spent("income")[0] == 0.25 and not ledger.releases().loc[rid, "voided"]

    stalled = SPAWN.Event()
    child = SPAWN.Process(target=workers.stall_inside_void, args=(str(ledger.path), rid, stalled))
    child.start()
    assert stalled.wait(120)
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    ledger.verify()
    assert ledger.spent("income")[0] == 0.25 and not ledger.releases().loc[rid, "voided"]  # all or nothing

    ledger.void(rid, "the releasing process died before drawing noise")
    ledger.verify()
    assert ledger.spent("income") == (0.0, 0.0) and ledger.releases().loc[rid, "voided"]


# -- 4. composition ----------------------------------------------------------------------------------------------------


def test_rows_say_how_they_composed(ledger, tmp_path):
    """The ledger dispatches on what a mechanism declares (``composition``), never on its class name: an object
    that declares nothing is summed under the sequential-composition assumption; a declared DP mechanism is
    summed by theorem; a class merely *named* GroupDP declares nothing."""
    ledger.charge(FakeMech(FakeGuarantee(0.1)))
    ledger.charge(GroupDP(FakeGuarantee(0.1, assumptions=())))

    @dataclass(frozen=True)
    class Declared(FakeMech):
        composition: str = "dp"

    ledger.charge(Declared(FakeGuarantee(0.1, assumptions=())))
    table = pd.DataFrame({"income": ["lo", "hi", "lo", "hi"], "region": ["a", "a", "b", "b"]})
    bp.SubsetCountMechanism(protected="income", public="region", epsilon=0.1).release(
        table, rng=0, ledger=ledger, layout=bp.ledger.TableLayout(protected_values=["lo", "hi"]))
    rows = ledger.releases()
    assert rows["assumptions"].iloc[0] == ("gaussian_query", COMPOSITION_ASSUMPTION)
    assert COMPOSITION_ASSUMPTION in rows["assumptions"].iloc[1]  # the name GroupDP alone proves nothing
    assert all(COMPOSITION_ASSUMPTION not in r for r in rows["assumptions"].iloc[2:]), rows
    assert [c if isinstance(c, str) else None for c in rows["composition"]] == [None, None, "dp", "subset"]
    assert rows["mechanism"].tolist()[-1] == "SubsetCountMechanism"
    rep = ledger.report()
    assert rep.loc["income", ["releases", "composition assumed"]].tolist() == [4, 2]
    assert "accounted together" in rep.attrs["composition"] and "Proposition 3.4" in rep.attrs["composition"]
    page = ledger._repr_html_()
    assert "Composition assumed" in page and "Kifer &amp; Machanavajjhala 2014" in page
    assert composes_unconditionally(Declared(FakeGuarantee(1.0))) and not composes_unconditionally(FakeMech(None))
    assert not composes_unconditionally(GroupDP(FakeGuarantee(1.0)))
    doc = bp.ledger.ledger.__doc__
    assert "Proposition 3.4" in doc and "Kifer & Machanavajjhala" in doc and "arXiv:2602.02718" in doc


def test_a_real_release_without_an_established_guarantee_is_flagged(ledger):
    """End to end: APGM told to assume equal covariances where they differ (variances 1 vs 25) is
    refused by default; released with ``accept_failed_assumptions=True``, its ledger row says
    established = False with the failed check, and the report and HTML flag it."""
    s1, s2 = bp.DistributionSecret("p", 0.2), bp.DistributionSecret("p", 0.8)
    cal = bp.Calibration.from_moments({s1: [0.0], s2: [1.0]}, {s1: [[1.0]], s2: [[25.0]]}, [bp.SecretPair(s1, s2)])
    try:
        mech = bp.mechanisms.APGM(cal, epsilon=0.5, delta=1e-4, covariance="equal")
    except TypeError:  # before the unequal-covariance calibration exists
        mech = bp.mechanisms.APGM(cal, epsilon=0.5, delta=1e-4)
    assert mech.guarantee.failed_assumptions == ("equal_covariance",)
    ledger.set_budget("p", 1.0, delta=1e-3)
    with pytest.raises(bp.BayesPrivError, match="equal_covariance"):
        mech.release_value([0.3], ledger=ledger)
    assert len(ledger.releases()) == 0 and ledger.spent("p") == (0.0, 0.0)
    rel = mech.release_value([0.3], ledger=ledger, options=bp.ReleaseOptions(accept_failed_assumptions=True))
    row = ledger.releases().iloc[0]
    assert row["established"] == False and row["failed_assumptions"] == ("equal_covariance",)  # noqa: E712
    assert row["composition"] == "joint"  # a Pufferfish mechanism: accounted with the others on its data
    assert getattr(rel, "ledger_id", row.name) == row.name
    assert ledger.report().loc["p", "not established"] == 1
    assert "NOT ESTABLISHED" in ledger._repr_html_()
