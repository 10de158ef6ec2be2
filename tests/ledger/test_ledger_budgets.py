"""Budgets change only on purpose: create_budget never changes one, set_budget does and says so, and every
creation or change is an audit row (budget_events) shown by report() and the notebook view. Release rows
carry the SHA-256 of the calibration file (``calibration_content_hash``)."""

from __future__ import annotations

import math
import sqlite3
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

import bayespriv as bp
from bayespriv.ledger import Ledger


@dataclass(frozen=True)
class FakeGuarantee:
    epsilon: float
    delta: float = 0.0
    confidence: float | None = 1.0
    assumptions: tuple[str, ...] = ()
    theorem: str = "a theorem"


@dataclass(frozen=True)
class FakeMech:
    """What ``Ledger.charge`` reads; ``calibration`` may carry a ``content_hash``."""

    guarantee: object
    protected: tuple[str, ...] = ("income",)
    variables: tuple[str, ...] = ("income",)
    calibration: object = None


#: The ``ledger`` fixture (tests/ledger/conftest.py) starts without budgets here.
LEDGER_BUDGETS: dict = {}


def _rows(ledger: Ledger, table: str) -> list:
    with sqlite3.connect(ledger.path) as con:
        return con.execute(f"SELECT * FROM {table}").fetchall()


def test_create_budget_creates_is_idempotent_and_never_changes(ledger):
    assert ledger.create_budget("salary", 3.0, 1e-2) is True
    assert ledger.create_budget("salary", 3, 0.01) is False  # the same value: nothing written
    assert len(ledger.budget_events()) == 1
    ledger.charge(FakeMech(FakeGuarantee(3.0, 1e-3), protected=("salary",)))
    before = (_rows(ledger, "budgets"), _rows(ledger, "budget_events"))
    with pytest.raises(bp.ValidationError) as exc:
        ledger.create_budget("salary", 1000.0, 1e-2)
    msg = str(exc.value)
    assert "the budget 'salary' must keep its value" in msg and "it is ε=3, δ=0.01 (spent ε=3, δ=0.001)" in msg
    assert "got ε=1000, δ=0.01" in msg and "ledger.set_budget('salary', epsilon=1000.0, delta=0.01)" in msg
    assert str(ledger.path) in msg and "Nothing was changed" in msg
    assert (exc.value.budget, exc.value.current, exc.value.requested) == ("salary", (3.0, 0.01), (1000.0, 0.01))
    assert (_rows(ledger, "budgets"), _rows(ledger, "budget_events")) == before
    with pytest.raises(bp.BudgetExceededError):  # still spent
        ledger.charge(FakeMech(FakeGuarantee(0.1), protected=("salary",)))
    with pytest.raises(bp.ValidationError, match="the budget 'salary' must keep its value"):
        ledger.create_budget("salary", 3.0, 0.0)  # δ differs
    ledger.verify()


def test_set_budget_records_every_change(ledger):
    ledger.set_budget("income", 1.0, delta=1e-3, reason="initial allocation")
    ledger.set_budget("income", 1.0, delta=1e-3)  # no change: no row
    ledger.charge(FakeMech(FakeGuarantee(0.25, 1e-4)))
    ledger.set_budget("income", 2.0, delta=1e-3, reason="approved by the data owner")
    ledger.set_budget("income", 1.5, delta=1e-3)
    ledger.set_budget("income", 1.75, delta=5e-4)  # ε up, δ down
    ev = ledger.budget_events()
    assert ev["action"].tolist() == ["created", "raised", "lowered", "changed"]
    assert ev["budget"].tolist() == ["income"] * 4
    assert math.isnan(ev["old epsilon"].iloc[0]) and math.isnan(ev["old delta"].iloc[0])
    assert ev[["old epsilon", "new epsilon"]].iloc[1:].values.tolist() == [[1.0, 2.0], [2.0, 1.5], [1.5, 1.75]]
    assert ev["new delta"].tolist() == [1e-3, 1e-3, 1e-3, 5e-4]
    assert ev["epsilon spent"].tolist() == [0.0, 0.25, 0.25, 0.25] and ev["delta spent"].iloc[-1] == 1e-4
    assert ev["reason"].tolist() == ["initial allocation", "approved by the data owner", None, None]
    assert not ev["below spent"].any() and ev.index.tolist() == [1, 2, 3, 4]
    assert str(ev["time_utc"].dt.tz) == "UTC"
    rep = ledger.report()
    assert rep.loc["income", "budget changes"] == 3
    assert rep.attrs["budget_events"].equals(ev)
    page = ledger._repr_html_()
    assert "Budget creations and changes" in page and "approved by the data owner" in page
    ledger.verify()


