"""The budgets of the ledger (:class:`Budgets`): the largest ε budget it holds, the checks of a budget's name,
amounts and reason, setting and creating budgets with the rows that record each change, and reading them.
"""

from __future__ import annotations

import math
import os
import sqlite3
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import pandas as pd

from bayespriv._validation import check_real, fail
from bayespriv.errors import ParameterTypeError, ValidationError, warn
from .ledger_connection import LedgerConnection
from .ledger_schema import (
    DELTA_UNIT,
    EPSILON_UNIT,
    MAX_UNITS,
    delta_text,
    epsilon_text,
    from_units,
    to_units,
    utc_now,
)

__all__ = ["Budgets", "MAX_BUDGET_EPSILON"]


def _largest_budget() -> float:
    x = float(Decimal(MAX_UNITS) * EPSILON_UNIT)
    while to_units(x, EPSILON_UNIT, ROUND_FLOOR) > MAX_UNITS:
        x = math.nextafter(x, 0.0)
    return x


#: Largest ε budget the ledger can hold (2⁶³ − 1 nano-ε, as a float rounded down).
MAX_BUDGET_EPSILON = _largest_budget()


def _record_event(con: sqlite3.Connection, name: str, action: str, old: tuple[int | None, int | None],
                  new: tuple[int, int], spent: tuple[int, int], note: str | None) -> None:
    """Inside the transaction that creates or changes the budget: its audit row."""
    con.execute("INSERT INTO budget_events (time_utc, name, action, old_epsilon_units, old_delta_units, "
                "new_epsilon_units, new_delta_units, epsilon_spent_units, delta_spent_units, reason, pid) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (utc_now(), name, action, *old, *new, *spent, note, os.getpid()))


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


class Budgets:
    """The budgets of one ledger file: each protected attribute's total (ε, δ) and what is spent, in whole
    nano-ε and atto-δ, and the audit rows of every creation and change (``budget_events``).

    The methods behind :meth:`Ledger.set_budget <bayespriv.ledger.Ledger.set_budget>`,
    :meth:`~bayespriv.ledger.Ledger.create_budget` and the budget readings of
    :class:`~bayespriv.ledger.Ledger`, whose docstrings say what each one does.

    Parameters
    ----------
    connection : LedgerConnection
        The ledger's file: every change is one of its transactions.
    """

    def __init__(self, connection: LedgerConnection) -> None:
        self._connection = connection

    # -- changing ----------------------------------------------------------------------------------
    def set(self, name: str, epsilon: float, delta: float | None, reason: str | None) -> None:
        """Create budget ``name`` or change its total, recording the change (:meth:`Ledger.set_budget
        <bayespriv.ledger.Ledger.set_budget>`); warns when the new total is below what is spent."""
        name, e_units, d_units = _budget_args(name, epsilon, delta)
        note = _reason(reason)
        connection = self._connection
        with connection.connect() as con, connection.transaction(con):
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
            if row is None:
                _insert_budget(con, name, e_units, 0 if d_units is None else d_units, note)
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
                        (e_units, d_units, utc_now(), name))
            _record_event(con, name, action, (et, dt), (e_units, d_units), (es, ds), note)
        if below:
            warn(f"budget {name!r} of {str(connection.path)!r} set to ε={epsilon_text(e_units)}, "
                 f"δ={delta_text(d_units)}, below what is already spent (ε={epsilon_text(es)}, δ={delta_text(ds)}): "
                 "every further release on it is refused")

    def create(self, name: str, epsilon: float, delta: float | None, reason: str | None) -> bool:
        """Create budget ``name`` if it does not exist (True), do nothing if it has this value (False), refuse
        another value (:meth:`Ledger.create_budget <bayespriv.ledger.Ledger.create_budget>`)."""
        name, e_units, d_units = _budget_args(name, epsilon, delta)
        note = _reason(reason)
        connection = self._connection
        with connection.connect() as con, connection.transaction(con):
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
            if row is None:
                _insert_budget(con, name, e_units, 0 if d_units is None else d_units, note)
                return True
        et, dt, es, ds = row
        d_units = dt if d_units is None else d_units
        if (et, dt) == (e_units, d_units):
            return False
        current = (from_units(et, EPSILON_UNIT), from_units(dt, DELTA_UNIT))
        requested = (from_units(e_units, EPSILON_UNIT), from_units(d_units, DELTA_UNIT))
        exc = ValidationError(
            f"the budget {name!r} must keep its value when create_budget finds it in {str(connection.path)!r}: it is "
            f"ε={epsilon_text(et)}, δ={delta_text(dt)} (spent ε={epsilon_text(es)}, δ={delta_text(ds)}); got "
            f"ε={epsilon_text(e_units)}, δ={delta_text(d_units)}. Nothing was changed. To change it on purpose, call "
            f"ledger.set_budget({name!r}, epsilon={requested[0]!r}, delta={requested[1]!r}) (recorded in budget_events)")
        exc.budget, exc.current, exc.requested = name, current, requested  # type: ignore[attr-defined]
        raise exc

    # -- reading -----------------------------------------------------------------------------------
    def events(self) -> pd.DataFrame:
        """Every creation and change of a budget, oldest first (:meth:`Ledger.budget_events
        <bayespriv.ledger.Ledger.budget_events>`)."""
        with self._connection.connect() as con:
            rows = con.execute("SELECT id, time_utc, name, action, old_epsilon_units, old_delta_units, "
                               "new_epsilon_units, new_delta_units, epsilon_spent_units, delta_spent_units, reason, pid "
                               "FROM budget_events ORDER BY id").fetchall()
        e = lambda u: math.nan if u is None else from_units(u, EPSILON_UNIT)  # noqa: E731
        d = lambda u: math.nan if u is None else from_units(u, DELTA_UNIT)  # noqa: E731
        data = [(t, n, a, e(oe), d(od), e(ne), d(nd), e(se), d(sd), bool(ne < se or nd < sd), why, pid)
                for _, t, n, a, oe, od, ne, nd, se, sd, why, pid in rows]
        columns = ["time_utc", "budget", "action", "old epsilon", "old delta", "new epsilon", "new delta",
                   "epsilon spent", "delta spent", "below spent", "reason", "pid"]
        df = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="id", dtype="int64"), columns=columns)
        df["time_utc"] = pd.to_datetime(df["time_utc"], utc=True, format="ISO8601")
        df["below spent"] = df["below spent"].astype(bool)
        df["reason"] = pd.Series([r[10] for r in rows], index=df.index, dtype=object)  # None: no reason given
        return df

    def names(self) -> tuple[str, ...]:
        """Names of the budgets, sorted."""
        with self._connection.connect() as con:
            return tuple(r[0] for r in con.execute("SELECT name FROM budgets ORDER BY name"))

    def total(self, name: str) -> tuple[float, float]:
        """Total (ε, δ) of budget ``name``."""
        et, dt, _, _ = self._row(name)
        return from_units(et, EPSILON_UNIT), from_units(dt, DELTA_UNIT)

    def spent(self, name: str) -> tuple[float, float]:
        """(ε, δ) spent on budget ``name``, exact (voided releases excluded)."""
        _, _, e, d = self._row(name)
        return from_units(e, EPSILON_UNIT), from_units(d, DELTA_UNIT)

    def remaining(self, name: str) -> tuple[float, float]:
        """(ε, δ) still available on budget ``name`` (0 where it was lowered below what is spent)."""
        et, dt, e, d = self._row(name)
        return from_units(max(et - e, 0), EPSILON_UNIT), from_units(max(dt - d, 0), DELTA_UNIT)

    def _row(self, name: str) -> tuple[int, int, int, int]:
        """(ε total, δ total, ε spent, δ spent) of budget ``name`` in units; a missing budget is refused."""
        name = _budget_name(name)
        with self._connection.connect() as con:
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
        if row is None:
            raise ValidationError(f"name must be a budget of this ledger {self.names()!r}; got {name!r}")
        return row


