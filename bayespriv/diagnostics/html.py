"""HTML tables and readable reprs of the objects a user holds in a notebook.

Each function only *reads* an object that is already built: the mechanism's noise, guarantee and
assumption checks, a quilt calibration's searched quilts, a joint Gaussian release's ε — nothing
here computes a privacy quantity. The objects' own ``_repr_html_`` / ``__repr__`` delegate to
these functions lazily (``from ..diagnostics.html import mechanism_html`` inside the method), so
the result classes stay free of presentation code.

Public functions
----------------
:func:`mechanism_html`, :func:`quilt_calibration_html`, :func:`chain_calibration_html`,
:func:`joint_gaussian_html` return an HTML fragment (a ``<div>`` of ``<table>`` elements);
:func:`quilt_calibration_repr` and :func:`chain_calibration_repr` return one readable line.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._display import cell, frame_html, frame_text
from ..errors import BayesPrivError, ParameterTypeError

if TYPE_CHECKING:
    from collections.abc import Hashable
    from bayespriv.ledger import JointGaussian
    from bayespriv.mechanisms import Mechanism
    from bayespriv.networks.quilts import ChainCalibration, QuiltCalibration

__all__ = [
    "mechanism_html",
    "quilt_calibration_html",
    "chain_calibration_html",
    "joint_gaussian_html",
    "quilt_calibration_repr",
    "chain_calibration_repr",
    "epsilon_table_view",
    "TableView",
]

#: Largest k for which a k × k noise covariance is shown in full (beyond: its diagonal only).
MAX_MATRIX = 8
_STYLE = "border-collapse:collapse;margin:0.3em 0"
_STATE_COLOURS = {"FAILED": "#b00", "unchecked": "#a60", "passed": "#070"}


# -- building blocks ------------------------------------------------------------------------------------------
#: Why a mechanism's parameter can be infinite, by its label in :func:`mechanism_html`.
_INFINITE_FACTS = {
    "W∞ bound": "unbounded: the query has no declared bounds",
    "sensitivity": "unbounded: the query has no declared bounds",
    "Laplace scale": "no finite noise reaches this ε",
    "σ": "no finite noise reaches this (ε, δ)",
}


def _fmt(value: Any, infinite: str | None = None) -> str:
    """A short text for a table cell (numbers to 4 significant digits; ``∞ (why)`` for an infinity)."""
    if isinstance(value, (frozenset, set)):
        return "{" + ", ".join(sorted(map(str, value))) + "}"
    if isinstance(value, (tuple, list)):
        return ", ".join(map(str, value)) or "—"
    return cell(value, infinite=infinite)


def _kv_table(rows: Iterable[tuple[str, Any]], caption: str, *, raw: Sequence[str] = ()) -> str:
    """A two-column table (name, value); values of the names in ``raw`` are HTML already."""
    body = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{v if k in raw else html.escape(_fmt(v, _INFINITE_FACTS.get(k)))}</td></tr>"
        for k, v in rows)
    head = f"<caption style='text-align:left'><b>{html.escape(caption)}</b></caption>"
    return f"<table style='{_STYLE}'>{head}{body}</table>"


def _frame_html(df: pd.DataFrame, caption: str, *, index: bool = True, infinite: Any = None,
                missing: Any = "—") -> str:
    """A DataFrame as a captioned table (numbers to 4 significant digits, each ∞ with its reason)."""
    table = frame_html(df, index=index, infinite=infinite, missing=missing)
    return f"<div style='margin:0.3em 0'><b>{html.escape(caption)}</b>{table}</div>"


def _component_names(obj: Any, k: int) -> list[str]:
    names = list(getattr(obj, "component_names", ()) or ())
    return names if len(names) == k else [f"F[{i}]" for i in range(k)]


def _section(title: str, head: str, parts: Iterable[str]) -> str:
    return (f"<div><p style='margin:0.2em 0'><b>{html.escape(title)}</b> <code>{html.escape(head)}</code></p>"
            + "".join(p for p in parts if p) + "</div>")


# -- mechanisms -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _NoiseView:
    """What the noise section shows: per-component numbers and the matrices behind them."""

    table: pd.DataFrame
    cov: np.ndarray | None
    basis: np.ndarray | None
    scale: np.ndarray | None
    total_l2: float


def _expected_abs_error(mech: Mechanism, k: int) -> np.ndarray:
    """``mech.expected_abs_error`` where the mechanism defines it, else nan per component."""
    try:
        value = getattr(mech, "expected_abs_error", None)
    except BayesPrivError:  # no closed form (sum of noises, rotated Laplace): the sd column says it all
        value = None
    return np.full(k, np.nan) if value is None else np.asarray(value, dtype=float).reshape(k)


def _noise_view(mech: Mechanism) -> _NoiseView:
    """Stage 1 of :func:`mechanism_html`: read the noise (never recompute it)."""
    cov = np.asarray(mech.noise_cov, dtype=float)
    k = cov.shape[0]
    names = _component_names(mech.calibration, k)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    data: dict[str, Any] = {"noise sd": sd, "E|noise|": _expected_abs_error(mech, k)}
    scale, basis = getattr(mech, "noise_scale", None), getattr(mech, "noise_basis", None)
    axis_aligned = basis is not None and np.array_equal(np.asarray(basis), np.eye(k))
    if scale is not None and axis_aligned:
        data["Laplace scale b"] = np.asarray(scale, dtype=float)
    table = pd.DataFrame(data, index=pd.Index(names))
    show_basis = None if basis is None or axis_aligned else np.asarray(basis, dtype=float)
    show_scale = None if show_basis is None or scale is None else np.asarray(scale, dtype=float)
    return _NoiseView(table, cov if 1 < k <= MAX_MATRIX else None, show_basis, show_scale,
                      float(np.sqrt(np.trace(cov))))


def _mechanism_facts(mech: Mechanism) -> list[tuple[str, Any]]:
    """Stage 2: the scalar attributes a mechanism family exposes (only those present)."""
    g = mech.guarantee
    cal = mech.calibration
    query = getattr(getattr(cal, "query", None), "name", None)
    rows: list[tuple[str, Any]] = [("mechanism", type(mech).__name__), ("ε", g.epsilon), ("δ", g.delta),
                                   ("noise", getattr(mech, "noise", "?")), ("components k", mech.k),
                                   ("query", query)]
    optional = [("covariance_mode", "covariance mode"), ("gaussian_calibration", "Gaussian calibration"),
                ("radius", "r*(ε, δ)"), ("sensitivity", "sensitivity"), ("sigma", "σ"), ("scale", "Laplace scale"),
                ("lam", "λ"), ("eta", "η"), ("w_infinity", "W∞ bound"), ("extra_scale", "extra Laplace scale")]
    for attr, label in optional:
        value = mech.__dict__.get(attr)
        if value is not None and not isinstance(value, (np.ndarray, dict)):
            rows.append((label, value))
    rows.append(("established", "yes" if g.established else "NO (a checked assumption failed)"))
    return rows


def _checks_html(mech: Mechanism) -> str:
    """Stage 3: each checked assumption with its result (``mech.assumption_checks.summary()``)."""
    try:
        report = getattr(mech, "assumption_checks", None)  # None: a mechanism whose proof rests on Θ alone
    except BayesPrivError as exc:  # shown, not swallowed: the user sees why nothing was checked
        return f"<p><b>Assumption checks</b>: could not be read ({html.escape(str(exc))})</p>"
    summary = report.summary() if report is not None else ()
    if not len(summary):
        return ("<p style='margin:0.2em 0'><b>Assumption checks</b>: none can be run on samples for this mechanism "
                "(its assumptions, listed in the guarantee, are about Θ or vouched for)</p>")
    shown = summary.drop(columns=[c for c in ("holds", "detail") if c in summary.columns])
    table = frame_html(shown, missing=dict(getattr(report, "summary_missing", {})))
    for state, colour in _STATE_COLOURS.items():
        table = table.replace(f"<td>{state}</td>", f"<td style='color:{colour}'><b>{state}</b></td>")
    return (f"<div style='margin:0.3em 0'><b>Assumption checks</b> (α = {report.alpha:g} per assumption; "
            f"a passed check is not a proof)<code style='margin-left:1em'>{html.escape(repr(report))}</code>"
            f"{table}</div>")


def _count_table_noise_html(mech: Mechanism) -> str:
    """The noise of a mechanism whose output shape is the table's (no ``noise_cov`` before the data): the exact
    variance of a cell by the number of protected categories its row can take, where the mechanism states it."""
    variance = getattr(mech, "cell_variance", None)
    if not callable(variance):
        return "<p>Noise: its shape is the table's, known at release.</p>"
    n = np.arange(2, 7)
    table = pd.DataFrame({"cell variance": variance(n), "cell sd": np.sqrt(variance(n))},
                         index=pd.Index(n, name="protected categories in the row"))
    return _frame_html(table, "Noise per cell (exact; every public margin is exact, the noise of a row sums to 0)")


def mechanism_html(mech: Mechanism) -> str:
    """An HTML view of a mechanism: parameters, noise, expected error, guarantee, assumption checks.

    Parameters
    ----------
    mech : bayespriv.mechanisms.Mechanism
        Any built mechanism (it is only read).

    Returns
    -------
    str
        A ``<div>`` with: a table of the mechanism's parameters (class, ε, δ, noise kind, and
        where present the covariance mode, Gaussian calibration, r*, sensitivity, σ, Laplace
        scale); the noise per component (sd = sqrt(diag(noise_cov)), the exact E|noise| where
        ``expected_abs_error`` is defined, Laplace scales); the full ``noise_cov`` for
        2 ≤ k ≤ :data:`MAX_MATRIX` and the Laplace directions when not axis-aligned; the
        guarantee's own table; each checked assumption with its state, statistic, p-value, α
        and n_min; and, for quilt mechanisms, the chosen quilts (``mech.report()``).

    Raises
    ------
    bayespriv.ParameterTypeError
        ``mech`` has no ``noise_cov`` / ``guarantee`` / ``calibration``.
    """
    missing = [a for a in ("noise_cov", "guarantee", "calibration") if not hasattr(mech, a)]
    if missing:
        raise ParameterTypeError(f"mech must be a bayespriv mechanism (with noise_cov, guarantee, calibration); got "
                                 f"{type(mech).__name__} without {', '.join(missing)}")
    if mech.noise_cov is None:  # a count table: its noise depends on the table's shape, known at release
        parts = [_kv_table(_mechanism_facts(mech), "Mechanism"), _count_table_noise_html(mech),
                 mech.guarantee._repr_html_()]
        return _section(type(mech).__name__, repr(mech), parts)
    noise = _noise_view(mech)
    names = list(noise.table.index)
    parts = [_kv_table(_mechanism_facts(mech), "Mechanism"),
             _frame_html(noise.table, "Noise (total expected L2 error sqrt(trace(noise_cov)) = "
                         f"{_fmt(noise.total_l2)})", missing={"E|noise|": "no closed form"})]
    if noise.cov is not None:
        parts.append(_frame_html(pd.DataFrame(noise.cov, index=names, columns=names), "noise_cov"))
    if noise.basis is not None:
        cols = [f"direction {j}" for j in range(noise.basis.shape[1])]
        directions = pd.DataFrame(noise.basis, index=names, columns=cols)
        if noise.scale is not None:
            directions.loc["Laplace scale b"] = noise.scale
        parts.append(_frame_html(directions, "Laplace noise along directions (noise_basis columns, scale b each)"))
    parts.append(mech.guarantee._repr_html_())
    parts.append(_checks_html(mech))
    report = getattr(mech, "report", None)
    if callable(report) and hasattr(mech, "chosen"):
        parts.append(_frame_html(report(), "Chosen quilts (Algorithm 2)"))
    return _section(type(mech).__name__, repr(mech), parts)


# -- quilt and chain calibrations -----------------------------------------------------------------------------
def quilt_calibration_repr(cal: QuiltCalibration) -> str:
    """One readable line for a :class:`~bayespriv.networks.quilts.QuiltCalibration`."""
    q = getattr(cal.query, "name", None) or "?"
    quilts = sum(len(v) for v in cal.candidates.values())
    conf = "numerical influences" if cal.confidence is None else f"confidence={cal.confidence:g}"
    return (f"QuiltCalibration(query={q!r}, sensitive={list(cal.sensitive)!r}, nodes={cal.graph.number_of_nodes()}, "
            f"n_records={cal.n_records}, Δ_A F={cal.sensitivity:.4g}, quilts kept={quilts} of "
            f"{sum(cal.n_quilts.values())} searched, {'exhaustive' if cal.exhaustive else 'local'} search, {conf})")


def _quilt_rows(cal: QuiltCalibration, node: Hashable) -> pd.DataFrame:
    rows = [{"quilt Q": _fmt(c.quilt.quilt), "nearby N": _fmt(c.quilt.nearby), "remote R": _fmt(c.quilt.remote),
             "max-influence e": c.max_influence, "Δ_{A∩N} F": c.sensitivity,
             "why": c.influence.reason} for c in cal.candidates[node]]
    df = pd.DataFrame(rows)
    if not len(df):
        return df
    df = df.sort_values(["max-influence e", "Δ_{A∩N} F"]).reset_index(drop=True)
    # an infinite max-influence reads with its own reason (the quilt is unusable at every ε)
    df["max-influence e"] = [_fmt(e, why or "no finite bound") for e, why in zip(df["max-influence e"], df["why"])]
    return df.drop(columns="why")


def quilt_calibration_html(cal: QuiltCalibration, *, max_rows: int = 12) -> str:
    """An HTML view of a quilt calibration: summary, and the kept quilts of each sensitive node.

    Parameters
    ----------
    cal : QuiltCalibration
    max_rows : int
        Quilts shown per sensitive node (sorted by max-influence, then Δ); the rest are counted.

    Returns
    -------
    str
        A ``<div>`` with a summary table and one table per sensitive node (Q, N, R, e, Δ_{A∩N} F).
    """
    facts = [("query", getattr(cal.query, "name", None)), ("sensitive nodes", list(map(str, cal.sensitive))),
             ("network nodes", cal.graph.number_of_nodes()), ("queried nodes A", cal.queried),
             ("records", cal.n_records), ("Δ_A F (trivial quilt)", cal.sensitivity),
             ("search", "exhaustive" if cal.exhaustive else "local"),
             ("confidence", "None (numerical influences)" if cal.confidence is None else cal.confidence),
             ("assumptions", cal.assumptions)]
    parts = [_kv_table(facts, "Quilt calibration (APMQM, independent of ε)")]
    for node in cal.sensitive:
        df = _quilt_rows(cal, node)
        more = len(df) - max_rows
        title = (f"Quilts of {node}: {len(df)} kept of {cal.n_quilts[node]} searched"
                 + (f", {cal.skipped[node]} not scored (table too large)" if cal.skipped.get(node) else "")
                 + (f"; first {max_rows} shown" if more > 0 else ""))
        parts.append(_frame_html(df.head(max_rows), title, index=False))
    return _section("QuiltCalibration", quilt_calibration_repr(cal), parts)


def chain_calibration_repr(cal: ChainCalibration) -> str:
    """One readable line for a :class:`~bayespriv.networks.quilts.ChainCalibration`."""
    q = getattr(cal.query, "name", None) or "?"
    return (f"ChainCalibration(query={q!r}, column={cal.column!r}, T={cal.length}, states={cal.chains[0].k}, "
            f"chains={len(cal.chains)}, L={cal.lipschitz:.4g}, window={cal.window})")


def chain_calibration_html(cal: ChainCalibration) -> str:
    """An HTML view of a Markov-chain calibration (for MQM): its parameters and the chain(s).

    Returns
    -------
    str
        A ``<div>`` with a summary table and each chain's initial law and transition matrix.
    """
    finite = np.asarray(cal.influence)[np.isfinite(cal.influence)]
    facts = [("query", getattr(cal.query, "name", None)), ("column", cal.column), ("entries T", cal.length),
             ("Lipschitz constant L", cal.lipschitz), ("window searched", cal.window),
             ("largest max-influence", float(finite.max()) if finite.size else None),
             ("confidence", cal.confidence), ("assumptions", cal.assumptions)]
    parts = [_kv_table(facts, "Chain calibration (MQM, independent of ε)")]
    for j, chain in enumerate(cal.chains):
        states = [str(s) for s in chain.states]
        df = pd.DataFrame(chain.transition, index=pd.Index(states, name="from"), columns=states)
        df.insert(0, "initial", chain.initial)
        parts.append(_frame_html(df, f"Chain {j}: initial law and transition matrix"))
    return _section("ChainCalibration", chain_calibration_repr(cal), parts)


# -- joint accounting -----------------------------------------------------------------------------------------
def joint_gaussian_html(joint: JointGaussian) -> str:
    """An HTML view of a :class:`~bayespriv.ledger.JointGaussian`: ε of each release, of their
    sum and of the joint release; the output-law mode; the guarantee.

    Returns
    -------
    str
    """
    laws = joint.laws
    mode = ("equal covariances (Balle & Wang 2018, Thm 8)" if laws.equal_covariance
            else "unequal covariances (exact privacy loss of two Gaussians)")
    facts = [("releases", len(joint.mechanisms)), ("components k", joint.k), ("output laws", mode),
             ("Mahalanobis radius", laws.radius if laws.equal_covariance else None),
             ("joint ε", joint.epsilon), ("ε by summing", joint.epsilon_sum), ("δ", joint.delta)]
    parts = [_kv_table(facts, "Joint Gaussian release"), _frame_html(joint.summary(), "ε per release, summed, joint"),
             joint.guarantee._repr_html_()]
    return _section("JointGaussian", repr(joint), parts)


# -- tables of numbers, shown with their meaning -----------------------------------------------------------------
@dataclass(frozen=True)
class TableView:
    """A table as a person reads it: an HTML table in a notebook, text in a console.

    The numbers stay in :attr:`frame` (``inf`` included); only the view writes ``∞ (why)``.

    Attributes
    ----------
    frame : pandas.DataFrame
        The table, unchanged.
    caption : str
    infinite : str or mapping of column to str, optional
        Why a value (of a column) can be infinite.
    """

    frame: pd.DataFrame
    caption: str
    infinite: Any = None

    def _repr_html_(self) -> str:
        return _frame_html(self.frame, self.caption, infinite=self.infinite)

    def __repr__(self) -> str:
        return f"{self.caption}\n{frame_text(self.frame, infinite=self.infinite)}"


def epsilon_table_view(table: pd.DataFrame) -> TableView:
    """A per-variable ε table (:func:`bayespriv.epsilon_table`, :meth:`Ledger.epsilon_table`) to show.

    Each ``inf`` reads ``∞ (not private: used without protection)``.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows: releases (and the composed total); columns: variables.

    Returns
    -------
    TableView
        Its ``frame`` is ``table`` itself.

    Raises
    ------
    bayespriv.ParameterTypeError
        ``table`` is not a DataFrame.

    Examples
    --------
    >>> import bayespriv as bp
    >>> from bayespriv.ledger import VariableRelease
    >>> view = bp.diagnostics.epsilon_table_view(bp.epsilon_table(
    ...     [VariableRelease("counts", 1.0, ["income", "degree"], protected=["income"])]))
    >>> print(view)  # doctest: +NORMALIZE_WHITESPACE
    ε per variable (Tan, Propositions 3.3–3.5)
    variable income                                 degree
    release
    counts        1  ∞ (not private: used without protection)
    Total         1  ∞ (not private: used without protection)
    """
    from bayespriv.ledger.epsilon import UNPROTECTED

    if not isinstance(table, pd.DataFrame):
        raise ParameterTypeError(f"table must be a pandas DataFrame from epsilon_table(...); got {type(table).__name__}")
    return TableView(table, "ε per variable (Tan, Propositions 3.3–3.5)", UNPROTECTED)
