"""What a :class:`~bayespriv.calibration.result.Calibration` shows: its tables, its text and HTML
views, and its draws as :class:`arviz.InferenceData`.

Functions of a calibration, called by its methods (``summary``, ``moments_table``, ``repr``,
``_repr_html_``, ``to_inference_data``); they read its public attributes only.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._display import cell, frame_html
from .._validation import described, fail
from bayespriv._late import late
from bayespriv.calibration.provenance import UNVERIFIED

if TYPE_CHECKING:  # imported where used: it costs start-up time
    import xarray as xr

__all__ = ["summary_table", "moments_table", "calibration_repr", "calibration_html", "summary_reasons",
           "inference_data", "theta_label", "member_prefix"]


def theta_label(theta: Mapping[str, Any] | None) -> str:
    """The parameters θ as ``name=value, …`` (``"θ"`` when there are none)."""
    if not theta:
        return "θ"
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in theta.items())


def member_prefix(calibration: Any, member: Any) -> str:
    """``"<θ>: "`` naming a member of a family in labels (empty for a single model)."""
    return theta_label(member.theta) + ": " if calibration.is_family else ""


def posterior_variable(cal: Any) -> str:
    """Name of the variable holding F in :func:`inference_data` (one model)."""
    return cal.query.name if cal.query is not None else "F"


def inference_data(cal: Any) -> Any:
    """The draws of F(X) | secret as the installed ArviZ's run type (see ``Calibration.to_inference_data``)."""
    import xarray as xr
    from ..datamodels.compat import make_inference_data

    if cal.sample_array is None:
        raise fail("calibration", "a sampled calibration (with draws of F) to become InferenceData",
                   described("a calibration without samples (exact moments, from_moments)"))
    coords = {"chain": [0], "draw": np.arange(cal.sample_array.shape[1]),
              "secret": [s.label for s in cal.secrets], "component": list(cal.component_names)}
    dims = ("chain", "draw", "secret", "component")
    name = posterior_variable(cal)
    if cal.is_family:
        names = [f"{name} | {theta_label(m.theta)}" for m in cal.members]
        if len(set(names)) != len(names):
            names = [f"{name} | member {i}" for i in range(len(names))]
        data = {n: (dims, np.swapaxes(m.sample_array, 0, 1)[None]) for n, m in zip(names, cal.members)
                if m.sample_array is not None}
    else:
        data = {name: (dims, np.swapaxes(cal.sample_array, 0, 1)[None])}
    attrs = {"query": name, "n_draws_per_secret": int(cal.sample_array.shape[1]),
             "confidence": "plug-in" if cal.confidence is None else float(cal.confidence),
             "inference_library": "bayespriv"}
    return make_inference_data({"posterior": xr.Dataset(data, coords=coords, attrs=attrs)})


def summary_table(cal: Any) -> pd.DataFrame:
    """One row per pair (per θ and pair for families): L1/L2 sensitivities
    (estimate, its Monte-Carlo standard error ``pair_sensitivity_se``, and bound), and W∞ (:func:`with_w_infinity`)."""
    rows = []
    for m in cal.members:
        for p, e1, s1, b1, e2, s2, b2 in zip(
            m.pairs,
            m.pair_sensitivities(1),
            m.pair_sensitivity_se(1),
            m.pair_sensitivities(1, bound=True),
            m.pair_sensitivities(2),
            m.pair_sensitivity_se(2),
            m.pair_sensitivities(2, bound=True),
        ):
            row = {"pair": p.label, "L1": e1, "L1 s.e.": s1, "L1 bound": b1, "L2": e2, "L2 s.e.": s2,
                   "L2 bound": b2}
            if cal.is_family:
                row = {"theta": theta_label(m.theta), **row}
            rows.append(row)
    out = pd.DataFrame(rows).set_index(["theta", "pair"] if cal.is_family else "pair")
    return with_w_infinity(cal, out)


