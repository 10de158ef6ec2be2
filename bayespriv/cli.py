"""The ``bayespriv`` command.

Subcommands
-----------
``bayespriv demo``
    The hospital experiment of §4.2 of Zhang, Ohrimenko, Yang & Cummings,
    *Attribute Privacy* (FAccT 2022): calibrate the three queries on the
    paper's generator, build the Attribute-Private Gaussian Mechanism, release
    on one simulated hospital, and set the results beside the paper's values.
``bayespriv calibrate SCRIPT.py --out cal.nc``
    Run a calibration script (it defines ``model``, ``pairs`` and ``query``;
    template: ``examples/calibration_template.py``) and save the calibration.
``bayespriv inspect cal.nc [--out DIR]``
    Print a saved calibration's summary; with ``--out``, write its plots.
``bayespriv release cal.nc --script SCRIPT.py --mechanism NAME --epsilon E --data data.csv``
    Build a mechanism on a saved calibration and release on a CSV file, with
    an optional ledger; prints JSON.
``bayespriv ledger budget.sqlite`` (short for ``bayespriv ledger report budget.sqlite``)
    Print a ledger's budgets: spent, remaining, releases, refusals, and every
    creation or change of a budget.
``bayespriv ledger set-budget budget.sqlite NAME EPS[,DELTA] [--reason TEXT]``
    Create a budget or change it on purpose (recorded in the ledger).
    ``release --budget NAME=EPS[,DELTA]`` only creates a budget: it is a no-op
    when the budget already has that value and refuses to change it.
``bayespriv key [--rotate] [--show-secret]``
    Show where the signing key of calibration files is and its fingerprint;
    rotate it (old files stop verifying).

Calibration files are signed with the data owner's key and verified on load;
``inspect --trust-unverified`` shows a file that does not verify (with a
banner), and ``release`` from one needs ``--trust-unverified`` and
``--accept-unverified`` (the JSON then says ``"verified": false``).

Errors
------
Every failure prints one line on stderr,
``bayespriv: error: <what> (<argument>): <what to do>``, and no traceback
(``--debug`` re-raises instead). Output files are never written through a
symbolic link or over a directory or device, and are written atomically (a
temporary file in the same directory, fsync, then rename).

Exit codes: 0 success; 1 a refusal or an error of the library (budget
exceeded, failed assumption, ...); 2 a wrong argument (the message names it).
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import re
import shlex
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

import numpy as np
import pandas as pd

import bayespriv as bp
from bayespriv._display import frame_text
from bayespriv.errors import BayesPrivError, BayesPrivWarning

__all__ = ["main"]

FIGURE_NAME = "hospital-calibration.png"


# -- argument types ---------------------------------------------------------------------------
def _int_at_least(minimum: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}; got {value}")
        return value

    return parse


def _float_in(low: float, high: float, *, name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number; got {text!r}") from None
        if not (math.isfinite(value) and low < value < high):
            raise argparse.ArgumentTypeError(f"{name} must be in the open interval ({low:g}, {high:g}); got {value:g}")
        return value

    return parse


def _line(what: str, argument: str, todo: str) -> str:
    """The one-line error: ``bayespriv: error: <what> (<argument>): <what to do>``."""
    flat = lambda text: " ".join(str(text).split())  # noqa: E731 - library messages may span lines
    return f"bayespriv: error: {flat(what)} ({flat(argument)}): {flat(todo)}"


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line in the command's error format (no usage block)."""

    def error(self, message: str) -> NoReturn:
        found = re.match(r"argument (\S+?): (.*)$", message, re.S)
        if found:
            argument, what = found.group(1), found.group(2)
        elif ": " in message and message.startswith("the following arguments are required"):
            argument, what = message.split(": ", 1)[1], "a required argument is missing"
        elif ": " in message and message.startswith("unrecognized arguments"):
            argument, what = message.split(": ", 1)[1], "unrecognized argument"
        else:
            argument, what = self.prog, message
        self.exit(2, _line(what, argument, f"see `{self.prog} --help`") + "\n")