def test_lowering_below_spent_is_allowed_stated_and_blocks_releases(ledger):
    ledger.set_budget("income", 1.0, delta=1e-3)
    ledger.charge(FakeMech(FakeGuarantee(0.6, 5e-4)))
    with pytest.warns(bp.BayesPrivWarning, match=r"below what is already spent \(ε=0.6, δ=0.0005\)"):
        ledger.set_budget("income", 0.5, delta=1e-3, reason="policy tightened")
    assert ledger.remaining("income") == (0.0, 0.0005) and ledger.spent("income") == (0.6, 5e-4)
    rep = ledger.report()
    assert rep.loc["income", ["epsilon budget", "epsilon spent", "epsilon remaining"]].tolist() == [0.5, 0.6, 0.0]
    with pytest.raises(bp.BudgetExceededError, match="spent ε=0.6, δ=0.0005 of ε=0.5"):
        ledger.charge(FakeMech(FakeGuarantee(0.0)))  # even ε = 0: nothing more on this budget
    ledger.verify()
    ev = ledger.budget_events().iloc[-1]
    assert ev["action"] == "lowered below spent" and ev["below spent"] and ev["reason"] == "policy tightened"
    with pytest.warns(bp.BayesPrivWarning, match="below what is already spent"):
        ledger.set_budget("income", 2.0, delta=1e-4)  # δ below the spent 5e-4
    assert ledger.budget_events()["action"].iloc[-1] == "changed below spent"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ledger.set_budget("income", 2.0, delta=1e-3)  # back within: no warning
    ledger.charge(FakeMech(FakeGuarantee(0.5)))
    assert ledger.spent("income") == (1.1, 5e-4)
    ledger.verify()


def test_budget_argument_rules(ledger):
    for call in (ledger.set_budget, ledger.create_budget):
        with pytest.raises(bp.ValidationError, match="epsilon must be a finite number >= 0; got -1"):
            call("x", -1)
        with pytest.raises(bp.ValidationError, match="delta must be in"):
            call("x", 1.0, delta=1.0)
        with pytest.raises(bp.ParameterTypeError, match="name must be a non-empty string"):
            call("", 1.0)
        with pytest.raises(bp.ValidationError, match="reason must be None or a non-empty string"):
            call("x", 1.0, reason=" ")
    assert ledger.budgets() == () and len(ledger.budget_events()) == 0


def test_release_rows_record_the_calibration_files_hash(ledger):
    ledger.set_budget("income", 5.0)
    digest = "ab" * 32
    from_file = SimpleNamespace(content_hash=digest, mean_array=[1.0], pairs=())
    ledger.charge(FakeMech(FakeGuarantee(0.1), calibration=from_file))
    ledger.charge(FakeMech(FakeGuarantee(0.1), calibration=SimpleNamespace(content_hash=None)))  # in memory
    ledger.charge(FakeMech(FakeGuarantee(0.1)))  # no calibration at all
    other = ledger.charge(FakeMech(FakeGuarantee(0.1), calibration=SimpleNamespace(content_hash="cd" * 32)))
    df = ledger.releases()
    assert df["calibration_content_hash"].tolist() == [digest, None, None, "cd" * 32]
    assert ledger.report().loc["income", "calibration files"] == "abababababab,cdcdcdcdcdcd"
    ledger.void(other.release_id, "never released")
    assert ledger.report().loc["income", "calibration files"] == "abababababab"  # voided rows are not counted
    ledger.set_budget("sex", 1.0)
    assert ledger.report().loc["sex", "calibration files"] == "-"


def test_a_real_calibration_without_a_file_records_none(ledger):
    from tests.ledger import _ledger_workers as workers

    ledger.set_budget("income", 1.0)
    mech = workers.make_mechanism(0.1)
    mech.release_value(workers.ANSWER, ledger=ledger)
    expected = getattr(mech.calibration, "content_hash", None)
    assert ledger.releases()["calibration_content_hash"].tolist() == [expected]
