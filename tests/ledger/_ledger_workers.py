"""Module-level helpers run in spawned child processes by test_ledger.py (must be importable there)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import bayespriv as bp
from bayespriv.ledger import Ledger
from bayespriv.mechanisms import ExpM

LOW = bp.DatasetSecret.proportion("income", ">=100k", 0.2)
HIGH = bp.DatasetSecret.proportion("income", ">=100k", 0.3)
ANSWER = [0.25]


def make_mechanism(epsilon: float = 0.01, attributes: tuple[str, ...] = ("income",)) -> ExpM:
    """A real Laplace ExpM on the share of high incomes (one secret pair per protected attribute)."""
    means, covs, pairs = {}, {}, []
    for a in attributes:
        lo, hi = bp.DatasetSecret.proportion(a, "x", 0.2), bp.DatasetSecret.proportion(a, "x", 0.3)
        means |= {lo: [0.2], hi: [0.3]}
        covs |= {lo: [[1e-3]], hi: [[1e-3]]}
        pairs.append(bp.SecretPair(lo, hi))
    cal = bp.Calibration.from_moments(means, covs, pairs)
    return ExpM(cal, epsilon=epsilon, noise="laplace")


def spend(path: str, attempts: int, start, results) -> None:
    """Try ``attempts`` releases of ε = 0.01 as fast as possible; report how many were granted."""
    ledger, mech = Ledger(path), make_mechanism()
    start.wait()
    granted = refused = 0
    for _ in range(attempts):
        try:
            mech.release_value(ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
            granted += 1
        except bp.BudgetExceededError:
            refused += 1
    results.put((granted, refused))


def spend_until_killed(path: str, started) -> None:
    """Release in a tight loop (the parent SIGKILLs us at a random point of a spend)."""
    ledger, mech = Ledger(path), make_mechanism()
    started.set()
    while True:
        try:
            mech.release_value(ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
        except bp.BudgetExceededError:
            time.sleep(0.01)


class _StallingConnection:
    """Proxy of a sqlite3 connection that stops forever right after the spend is written, before
    COMMIT, with the write lock held — so the parent can SIGKILL us inside the transaction."""

    def __init__(self, con, stalled, prefix: str = "UPDATE budgets SET epsilon_spent") -> None:
        self._con, self._stalled, self._prefix = con, stalled, prefix

    def execute(self, sql: str, *args):
        cur = self._con.execute(sql, *args)
        if sql.startswith(self._prefix):
            self._stalled.set()
            while True:
                time.sleep(1)
        return cur


class StallingLedger(Ledger):
    stalled = None
    prefix = "UPDATE budgets SET epsilon_spent"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        connect = self._connection.connect  # every operation of the ledger takes its connection here

        @contextmanager
        def stalling_connect(*args, **kwargs):
            with connect(*args, **kwargs) as con:
                yield _StallingConnection(con, self.stalled, self.prefix) if self.stalled is not None else con

        self._connection.connect = stalling_connect


def stall_inside_spend(path: str, spends_before: int, stalled) -> None:
    """Spend ``spends_before`` times normally, then stall inside the next spend's transaction."""
    ledger, mech = StallingLedger(path), make_mechanism()
    for _ in range(spends_before):
        mech.release_value(ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))
    ledger.stalled = stalled
    mech.release_value(ANSWER, ledger=ledger, options=bp.ReleaseOptions(independent=True))


@dataclass(frozen=True)
class FixedGuarantee:
    epsilon: float
    delta: float = 0.0
    confidence: float = 1.0
    assumptions: tuple = ()
    theorem: str = "fixed"


@dataclass(frozen=True)
class FixedMechanism:
    """The duck type ``Ledger.charge`` reads (independent of the mechanisms' code)."""

    guarantee: FixedGuarantee
    protected: tuple = ("income",)
    variables: tuple = ("income",)


def charge_then_stall(path: str, charged, results) -> None:
    """Charge once (as the release path does before drawing noise), report the release id, then stop
    forever before voiding it — the parent SIGKILLs us between the charge and the void."""
    ledger = Ledger(path)
    results.put(ledger.charge(FixedMechanism(FixedGuarantee(0.25)), seeded=False).release_id)
    charged.set()
    while True:
        time.sleep(1)


def stall_inside_void(path: str, release_id: int, stalled) -> None:
    """Void ``release_id`` but stop inside the transaction, after the row is marked void and before the
    refund reaches the budgets (write lock held) — the parent SIGKILLs us there."""
    ledger = StallingLedger(path)
    ledger.prefix = "UPDATE budgets SET epsilon_spent = epsilon_spent -"
    ledger.stalled = stalled
    ledger.void(release_id, "killed inside void")