def _add_debug_flag(parser: argparse.ArgumentParser, *, top: bool = True, seen: set | None = None) -> None:
    """``--debug`` on the command and every subcommand (``bayespriv --debug release ...`` or
    ``bayespriv release ... --debug``): a failure re-raises with its traceback."""
    seen = set() if seen is None else seen
    if id(parser) in seen:
        return
    seen.add(id(parser))
    parser.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                        help="on a failure, show the Python traceback instead of the one-line error")
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _add_debug_flag(child, top=False, seen=seen)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bayespriv",
        description="Release statistics while hiding global properties of a dataset (attribute / distribution privacy).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="the hospital experiment of the attribute-privacy paper (FAccT 2022, §4.2)",
        description=(
            "Calibrate the Attribute-Private Gaussian Mechanism for the average weight, blood pressure and "
            "temperature of a synthetic hospital of 50 patients, hiding whether the share of women is below or "
            "above 50%; release on one simulated hospital and compare with the paper's reported values."
        ),
    )
    demo.add_argument("--draws", type=_int_at_least(2), default=2000, help="datasets drawn per secret (default 2000)")
    demo.add_argument("--seed", type=_int_at_least(0), default=2022,
                      help="seed of the calibration and of the simulated hospital (default 2022); "
                           "release noise always comes from fresh OS entropy")
    demo.add_argument("--epsilon", type=_float_in(0.0, math.inf, name="epsilon"), default=1.0, help="ε (default 1.0)")
    demo.add_argument("--delta", type=_float_in(0.0, 1.0, name="delta"), default=1e-3, help="δ (default 1e-3)")
    demo.add_argument("--out", type=Path, default=Path("bayespriv-demo"),
                      help="directory for the figure (default ./bayespriv-demo)")
    demo.add_argument("--quiet", action="store_true", help="print only the table, the guarantee and the figure path")
    demo.set_defaults(func=_demo)
    _add_workflow_parsers(sub)
    _add_debug_flag(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bayespriv`` command; returns the exit code.

    Every failure is one line on stderr (:func:`_line`) and a non-zero exit code; with ``--debug``
    the exception is re-raised with its traceback.
    """
    argv = _ledger_shorthand(list(sys.argv[1:] if argv is None else argv))
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error already printed
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    if args.command is None:
        parser.print_help()
        return 2
    debug = bool(getattr(args, "debug", False))
    try:
        with warnings.catch_warnings():
            # h5netcdf's note on HDF5 files without dimension scales (a crafted or foreign .nc): not ours to print
            warnings.filterwarnings("ignore", message="The 'phony_dims' kwarg", category=UserWarning)
            # ArviZ (imported by PyMC) announces its coming API refactor with a FutureWarning on its first
            # import of each day, whatever the caller does; it concerns code that calls ArviZ, not these commands
            warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                                    category=FutureWarning, module="arviz")
            return int(args.func(args))
    except BrokenPipeError:  # e.g. `bayespriv demo | head`: stop quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps the interpreter's final flush silent
        return 1
    except _ArgumentProblem as exc:  # a wrong argument, or a refusal, found after parsing
        if debug:
            raise
        print(_line(exc.message, exc.argument, exc.todo or f"see `bayespriv {args.command} --help`"),
              file=sys.stderr)
        return exc.code
    except BayesPrivError as exc:
        if debug:
            raise
        print(_line(str(exc), args.command, "fix what the message names and run again (--debug shows the traceback)"),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if debug:
            raise
        print(_line("interrupted", args.command, "run the command again"), file=sys.stderr)
        return 130
    except Exception as exc:  # a failure nobody anticipated: still one line, the traceback on request
        if debug:
            raise
        print(_line(f"unexpected {type(exc).__name__}: {exc}", args.command,
                    "run the command again with --debug for the traceback, and report it"), file=sys.stderr)
        return 1


def _ledger_shorthand(argv: list[str]) -> list[str]:
    """``bayespriv ledger FILE`` is ``bayespriv ledger report FILE`` (the form the README shows)."""
    i = next((k for k, a in enumerate(argv) if not a.startswith("-")), None)
    if i is None or argv[i] != "ledger":
        return argv
    rest = argv[i + 1:]
    j = next((k for k, a in enumerate(rest) if not a.startswith("-")), None)
    if j is None or rest[j] in _LEDGER_ACTIONS:
        return argv
    return argv[:i + 1] + ["report"] + rest


# -- the demo ------------------------------------------------------------------------------------
def _say(quiet: bool, text: str = "") -> None:
    """A line of the demo's narrative on stdout, unless ``--quiet``."""
    if not quiet:
        print(text)


def _progress(quiet: bool, text: str) -> None:
    """A progress line on stderr, unless ``--quiet``."""
    if not quiet:
        print(text, file=sys.stderr, flush=True)


def _demo(args: argparse.Namespace) -> int:
    # lazy, here and in the demo's stages: the package never depends on models/ at import time
    from bayespriv.models.hospital_demo import demo_setting, difference_lines, header_lines, worst_pair_lines

    start = time.perf_counter()
    eps, delta, quiet = args.epsilon, args.delta, args.quiet
    out_dir = _out_dir(Path(args.out), "--out")  # before the calibration: a wrong --out fails at once
    setting = demo_setting(args.seed)
    for line in header_lines(setting, epsilon=eps, delta=delta, n_draws=args.draws, seed=args.seed):
        _say(quiet, line)
    comparisons = _compared_queries(setting, args)
    _print_comparison(comparisons, epsilon=eps, delta=delta)
    if not quiet:
        for line in worst_pair_lines(comparisons) + difference_lines(setting, comparisons, epsilon=eps, delta=delta):
            _say(quiet, line)
    _print_family(args)

    path = out_dir / FIGURE_NAME
    calibrations = {name: comparison.calibration for name, comparison in comparisons.items()}
    _figure(calibrations, path, n_draws=args.draws, n_records=setting.n_records)
    print(f"figure: {path}")
    _say(quiet, f"done in {time.perf_counter() - start:.1f} s")
    return 0


def _compared_queries(setting: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Calibrate each query of the hospital (reporting progress) and compare it with the paper's values.

    ``setting`` is a :class:`bayespriv.models.hospital_demo.DemoSetting`; the values are its
    ``QueryComparison`` per query.
    """
    from bayespriv.models.hospital import QUERIES
    from bayespriv.models.hospital_demo import compare_query

    comparisons = {}
    for (name, query), seed in zip(QUERIES.items(), setting.query_seeds):
        t0 = time.perf_counter()
        cal = bp.calibrate(setting.model, setting.pairs, query, n_draws=args.draws, rng=seed, confidence=0.95)
        _progress(args.quiet, f"calibrated {name}: {len(setting.secrets)} secrets × {args.draws} datasets in "
                              f"{time.perf_counter() - t0:.2f} s")
        comparisons[name] = compare_query(name, query, cal, setting, epsilon=args.epsilon, delta=args.delta)
    return comparisons


def _print_comparison(comparisons: dict[str, Any], *, epsilon: float, delta: float) -> None:
    """Print the comparison table, the note on the classic constant (when it applies) and the guarantees."""
    from bayespriv.models.hospital_demo import classic_note, comparison_table, guarantee_lines

    table = comparison_table(comparisons)
    with pd.option_context("display.width", 200, "display.max_colwidth", 40, "display.max_columns", 10):
        print(table.to_string())
    print()
    note = classic_note(comparisons, epsilon=epsilon, delta=delta)
    if note is not None:
        print(note)
    for line in guarantee_lines(comparisons):
        print(line)


def _print_family(args: argparse.Namespace) -> None:
    """Print the table of the paper's Θ as a family of PyMC models, reporting how long it took."""
    from bayespriv.models.hospital_demo import FAMILY_HEADER, family_table

    for line in FAMILY_HEADER:
        _say(args.quiet, line)
    t0 = time.perf_counter()
    print(family_table(n_draws=min(args.draws, 1000), seed=args.seed, epsilon=args.epsilon, delta=args.delta).to_string())
    _progress(args.quiet, f"calibrated the PyMC family in {time.perf_counter() - t0:.2f} s")
    print()


def _figure(calibrations: dict[str, bp.Calibration], path: Path, *, n_draws: int, n_records: int) -> None:
    """One PNG: per query, the worst pair's distributions with their Gaussian fits."""
    from matplotlib.figure import Figure  # no pyplot: no global figure state in a command

    from bayespriv.diagnostics import plot_calibration

    fig = Figure(figsize=(5.4 * len(calibrations), 4.6), layout="constrained")
    axes = fig.subplots(1, len(calibrations), squeeze=False)[0]
    for ax, cal in zip(axes, calibrations.values()):
        plot_calibration(cal, ax=ax)
    fig.suptitle(
        f"Each released average given the share of women, for the worst pair of secrets: "
        f"{n_draws} simulated hospitals of {n_records} patients per secret (histograms) and Gaussian fits (curves)",
        fontsize="medium",
    )
    _write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"), "--out")


# -- calibrate once, release later: calibrate / inspect / release / ledger -------------------------
SCRIPT_TEMPLATE = """\
A calibration script is a Python file that defines, at module level:

  model       the adversary's data model Θ: a bayespriv DataModel (GaussianDataModel,
              EmpiricalDataModel, PyMCDataModel, BayesNetDataModel, FunctionDataModel)
              or a DataModelFamily
  pairs       a SecretPair or a sequence of them (what must stay indistinguishable)
  query       a bayespriv Query (bp.mean, bp.count, bp.stack, or bp.Query(fn, columns, name))

and optionally:

  n_draws     datasets drawn per secret (default 2000; --draws overrides it)
  confidence  level of the calibration's bounds (default 0.95; None: plug-in, as the papers)

The same script is given again to `bayespriv release --script`: a query is code, so it is not
saved in the calibration file; its fingerprint is, and a release refuses a changed query.
The script runs with __name__ == "bayespriv_script" (an `if __name__ == "__main__":` block
is skipped). Template: examples/calibration_template.py.
"""

#: Mechanisms the command line builds as ``NAME(calibration, epsilon=E[, delta=D])``.
_NOT_FROM_CALIBRATION = frozenset({"WithExtraLaplace", "APMQM"})


class _ArgumentProblem(Exception):
    """A failure found after parsing, printed as ``bayespriv: error: <message> (<argument>): <todo>``.

    Exit code 2 (a wrong argument) unless ``code`` says otherwise (1: a refusal of the library).
    """

    def __init__(self, argument: str, message: str, todo: str | None = None, *, code: int = 2) -> None:
        super().__init__(f"{message} ({argument})")
        self.argument = argument
        self.message = message
        self.todo = todo
        self.code = code


def _cli_mechanisms() -> dict[str, type]:
    from bayespriv import mechanisms as M

    out = {}
    for name in M.__all__:
        obj = getattr(M, name)
        if isinstance(obj, type) and issubclass(obj, M.Mechanism) and obj is not M.Mechanism \
                and name not in _NOT_FROM_CALIBRATION:
            out[name] = obj
    return out


def _budget_spec(text: str) -> tuple[str, float, float | None, str]:
    """``NAME=EPS[,DELTA]`` -> (name, ε, δ or None when omitted, "EPS[,DELTA]" as typed)."""
    name, sep, rest = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"must be NAME=EPSILON or NAME=EPSILON,DELTA; got {text!r}")
    eps, delta, _ = _budget_amount(rest, whole=text)
    return name, eps, delta, rest


def _budget_amount(text: str, *, whole: str | None = None) -> tuple[float, float | None, str]:
    """``EPS[,DELTA]`` -> (ε, δ or None when omitted, text)."""
    parts = text.split(",")
    shown = whole if whole is not None else text
    if len(parts) > 2:
        raise argparse.ArgumentTypeError(f"must be EPSILON or EPSILON,DELTA; got {shown!r}")
    try:
        eps = float(parts[0])
        delta = float(parts[1]) if len(parts) == 2 else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be EPSILON[,DELTA] with numbers; got {shown!r}") from None
    if not (math.isfinite(eps) and eps >= 0 and (delta is None or 0 <= delta < 1)):
        raise argparse.ArgumentTypeError(f"must have EPSILON >= 0 and DELTA in [0, 1); got {shown!r}")
    return eps, delta, text


def _confidence(text: str) -> float | str:
    """A level in (0, 1), or "none" (a plug-in calibration)."""
    if text.strip().lower() == "none":
        return "none"
    return _float_in(0.0, 1.0, name="confidence")(text)


def _fill(text: str) -> str:
    import textwrap

    return textwrap.fill(text, width=88)


def _add_workflow_parsers(sub: Any) -> None:
    """The subcommands of the calibrate-once-release-later workflow."""
    _add_calibrate_parser(sub)
    _add_inspect_parser(sub)
    _add_release_parser(sub)
    _add_key_parser(sub)
    _add_ledger_parser(sub)


#: The actions of ``bayespriv ledger``; any other word after it is a ledger file
#: (``bayespriv ledger FILE`` is ``bayespriv ledger report FILE``).
_LEDGER_ACTIONS = ("report", "set-budget")


def _add_ledger_parser(sub: Any) -> None:
    led = sub.add_parser(
        "ledger", help="print a ledger's budgets, or change a budget on purpose",
        description="`bayespriv ledger BUDGET.sqlite` (short for `bayespriv ledger report BUDGET.sqlite`) prints "
                    "the budgets: spent, remaining, releases, refusals and every creation or change of a budget. "
                    "`bayespriv ledger set-budget BUDGET.sqlite NAME EPS[,DELTA]` creates or changes a budget on "
                    "purpose (`release --budget` never changes one).")
    actions = led.add_subparsers(dest="ledger_action", metavar="ACTION")
    led.set_defaults(func=lambda args: _no_ledger_action(led))
    rep = actions.add_parser("report", help="print Ledger.report() of an existing ledger file",
                             description="Print Ledger.report() of an existing ledger file, then its budget "
                                         "creations and changes.")
    rep.add_argument("ledger", type=Path, metavar="BUDGET.sqlite", help="an existing ledger file")
    rep.set_defaults(func=_ledger_cmd)
    setb = actions.add_parser(
        "set-budget", help="create a budget or change it on purpose (recorded in the ledger)",
        description="Set budget NAME of an existing ledger to EPS[,DELTA]: create it, raise it or lower it (DELTA "
                    "omitted: the budget keeps its δ; a new one gets δ = 0). The change is recorded in the ledger "
                    "(Ledger.budget_events, shown by `bayespriv ledger`). Lowering below what is already spent is allowed and stated: every further release "
                    "on the budget is then refused.")
    setb.add_argument("ledger", type=Path, metavar="BUDGET.sqlite", help="an existing ledger file")
    setb.add_argument("name", metavar="NAME", help="the budget (the protected attribute it is charged for)")
    setb.add_argument("amount", type=_budget_amount, metavar="EPS[,DELTA]",
                      help="the new total ε (and δ; omitted: δ unchanged, 0 for a new budget)")
    setb.add_argument("--reason", default=None, metavar="TEXT", help="why, kept with the change in the ledger")
    setb.set_defaults(func=_set_budget_cmd)


def _no_ledger_action(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _add_calibrate_parser(sub: Any) -> None:
    cal = sub.add_parser(
        "calibrate", help="run a calibration script and save the calibration (netCDF)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_fill("Run SCRIPT.py's calibration (bp.calibrate(model, pairs, query, ...)) and save it with "
                          "Calibration.to_netcdf.") + "\n\n" + SCRIPT_TEMPLATE)
    cal.add_argument("script", type=Path, metavar="SCRIPT.py", help="the calibration script")
    cal.add_argument("--out", type=Path, required=True, metavar="CAL.nc", help="file to write (its directory must exist)")
    cal.add_argument("--draws", type=_int_at_least(2), default=None,
                     help="datasets drawn per secret (default: the script's n_draws, else 2000)")
    cal.add_argument("--seed", type=_int_at_least(0), default=None,
                     help="seed of the calibration (default: fresh OS entropy; the seed used is printed and saved)")
    cal.add_argument("--confidence", type=_confidence, default=None, metavar="C",
                     help="level of the bounds in (0, 1), or 'none' for a plug-in calibration "
                          "(default: the script's confidence, else 0.95)")
    cal.set_defaults(func=_calibrate_cmd)


def _add_inspect_parser(sub: Any) -> None:
    ins = sub.add_parser("inspect", help="print a saved calibration's summary (and write its plots)",
                         description="Print what a calibration file holds: query, fingerprint, versions, seed, the "
                                     "sensitivity per pair (estimate and bound) and the moments per secret.")
    ins.add_argument("calibration", type=Path, metavar="CAL.nc", help="a file written by `bayespriv calibrate`")
    ins.add_argument("--out", type=Path, default=None, metavar="DIR",
                     help="directory for plot_calibration PNGs (created if missing)")
    _add_trust_arguments(ins, release=False)
    ins.set_defaults(func=_inspect_cmd)


def _add_release_parser(sub: Any) -> None:
    names = ", ".join(_cli_mechanisms())
    rel = sub.add_parser(
        "release", help="release on a CSV file with a mechanism built on a saved calibration (JSON out)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=_fill("Load CAL.nc with the query of SCRIPT.py (refused if its fingerprint differs from the "
                          "calibrated one), build NAME(calibration, epsilon=E[, delta=D]), release on the CSV file and "
                          "print JSON: value, component names, the guarantee, established, seeded, ledger id, and "
                          "what a recipient needs to read the value: the noise added (its covariance, or Laplace "
                          "scale and basis), the noise sd of each component, a noise-only confidence interval "
                          "(--level) and the query's valid range. Noise comes from the OS CSPRNG. With --ledger the "
                          "budget of every protected attribute is checked and spent before any noise is drawn.")
        + "\n\n" + _fill("The interval holds the exact answer on DATA.csv with probability --level over the noise; it "
                          "and --clip are post-processing of the released value, free of privacy cost.")
        + "\n\n" + _fill(f"Mechanisms: {names}."))
    rel.add_argument("calibration", type=Path, metavar="CAL.nc", help="a file written by `bayespriv calibrate`")
    rel.add_argument("--script", type=Path, required=True, metavar="SCRIPT.py",
                     help="the calibration script (provides the query again)")
    rel.add_argument("--mechanism", required=True, metavar="NAME", help=f"one of: {names}")
    rel.add_argument("--epsilon", type=_float_in(0.0, math.inf, name="epsilon"), required=True, help="ε")
    rel.add_argument("--delta", type=_float_in(0.0, 1.0, name="delta"), default=None,
                     help="δ (default: the mechanism's default)")
    rel.add_argument("--data", type=Path, required=True, metavar="DATA.csv",
                     help="the dataset: a CSV file with a header row, the query's columns and the calibrated rows")
    rel.add_argument("--ledger", type=Path, default=None, metavar="BUDGET.sqlite",
                     help="privacy-budget ledger (created if missing)")
    rel.add_argument("--budget", type=_budget_spec, action="append", default=[], metavar="NAME=EPS[,DELTA]",
                     help="create this budget in the ledger if it does not exist (repeatable; needs --ledger). "
                          "A budget that exists with another value is refused, never changed: change it on purpose "
                          "with `bayespriv ledger set-budget`. DELTA omitted: 0 for a new budget, not compared for "
                          "an existing one")
    rel.add_argument("--dataset-name", default=None, metavar="NAME",
                     help="the name under which the ledger accounts this release with the others on the same data "
                          "(default: the fingerprint of DATA.csv)")
    rel.add_argument("--independent", action="store_true",
                     help="declare this release independent of the others on the same data: charged its own (ε, δ), "
                          "recorded as the assumption declared_independent")
    rel.add_argument("--accountant", choices=("auto", "gaussian"), default="auto",
                     help="auto (default): the noise is scaled until the accounted privacy curve of the law actually "
                          "released meets (ε, δ); gaussian: the papers' route, F taken as Gaussian (its check then "
                          "gates the release)")
    rel.add_argument("--accept-failed-assumptions", action="store_true",
                     help="release even if a checked assumption failed (recorded as NOT ESTABLISHED)")
    rel.add_argument("--clip", action="store_true",
                     help="project the released value into the query's valid range (counts into [0, n], proportions "
                          "into [0, 1], bounded means into their bounds): post-processing, free of privacy cost, "
                          "recorded as \"postprocessed\": [\"clip\"]. Never applied unless given")
    rel.add_argument("--level", type=_float_in(0.0, 1.0, name="level"), default=0.95,
                     help="probability of the noise-only confidence interval printed for each component "
                          "(default 0.95)")
    rel.add_argument("--format", choices=("json", "text"), default="json", dest="output_format",
                     help="json (default): the full record; text: one line per component, value ± noise sd, "
                          "then the interval and the guarantee")
    _add_trust_arguments(rel, release=True)
    rel.set_defaults(func=_release_cmd)


def _run_script(path: Path, argument: str) -> dict[str, Any]:
    """Execute a calibration script; its module-level names."""
    import runpy

    _check_in_file(path, argument, "calibration script")
    todo = "fix the script (run it with python to see the traceback, or pass --debug)"
    try:
        return runpy.run_path(str(path), run_name="bayespriv_script")
    except Exception as exc:  # the user's code: report, do not trace back through the command
        raise _ArgumentProblem(argument, f"the script {str(path)!r} failed: {type(exc).__name__}: {exc}",
                               todo) from exc
    except SystemExit as exc:  # sys.exit() in the script would end the command silently
        raise _ArgumentProblem(argument, f"the script {str(path)!r} called sys.exit({exc.code!r})", todo) from exc


def _script_name(scope: dict[str, Any], name: str, kinds: tuple[type, ...], what: str, path: Path,
                 argument: str) -> Any:
    todo = "see `bayespriv calibrate --help` and examples/calibration_template.py"
    if name not in scope:
        raise _ArgumentProblem(argument, f"the script {str(path)!r} must define {name!r} ({what}); it does not", todo)
    value = scope[name]
    if not isinstance(value, kinds):
        raise _ArgumentProblem(argument, f"{name!r} in {str(path)!r} must be {what}; got {type(value).__name__}", todo)
    return value


def _script_query(scope: dict[str, Any], path: Path, argument: str) -> bp.Query:
    return _script_name(scope, "query", (bp.Query,), "a bayespriv Query", path, argument)


def _calibrate_cmd(args: argparse.Namespace) -> int:
    from bayespriv.datamodels.base import DataModel

    _check_out_file(args.out, "--out")  # before the script and the calibration run
    scope = _run_script(args.script, "SCRIPT.py")
    model = _script_name(scope, "model", (DataModel, bp.DataModelFamily), "a bayespriv DataModel or DataModelFamily",
                         args.script, "SCRIPT.py")
    query = _script_query(scope, args.script, "SCRIPT.py")
    pairs = _script_name(scope, "pairs", (bp.SecretPair, list, tuple), "a SecretPair or a sequence of them",
                         args.script, "SCRIPT.py")
    n_draws = args.draws if args.draws is not None else scope.get("n_draws", 2000)
    confidence = {None: scope.get("confidence", 0.95), "none": None}.get(args.confidence, args.confidence)
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy)
    t0 = time.perf_counter()
    try:
        cal = bp.calibrate(model, pairs, query, n_draws=n_draws, rng=seed, confidence=confidence)
    except BayesPrivError as exc:
        raise _ArgumentProblem("SCRIPT.py", f"calibrate refused the script's inputs (n_draws is --draws): {exc}",
                               "fix the script's model, pairs or query, or pass more --draws") from exc
    _write_atomically(args.out, lambda tmp: cal.to_netcdf(tmp, seed=seed), "--out")
    print(f"calibrated {query.name!r}: {len(cal.secrets)} secrets × {cal.n_draws} draws"
          f"{f' × {len(cal.family)} models' if cal.is_family else ''} in {time.perf_counter() - t0:.2f} s, seed {seed}")
    print(repr(cal))
    print(f"saved: {args.out}")
    return 0


