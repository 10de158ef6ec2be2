"""The ledger's check-and-spend (:class:`ChargeChecks`): the budget checks, the release and refusal rows, the
common Markov quilt of quilt releases, the joint accounting of the releases on the same data, and the void
that refunds a release.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from decimal import ROUND_CEILING
from typing import TYPE_CHECKING, Any

import numpy as np

from bayespriv._validation import fail
from bayespriv.errors import BudgetExceededError, LedgerError, ParameterTypeError, ValidationError
from .joint import PriorRelease, joint_guarantee
from .ledger_connection import LedgerConnection
from .ledger_records import Charge, JointPlan, ReleaseRequest, account_sql
from .ledger_schema import DELTA_UNIT, EPSILON_UNIT, from_units, to_units, utc_now

if TYPE_CHECKING:
    from bayespriv.mechanisms import Mechanism
    from .composition import JointGaussian

__all__ = ["ChargeChecks"]

#: Attempts at accounting a release jointly while other processes keep granting releases on its dataset.
_JOINT_RETRIES = 5


#: Relative tolerance under which two rows' max-influences of the same quilt are the same number.
_QUILT_RTOL = 1e-12


def _noise_of(text: str | None) -> Any:
    """The noise a release row recorded (``noise`` column, JSON), as the accountant's noise object, or None."""
    from bayespriv.privacy.accountant import GaussianNoise, LaplaceNoise

    if text is None:
        return None
    d = json.loads(text)
    if d.get("kind") == "gaussian":
        return GaussianNoise(np.array(d["cov"], dtype=float))
    return LaplaceNoise(np.array(d["scale"], dtype=float), np.array(d["basis"], dtype=float))


