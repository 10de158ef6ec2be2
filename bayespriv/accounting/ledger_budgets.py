"""Budget amounts and rows of the ledger: the largest ε budget it holds, the checks of a budget's name,
amounts and reason, and the rows that create a budget and record each change of one.
"""

from __future__ import annotations

import math
import os
import sqlite3
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from .._validation import check_real, fail
from ..errors import ParameterTypeError, ValidationError
from .ledger_schema import _MAX_UNITS, DELTA_UNIT, EPSILON_UNIT, _now, _units


def _largest_budget() -> float:
    x = float(Decimal(_MAX_UNITS) * EPSILON_UNIT)
    while _units(x, EPSILON_UNIT, ROUND_FLOOR) > _MAX_UNITS:
        x = math.nextafter(x, 0.0)
    return x


#: Largest ε budget the ledger can hold (2⁶³ − 1 nano-ε, as a float rounded down).
MAX_BUDGET_EPSILON = _largest_budget()


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


class _LedgerBudgets:
    """Budget arguments and rows of :class:`~bayespriv.accounting.Ledger` (its public budget methods use them)."""

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

    def _budget_row(self, name: str) -> tuple[int, int, int, int]:
        name = _budget_name(name)
        with self._connect() as con:
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
        if row is None:
            raise ValidationError(f"name must be a budget of this ledger {self.budgets()!r}; got {name!r}")
        return row
