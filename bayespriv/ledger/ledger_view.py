"""What the ledger shows (:class:`LedgerView`): its tables — releases, refusals, the report per budget, the
joint guarantees, ε per variable — its HTML view in a notebook, and the note on how releases add up.
"""

from __future__ import annotations

import html
import json
from typing import Any

import numpy as np
import pandas as pd

from bayespriv._display import frame_html
from .epsilon import UNPROTECTED, VariableRelease, epsilon_table
from .ledger_budgets import Budgets
from .ledger_connection import LedgerConnection
from .ledger_records import COMPOSITION_ASSUMPTION, account_of
from .ledger_schema import DELTA_UNIT, EPSILON_UNIT, from_units

__all__ = ["LedgerView"]


#: What the joint columns of :meth:`Ledger.joint_guarantees` read in a view when no release was accounted jointly.
_NOT_JOINT = dict.fromkeys(("joint epsilon", "joint delta", "method"), "none accounted jointly")


_COMPOSITION_NOTE = (
    "Releases on the same data are accounted together: a Pufferfish release is charged the increase of the joint "
    "guarantee of everything released on its dataset (bayespriv.ledger.joint), DP and subset-of-variables "
    "releases add their own (ε, δ) by theorem (Dwork & Roth 2014, Theorem 3.16; Tan, Proposition 3.4), releases "
    "declared independent add theirs under that assumption, and releases under different declared dataset names "
    "(declared_separate_data) add up; every release without a name is on the ledger's one default account. "
    "Kinds with no theorem between them on one account are refused. Rows marked "
    "'sequential_composition' come from objects that declare no composition: they are added under that assumption, "
    "which for Pufferfish mechanisms holds only under conditions on Θ (Kifer & Machanavajjhala 2014; Bai et al. 2026)."
)


class LedgerView:
    """What one ledger file shows: its tables and its notebook view (reading only).

    The methods behind the reading methods of :class:`~bayespriv.ledger.Ledger` (:meth:`~bayespriv.ledger.Ledger.releases`,
    :meth:`~bayespriv.ledger.Ledger.report`, ...), whose docstrings say what each table holds.

    Parameters
    ----------
    connection : LedgerConnection
        The ledger's file.
    budgets : Budgets
        Its budgets (the report holds their events).
    """

    def __init__(self, connection: LedgerConnection, budgets: Budgets) -> None:
        self._connection = connection
        self._budgets = budgets

    # -- tables ------------------------------------------------------------------------------------
    def releases(self) -> pd.DataFrame:
        """Every granted release, oldest first (index: release id), voided ones included."""
        cols = ["time_utc", "mechanism", "epsilon", "delta", "confidence", "assumptions", "failed_assumptions",
                "unchecked_assumptions", "established", "theorem", "protected", "variables", "query", "seeded",
                "calibration_hash", "calibration_content_hash", "pid", "voided", "void_reason", "dataset",
                "composition", "joint"]
        with self._connection.connect() as con:
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
        with self._connection.connect() as con:
            rows = con.execute(f"SELECT id, {', '.join(cols)} FROM refusals ORDER BY id").fetchall()
        df = pd.DataFrame(rows, columns=["id"] + cols).set_index("id")
        for c in ("protected", "variables"):
            df[c] = [tuple(json.loads(v)) for v in df[c]]
        df["time_utc"] = pd.to_datetime(df["time_utc"], utc=True, format="ISO8601")
        return df

    def report(self) -> pd.DataFrame:
        """Spent and remaining (ε, δ) per budget, with counts of releases and refusals; ``attrs`` hold the note on
        composition, the budget events and the joint guarantees."""
        assumed = json.dumps(COMPOSITION_ASSUMPTION)
        with self._connection.connect() as con:
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
        data = [(from_units(et, EPSILON_UNIT), from_units(es, EPSILON_UNIT), from_units(max(et - es, 0), EPSILON_UNIT),
                 from_units(dt, DELTA_UNIT), from_units(ds, DELTA_UNIT), from_units(max(dt - ds, 0), DELTA_UNIT),
                 int(n), int(bad), int(comp), int(void), int(ref), int(changes),
                 ",".join(sorted(files.split(","))) if files else "-")
                for _, et, es, dt, ds, n, bad, comp, void, ref, changes, files in rows]
        out = pd.DataFrame(data, index=pd.Index([r[0] for r in rows], name="budget"), columns=columns)
        out.attrs["composition"] = _COMPOSITION_NOTE
        out.attrs["budget_events"] = self._budgets.events()
        out.attrs["joint"] = self.joint_guarantees()
        return out

    def joint_guarantees(self) -> pd.DataFrame:
        """What the releases on each dataset cost each budget together, releases not voided (one row per
        (dataset, budget))."""
        with self._connection.connect() as con:
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
        out["charged epsilon"] = [from_units(int(u), EPSILON_UNIT) for u in out["charged epsilon"]]
        out["charged delta"] = [from_units(int(u), DELTA_UNIT) for u in out["charged delta"]]
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

    def epsilon_table(self, variables: Any, total: str | None) -> pd.DataFrame:
        """ε of each recorded release on each variable, and composed (Propositions 3.3–3.5)."""
        return epsilon_table(self.variable_releases(), variables, total=total)

    # -- the notebook view -------------------------------------------------------------------------------
    def html(self) -> str:
        """The HTML of the ledger in a notebook: budgets, releases not established, budget changes, releases
        accounted together and ε per variable."""
        report = self.report()
        fmt = lambda x: f"{x:.6g}"  # noqa: E731
        parts = [f"<div><strong>Ledger</strong> <code>{html.escape(str(self._connection.path))}</code></div>",
                 "<div><em>Budget per protected attribute</em></div>", report.to_html(float_format=fmt)]
        if len(report) and report["composition assumed"].sum():
            parts.append(f"<p><strong>Composition assumed.</strong> {html.escape(_COMPOSITION_NOTE)}</p>")
        parts.append(self._not_established_html())
        events = report.attrs["budget_events"]
        if len(events):
            shown = events.drop(columns=["pid"]).fillna({"reason": ""})
            parts += ["<div><em>Budget creations and changes</em></div>",
                      shown.to_html(float_format=fmt, na_rep="")]
        joint = report.attrs["joint"]
        if len(joint):
            parts += ["<div><em>Releases on the same data, accounted together (per dataset and budget)</em></div>",
                      frame_html(joint.replace({"method": {"-": None}}), missing=_NOT_JOINT, digits=6)]
        if len(report) and report["releases"].sum():
            parts += ["<div><em>ε per variable (Tan, Propositions 3.3–3.5)</em></div>",
                      frame_html(self.epsilon_table(None, "Total"), infinite=UNPROTECTED, digits=6)]
        return "\n".join(p for p in parts if p)

    def _not_established_html(self) -> str:
        df = self.releases()
        bad = df[(~df["voided"]) & (df["established"] == False)]  # noqa: E712 (pandas boolean with NA)
        if not len(bad):
            return ""
        items = "".join(f"<li>#{rid} {html.escape(str(r['mechanism']))} (ε={r['epsilon']:g}, δ={r['delta']:g}): "
                        f"failed check of {html.escape(', '.join(r['failed_assumptions']))}</li>"
                        for rid, r in bad.iterrows())
        return ("<p style='color:#b00'><strong>NOT ESTABLISHED</strong>: released with a failed assumption check "
                f"(options=ReleaseOptions(accept_failed_assumptions=True)); their (ε, δ) is not established:</p><ul>{items}</ul>")