def _shared_quilts(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per ``"θ|node"`` key of ``a``, its quilts valid in ``b`` too with the same max-influence (a key
    ``b`` lacks keeps none: no common quilt is known for it)."""
    out = {}
    for key, quilts in a.items():
        other = b.get(key, {})
        out[key] = {q: e for q, e in quilts.items()
                    if q in other and abs(other[q] - e) <= _QUILT_RTOL * max(1.0, abs(e))}
    return out


class ChargeChecks:
    """Check-and-spend on one ledger file: every charge and void is one ``BEGIN IMMEDIATE`` transaction.

    The methods behind :meth:`Ledger.charge <bayespriv.ledger.Ledger.charge>` and
    :meth:`Ledger.void <bayespriv.ledger.Ledger.void>`, whose docstrings say what is charged and when a
    release is refused. It also keeps, for the releases granted through it, their query and data model (joint
    accounting of later releases on the same data draws their joint law from them).

    Parameters
    ----------
    connection : LedgerConnection
        The ledger's file.

    Notes
    -----
    Each method and function here that takes ``con`` works on the caller's connection, inside the caller's
    transaction, and opens no transaction of its own.
    """

    def __init__(self, connection: LedgerConnection) -> None:
        self._connection = connection
        #: Releases granted through this object whose query and data model are at hand (joint accounting
        #: of later releases with other queries on the same data): release id -> (query, model, pairs).
        self._live: dict[int, tuple[Any, Any, tuple[Any, ...]]] = {}

    def charge(self, mechanism: Mechanism | JointGaussian, seeded: bool | None, dataset: Any,
               independent: bool) -> Charge:
        """Check and spend the budget of every attribute ``mechanism`` protects, atomically; record the release,
        or record a refusal (nothing spent) and raise it."""
        req = ReleaseRequest.for_release(mechanism, dataset, independent)
        own = (to_units(req.epsilon, EPSILON_UNIT, ROUND_CEILING), to_units(req.delta, DELTA_UNIT, ROUND_CEILING))
        connection = self._connection
        for _ in range(_JOINT_RETRIES):
            plan = self._joint_plan(mechanism, req) if req.composition == "joint" else None
            units = {name: own if plan is None else (plan.units[name], own[1]) for name in req.protected}
            with connection.connect() as con, connection.transaction(con):
                if plan is not None and _priors_moved(con, req, plan):
                    continue  # another process granted a release on this dataset meanwhile: account again
                refusal = _no_theorem(con, req)
                if refusal is None and req.composition == "quilt":
                    refusal = _no_common_quilt(con, req)
                refusal = refusal or self._check_budgets(con, req, units)
                if refusal is None:
                    rid = _record_release(con, req, units, seeded, None if plan is None else plan.record)
            break
        else:  # pragma: no cover - needs a stream of concurrent releases on the same dataset
            raise LedgerError(f"ledger {str(connection.path)!r}: the releases on dataset {req.dataset!r} kept changing "
                              f"while this one was accounted ({_JOINT_RETRIES} attempts); try again")
        if refusal is not None:
            raise refusal  # after COMMIT: the refusal is recorded, nothing spent
        if plan is not None:
            self._remember(rid, mechanism)
        spent = max(units[name][0] for name in req.protected)
        return Charge(rid, req.protected, from_units(spent, EPSILON_UNIT), req.delta)

    def void(self, release_id: int, reason: str) -> None:
        """Mark a granted release void and refund its charges, in one transaction."""
        if isinstance(release_id, bool) or not isinstance(release_id, (int, np.integer)):
            raise ParameterTypeError(f"release_id must be an int (Charge.release_id); got {release_id!r} "
                                     f"of type {type(release_id).__name__}")
        if not isinstance(reason, str) or not reason.strip():
            raise fail("reason", "a non-empty string saying why the release is void", reason)
        rid, now = int(release_id), utc_now()
        with self._connection.connect() as con, self._connection.transaction(con):
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

    def _check_budgets(self, con: sqlite3.Connection, req: ReleaseRequest,
                       units: dict[str, tuple[int, int]]) -> Exception | None:
        """Inside the transaction: the first budget that refuses (recorded), or None."""
        for name in req.protected:
            e_units, d_units = units[name]
            row = con.execute("SELECT epsilon_total, delta_total, epsilon_spent, delta_spent FROM budgets "
                              "WHERE name = ?", (name,)).fetchone()
            if row is None:
                _refuse(con, req, name, "missing budget")
                return ValidationError(
                    f"mechanism must charge budgets that exist; got protected attribute {name!r} with no budget "
                    f"in {str(self._connection.path)!r} (call ledger.set_budget({name!r}, epsilon=...) first)")
            et, dt, es, ds = row
            if es + e_units > et or ds + d_units > dt:
                _refuse(con, req, name, "budget exceeded")
                return BudgetExceededError(
                    f"releasing {req.mechanism} (ε={req.epsilon:g}, δ={req.delta:g}) would exceed the budget of "
                    f"{name!r}: spent ε={from_units(es, EPSILON_UNIT):g}, δ={from_units(ds, DELTA_UNIT):g} of "
                    f"ε={from_units(et, EPSILON_UNIT):g}, δ={from_units(dt, DELTA_UNIT):g}; nothing was spent")
        return None

    # -- joint accounting of the releases on the same data --------------------------------------------
    def _joint_plan(self, mechanism: Mechanism | JointGaussian, req: ReleaseRequest) -> JointPlan:
        """Outside any transaction (it takes seconds): the joint guarantee per budget with the releases
        already granted on the dataset, and the units each budget is charged."""
        with self._connection.connect() as con:
            rows = {name: _priors(con, req.dataset, name) for name in req.protected}
        new_noise = _noise_of(req.noise)
        own = to_units(req.epsilon, EPSILON_UNIT, ROUND_CEILING)
        units, record, last, cache, seeds = {}, {}, {}, {}, {}
        for name, prior_rows in rows.items():
            last[name] = prior_rows[-1][0] if prior_rows else 0
            if not prior_rows:  # the first release on this dataset: its own guarantee is the joint one
                units[name] = own
                record[name] = {"epsilon": req.epsilon, "delta": req.delta, "units": own, "method": "first",
                                "releases": []}
                continue
            key = tuple(r[0] for r in prior_rows)
            if key not in cache:
                priors = [PriorRelease(r[0], r[1], _noise_of(r[2]), float(r[3]), float(r[4]),
                                       tuple(json.loads(r[5] or "[]"))) for r in prior_rows]
                # The seed of a stacked calibration, recorded on the row: anyone can redraw the same joint law.
                seeds[key] = int.from_bytes(hashlib.sha256(f"{req.dataset}|{key}".encode()).digest()[:8], "little")
                cache[key] = joint_guarantee(mechanism, priors, live=self._live, new_noise=new_noise, seed=seeds[key])
            joint = cache[key]
            before = json.loads(prior_rows[-1][6] or "{}").get(name, {}).get("epsilon", 0.0)
            increase = max(0.0, joint.epsilon - float(before))
            units[name] = to_units(increase, EPSILON_UNIT, ROUND_CEILING)
            record[name] = {"epsilon": joint.epsilon, "delta": joint.delta, "units": units[name],
                            "method": joint.method, "releases": list(joint.releases),
                            "assumptions": list(joint.assumptions),
                            "seed": seeds[key] if joint.method == "stacked calibration" else None}
        return JointPlan(units, json.dumps(record, sort_keys=True), last)

    def _remember(self, release_id: int, mechanism: Mechanism | JointGaussian) -> None:
        """Keep the query and data model of a granted release for the joint accounting of later ones."""
        from bayespriv.calibration.engine import model_of

        cal = getattr(mechanism, "calibration", None)
        model = model_of(cal) if cal is not None else None
        if model is not None and getattr(cal, "query", None) is not None:
            self._live[release_id] = (cal.query, model, tuple(cal.pairs))


# -- inside the transaction: the rows, and the refusals that need no budget ------------------------------
def _record_release(con: sqlite3.Connection, req: ReleaseRequest, units: dict[str, tuple[int, int]],
                    seeded: bool | None, joint: str | None) -> int:
    """Inside the transaction: the release row, its charges and the budgets' counters."""
    e_own = to_units(req.epsilon, EPSILON_UNIT, ROUND_CEILING)
    d_own = to_units(req.delta, DELTA_UNIT, ROUND_CEILING)
    cur = con.execute(
        "INSERT INTO releases (time_utc, mechanism, epsilon, delta, epsilon_units, delta_units, confidence, "
        "assumptions, theorem, protected, variables, query, seeded, calibration_hash, pid, "
        "failed_assumptions, unchecked_assumptions, established, voided, calibration_content_hash, "
        "dataset, composition, query_fingerprint, noise, pairs, joint) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)",
        (utc_now(), req.mechanism, req.epsilon, req.delta, e_own, d_own, req.confidence,
         json.dumps(req.assumptions), req.theorem, json.dumps(req.protected), json.dumps(req.variables),
         req.query, None if seeded is None else int(bool(seeded)), req.calibration_hash, os.getpid(),
         json.dumps(req.failed), json.dumps(req.unchecked), int(req.established), req.content_hash,
         req.dataset, req.composition, req.query_fingerprint, req.noise, req.pairs, joint))
    rid = int(cur.lastrowid)
    for name in req.protected:
        e_units, d_units = units[name]
        con.execute("INSERT INTO charges VALUES (?, ?, ?, ?)", (rid, name, e_units, d_units))
        con.execute("UPDATE budgets SET epsilon_spent = epsilon_spent + ?, delta_spent = delta_spent + ?, "
                    "updated_utc = ? WHERE name = ?", (e_units, d_units, utc_now(), name))
    return rid


def _refuse(con: sqlite3.Connection, req: ReleaseRequest, budget: str, reason: str) -> None:
    """Inside the transaction: the refusal row (nothing is spent)."""
    con.execute("INSERT INTO refusals (time_utc, mechanism, epsilon, delta, protected, variables, query, budget, "
                "reason, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (utc_now(), req.mechanism, req.epsilon, req.delta, json.dumps(req.protected),
                 json.dumps(req.variables), req.query, budget, reason, os.getpid()))


