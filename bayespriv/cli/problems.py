"""The command's one-line errors: the message format and the exception raised after parsing."""

from __future__ import annotations


def _line(what: str, argument: str, todo: str) -> str:
    """The one-line error: ``bayespriv: error: <what> (<argument>): <what to do>``."""
    flat = lambda text: " ".join(str(text).split())  # noqa: E731 - library messages may span lines
    return f"bayespriv: error: {flat(what)} ({flat(argument)}): {flat(todo)}"


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