_CAL_TODO = ("pass a file written by `bayespriv calibrate` (Calibration.to_netcdf); if it was, it is damaged or "
             "was changed: calibrate again")


def _read_calibration_file(read: Callable[[], Any], path: Path, argument: str) -> Any:
    """``read()`` a calibration file; anything a crafted or damaged file makes the readers raise is one line."""
    from bayespriv.errors import ReleaseMismatchError

    _check_in_file(path, argument, "calibration file")
    try:
        return read()
    except _ArgumentProblem:
        raise
    except ReleaseMismatchError as exc:
        raise _ArgumentProblem("--script", str(exc), "pass the script the calibration was made with, or calibrate "
                                                     "again with this one") from exc
    except BayesPrivError as exc:
        raise _ArgumentProblem(argument, str(exc), _CAL_TODO) from exc
    except Exception as exc:  # h5py / xarray / the loader on an HDF5 file without the expected content
        raise _ArgumentProblem(argument, f"{str(path)!r} cannot be read as a calibration file "
                                         f"({type(exc).__name__}: {exc})", _CAL_TODO) from exc


def _load_calibration_arg(path: Path, argument: str, query: Any = None) -> bp.Calibration:
    from bayespriv.calibration import load_calibration

    return _read_calibration_file(lambda: load_calibration(path, query=query), path, argument)


