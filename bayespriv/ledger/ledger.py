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
stacked query (:mod:`bayespriv.ledger.composition`), which needs no composition theorem for the
releases it covers.

Structure
---------
:class:`Ledger` is one class that owns four collaborating objects and hands each public method to one
of them: a :class:`~bayespriv.ledger.ledger_connection.LedgerConnection` (the file, this process's
connection, transactions, opening and verifying), :class:`~bayespriv.ledger.ledger_budgets.Budgets`
(setting, creating and reading budgets), :class:`~bayespriv.ledger.ledger_checks.ChargeChecks`
(check-and-spend and void) and :class:`~bayespriv.ledger.ledger_view.LedgerView` (the tables and the
notebook view). The schema, units and invariants are in :mod:`~bayespriv.ledger.ledger_schema`, what
a release records in :mod:`~bayespriv.ledger.ledger_records`.
"""

from __future__ import annotations

import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from bayespriv._validation import check_real, fail
from bayespriv.errors import LedgerError, ParameterTypeError
from .epsilon import VariableRelease
from .ledger_budgets import MAX_BUDGET_EPSILON, Budgets
from .ledger_checks import ChargeChecks
from .ledger_connection import LedgerConnection, ledger_path
from .ledger_records import COMPOSITION_ASSUMPTION, Charge, calibration_hash, composes_unconditionally
from .ledger_schema import DELTA_UNIT, EPSILON_UNIT
from .ledger_view import LedgerView

if TYPE_CHECKING:
    from bayespriv.mechanisms import Mechanism
    from .composition import JointGaussian

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


def _reopen(cls: type, path: str, timeout: float, ledger_id: str | None) -> "Ledger":
    """Unpickle: open the existing file (never create one) and check it is the same ledger."""
    led = cls(path, timeout=timeout, create=False)
    if ledger_id is not None and led._connection.ledger_id != ledger_id:
        raise LedgerError(f"ledger file {str(led.path)!r} is not the ledger that was pickled (its ledger_id "
                          f"changed: the file was replaced). Restore the original file; nothing was spent.")
    return led


class Ledger:
    """Privacy budgets per protected attribute or variable, in a SQLite file.

    Parameters
    ----------
    path : str or path-like
        The database file. Use one file per protected dataset: every release without a
        ``dataset_name`` is on its default account (:mod:`bayespriv.ledger.session`).
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
    #: ledger did before; kept for the side-by-side benchmark ``benchmarks/bench_ledger.py``). Read when the
    #: ledger is constructed, and handed to its :class:`~bayespriv.ledger.ledger_connection.LedgerConnection`.
    _persistent: ClassVar[bool] = True

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0, create: bool = True) -> None:
        file = ledger_path(path)
        t = check_real("timeout", timeout)
        if not (t > 0 and math.isfinite(t)):
            raise fail("timeout", "a finite number of seconds > 0", timeout)
        if not isinstance(create, bool):
            raise ParameterTypeError(f"create must be a bool; got {create!r} of type {type(create).__name__}")
        #: The file and this process's connection to it (WAL, synchronous=FULL, BEGIN IMMEDIATE, the schema).
        self._connection = LedgerConnection(file, t, persistent=self._persistent)
        #: The budgets: totals and what is spent, in nano-ε / atto-δ, and the record of their changes.
        self._budgets = Budgets(self._connection)
        #: Check-and-spend: the atomic charge of a release, its void, and the joint accounting of releases.
        self._charges = ChargeChecks(self._connection)
        #: The tables and the notebook view.
        self._view = LedgerView(self._connection, self._budgets)
        self._connection.open(create)

    @property
    def path(self) -> Path:
        """The ledger file (the path given, resolved)."""
        return self._connection.path

    @path.setter
    def path(self, value: Path) -> None:
        self._connection.path = value

    @property
    def timeout(self) -> float:
        """Seconds a writer waits for another process's transaction before failing."""
        return self._connection.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._connection.timeout = value

    def close(self) -> None:
        """Close this process's connection to the file; idempotent.

        Closing the last connection to the file checkpoints the write-ahead log into it. A later
        operation on this object opens a new connection (and checks again that the file is this
        ledger), so closing never loses anything; ``with Ledger(path) as ledger:`` closes on exit.
        """
        self._connection.close()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self):
        return (_reopen, (type(self), str(self.path), self.timeout, self._connection.ledger_id))

    @contextmanager
    def _connect(self, mode: str = "rw") -> Iterator[sqlite3.Connection]:
        """The connection of this object and process for one operation, under its lock (what
        ``benchmarks/bench_ledger.py`` reads the PRAGMAs of); :meth:`LedgerConnection.connect
        <bayespriv.ledger.ledger_connection.LedgerConnection.connect>`."""
        with self._connection.connect(mode) as con:
            yield con

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
        self._budgets.set(name, epsilon, delta, reason)

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
        return self._budgets.create(name, epsilon, delta, reason)

    def budget_events(self) -> pd.DataFrame:
        """Every creation and change of a budget, oldest first (index: event id).

        Columns: ``time_utc``, ``budget``, ``action`` (``"created"``, ``"raised"``, ``"lowered"``,
        ``"changed"`` — ε and δ moved in opposite directions —, with ``" below spent"`` when the new
        total is below what was spent, or ``"existing at migration"`` for a budget of a ledger written
        before budget changes were recorded), ``old epsilon``, ``old delta`` (NaN on creation),
        ``new epsilon``, ``new delta``, ``epsilon spent``, ``delta spent`` (at that moment),
        ``below spent`` (bool), ``reason`` and ``pid``.
        """
        return self._budgets.events()

    def budgets(self) -> tuple[str, ...]:
        """Names of the budgets set in this ledger, sorted."""
        return self._budgets.names()

    def spent(self, name: str) -> tuple[float, float]:
        """(ε, δ) spent on budget ``name`` (exact: 100 spends of 0.01 give 1.0; voided releases excluded)."""
        return self._budgets.spent(name)

    def remaining(self, name: str) -> tuple[float, float]:
        """(ε, δ) still available on budget ``name`` (0 where it was lowered below what is spent)."""
        return self._budgets.remaining(name)

    def budget(self, name: str) -> tuple[float, float]:
        """Total (ε, δ) of budget ``name``."""
        return self._budgets.total(name)

    # -- check and spend -----------------------------------------------------------------------------
    def charge(self, mechanism: Mechanism | JointGaussian, *, seeded: bool | None = None, dataset: Any = None,
               independent: bool = False) -> Charge:
        """Check and spend the budget of every attribute ``mechanism`` protects, atomically.

        Called by ``release`` / ``release_value`` before any noise is drawn. How much is spent depends
        on how the mechanism composes (``mechanism.composition``, see :mod:`bayespriv.ledger.joint`):

        * differential-privacy (``"dp"``, and ``"dataset_dp"``: a mechanism whose noise alone covers its
          query's whole range), subset-of-variables and Markov-chain MQM releases spend their own
          (ε, δ) (sequential composition is a theorem for them; the row names it); so do Markov quilt
          (APMQM) releases when every (θ, sensitive node) has a quilt valid for them and for every
          quilt release already on the dataset — otherwise they are refused
          (:class:`~bayespriv.ledger.joint.JointAccountingError`) unless declared independent;
        * every other (Pufferfish) release is accounted **jointly** with the releases already granted
          on the same account for each budget: it spends the increase of the joint ε of all of
          them at the sum of their δ, and its own δ. When that joint law cannot be formed the release
          is refused (:class:`~bayespriv.ledger.joint.JointAccountingError`) unless
          ``independent=True`` declares it independent of the others: it then spends its own (ε, δ)
          and the row records the assumption ``"declared_independent"``. Releases that together
          reveal the secret are refused (:class:`~bayespriv.ledger.joint.JointLeakError`);
        * every release is checked against every earlier row of its account and budget
          (:func:`~bayespriv.ledger.joint.composes_with`): a kind with no composition theorem with an
          earlier release's kind (a count table and a Pufferfish release, say) is refused
          (:class:`~bayespriv.ledger.joint.JointAccountingError`) unless declared independent.

        The account is ``dataset``: None (the default account, where every release without a name is
        accounted together, whatever frame it read) or a declared name (recorded on the row as
        ``declared_separate_data``).

        Records the release — with the guarantee's failed and unchecked assumptions, whether it is
        established, how it composed — or, when any budget is missing or would be exceeded, records a
        refusal, spends nothing on any budget, and raises (:class:`~bayespriv.BudgetExceededError`, or
        :class:`~bayespriv.ValidationError` for a missing budget). An ε beyond
        :data:`MAX_BUDGET_EPSILON` exceeds every budget.
        """
        return self._charges.charge(mechanism, seeded, dataset, independent)

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
        self._charges.void(release_id, reason)

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
        return self._view.releases()

    def refusals(self) -> pd.DataFrame:
        """Every refused release (nothing spent), oldest first."""
        return self._view.refusals()

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
        return self._view.report()

    def joint_guarantees(self) -> pd.DataFrame:
        """What the releases on each dataset cost each budget together, releases not voided.

        One row per (dataset, budget): ``releases`` (how many), ``jointly accounted`` (of those, accounted
        together), ``joint epsilon`` / ``joint delta`` (the joint guarantee after the last jointly accounted
        release: see :mod:`bayespriv.ledger.joint`), ``method``, ``charged epsilon`` / ``charged delta``
        (what the dataset's releases took from the budget: the largest joint ε reached plus what the others
        added by a theorem or a declared independence), and ``compositions`` (how its releases composed).
        """
        return self._view.joint_guarantees()

    def variable_releases(self) -> list[VariableRelease]:
        """The recorded releases, voided ones excluded, as :class:`VariableRelease` records."""
        return self._view.variable_releases()

    def epsilon_table(self, variables: Any = None, *, total: str | None = "Total") -> pd.DataFrame:
        """ε of each recorded release on each variable, and composed (Propositions 3.3–3.5)."""
        return self._view.epsilon_table(variables, total)

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
        self._connection.verify()

    # -- presentation ----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def _repr_html_(self) -> str:
        return self._view.html()