def _no_common_quilt(con: sqlite3.Connection, req: ReleaseRequest) -> Exception | None:
    """Inside the transaction: for a Markov quilt release, None when every (θ, sensitive node) has a
    quilt valid for it and for every quilt release already granted on its dataset and budgets
    (:mod:`bayespriv.ledger.joint`, ``"quilt"``); else the error refusing it (nothing recorded)."""
    from .joint import JointAccountingError

    common = json.loads(req.noise)["valid"]
    clause, params = account_sql(req.dataset)
    for name in req.protected:
        rows = con.execute(
            "SELECT r.id, r.noise FROM releases r JOIN charges c ON c.release_id = r.id WHERE r.voided = 0 "
            f"AND {clause} AND r.composition = 'quilt' AND c.budget = ? ORDER BY r.id",
            (*params, name)).fetchall()
        for rid, text in rows:
            common = _shared_quilts(common, json.loads(text)["valid"])
            empty = sorted(key for key, quilts in common.items() if not quilts)
            if empty:
                return JointAccountingError(
                    f"releasing {req.mechanism} on dataset {req.dataset!r} needs, for every member θ and "
                    f"sensitive node, a Markov quilt valid for it and for every earlier quilt release there "
                    f"(linear composition conditions on one quilt); none is shared with release {rid} for "
                    f"{empty}. Use the same ε and quilts (quilts=...) or more noise; nothing was spent. "
                    "options=ReleaseOptions(independent=True) declares the releases independent (recorded as an assumption): if they "
                    "are not, their joint ε is unbounded")
    return None