def _inspect_cmd(args: argparse.Namespace) -> int:
    from bayespriv.calibration import read_metadata

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


def _read_data(path: Path) -> pd.DataFrame:
    """The CSV file with its header as written: duplicate names are refused, never renamed.

    pandas renames a repeated header (``a``, ``a.1``), which would let a dataset with two ``salary``
    columns pass the release's duplicate-column check; so the header row is read first as data
    (``header=None``: no renaming), then the file is read with that header and must keep it.
    """
    _check_in_file(path, "--data", "CSV file")
    todo = "pass a CSV file with one header row naming each column once (as the README's payroll.csv)"
    try:
        head = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
        if head.empty:
            raise _ArgumentProblem("--data", f"the CSV file {str(path)!r} is empty", todo)
        names = ["" if v is None else str(v) for v in head.iloc[0].tolist()]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise _ArgumentProblem("--data", f"the CSV file {str(path)!r} names the column(s) {repeated!r} more than "
                                             "once in its header row", "give every column a distinct name (the "
                                             "release would read one of them and ignore the other)")
        data = pd.read_csv(path)
    except pd.errors.EmptyDataError as exc:
        raise _ArgumentProblem("--data", f"the CSV file {str(path)!r} is empty", todo) from exc
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise _ArgumentProblem("--data", f"{str(path)!r} cannot be read as a CSV file with a header row "
                                         f"({type(exc).__name__}: {exc})", todo) from exc
    expected = [n if n else f"Unnamed: {i}" for i, n in enumerate(names)]  # pandas' name for an empty header cell
    if [str(c) for c in data.columns] != expected:
        raise _ArgumentProblem("--data", f"the header of {str(path)!r} was read as {list(map(str, data.columns))!r}, "
                                         f"not as written ({names!r})", todo)
    return data


