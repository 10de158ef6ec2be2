"""The SQLite ledger: exact integer budgets, atomic check-and-spend across processes, crash safety."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayespriv as bp
from bayespriv.ledger import Ledger, calibration_hash

from tests.ledger import _ledger_workers as workers

SPAWN = mp.get_context("spawn")


def _count(ledger: Ledger, table: str) -> int:
    with sqlite3.connect(ledger.path) as con:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


# -- exact budgets -----------------------------------------------------------------------------------------


def test_hundred_spends_of_a_hundredth_make_exactly_one(ledger):
    mech = workers.make_mechanism(0.01)
    for _ in range(100):
        mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    assert ledger.spent("income") == (1.0, 0.0)
    assert ledger.remaining("income") == (0.0, 0.0)
    # What a ledger adding floats one spend at a time would have refused at the 100th spend (a running sum, as
    # SQL's SUM or a loop computes it; Python 3.12's built-in sum() compensates, which a ledger cannot rely on).
    running = 0.0
    for _ in range(100):
        running += 0.01
    assert running > 1.0
    with pytest.raises(bp.BudgetExceededError, match=r"'income': spent ε=1, δ=0 of ε=1, δ=0; nothing was spent"):
        mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    ledger.verify()


def test_pickles_as_its_path(ledger):
    again = pickle.loads(pickle.dumps(ledger))
    assert again.path == ledger.path and again.spent("income") == (0.0, 0.0)


def test_delta_is_spent_and_bounded(tmp_path):
    s1, s2 = workers.LOW, workers.HIGH
    cal = bp.Calibration.from_moments({s1: [0.2], s2: [0.3]}, {s1: [[1e-3]], s2: [[1e-3]]}, bp.SecretPair(s1, s2))
    mech = bp.mechanisms.ExpM(cal, epsilon=0.5, delta=1e-6)
    led = Ledger(tmp_path / "d.sqlite")
    led.set_budget("income", 10.0, delta=3e-6)
    assert mech.guarantee.delta == 1e-6  # the exact sampler's (1 + e^ε)τ is reserved inside δ, not added to it
    for _ in range(3):
        mech.release_value([0.25], ledger=led, options=bp.ReleaseOptions(independent=True))
    assert led.spent("income") == (1.5, 3e-6)
    with pytest.raises(bp.BudgetExceededError, match="δ"):
        mech.release_value([0.25], ledger=led, options=bp.ReleaseOptions(independent=True))


# -- refusals --------------------------------------------------------------------------------------------------


def test_refused_release_draws_no_noise_and_records_only_the_refusal(ledger):
    mech = workers.make_mechanism(0.6)
    mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger, rng=1)
    before = (ledger.spent("income"), ledger.releases(), _count(ledger, "charges"))
    gen = np.random.default_rng(2)
    state = gen.bit_generator.state
    with pytest.raises(bp.BudgetExceededError):
        mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger, rng=gen)
    assert gen.bit_generator.state == state  # no noise drawn
    assert ledger.spent("income") == before[0]
    pd.testing.assert_frame_equal(ledger.releases(), before[1])
    assert _count(ledger, "charges") == before[2]
    ref = ledger.refusals()
    assert len(ref) == 1
    assert ref.iloc[0][["mechanism", "epsilon", "budget", "reason"]].tolist() == ["ExpM", 0.6, "income", "budget exceeded"]
    ledger.verify()


def test_missing_budget_is_an_error_not_a_free_pass(ledger):
    mech = workers.make_mechanism(0.1, attributes=("income", "sex"))
    gen = np.random.default_rng(3)
    state = gen.bit_generator.state
    with pytest.raises(bp.ValidationError, match=r"no budget .*set_budget\('sex', epsilon=\.\.\.\)"):
        mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger, rng=gen)
    assert gen.bit_generator.state == state
    assert ledger.spent("income") == (0.0, 0.0)  # the budget that exists was not touched either
    assert len(ledger.releases()) == 0
    assert ledger.refusals()["reason"].tolist() == ["missing budget"]


def test_all_or_nothing_across_budgets(ledger):
    ledger.set_budget("sex", 0.15)
    mech = workers.make_mechanism(0.1, attributes=("income", "sex"))
    mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    with pytest.raises(bp.BudgetExceededError, match="'sex'"):
        mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    assert ledger.spent("income") == (0.1, 0.0) and ledger.spent("sex") == (0.1, 0.0)
    assert ledger.releases()["protected"].tolist() == [("income", "sex")]
    ledger.verify()


# -- records and reports -----------------------------------------------------------------------------------------


def test_release_record(ledger):
    mech = workers.make_mechanism(0.25)
    ledger.charge(mech, seeded=False)
    row = ledger.releases().iloc[0]
    assert row["mechanism"] == "ExpM" and row["epsilon"] == 0.25 and row["delta"] == 0.0
    assert row["confidence"] == 1.0 and row["assumptions"][0] == "translation"
    assert row["assumptions"] == tuple(mech.guarantee.assumptions)  # the first release on its dataset
    assert row["composition"] == "joint" and row["dataset"] == "unnamed"
    assert row["joint"] == {"income": {"epsilon": 0.25, "delta": 0.0, "units": 250_000_000, "method": "first",
                                       "releases": []}}
    assert "Theorem 4.1" in row["theorem"]
    assert row["protected"] == ("income",) and row["seeded"] == False  # noqa: E712 (pandas boolean)
    assert row["calibration_hash"] == calibration_hash(mech.calibration) and len(row["calibration_hash"]) == 64
    assert row["time_utc"].tzinfo is not None and row["pid"] == os.getpid()
    other = workers.make_mechanism(0.25, attributes=("sex",)).calibration
    assert calibration_hash(other) != row["calibration_hash"]


def test_report_and_html(ledger):
    ledger.set_budget("sex", 2.0, delta=1e-5)
    mech = workers.make_mechanism(0.3)
    for _ in range(3):
        mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    with pytest.raises(bp.BudgetExceededError):
        workers.make_mechanism(0.2).release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    rep = ledger.report()
    assert list(rep.index) == ["income", "sex"]
    assert rep.loc["income", ["epsilon budget", "epsilon spent", "releases", "refusals"]].tolist() == [1.0, 0.9, 3, 1]
    assert rep.loc["income", "epsilon remaining"] == pytest.approx(0.1, abs=1e-12)
    assert rep.loc["sex", "delta budget"] == 1e-5
    eps = ledger.epsilon_table()
    assert eps.loc["Total", "income"] == pytest.approx(0.9)
    html = ledger._repr_html_()
    assert "<table" in html and "income" in html and "ε per variable" in html


def test_set_budget_rules(ledger):
    workers.make_mechanism(0.5).release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    # Lowering below what is spent is allowed, and stated: a warning, and every further release is refused.
    with pytest.warns(bp.BayesPrivWarning, match=r"'income' .* set to ε=0.4, δ=0, below what is already spent "
                                                 r"\(ε=0.5, δ=0\): every further release on it is refused"):
        ledger.set_budget("income", 0.4)
    assert ledger.budget("income") == (0.4, 0.0) and ledger.remaining("income") == (0.0, 0.0)
    with pytest.raises(bp.BudgetExceededError, match="spent ε=0.5, δ=0 of ε=0.4"):
        workers.make_mechanism(1e-9).release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
    ledger.verify()  # spent > total is consistent: the last budget event lowered it
    ledger.set_budget("income", 2.0)
    assert ledger.remaining("income") == (1.5, 0.0)
    assert ledger.budget_events()["action"].tolist() == ["created", "lowered below spent", "raised"]
    with pytest.raises(bp.ValidationError, match="epsilon must be a finite number >= 0; got -1"):
        ledger.set_budget("x", -1)
    with pytest.raises(bp.ValidationError, match="delta must be in"):
        ledger.set_budget("x", 1.0, delta=1.0)
    with pytest.raises(bp.ParameterTypeError, match="name must be a non-empty string"):
        ledger.set_budget("", 1.0)
    with pytest.raises(bp.ValidationError, match="name must be a budget of this ledger"):
        ledger.spent("nope")
    with pytest.raises(bp.ValidationError, match="path must be a file path"):
        Ledger(":memory:")


# -- concurrency and crashes ------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_two_processes_never_overspend(ledger):
    """Two spawned processes, 150 attempts each of ε = 0.01 against 1.0: exactly 100 granted."""
    start, results = SPAWN.Barrier(2), SPAWN.Queue()  # both start spending together
    procs = [SPAWN.Process(target=workers.spend, args=(str(ledger.path), 150, start, results)) for _ in range(2)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(g for g, _ in outcomes) == 100
    assert sum(r for _, r in outcomes) == 200
    print("granted per process:", outcomes)  # typically split ~50/50 (both really compete)
    assert ledger.spent("income") == (1.0, 0.0)
    assert len(ledger.releases()) == 100 and len(ledger.refusals()) == 200
    ledger.verify()


def _consistent(ledger: Ledger) -> int:
    ledger.verify()
    n = len(ledger.releases())
    spent = ledger.spent("income")[0]
    assert spent <= 1.0
    assert spent == n / 100  # exact: integer nano-ε
    return n


@pytest.mark.subprocess
def test_sigkill_inside_the_transaction_loses_nothing_and_blocks_nobody(ledger):
    """A child is killed while holding the write lock, after writing its spend but before COMMIT."""
    stalled = SPAWN.Event()
    child = SPAWN.Process(target=workers.stall_inside_spend, args=(str(ledger.path), 7, stalled))
    child.start()
    assert stalled.wait(60)
    os.kill(child.pid, signal.SIGKILL)
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    assert _consistent(ledger) == 7  # the 8th spend was rolled back with its release record
    t0 = time.perf_counter()
    workers.make_mechanism().release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)  # the lock died with the child
    assert time.perf_counter() - t0 < 5
    assert _consistent(ledger) == 8


@pytest.mark.subprocess
def test_sigkill_at_random_points_keeps_the_ledger_consistent(ledger):
    """Three children each killed at a random moment of a tight spending loop; then the parent spends
    the rest: the budget is never exceeded and the records always match the spent total."""
    for stop_at in (0.2, 0.45, 0.7):
        started = SPAWN.Event()
        child = SPAWN.Process(target=workers.spend_until_killed, args=(str(ledger.path), started))
        child.start()
        assert started.wait(60)
        deadline = time.monotonic() + 60
        while ledger.spent("income")[0] < stop_at and time.monotonic() < deadline:
            time.sleep(0.002)
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
        assert child.exitcode == -signal.SIGKILL
        _consistent(ledger)
    mech = workers.make_mechanism()
    while True:
        try:
            mech.release_value(workers.ANSWER, options=bp.ReleaseOptions(independent=True), ledger=ledger)
        except bp.BudgetExceededError:
            break
    assert _consistent(ledger) == 100
    assert ledger.spent("income") == (1.0, 0.0)


# -- one connection per object and process -------------------------------------------------------------------------


def _count_new_connections(monkeypatch) -> list:
    opened = []
    from bayespriv.ledger.ledger_connection import LedgerConnection

    original = LedgerConnection._new_connection

    def counting(self, mode):
        con = original(self, mode)
        opened.append(con)
        return con

    monkeypatch.setattr(LedgerConnection, "_new_connection", counting)
    return opened


@pytest.mark.parametrize("persistent", [True, False])
def test_one_connection_serves_every_operation_with_the_same_durability(ledger, monkeypatch, persistent):
    """The ledger keeps its connection (no new one for 20 releases); the per-operation path, still
    reachable, opens two per release — the test tells them apart. Both run WAL, synchronous=FULL,
    foreign keys on."""
    monkeypatch.setattr(ledger._connection, "persistent", persistent)
    opened = _count_new_connections(monkeypatch)
    mech = workers.make_mechanism()
    for _ in range(20):
        mech.release_value(workers.ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    assert len(opened) == (0 if persistent else 20)
    with ledger._connect() as con:
        settings = [con.execute(f"PRAGMA {p}").fetchone()[0] for p in ("journal_mode", "synchronous", "foreign_keys")]
    assert settings == ["wal", 2, 1]  # synchronous 2 = FULL
    assert ledger.spent("income") == (0.2, 0.0)
    ledger.verify()


def test_close_checkpoints_and_the_next_operation_reopens(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.set_budget("income", 1.0)
        workers.make_mechanism().release_value(workers.ANSWER, ledger=led, options=bp.ReleaseOptions(independent=True))
        assert Path(str(path) + "-wal").exists()  # the log lives while the connection does
    assert led._connection._con is None and not Path(str(path) + "-wal").exists()  # closed: checkpointed into the file
    led.close()  # idempotent
    assert led.spent("income") == (0.01, 0.0)  # a new connection, the same ledger
    led.close()


def test_threads_share_one_ledger_and_never_overspend(ledger):
    """8 threads, 30 attempts each of ε = 0.01 against 1.0 on one Ledger object: exactly 100 granted."""
    from concurrent.futures import ThreadPoolExecutor

    mech = workers.make_mechanism()

    def attempts(_):
        granted = 0
        for _ in range(30):
            try:
                mech.release_value(workers.ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
                granted += 1
            except bp.BudgetExceededError:
                pass
        return granted

    with ThreadPoolExecutor(8) as pool:
        assert sum(pool.map(attempts, range(8))) == 100
    assert ledger.spent("income") == (1.0, 0.0) and len(ledger.refusals()) == 140
    ledger.verify()


def _spend_in_forked_child(ledger: Ledger, inherited_id: int, results) -> None:
    mech = workers.make_mechanism()
    for _ in range(10):
        mech.release_value(workers.ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    con = ledger._connection
    results.put((con._con_pid == os.getpid(), id(con._con) != inherited_id, con._con is not None))


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
@pytest.mark.subprocess
def test_a_forked_child_opens_its_own_connection(ledger):
    """The child inherits the Ledger object with the parent's open connection: it sets it aside and opens
    its own; both processes keep spending through their own connection."""
    mech = workers.make_mechanism()
    mech.release_value(workers.ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    parent_con = ledger._connection._con
    fork = mp.get_context("fork")
    results = fork.Queue()
    child = fork.Process(target=_spend_in_forked_child, args=(ledger, id(parent_con), results))
    child.start()
    assert results.get(timeout=120) == (True, True, True)
    child.join(60)
    assert child.exitcode == 0
    mech.release_value(workers.ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    assert ledger._connection._con is parent_con  # the parent's connection was neither closed nor replaced by the child
    assert ledger.spent("income") == (0.12, 0.0) and len(ledger.releases()) == 12
    ledger.verify()


def test_a_changed_process_id_sets_the_connection_aside_unclosed(ledger):
    """A fork that bypasses os.register_at_fork is seen by the process-id check: the inherited
    connection is set aside, not closed (it would belong to the parent), and a new one is opened."""
    from bayespriv.ledger import ledger_connection as ledger_module

    ledger.spent("income")
    inherited = ledger._connection._con
    ledger._connection._con_pid = os.getpid() + 1  # as a forked child sees the connection its parent opened
    ledger.spent("income")
    assert ledger._connection._con is not inherited and ledger._connection._con_pid == os.getpid()
    assert ledger_module._INHERITED[-1] is inherited
    assert inherited.execute("SELECT 1").fetchone() == (1,)  # still open: never closed here
    ledger_module._INHERITED.remove(inherited)
    inherited.close()


def test_a_file_replaced_under_an_open_connection_is_refused(ledger, tmp_path):
    """The connection stays open across operations, so the ledger compares the file at its path with the
    one it opened (device, inode): a ledger moved away (with its log) and replaced by another one is
    refused, and nothing is written to either."""
    workers.make_mechanism().release_value(workers.ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    other = Ledger(tmp_path / "other.sqlite")
    other.set_budget("income", 1.0)
    other.close()
    moved = tmp_path / "moved.sqlite"
    for suffix in ("", "-wal", "-shm"):
        if Path(str(ledger.path) + suffix).exists():
            os.replace(str(ledger.path) + suffix, str(moved) + suffix)
    os.replace(tmp_path / "other.sqlite", ledger.path)
    for _ in range(2):  # refused every time, not only when the change is first seen
        with pytest.raises(bp.errors.LedgerError, match="no longer the ledger this object opened"):
            ledger.charge(workers.FixedMechanism(workers.FixedGuarantee(0.25)))
    assert Ledger(moved).spent("income") == (0.01, 0.0)
    assert Ledger(ledger.path).spent("income") == (0.0, 0.0)


@pytest.mark.parametrize("name", ["", "   ", 3])
def test_an_empty_dataset_name_is_refused_naming_dataset_name_and_spends_nothing(ledger, name):
    s1, s2 = bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0)
    cal = bp.Calibration.from_moments({s1: [0.0], s2: [1.0]}, {s1: [[1.0]], s2: [[1.0]]}, bp.SecretPair(s1, s2),
                                      bp.mean("x"), n_records=4)
    mech = bp.mechanisms.APGM(cal, epsilon=0.5, delta=1e-3)
    ledger.set_budget("x", 5.0, delta=1e-2)
    with pytest.raises(bp.ValidationError, match=r"dataset_name must be None or a non-empty string"):
        mech.release(pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0]}), ledger=ledger, dataset_name=name)
    assert ledger.spent("x") == (0.0, 0.0)
