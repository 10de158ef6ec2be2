"""``bayespriv ledger``: print a ledger's report, and change a budget on purpose (``set-budget``)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

import bayespriv as bp
from bayespriv.cli.problems import _ArgumentProblem
from bayespriv.errors import BayesPrivError, BayesPrivWarning


def _existing_ledger(path: Path) -> Any:
    """``Ledger(path, create=False)``: the ledger commands never create a file."""
    if not path.exists():
        raise _ArgumentProblem("BUDGET.sqlite", f"there is no ledger file {str(path)!r}",
                               "pass the path of an existing ledger (`bayespriv release --ledger` creates one)")
    try:
        return bp.Ledger(path, create=False)
    except BayesPrivError as exc:
        raise _ArgumentProblem("BUDGET.sqlite", str(exc), "fix or restore the ledger file, or pass another path") from exc


def _ledger_cmd(args: argparse.Namespace) -> int:
    ledger = _existing_ledger(args.ledger)
    report = ledger.report()
    with pd.option_context("display.width", 100_000, "display.max_columns", None, "display.max_colwidth", 200):
        print(report.to_string() if len(report) else "no budgets")
        events = report.attrs.get("budget_events")
        if events is not None and len(events):
            shown = events.drop(columns=["pid"]).copy()
            shown["time_utc"] = shown["time_utc"].dt.strftime("%Y-%m-%d %H:%M:%S")
            shown["reason"] = shown["reason"].fillna("")
            print()
            print("Budget creations and changes:")
            print(shown.to_string(na_rep="-"))
        joint = report.attrs.get("joint")
        if joint is not None and len(joint):
            print()
            print("Releases on the same data, accounted together (per dataset and budget):")
            print(joint.to_string(na_rep="-"))
    note = report.attrs.get("composition")
    if note:
        print()
        print(note)
    return 0


def _set_budget_cmd(args: argparse.Namespace) -> int:
    ledger = _existing_ledger(args.ledger)
    eps, delta, text = args.amount
    name = args.name
    before = ledger.budget(name) if name in ledger.budgets() else None
    events = ledger.budget_events()
    last = int(events.index.max()) if len(events) else 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", BayesPrivWarning)
        try:
            ledger.set_budget(name, eps, delta, reason=args.reason)
        except BayesPrivError as exc:
            argument = {"name": "NAME", "reason": "--reason"}.get(str(exc).split(" ", 1)[0], "EPS[,DELTA]")
            raise _ArgumentProblem(argument, str(exc), "see `bayespriv ledger set-budget --help`") from exc
    events = ledger.budget_events()
    new = events[(events.index > last) & (events["budget"] == name)]
    e, d = ledger.budget(name)
    spent_e, spent_d = ledger.spent(name)
    where = str(args.ledger)
    if new.empty:
        print(f"budget {name!r} in {where!r} already is ε={e:g}, δ={d:g}: nothing changed")
    elif before is None:
        print(f"created budget {name!r} in {where!r}: ε={e:g}, δ={d:g} (budget event #{new.index[-1]})")
    else:
        print(f"budget {name!r} in {where!r}: ε={before[0]:g}, δ={before[1]:g} -> ε={e:g}, δ={d:g} "
              f"({new['action'].iloc[-1]}; spent ε={spent_e:g}, δ={spent_d:g}; budget event #{new.index[-1]})")
    for w in caught:
        if issubclass(w.category, BayesPrivWarning):
            print(f"bayespriv: note: {w.message}", file=sys.stderr)
        else:  # not ours to swallow
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return 0