def _build_mechanism(cal: bp.Calibration, args: argparse.Namespace) -> Any:
    known = _cli_mechanisms()
    cls = known.get(args.mechanism)
    if cls is None:
        raise _ArgumentProblem("--mechanism", f"there is no mechanism {args.mechanism!r}",
                               f"pass one of {', '.join(known)}")
    kwargs = {"epsilon": args.epsilon} if args.delta is None else {"epsilon": args.epsilon, "delta": args.delta}
    if args.accountant != "auto":
        if "accountant" not in inspect.signature(cls.__init__).parameters:
            raise _ArgumentProblem("--accountant", f"{args.mechanism} rests on its own theorem and takes no accountant",
                                   "drop --accountant, or choose an additive-noise mechanism (APGM, EigM, DauM, ...)")
        kwargs["accountant"] = args.accountant
    try:
        return cls(cal, **kwargs)
    except (BayesPrivError, TypeError) as exc:
        raise _ArgumentProblem("--mechanism/--epsilon/--delta",
                               f"{args.mechanism} cannot be built on this calibration with {kwargs}: {exc}",
                               "choose another mechanism, ε or δ (see `bayespriv release --help`)") from exc


def _open_ledger(args: argparse.Namespace, mech: Any) -> Any:
    """The ledger of ``--ledger`` (created if missing) with the budgets of ``--budget`` created.

    ``--budget`` creates a budget that does not exist yet and does nothing when it already has that
    value; it never changes one (a command run again with another number must not lift a spent
    budget): that is refused here, before anything is released or spent. Changing a budget is
    ``bayespriv ledger set-budget``.
    """
    if args.ledger is None:
        if args.budget:
            raise _ArgumentProblem("--budget", "--budget was given without --ledger",
                                   "add --ledger BUDGET.sqlite (the file that keeps the budgets)")
        return None
    try:
        ledger = bp.Ledger(args.ledger)
    except BayesPrivError as exc:
        raise _ArgumentProblem("--ledger", str(exc), "fix or restore the ledger file, or pass another path; "
                                                     "nothing was released") from exc
    where = shlex.quote(str(args.ledger))
    given: dict[str, tuple[float, float]] = {}
    for name, eps, delta, text in args.budget:
        if given.setdefault(name, (eps, delta)) != (eps, delta):
            raise _ArgumentProblem("--budget", f"budget {name!r} is given twice with different values",
                                   "give each budget once")
    for name, eps, delta, text in args.budget:
        try:
            created = ledger.create_budget(name, eps, delta, reason="bayespriv release --budget")
        except BayesPrivError as exc:
            current = getattr(exc, "current", None)
            if current is None:
                raise _ArgumentProblem("--budget", f"{name}={text}: {exc}", "pass NAME=EPS[,DELTA] with a budget the "
                                                                          "ledger can hold") from exc
            raise _ArgumentProblem(
                "--budget", f"budget {name!r} in {str(args.ledger)!r} is ε={current[0]:g}, δ={current[1]:g}, and "
                            f"--budget {name}={text} would change it; nothing was released or spent",
                f"--budget only creates a budget; to change it on purpose run `bayespriv ledger set-budget {where} "
                f"{shlex.quote(name)} {shlex.quote(text)}`") from exc
        if created:
            print(f"bayespriv: created budget {name!r} in {str(args.ledger)!r}: ε={eps:g}, δ={delta or 0:g}",
                  file=sys.stderr)
    missing = [name for name in dict.fromkeys(getattr(mech, "protected", ()) or ()) if name not in ledger.budgets()]
    if missing:
        raise _ArgumentProblem("--budget", f"the ledger {str(args.ledger)!r} has no budget for {missing!r}, which "
                                           f"{args.mechanism} protects; nothing was released or spent",
                               f"create it with --budget {missing[0]}=EPS[,DELTA]")
    return ledger


