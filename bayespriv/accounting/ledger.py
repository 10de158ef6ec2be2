"""A privacy-budget ledger on SQLite that never overspends.

``Ledger(path)`` keeps, in one SQLite file,

* ``budgets``: the ε and δ budget of each protected attribute or variable and what is spent, and
  ``budget_events``: every creation and change of a budget (old and new totals, what was spent then,
  why);
* ``releases``: every granted release (mechanism, guarantee, its failed and unchecked assumptions and
  whether it is *established*, protected budgets, variables, query, UTC time, seeded flag, hash of the
  calibration and SHA-256 of the calibration file it was loaded from, and whether it was *voided*),
  and ``charges``: what it took from each budget;
* ``refusals``: every release refused (budget exceeded or missing), which spent nothing.

Check-and-spend is one ``BEGIN IMMEDIATE`` transaction: SQLite then holds the database's write lock
from the first read, so two processes cannot both read "0.99 spent" and both spend 0.01. The
journal is WAL with ``synchronous=FULL``: a transaction that returned is on disk, and a process
killed in the middle of one leaves the database as it was before it (the spend, the release record
and the counters are written together or not at all). Amounts are integers — nano-ε (10⁻⁹) and
atto-δ (10⁻¹⁸) — so 100 spends of 0.01 add up to exactly 1.0; a spend is rounded up and a budget
down, so rounding never grants more than the budget. The integers are SQLite's 64-bit ones, so an
ε budget is at most :data:`MAX_BUDGET_EPSILON` (≈ 9.2e9).

One connection per ``Ledger`` object and process, kept open between operations
(:meth:`Ledger.close`, or ``with Ledger(path) as ledger:``, closes it; the next operation opens a new
one). Opening and closing a connection per operation cost more than the operation: closing the last
connection of a WAL database checkpoints the log into the file (two more ``fsync``) and deletes it,
so a ledger-backed release ran at about half the rate (``benchmarks/RESULTS_ledger.md``). The
connection is never shared across processes: a forked child (``os.fork``, ``multiprocessing``'s fork
context) drops the parent's connection without closing it — it belongs to the parent — and opens
its own at its first operation (``os.register_at_fork``, and a process-id check before every
operation for forks that bypass it); a spawned process unpickles the ledger as its path and identity.
Threads share the connection under a lock, one operation at a time (SQLite serialises writers
anyway). Before every operation the ledger checks that its path still names the file it opened
(device and inode): a file deleted, moved or replaced under an open ``Ledger`` is refused, as below,
and never written through a stale handle. While a ledger is open its write-ahead log (``-wal``) and
index (``-shm``) stay beside the file: move or copy a ledger closed, or with both. A waiting writer
retries for ``timeout`` seconds (SQLite's busy timeout) instead of failing.

File problems
-------------
Every problem with the file (missing directory, read-only file or directory, garbage bytes, a file
cut short, an SQLite file of another application, a newer schema, the file deleted or replaced while
the ledger is in use) raises :class:`~bayespriv.errors.LedgerError` naming the path and what to do;
nothing is spent. Only ``Ledger(path)`` (with ``create=True``, the default) creates a file: every
later operation opens the existing file (SQLite ``mode=rw``) and checks that it is the same ledger
(a random ``ledger_id`` kept in the file), so a ledger whose file vanished is never silently
replaced by an empty one that forgets the spent budget.

Budgets change only on purpose
------------------------------
:meth:`Ledger.create_budget` creates a budget and never changes one: asked again with the same value
it does nothing, asked with another value it refuses, naming the budget, its value and the call that
changes it. That call is :meth:`Ledger.set_budget`, the explicit one: it creates or changes (raise or
lower — below what is already spent too, which is stated by a warning and blocks every further
release on the budget). Every creation and change is a row of :meth:`Ledger.budget_events`, written in
the same transaction as the change, and counted in :meth:`Ledger.report`.

The file is checked at open
---------------------------
An SQLite file can carry more than tables: an ``AFTER UPDATE`` trigger that resets ``epsilon_spent``
would let any number of releases through while every count looks normal, and SQLite's own checks do
not see it. ``Ledger(path)`` therefore accepts an existing file only if its ``sqlite_master`` —
tables, indexes, triggers, views, by name and (normalised) SQL text — is exactly what this library
creates for the schema version the file states; anything else raises
:class:`~bayespriv.errors.LedgerError` naming the object and the file. It then checks the cheap
invariants of :meth:`Ledger.verify` (spent = the charges of releases not voided, totals = the last
budget event, ...): opening a ledger of 10,000 releases takes about 6 ms instead of 4 ms without
these checks (100,000 releases: 52 ms instead of 39 ms; SQLite's ``quick_check`` is most of both).
Files of schema versions 1 and 2 (earlier bayespriv) are accepted exactly as those versions and
migrated in one transaction; each later operation re-checks the schema when SQLite's schema cookie
moved.

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

import json
import math
import os
import sqlite3
import threading
import weakref
from decimal import ROUND_CEILING
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._validation import check_real, fail
from ..errors import LedgerError, ParameterTypeError, ValidationError, warn
from .epsilon import VariableRelease, epsilon_table
from .ledger_budgets import MAX_BUDGET_EPSILON, _LedgerBudgets, _reason, _record_event
from .ledger_checks import _LedgerChecks
from .ledger_connection import _LedgerConnection, _ledger_path
from .ledger_records import (COMPOSITION_ASSUMPTION, Charge, account_of, _Request, calibration_hash,
                             composes_unconditionally)
from .ledger_schema import (_SCHEMA_VERSION, DELTA_UNIT, EPSILON_UNIT, _dlt, _eps, _from_units, _invariant_problem,
                            _now, _schema_problem, _units)
from .ledger_view import _COMPOSITION_NOTE, _LedgerView

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

#: Every Ledger of this process, to reset in a forked child (:meth:`Ledger._forget_connection`).
_LEDGERS: "weakref.WeakSet[Ledger]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for ledger in list(_LEDGERS):
        ledger._forget_connection()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

#: Attempts at accounting a release jointly while other processes keep granting releases on its dataset.
_JOINT_RETRIES = 5


def _reopen(cls: type, path: str, timeout: float, ledger_id: str | None) -> "Ledger":
    """Unpickle: open the existing file (never create one) and check it is the same ledger."""
    led = cls(path, timeout=timeout, create=False)
    if ledger_id is not None and led._ledger_id != ledger_id:
        raise LedgerError(f"ledger file {str(led.path)!r} is not the ledger that was pickled (its ledger_id "
                          f"changed: the file was replaced). Restore the original file; nothing was spent.")
    return led


class Ledger(_LedgerConnection, _LedgerBudgets, _LedgerChecks, _LedgerView):
    """Privacy budgets per protected attribute or variable, in a SQLite file.

    Parameters
    ----------
    path : str or path-like
        The database file. Use one file per protected dataset: every release without a
        ``dataset_name`` is on its default account (:mod:`bayespriv.accounting.session`).
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
        The file cannot be used as a ledger (see the module docstring), or its schema is not exactly
        the library's (an added trigger, view, index or a changed table), or its rows break an
        invariant; the message names the path, the object or the row, and what to do.

    Notes
    -----
    Sums of (ε, δ) over releases are sequential composition: a theorem for DP and for privacy on
    a subset of variables, an *assumption* (``"sequential_composition"`` on the release row) for
    Pufferfish mechanisms — see the module docstring.

    Budgets: :meth:`create_budget` creates and never changes (what a script run again should call);
    :meth:`set_budget` creates or changes on purpose; both record the change in
    :meth:`budget_events`.

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
    >>> ledger.create_budget("income", epsilon=1.0, delta=1e-5)    # created
    True
    >>> ledger.create_budget("income", epsilon=1.0, delta=1e-5)    # run again: nothing to do
    False
    >>> df = pd.DataFrame({"income": [39.0, 40.0, 42.0]})
    >>> release = mech.release(df, ledger=ledger)   # checks, spends, then draws
    >>> ledger.spent("income")
    (0.5, 1e-06)
    >>> ledger.remaining("income")
    (0.5, 9e-06)
    >>> ledger.set_budget("income", epsilon=2.0, delta=None, reason="approved")  # on purpose (δ kept)
    >>> ledger.budget_events()[["action", "new epsilon", "reason"]].values.tolist()
    [['created', 1.0, None], ['raised', 2.0, 'approved']]
    >>> folder.cleanup()
    """

    #: Keep one connection open per object and process (False: open and close one per operation, as the
    #: ledger did before; kept for the side-by-side benchmark ``benchmarks/bench_ledger.py``).
    _persistent: ClassVar[bool] = True

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0, create: bool = True) -> None:
        self.path = _ledger_path(path)
        t = check_real("timeout", timeout)
        if not (t > 0 and math.isfinite(t)):
            raise fail("timeout", "a finite number of seconds > 0", timeout)
        self.timeout = t
        if not isinstance(create, bool):
            raise ParameterTypeError(f"create must be a bool; got {create!r} of type {type(create).__name__}")
        self._ledger_id: str | None = None
        self._schema_cookie: int | None = None
        #: Releases granted through this object whose query and data model are at hand (joint accounting
        #: of later releases with other queries on the same data): release id -> (query, model, pairs).
        self._live: dict[int, tuple[Any, Any, tuple[Any, ...]]] = {}
        self._lock = threading.RLock()
        #: The open connection, the process that opened it and the (device, inode) of the file it opened.
        self._con: sqlite3.Connection | None = None
        self._con_pid: int | None = None
        self._con_file: tuple[int, int] | None = None
        #: (device, inode) of the file this object opened: a different file at ``path`` later is refused.
        self._file_id: tuple[int, int] | None = None
        _LEDGERS.add(self)
        self._open(create)
        self._file_id = self._file_identity()

    def close(self) -> None:
        """Close this process's connection to the file; idempotent.

        Closing the last connection to the file checkpoints the write-ahead log into it. A later
        operation on this object opens a new connection (and checks again that the file is this
        ledger), so closing never loses anything; ``with Ledger(path) as ledger:`` closes on exit.
        """
        if self._con_pid is not None and self._con_pid != os.getpid():
            self._forget_connection()
            return
        with self._lock:
            self._drop_connection()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self):
        return (_reopen, (type(self), str(self.path), self.timeout, self._ledger_id))

    # -- budgets -----------------------------------------------------------------------------------
    def set_budget(self, name: str, epsilon: float, delta: float | None = 0.0, *, reason: str | None = None) -> None:
        """Create budget ``name`` or change its total (ε, δ), on purpose: the explicit way to raise or lower it.

        Every creation and change is recorded in :meth:`budget_events` (old and new totals, what was
        spent, ``reason``) in the same transaction; setting the value a budget already has records
        nothing. A budget may be lowered below what is already spent — its releases stay on record and
        every further release on it is refused — and that is stated: a
        :class:`~bayespriv.errors.BayesPrivWarning`, and the action ``"lowered below spent"`` in the
        event. To create a budget without ever changing an existing one (what a repeated script or
        command line wants), use :meth:`create_budget`.

        Parameters
        ----------
        name : str
            The protected attribute or variable (a mechanism protecting ``c`` charges budget ``c``).
        epsilon : float
            Total ε, finite, >= 0 and at most :data:`MAX_BUDGET_EPSILON` (the ledger counts integer
            nano-ε in SQLite's 64-bit integers; rounded down to a whole nano-ε).
        delta : float or None
            Total δ in [0, 1) (rounded down to a whole atto-δ). ``None`` keeps the budget's current
            δ (0 for a new budget): raising ε alone then leaves δ as it is.
        reason : str, optional
            Why, kept in the event row (e.g. "approved by the data owner, ticket 12").
        """
        name, e_units, d_units = self._budget_args(name, epsilon, delta)
        note = _reason(reason)
        with self._connect() as con, self._transaction(con):
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
            if row is None:
                self._insert_budget(con, name, e_units, 0 if d_units is None else d_units, note)
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
                        (e_units, d_units, _now(), name))
            _record_event(con, name, action, (et, dt), (e_units, d_units), (es, ds), note)
        if below:
            warn(f"budget {name!r} of {str(self.path)!r} set to ε={_eps(e_units)}, δ={_dlt(d_units)}, below what is "
                 f"already spent (ε={_eps(es)}, δ={_dlt(ds)}): every further release on it is refused")

    def create_budget(self, name: str, epsilon: float, delta: float | None = None, *,
                      reason: str | None = None) -> bool:
        """Create budget ``name`` if it does not exist; never change an existing one.

        Returns True when it created the budget (recorded in :meth:`budget_events`), False when the
        budget already has this ε and δ (after rounding to whole nano-ε / atto-δ; nothing is
        written). ``delta=None`` (the default) creates with δ = 0 and, for an existing budget, leaves
        δ out of the comparison. A budget that exists with another value is refused — a script or a
        command run again with another number must not silently raise a spent budget — and the error
        (a :class:`~bayespriv.ValidationError`) names the budget, its current value and the call that
        changes it on purpose (:meth:`set_budget`); it carries ``budget``, ``current`` and
        ``requested`` attributes (name, (ε, δ), (ε, δ)). Other arguments as :meth:`set_budget`.
        """
        name, e_units, d_units = self._budget_args(name, epsilon, delta)
        note = _reason(reason)
        with self._connect() as con, self._transaction(con):
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets WHERE name = ?",
                              (name,)).fetchone()
            if row is None:
                self._insert_budget(con, name, e_units, 0 if d_units is None else d_units, note)
                return True
        et, dt, es, ds = row
        d_units = dt if d_units is None else d_units
        if (et, dt) == (e_units, d_units):
            return False
        current = (_from_units(et, EPSILON_UNIT), _from_units(dt, DELTA_UNIT))
        requested = (_from_units(e_units, EPSILON_UNIT), _from_units(d_units, DELTA_UNIT))
        exc = ValidationError(
            f"the budget {name!r} must keep its value when create_budget finds it in {str(self.path)!r}: it is "
            f"ε={_eps(et)}, δ={_dlt(dt)} (spent ε={_eps(es)}, δ={_dlt(ds)}); got ε={_eps(e_units)}, δ={_dlt(d_units)}. "
            f"Nothing was changed. To change it on purpose, call ledger.set_budget({name!r}, epsilon={requested[0]!r}, "
            f"delta={requested[1]!r}) (recorded in budget_events)")
        exc.budget, exc.current, exc.requested = name, current, requested  # type: ignore[attr-defined]
        raise exc

    def budget_events(self) -> pd.DataFrame:
        """Every creation and change of a budget, oldest first (index: event id).

        Columns: ``time_utc``, ``budget``, ``action`` (``"created"``, ``"raised"``, ``"lowered"``,
        ``"changed"`` — ε and δ moved in opposite directions —, with ``" below spent"`` when the new
        total is below what was spent, or ``"existing at migration"`` for a budget of a ledger written
        before budget changes were recorded), ``old epsilon``, ``old delta`` (NaN on creation),
        ``new epsilon``, ``new delta``, ``epsilon spent``, ``delta spent`` (at that moment),
        ``below spent`` (bool), ``reason`` and ``pid``.
        """
        with self._connect() as con:
            rows = con.execute("SELECT id, time_utc, name, action, old_epsilon_units, old_delta_units, "
                               "new_epsilon_units, new_delta_units, epsilon_spent_units, delta_spent_units, reason, pid "
                               "FROM budget_events ORDER BY id").fetchall()
        e = lambda u: math.nan if u is None else _from_units(u, EPSILON_UNIT)  # noqa: E731
        d = lambda u: math.nan if u is None else _from_units(u, DELTA_UNIT)  # noqa: E731
        data = [(t, n, a, e(oe), d(od), e(ne), d(nd), e(se), d(sd), bool(ne < se or nd < sd), why, pid)
                for _, t, n, a, oe, od, ne, nd, se, sd, why, pid in rows]
        columns = ["time_utc", "budget", "action", "old epsilon", "old delta", "new epsilon", "new delta",
                   "epsilon spent", "delta spent", "below spent", "reason", "pid"]
        df = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="id", dtype="int64"), columns=columns)
        df["time_utc"] = pd.to_datetime(df["time_utc"], utc=True, format="ISO8601")
        df["below spent"] = df["below spent"].astype(bool)
        df["reason"] = pd.Series([r[10] for r in rows], index=df.index, dtype=object)  # None: no reason given
        return df

    def budgets(self) -> tuple[str, ...]:
        """Names of the budgets set in this ledger, sorted."""
        with self._connect() as con:
            return tuple(r[0] for r in con.execute("SELECT name FROM budgets ORDER BY name"))

    def spent(self, name: str) -> tuple[float, float]:
        """(ε, δ) spent on budget ``name`` (exact: 100 spends of 0.01 give 1.0; voided releases excluded)."""
        _, _, e, d = self._budget_row(name)
        return _from_units(e, EPSILON_UNIT), _from_units(d, DELTA_UNIT)

    def remaining(self, name: str) -> tuple[float, float]:
        """(ε, δ) still available on budget ``name`` (0 where it was lowered below what is spent)."""
        et, dt, e, d = self._budget_row(name)
        return _from_units(max(et - e, 0), EPSILON_UNIT), _from_units(max(dt - d, 0), DELTA_UNIT)

    def budget(self, name: str) -> tuple[float, float]:
        """Total (ε, δ) of budget ``name``."""
        et, dt, _, _ = self._budget_row(name)
        return _from_units(et, EPSILON_UNIT), _from_units(dt, DELTA_UNIT)

    # -- check and spend -----------------------------------------------------------------------------
    def charge(self, mechanism: Any, *, seeded: bool | None = None, dataset: Any = None,
               independent: bool = False) -> Charge:
        """Check and spend the budget of every attribute ``mechanism`` protects, atomically.

        Called by ``release`` / ``release_value`` before any noise is drawn. How much is spent depends
        on how the mechanism composes (``mechanism.composition``, see :mod:`bayespriv.accounting.joint`):

        * differential-privacy (``"dp"``, and ``"dataset_dp"``: a mechanism whose noise alone covers its
          query's whole range), subset-of-variables and Markov-chain MQM releases spend their own
          (ε, δ) (sequential composition is a theorem for them; the row names it); so do Markov quilt
          (APMQM) releases when every (θ, sensitive node) has a quilt valid for them and for every
          quilt release already on the dataset — otherwise they are refused
          (:class:`~bayespriv.accounting.joint.JointAccountingError`) unless declared independent;
        * every other (Pufferfish) release is accounted **jointly** with the releases already granted
          on the same account for each budget: it spends the increase of the joint ε of all of
          them at the sum of their δ, and its own δ. When that joint law cannot be formed the release
          is refused (:class:`~bayespriv.accounting.joint.JointAccountingError`) unless
          ``independent=True`` declares it independent of the others: it then spends its own (ε, δ)
          and the row records the assumption ``"declared_independent"``. Releases that together
          reveal the secret are refused (:class:`~bayespriv.accounting.joint.JointLeakError`);
        * every release is checked against every earlier row of its account and budget
          (:func:`~bayespriv.accounting.joint.composes_with`): a kind with no composition theorem with an
          earlier release's kind (a count table and a Pufferfish release, say) is refused
          (:class:`~bayespriv.accounting.joint.JointAccountingError`) unless declared independent.

        The account is ``dataset``: None (the default account, where every release without a name is
        accounted together, whatever frame it read) or a declared name (recorded on the row as
        ``declared_separate_data``).

        Records the release — with the guarantee's failed and unchecked assumptions, whether it is
        established, how it composed — or, when any budget is missing or would be exceeded, records a
        refusal, spends nothing on any budget, and raises (:class:`~bayespriv.BudgetExceededError`, or
        :class:`~bayespriv.ValidationError` for a missing budget). An ε beyond
        :data:`MAX_BUDGET_EPSILON` exceeds every budget.
        """
        req = _Request.for_release(mechanism, dataset, independent)
        own = (_units(req.epsilon, EPSILON_UNIT, ROUND_CEILING), _units(req.delta, DELTA_UNIT, ROUND_CEILING))
        for _ in range(_JOINT_RETRIES):
            plan = self._joint_plan(mechanism, req) if req.composition == "joint" else None
            units = {name: own if plan is None else (plan.units[name], own[1]) for name in req.protected}
            with self._connect() as con, self._transaction(con):
                if plan is not None and self._priors_moved(con, req, plan):
                    continue  # another process granted a release on this dataset meanwhile: account again
                refusal = self._no_theorem(con, req)
                if refusal is None and req.composition == "quilt":
                    refusal = self._no_common_quilt(con, req)
                refusal = refusal or self._check_budgets(con, req, units)
                if refusal is None:
                    rid = self._record_release(con, req, units, seeded, None if plan is None else plan.record)
            break
        else:  # pragma: no cover - needs a stream of concurrent releases on the same dataset
            raise LedgerError(f"ledger {str(self.path)!r}: the releases on dataset {req.dataset!r} kept changing "
                              f"while this one was accounted ({_JOINT_RETRIES} attempts); try again")
        if refusal is not None:
            raise refusal  # after COMMIT: the refusal is recorded, nothing spent
        if plan is not None:
            self._remember(rid, mechanism)
        spent = max(units[name][0] for name in req.protected)
        return Charge(rid, req.protected, _from_units(spent, EPSILON_UNIT), req.delta)

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
        ``calibration_hash`` is the hash of the calibration's moments (:func:`calibration_hash`);
        ``calibration_content_hash`` the SHA-256 of the calibration file the mechanism was built from
        (``Calibration.content_hash``; None for an in-memory calibration and rows written before the
        ledger recorded it). ``dataset`` is the account the release was charged to (``"unnamed"``:
        the default account; a declared name; ``"table:…"`` on rows of older versions, read as the default
        account), ``composition`` how it composed (``"joint"``, ``"dp"``, ``"dataset_dp"``, ``"subset"``, ``"chain"``,
        ``"independent"``; None: summed under ``"sequential_composition"``) and ``joint``, for joint
        rows, the joint guarantee per budget after it: ``{budget: {"epsilon", "delta", "units",
        "method", "releases", "assumptions", "seed"}}`` (``seed``: of the stacked calibration the joint law
        was drawn from, None when it was not needed).
        """
        cols = ["time_utc", "mechanism", "epsilon", "delta", "confidence", "assumptions", "failed_assumptions",
                "unchecked_assumptions", "established", "theorem", "protected", "variables", "query", "seeded",
                "calibration_hash", "calibration_content_hash", "pid", "voided", "void_reason", "dataset",
                "composition", "joint"]
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
        df["calibration_content_hash"] = pd.Series(raw["calibration_content_hash"], index=df.index, dtype=object)
        df["joint"] = pd.Series([None if v is None else json.loads(v) for v in raw["joint"]], index=df.index,
                                dtype=object)
        for c in ("dataset", "composition"):  # None (not NaN) for rows that record none
            df[c] = pd.Series(raw[c], index=df.index, dtype=object)
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
        ``voided``, ``refusals``, ``budget changes`` (changes recorded after the budget was created;
        the rows are :meth:`budget_events`) and ``calibration files`` (the first 12 hex digits of the
        SHA-256 of each calibration file its releases not voided were built from, comma-separated;
        ``-`` for none). ``remaining`` is 0 for a budget lowered below what is spent.
        ``attrs["composition"]`` says in words how the releases were added up; ``attrs["budget_events"]``
        holds :meth:`budget_events` and ``attrs["joint"]`` :meth:`joint_guarantees` (per dataset and budget).
        """
        assumed = json.dumps(COMPOSITION_ASSUMPTION)
        with self._connect() as con:
            rows = con.execute(
                "SELECT b.name, b.epsilon_total, b.epsilon_spent, b.delta_total, b.delta_spent, "
                "COALESCE(SUM(r.voided = 0), 0), COALESCE(SUM(r.voided = 0 AND r.established = 0), 0), "
                "COALESCE(SUM(r.voided = 0 AND instr(r.assumptions, ?) > 0), 0), COALESCE(SUM(r.voided = 1), 0), "
                "(SELECT COUNT(*) FROM refusals f WHERE f.budget = b.name), "
                "(SELECT COUNT(*) FROM budget_events e WHERE e.name = b.name AND e.old_epsilon_units IS NOT NULL), "
                "GROUP_CONCAT(DISTINCT CASE WHEN r.voided = 0 THEN substr(r.calibration_content_hash, 1, 12) END) "
                "FROM budgets b LEFT JOIN charges c ON c.budget = b.name LEFT JOIN releases r ON r.id = c.release_id "
                "GROUP BY b.name ORDER BY b.name", (assumed,)).fetchall()
        columns = ["epsilon budget", "epsilon spent", "epsilon remaining", "delta budget", "delta spent",
                   "delta remaining", "releases", "not established", "composition assumed", "voided", "refusals",
                   "budget changes", "calibration files"]
        data = [(_from_units(et, EPSILON_UNIT), _from_units(es, EPSILON_UNIT), _from_units(max(et - es, 0), EPSILON_UNIT),
                 _from_units(dt, DELTA_UNIT), _from_units(ds, DELTA_UNIT), _from_units(max(dt - ds, 0), DELTA_UNIT),
                 int(n), int(bad), int(comp), int(void), int(ref), int(changes),
                 ",".join(sorted(files.split(","))) if files else "-")
                for _, et, es, dt, ds, n, bad, comp, void, ref, changes, files in rows]
        out = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="budget"), columns=columns)
        out.attrs["composition"] = _COMPOSITION_NOTE
        out.attrs["budget_events"] = self.budget_events()
        out.attrs["joint"] = self.joint_guarantees()
        return out

    def joint_guarantees(self) -> pd.DataFrame:
        """What the releases on each dataset cost each budget together, releases not voided.

        One row per (dataset, budget): ``releases`` (how many), ``jointly accounted`` (of those, accounted
        together), ``joint epsilon`` / ``joint delta`` (the joint guarantee after the last jointly accounted
        release: see :mod:`bayespriv.accounting.joint`), ``method``, ``charged epsilon`` / ``charged delta``
        (what the dataset's releases took from the budget: the largest joint ε reached plus what the others
        added by a theorem or a declared independence), and ``compositions`` (how its releases composed).
        """
        with self._connect() as con:
            rows = con.execute(
                "SELECT r.id, r.dataset, c.budget, r.composition, r.joint, c.epsilon_units, c.delta_units "
                "FROM releases r JOIN charges c ON c.release_id = r.id WHERE r.voided = 0 ORDER BY r.id").fetchall()
        table: dict[tuple[str, str], dict[str, Any]] = {}
        for _, dataset, budget, composition, joint, e_units, d_units in rows:
            t = table.setdefault((account_of(dataset), budget), {"releases": 0, "jointly accounted": 0, "joint epsilon": np.nan,
                                                     "joint delta": np.nan, "method": "-", "charged epsilon": 0,
                                                     "charged delta": 0, "compositions": set()})
            t["releases"] += 1
            t["charged epsilon"] += e_units
            t["charged delta"] += d_units
            t["compositions"].add(composition or COMPOSITION_ASSUMPTION)
            if joint is not None:
                record = json.loads(joint).get(budget, {})
                t["jointly accounted"] += 1
                t["joint epsilon"], t["joint delta"] = record.get("epsilon", np.nan), record.get("delta", np.nan)
                t["method"] = record.get("method", "-")
        out = pd.DataFrame.from_dict(table, orient="index")
        if out.empty:
            return pd.DataFrame(columns=["releases", "jointly accounted", "joint epsilon", "joint delta", "method",
                                         "charged epsilon", "charged delta", "compositions"],
                                index=pd.MultiIndex.from_tuples([], names=["dataset", "budget"]))
        out.index = pd.MultiIndex.from_tuples(out.index, names=["dataset", "budget"])
        out["charged epsilon"] = [_from_units(int(u), EPSILON_UNIT) for u in out["charged epsilon"]]
        out["charged delta"] = [_from_units(int(u), DELTA_UNIT) for u in out["charged delta"]]
        out["compositions"] = [", ".join(sorted(c)) for c in out["compositions"]]
        return out.sort_index()

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

        SQLite's full integrity check passes; the schema is exactly the library's (no added trigger,
        view, index or changed table); ``meta`` holds only its two keys; for every budget, spent = sum
        of the charges of its releases not voided, and spent ≤ total unless the last budget event
        lowered the total below what was spent (and nothing was spent since); the totals are those of
        the budget's last event; every release (voided or not) charged each budget it protects with
        its own (ε, δ); a voided release has a reason. Everything but the integrity check also runs
        at every open, where a failure raises :class:`~bayespriv.errors.LedgerError`.
        """
        with self._connect() as con:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                raise ValidationError(f"ledger must pass SQLite's integrity check; got {ok!r}")
            problem = _schema_problem(con, _SCHEMA_VERSION) or _invariant_problem(con, thorough=True)
        if problem is not None:
            raise ValidationError(f"ledger {str(self.path)!r} must keep its invariants; got: {problem}")

    # -- presentation ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