def _no_theorem(con: sqlite3.Connection, req: ReleaseRequest) -> Exception | None:
    """Inside the transaction: None when every earlier release of the account composes with this one by a
    theorem or by the ledger's own accounting (:func:`~bayespriv.ledger.joint.composes_with`); else the
    error refusing it (nothing recorded), naming the first release it cannot be added to."""
    from .joint import ADDS_TO_ANY, COMPOSITIONS, JointAccountingError, composes_with

    if req.composition in ADDS_TO_ANY:  # composes with every kind: no need to read the earlier ones
        return None
    clause, params = account_sql(req.dataset)
    for name in req.protected:
        kinds = con.execute(  # the first earlier release of each composition kind on this account and budget
            "SELECT MIN(r.id), r.composition FROM releases r JOIN charges c ON c.release_id = r.id "
            f"WHERE r.voided = 0 AND {clause} AND c.budget = ? GROUP BY r.composition", (*params, name)).fetchall()
        refused = sorted((rid, kind) for rid, kind in kinds if not composes_with(req.composition, kind))
        if refused:
            rid, kind = refused[0]
            mechanism = con.execute("SELECT mechanism FROM releases WHERE id = ?", (rid,)).fetchone()[0]
            return JointAccountingError(
                f"releasing {req.mechanism} ({req.composition!r}: {COMPOSITIONS[req.composition]}) on dataset "
                f"{req.dataset!r} for budget {name!r}: release {rid} ({mechanism}) there composes as {kind!r}, and "
                f"no theorem adds a {req.composition!r} release to a {kind!r} one — together they can reveal more "
                "than the sum of their ε. Nothing was spent. Release it against another ledger only if it reads "
                "other data; options=ReleaseOptions(independent=True) declares the two independent (recorded as declared_independent): "
                "if they are not, the guarantee stated for them together is false and their joint ε is "
                "unbounded")
    return None


def _priors(con: sqlite3.Connection, dataset: str, budget: str) -> list[tuple]:
    """The jointly accounted releases not voided on account ``dataset`` and ``budget``, oldest first."""
    clause, params = account_sql(dataset)
    return con.execute(
        "SELECT r.id, r.query_fingerprint, r.noise, r.epsilon, r.delta, r.pairs, r.joint FROM releases r "
        f"JOIN charges c ON c.release_id = r.id WHERE r.voided = 0 AND {clause} AND r.composition = 'joint' "
        "AND c.budget = ? ORDER BY r.id", (*params, budget)).fetchall()


def _priors_moved(con: sqlite3.Connection, req: ReleaseRequest, plan: JointPlan) -> bool:
    """Inside the transaction: whether a release was granted (or voided) on the dataset since the plan."""
    for name in req.protected:
        rows = _priors(con, req.dataset, name)
        if (rows[-1][0] if rows else 0) != plan.last[name] or len(rows) != len(json.loads(plan.record)[name]["releases"]):
            return True
    return False
