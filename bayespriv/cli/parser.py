"""The argument parser of the ``bayespriv`` command: every subcommand, its arguments and help."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from bayespriv.cli.arguments import (_add_debug_flag, _budget_amount, _budget_spec, _confidence, _fill, _float_in,
                                     _int_at_least, _Parser)
from bayespriv.cli.calibrate import _calibrate_cmd
from bayespriv.cli.demo import _demo
from bayespriv.cli.inspection import _inspect_cmd
from bayespriv.cli.key import _key_cmd
from .budget import _ledger_cmd, _set_budget_cmd
from bayespriv.cli.release import _cli_mechanisms, _release_cmd
from bayespriv.cli.script import SCRIPT_TEMPLATE


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
    demo.add_argument("--draws", type=_int_at_least(2), default=None,
                      help="datasets drawn per secret (default: what certifying --delta needs, "
                           "bayespriv.mechanisms.draws_for_delta, and at least 2000)")
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
                     help="datasets drawn per secret (default: the script's n_draws, else 20000)")
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
    rel.add_argument("--mechanism", required=True, metavar="NAME",
                     help=f"one of: {names}; or best: the established one of the Gaussian and expected-value "
                          "mechanisms with the least expected squared error at (ε, δ), the comparison on stderr")
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
                     help="declare that DATA.csv is other data than the ledger's other releases: accounted only with "
                          "releases under NAME, recorded as the assumption declared_separate_data (default: the "
                          "ledger's one default account, whatever file or copy is passed). If the data is the same, "
                          "the releases were not accounted together and their joint ε is unbounded")
    rel.add_argument("--independent", action="store_true",
                     help="declare this release independent of the others on the same data: charged its own (ε, δ), "
                          "recorded as the assumption declared_independent (if they are not independent, their joint "
                          "ε is unbounded)")
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
