"""Argument types of the ``bayespriv`` command, and its argparse parser class and ``--debug`` flag."""

from __future__ import annotations

import argparse
import math
import re
from typing import NoReturn

from bayespriv.cli.problems import _line


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
