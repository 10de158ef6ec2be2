"""``bayespriv inspect``: print what a calibration file holds, and write its plots."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

import bayespriv as bp
from bayespriv._display import frame_text
from bayespriv.cli.calibration_files import (_load_trusting, _print_file_trust, _print_trust_banner,
                                             _read_calibration_file)
from bayespriv.cli.files import _check_out_dir, _out_dir, _write_atomically


def _inspect_cmd(args: argparse.Namespace) -> int:
    from bayespriv.files import read_metadata

    if args.out is not None:
        _check_out_dir(args.out, "--out")  # before reading: a wrong --out fails at once
    meta = _read_calibration_file(lambda: read_metadata(args.calibration), args.calibration, "CAL.nc")
    if meta.get("kind") in ("chain", "quilt"):
        _print_file_trust(args.calibration, args.trust_unverified)
        return _inspect_without_query(args.calibration, meta)
    cal = _load_trusting(args.calibration, "CAL.nc", None, args.trust_unverified)
    _print_trust_banner(cal)
    lines = {
        "file": str(args.calibration), "query": meta.get("query_name"), "query columns": meta.get("query_columns"),
        "query fingerprint": meta.get("query_fingerprint"), "seed": meta.get("seed"),
        "written by": f"bayespriv {meta.get('bayespriv_version')} (Python {meta.get('python_version')})",
        "assumptions": ", ".join(cal.assumptions) or "none",
    }
    if meta.get("dropped"):
        lines["diagnostics not saved"] = ", ".join(meta["dropped"])
    for key, value in lines.items():
        print(f"{key + ':':<20} {value}")
    print(repr(cal))
    with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 60):
        print()
        print(frame_text(cal.summary(), infinite=cal._summary_reasons(), digits=6))
        print()
        print(frame_text(cal.moments_table(), digits=6))
    if args.out is not None:
        _inspect_plots(cal, args.out)
    return 0


def _inspect_without_query(path: Path, meta: dict) -> int:
    """A chain (MQM) or quilt (APMQM) calibration cannot be loaded without its query (the mechanism
    reads the query's columns): print what the file says."""
    mech = "MQM" if meta.get("kind") == "chain" else "APMQM"
    for key, value in sorted(meta.items()):
        if not isinstance(value, (dict, list)) or key in ("states", "assumptions", "query_columns"):
            print(f"{key + ':':<20} {value}")
    print(f"{'file:':<20} {path}  (a {meta.get('kind')} calibration for {mech}: release it with --mechanism {mech} "
          "and the script that defines its query)")
    return 0


def _inspect_plots(cal: bp.Calibration, out: Path) -> None:
    from matplotlib.figure import Figure

    from bayespriv.diagnostics import plot_calibration

    if cal.sample_array is None:
        print("no plots: the calibration has no samples (moments given exactly)")
        return
    out = _out_dir(out, "--out")
    for c, name in enumerate(cal.component_names):
        fig = Figure(figsize=(6.4, 4.6), layout="constrained")
        plot_calibration(cal, component=c, ax=fig.subplots())
        path = out / f"calibration-{c}.png"
        _write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png"), "--out")
        print(f"figure ({name}): {path}")