def _release_cmd(args: argparse.Namespace) -> int:
    query = _script_query(_run_script(args.script, "--script"), args.script, "--script")
    cal = _load_trusting(args.calibration, "CAL.nc", query, args.trust_unverified)
    data = _read_data(args.data)
    mech = _build_mechanism(cal, args)
    ledger = _open_ledger(args, mech)
    try:
        release = _release_on(mech, data, ledger, args)
    finally:
        if ledger is not None:
            ledger.close()
    if args.output_format == "text":
        print(_release_text(release, args))
    else:
        print(_release_json(release, args, query))
    return 0


def _release_on(mech: Any, data: Any, ledger: Any, args: argparse.Namespace) -> Any:
    """``mech.release`` on the data, each refusal turned into the command's one-line error."""
    from bayespriv.accounting.joint import JointAccountingError, JointLeakError
    from bayespriv.errors import AssumptionFailedError, BudgetExceededError, ReleaseMismatchError

    try:
        return mech.release(data, ledger=ledger, accept_failed_assumptions=args.accept_failed_assumptions,
                            dataset_name=args.dataset_name, independent=args.independent, clip=args.clip,
                            **_unverified_opt_in(args))
    except ReleaseMismatchError as exc:
        raise _ArgumentProblem("--data", str(exc), "pass the dataset the calibration was made for (rows, columns "
                                                   "and query as calibrated)") from exc
    except JointLeakError as exc:
        raise _ArgumentProblem("--data", str(exc), "release with more noise (a smaller --epsilon), or on other data",
                               code=1) from exc
    except JointAccountingError as exc:
        raise _ArgumentProblem("--independent", str(exc), "pass --independent to declare the release independent of "
                               "the earlier ones on this data (recorded), or --dataset-name if it is other data",
                               code=1) from exc
    except BudgetExceededError as exc:
        protected = tuple(getattr(mech, "protected", ()) or ())
        name = shlex.quote(protected[0]) if len(protected) == 1 else "NAME"
        raise _ArgumentProblem("--ledger", str(exc), "release with a smaller --epsilon/--delta, or raise the budget "
                               f"on purpose: bayespriv ledger set-budget {shlex.quote(str(args.ledger))} {name} "
                               "EPS[,DELTA]", code=1) from exc
    except AssumptionFailedError as exc:
        raise _ArgumentProblem("--mechanism", str(exc), "follow a remedy above, or pass --accept-failed-assumptions "
                               "to release with the guarantee recorded as NOT ESTABLISHED", code=1) from exc