def with_w_infinity(cal: Any, table: pd.DataFrame) -> pd.DataFrame:
    """For a sampled scalar query (k = 1, not a family), the ∞-Wasserstein distance of each pair —
    what the Wasserstein mechanism rests on: its plug-in estimate and its DKW confidence bound
    over the query's provable support (inf when the query declares none; a mechanism may
    declare one). A W∞ bound is a distribution-free band, not a CLT interval, so it has no
    standard error of its own; the bound's excess over the estimate is its uncertainty."""
    if cal.k != 1 or cal.sample_array is None or cal.is_family or cal.confidence is None:
        return table

    try:
        wb = late("wasserstein_bounds")(cal).table()
    except Exception:  # noqa: BLE001 - a display must not fail; the mechanism reports the reason
        return table
    return table.join(wb[["estimate", "bound"]].rename(columns={"estimate": "W∞", "bound": "W∞ bound"}))


def moments_table(cal: Any) -> pd.DataFrame:
    """One row per (secret, component): mean, its s.e., variance, its s.e. (fourth moments), its lower bound."""
    rows = []
    for i, s in enumerate(cal.secrets):
        low = np.diag(cal.cov_lower(s))
        for c, name in enumerate(cal.component_names):
            rows.append({
                "secret": s.label, "component": name, "mean": cal.mean_array[i, c],
                "mean s.e.": cal.mean_se[i, c], "variance": cal.cov_array[i, c, c],
                "variance s.e.": cal.cov_se[i, c, c], "variance lower": low[c],
            })
    return pd.DataFrame(rows).set_index(["secret", "component"])


def calibration_repr(cal: Any) -> str:
    """One line: query, sizes, how the moments are known, L2 sensitivity and smallest variance with their s.e. and bounds."""
    how = ("exact laws" if cal.finite_laws else "exact") if cal.exact else ("plug-in" if cal.plug_in else f"confidence={cal.confidence}")
    q = f"query={cal.query_name!r}" if cal.query_name is not None else "no query"
    fam = f", family of {len(cal.family)} (worst θ {theta_label(cal.theta)})" if cal.is_family else ""
    draws = "no draws" if cal.n_draws is None else f"n_draws={cal.n_draws}"
    return (f"Calibration({q}, secrets={len(cal.secrets)}, pairs={len(cal.pairs)}, k={cal.k}, "
            f"{draws}, {how}, sensitivity L2={cal.sensitivity(2):.4g} "
            f"(s.e. {cal.sensitivity_se(2):.2g}, bound {cal.sensitivity(2, bound=True):.4g}), "
            f"smallest variance={float(np.min(cal.variance())):.4g} "
            f"(s.e. {float(cal.variance_se()[int(np.argmin(cal.variance()))]):.2g}, "
            f"bound {float(np.min(cal.variance(bound=True))):.4g}){fam}"
            f"{', UNVERIFIED calibration file' if UNVERIFIED in cal.assumptions else ''})")


def summary_reasons(cal: Any) -> dict[str, str]:
    """Why a column of :func:`summary_table` can hold ``inf``, for views made for a person.

    The W∞ bound is infinite when the query proves no support for F (a mean without
    ``bounds=``): its DKW band then reaches the unbounded tails.
    """

    lo, hi = late("query_support")(cal.query, cal.k, cal.n_records)
    name = cal.query_name or "the query"
    why = (f"unbounded: {name} has no declared bounds"
           if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)))
           else "not provable from these draws")
    return {"W∞ bound": why, "W∞": why}


def calibration_html(cal: Any) -> str:
    """The notebook view: the repr line, :func:`summary_table` and the diagnostics."""
    head = html.escape(repr(cal))
    parts = []
    for key, value in cal.diagnostics.items():
        if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            table = pd.DataFrame.from_dict(dict(value), orient="index")
            parts.append(f"<p><b>{html.escape(str(key))}</b></p>{frame_html(table)}")
        else:
            parts.append(f"<p><b>{html.escape(str(key))}</b>: {html.escape(cell(value))}</p>")
    if cal.posteriors:
        parts.append(f"<p><b>posteriors</b> (arviz.InferenceData, for az.plot_trace / az.summary): "
                     f"{html.escape(', '.join(cal.posteriors))}</p>")
    diag = "".join(parts)
    summary = frame_html(summary_table(cal), infinite=summary_reasons(cal))
    return f"<div><p><code>{head}</code></p>{summary}{diag}</div>"
