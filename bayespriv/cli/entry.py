"""The entry point of the ``bayespriv`` command: parse, run the subcommand, turn every failure into one line."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Sequence

from bayespriv.cli.parser import _build_parser, _ledger_shorthand
from bayespriv.cli.problems import _ArgumentProblem, _line
from bayespriv.errors import BayesPrivError


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