def _release_json(release: Any, args: argparse.Namespace, query: Any) -> str:
    """The release as JSON (``Release.to_dict``, which ``Release.from_dict`` reads back), with the query's
    fingerprint and the calibration file."""
    import json

    out = release.to_dict(level=args.level)
    out["query_fingerprint"] = query.fingerprint
    out["calibration"] = str(args.calibration)
    return json.dumps(out, indent=2, ensure_ascii=False)


def _release_text(release: Any, args: argparse.Namespace) -> str:
    """One line per component (``mean(x) = 148.52 ± 12.3 (sd)``, its noise-only interval), then the
    mechanism, the guarantee, post-processing and the ledger row."""
    pct = f"{100 * args.level:g}%"
    lines = []
    for line, (low, high) in zip(release.summary(), release.interval(args.level)):
        lines.append(f"{line}    {pct} noise interval [{low:.6g}, {high:.6g}]")
    lines.append(f"mechanism: {release.mechanism}; guarantee {release.guarantee}")
    if not release.established:
        lines.append("NOT ESTABLISHED: released with a failed assumption check")
    if not release.verified:
        lines.append("UNVERIFIED calibration: released with --accept-unverified")
    if release.postprocessed:
        lines.append(f"post-processing (free of privacy cost): {', '.join(release.postprocessed)}")
    if release.ledger_id is not None:
        lines.append(f"ledger row: {release.ledger_id} in {str(args.ledger)!r}")
    return "\n".join(lines)


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


# -- signed calibration files: trust flags and the key -----------------------------------------------------
_CLI_TRUST_HINT = ("on the command line: --trust-unverified loads it for inspection; a release from it also needs "
                   "--accept-unverified")


def _add_trust_arguments(parser: argparse.ArgumentParser, *, release: bool) -> None:
    """``--trust-unverified`` (and, for release, ``--accept-unverified``)."""
    parser.add_argument("--trust-unverified", action="store_true",
                        help="load a calibration file whose MAC does not verify under your key (another owner's, "
                             "edited, or unsigned): " + ("the release also needs --accept-unverified and its JSON "
                                                         "says \"verified\": false" if release else
                                                         "shown with an UNVERIFIED banner"))
    if release:
        parser.add_argument("--accept-unverified", action="store_true",
                            help="with --trust-unverified: release from an unverified calibration (recorded in the "
                                 "guarantee as the assumption unverified_calibration)")


def _unverified_opt_in(args: argparse.Namespace) -> dict[str, bool]:
    """``accept_unverified=True`` for ``release`` only when both flags are given."""
    return {"accept_unverified": bool(args.trust_unverified and args.accept_unverified)}


def _load_trusting(path: Path, argument: str, query: Any, trust_unverified: bool) -> Any:
    """load_calibration with the command's trust: a file that does not verify is a refusal (exit 1) naming the
    file argument; anything else a crafted or damaged file raises is one line (:func:`_read_calibration_file`)."""
    from bayespriv.calibration import load_calibration
    from bayespriv.errors import UnverifiedCalibrationError

    def read() -> Any:
        try:
            return load_calibration(path, query=query, trust="unverified" if trust_unverified else "verified")
        except UnverifiedCalibrationError as exc:
            raise _ArgumentProblem(argument, str(exc), None if trust_unverified else _CLI_TRUST_HINT, code=1) from exc

    return _read_calibration_file(read, path, argument)


def _print_trust_banner(cal: Any) -> None:
    """One line on top of ``inspect``: verified (key and content hash), or an UNVERIFIED banner with the reason."""
    p = getattr(cal, "provenance", None)
    if p is None:
        return
    if p.verified:
        print(f"{'verified:':<20} signed with your key {p.key_fingerprint}; content hash {p.content_hash}")
        return
    print(f"*** UNVERIFIED calibration file: {p.reason} ***")
    print("*** Shown for inspection only: a release from it needs --trust-unverified --accept-unverified. ***")


def _print_file_trust(path: Path, trust_unverified: bool) -> None:
    """The MAC of a chain or quilt file (shown without loading it, which needs its query)."""
    from bayespriv.calibration import persist, signing
    from bayespriv.errors import UnverifiedCalibrationError

    nodes = persist._open_tree(path)
    try:
        digest = signing.verify(nodes, source=f"the calibration file {str(path)!r}")
    except UnverifiedCalibrationError as exc:
        if not trust_unverified:
            raise UnverifiedCalibrationError(f"{exc} ({_CLI_TRUST_HINT})") from exc
        print(f"*** UNVERIFIED calibration file: {exc} ***")
        return
    print(f"{'verified:':<20} signed with your key {signing.key_fingerprint()}; content hash {digest}")