def _budget_args(name: Any, epsilon: Any, delta: Any) -> tuple[str, int, int | None]:
    """The checked name and the totals in units (ε and δ rounded down; δ None: keep the budget's)."""
    name = _budget_name(name)
    eps = check_real("epsilon", epsilon)
    if not (math.isfinite(eps) and eps >= 0):
        raise fail("epsilon", "a finite number >= 0", epsilon)
    if eps > MAX_BUDGET_EPSILON:
        raise fail("epsilon", f"at most {MAX_BUDGET_EPSILON!r} (the ledger counts integer nano-ε in 64 bits)", epsilon)
    e_units = to_units(eps, EPSILON_UNIT, ROUND_FLOOR)
    if delta is None:
        return name, e_units, None
    d = check_real("delta", delta)
    if not 0.0 <= d < 1.0:
        raise fail("delta", "in [0, 1)", delta)
    return name, e_units, to_units(d, DELTA_UNIT, ROUND_FLOOR)


def _insert_budget(con: sqlite3.Connection, name: str, e_units: int, d_units: int, note: str | None) -> None:
    """Inside the transaction: the new budget's row and its ``created`` event."""
    con.execute("INSERT INTO budgets (name, epsilon_total, delta_total, updated_utc) VALUES (?, ?, ?, ?)",
                (name, e_units, d_units, utc_now()))
    _record_event(con, name, "created", (None, None), (e_units, d_units), (0, 0), note)
