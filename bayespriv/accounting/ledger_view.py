"""The ledger in a notebook: its HTML view (budgets, budget changes, releases accounted together,
ε per variable, releases not established) and the note on how releases add up.
"""

from __future__ import annotations

import html

from .._display import frame_html
from .epsilon import UNPROTECTED


#: What the joint columns of :meth:`Ledger.joint_guarantees` read in a view when no release was accounted jointly.
_NOT_JOINT = dict.fromkeys(("joint epsilon", "joint delta", "method"), "none accounted jointly")


_COMPOSITION_NOTE = (
    "Releases on the same data are accounted together: a Pufferfish release is charged the increase of the joint "
    "guarantee of everything released on its dataset (bayespriv.accounting.joint), DP and subset-of-variables "
    "releases add their own (ε, δ) by theorem (Dwork & Roth 2014, Theorem 3.16; Tan, Proposition 3.4), releases "
    "declared independent add theirs under that assumption, and releases under different declared dataset names "
    "(declared_separate_data) add up; every release without a name is on the ledger's one default account. "
    "Kinds with no theorem between them on one account are refused. Rows marked "
    "'sequential_composition' come from objects that declare no composition: they are added under that assumption, "
    "which for Pufferfish mechanisms holds only under conditions on Θ (Kifer & Machanavajjhala 2014; Bai et al. 2026)."
)


class _LedgerView:
    """The notebook view of :class:`~bayespriv.accounting.Ledger` (built on its public reading methods)."""

    def _repr_html_(self) -> str:
        report = self.report()
        fmt = lambda x: f"{x:.6g}"  # noqa: E731
        parts = [f"<div><strong>Ledger</strong> <code>{html.escape(str(self.path))}</code></div>",
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
                      frame_html(self.epsilon_table(), infinite=UNPROTECTED, digits=6)]
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
                f"(accept_failed_assumptions=True); their (ε, δ) is not established:</p><ul>{items}</ul>")