def _add_key_parser(sub: Any) -> None:
    key = sub.add_parser(
        "key", help="show (or rotate) the key that signs calibration files",
        description="Show where the data owner's signing key is (BAYESPRIV_KEY, else BAYESPRIV_KEY_FILE, else "
                    "~/.config/bayespriv/key) and its fingerprint, the short public name stored in every file it "
                    "signs. The key itself is never printed unless --show-secret is given: anyone holding it can forge "
                    "calibration files.")
    key.add_argument("--rotate", action="store_true",
                     help="replace the key with a new random one (keeps nothing of the old one: files signed with "
                          "it no longer verify)")
    key.add_argument("--show-secret", action="store_true",
                     help="also print the key in hexadecimal (to copy it into BAYESPRIV_KEY elsewhere)")
    key.set_defaults(func=_key_cmd)


def _key_cmd(args: argparse.Namespace) -> int:
    from bayespriv.calibration import signing

    source = (f"environment variable {signing.ENV_KEY}" if os.environ.get(signing.ENV_KEY)
              else f"key file {signing.key_path()}")
    if args.rotate:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fingerprint = signing.rotate_key()
        for w in caught:
            print(f"warning: {w.message}", file=sys.stderr)
        print(f"{'key:':<13} {source} (new key)")
    else:
        try:
            fingerprint = signing.key_fingerprint()
        except BayesPrivError:
            if os.environ.get(signing.ENV_KEY):
                raise
            print(f"{'key:':<13} {source} (none yet: the first save of a calibration creates it, or run "
                  "`bayespriv key --rotate` to create it now)")
            return 0
        print(f"{'key:':<13} {source}")
    print(f"{'fingerprint:':<13} {fingerprint}")
    if args.show_secret:
        print("warning: anyone holding this key can forge calibration files that verify as yours", file=sys.stderr)
        print(f"{'secret key:':<13} {signing.load_key().hex()}")
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


# -- files the command reads and writes -------------------------------------------------------------------
def _check_in_file(path: Path, argument: str, what: str) -> None:
    """An existing, regular, readable file (a FIFO or device would block or never end)."""
    if not path.exists():
        raise _ArgumentProblem(argument, f"the {what} {str(path)!r} does not exist", "check the path")
    if path.is_dir():
        raise _ArgumentProblem(argument, f"{str(path)!r} is a directory, not a {what}", f"pass the path of a {what}")
    if not path.is_file():
        raise _ArgumentProblem(argument, f"{str(path)!r} is not a regular file (a device, FIFO or socket)",
                               f"pass the path of a {what}")
    try:
        with open(path, "rb") as f:
            f.read(1)
    except OSError as exc:
        raise _ArgumentProblem(argument, f"the {what} {str(path)!r} cannot be read ({exc.strerror or exc})",
                               "give this user read access to it, or pass another file") from exc


def _check_out_file(path: Path, argument: str) -> None:
    """A path the command may write: not a symbolic link, not an existing directory or special file, in a
    writable directory. (The file itself is then replaced atomically, see :func:`_write_atomically`.)"""
    if path.is_symlink():
        raise _ArgumentProblem(argument, f"{str(path)!r} is a symbolic link (to {os.readlink(path)!r}); bayespriv "
                                         "does not write through links", "pass the real path, or remove the link")
    if path.exists() and path.is_dir():
        raise _ArgumentProblem(argument, f"{str(path)!r} is a directory", "pass the path of a file to write")
    if path.exists() and not path.is_file():
        raise _ArgumentProblem(argument, f"{str(path)!r} is not a regular file (a device, FIFO or socket)",
                               "pass the path of a regular file to write")
    parent = path.parent
    if not parent.is_dir():
        raise _ArgumentProblem(argument, f"the directory of {str(path)!r} does not exist",
                               "create it first (mkdir -p) or pass another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise _ArgumentProblem(argument, f"the directory {str(parent)!r} is not writable by this user",
                               "pass a path in a directory you can write")


def _check_out_dir(path: Path, argument: str) -> None:
    if path.exists() and not path.is_dir():
        raise _ArgumentProblem(argument, f"{str(path)!r} exists and is not a directory",
                               "pass a directory (it is created when missing)")


def _out_dir(path: Path, argument: str) -> Path:
    """An output directory, created when missing (its files are checked one by one)."""
    _check_out_dir(path, argument)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _ArgumentProblem(argument, f"the directory {str(path)!r} cannot be created ({exc.strerror or exc})",
                               "pass a directory you can write") from exc
    return path


def _write_atomically(path: Path, write: Callable[[Path], Any], argument: str) -> Path:
    """``write(tmp)`` to a temporary file beside ``path``, fsync it, then rename it over ``path``.

    A reader never sees a half-written file and a crash leaves the old one; a symbolic link at
    ``path`` is refused, never followed (``os.replace`` would replace the link, not its target, but
    a link there is a sign of a mistake or an attack), and so are directories and special files.
    """
    _check_out_file(path, argument)
    parent = path.parent
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=parent)
    except OSError as exc:
        raise _ArgumentProblem(argument, f"cannot create a file in {str(parent)!r} ({exc.strerror or exc})",
                               "pass a path in a directory you can write") from exc
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        mode = path.stat().st_mode & 0o777 if path.is_file() else 0o666 & ~_umask()
        os.chmod(tmp, mode)  # as an ordinary write would leave it (mkstemp makes 0600)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        _check_out_file(path, argument)  # still not a link or a directory (it could have changed meanwhile)
        os.replace(tmp, path)
        dfd = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(dfd)  # the rename itself is durable
        finally:
            os.close(dfd)
    except OSError as exc:
        raise _ArgumentProblem(argument, f"cannot write {str(path)!r} ({exc.strerror or exc})",
                               "pass a path on a writable file system with free space") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
