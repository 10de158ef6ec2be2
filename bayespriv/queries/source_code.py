"""The source of a function as the interpreter compiled it, in a form every Python version writes the same.

A query's fingerprint (:attr:`bayespriv.Query.fingerprint`) must not change when the interpreter does:
bytecode does (Python 3.12 inlines comprehensions, 3.13 fuses loads), the program it came from does
not. :func:`canonical_source` gives the syntax tree of a function's definition, with no positions, no
comments and no empty fields, so the same text on Python 3.11, 3.12 and 3.13.

The text is used only when it is *verified* to be what produced the running code: the whole source
file (or notebook cell) is compiled again by this interpreter and exactly one code object of it must
equal the function's code (bytecode, constants, names, variables, source positions). A file edited
after it was imported, code built by ``exec`` from a string, or a function sent from another process
without its file fails that test, and its fingerprint falls back to the bytecode (valid on this
Python version only), never to a text that might not be the code.
"""

from __future__ import annotations

import __future__
import ast
import functools
import linecache
import types
from collections.abc import Iterator

__all__ = ["canonical_source"]

#: Compiler flags of ``from __future__`` imports (a notebook cell inherits those of earlier cells).
_FUTURE_FLAGS = functools.reduce(
    lambda acc, name: acc | getattr(__future__, name).compiler_flag, __future__.all_feature_names, 0)
#: Fields of syntax nodes that carry no meaning of the program (string prefix, type comments).
_SKIPPED_FIELDS = frozenset({"kind", "type_comment"})
_FUNCTION_NODES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)


def canonical_source(code: types.CodeType) -> str | None:
    """The canonical syntax tree of the definition that compiled to ``code``, or None when unverifiable.

    Parameters
    ----------
    code : types.CodeType
        A function's code (``fn.__code__``).

    Returns
    -------
    str or None
        The same text on every supported Python version for the same definition; None when the
        source is missing or is not what produced ``code`` (see the module docstring).
    """
    text = "".join(linecache.getlines(code.co_filename))
    return _verified_source(code, text, code.co_flags & _FUTURE_FLAGS) if text else None


@functools.lru_cache(maxsize=1024)
def _verified_source(code: types.CodeType, text: str, flags: int) -> str | None:
    """:func:`canonical_source` of ``code`` against the source ``text`` (cached: a release checks it each time)."""
    compiled = _compiled(code.co_filename, text, flags)
    if compiled is None or compiled[1].get(_identity(code)) != 1:
        return None
    node = _definition(compiled[0], code)
    return None if node is None else _canonical(node)


@functools.lru_cache(maxsize=32)
def _compiled(filename: str, text: str, flags: int) -> tuple[ast.Module, dict[tuple, int]] | None:
    """The syntax tree of ``text`` and how many of its compiled code objects have each identity."""
    try:
        tree = ast.parse(text, filename)
        module_code = compile(text, filename, "exec", flags=flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                              dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    counts: dict[tuple, int] = {}
    for other in _code_tree(module_code):
        key = _identity(other)
        counts[key] = counts.get(key, 0) + 1
    return tree, counts


def _code_tree(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_tree(const)


def _identity(code: types.CodeType) -> tuple:
    """What must agree between the running code and the recompiled one (positions included)."""
    consts = tuple(_identity(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
                   for c in code.co_consts)
    return (code.co_name, code.co_firstlineno, code.co_code, code.co_names, code.co_varnames,
            code.co_freevars, code.co_cellvars, code.co_argcount, code.co_kwonlyargcount, consts,
            tuple(code.co_positions()))


def _definition(tree: ast.Module, code: types.CodeType) -> ast.AST | None:
    """The innermost function or lambda node of ``tree`` whose span holds every position of ``code``."""
    spans = [((line, col), (end, end_col)) for line, end, col, end_col in code.co_positions()
             if None not in (line, end, col, end_col) and (line, col) != (end, end_col)]  # RESUME & co: empty
    if not spans:
        return None
    first, last = min(start for start, _ in spans), max(stop for _, stop in spans)
    best, best_span = None, None
    for node in ast.walk(tree):
        if not isinstance(node, _FUNCTION_NODES):
            continue
        if (node.name if not isinstance(node, ast.Lambda) else "<lambda>") != code.co_name:
            continue
        start, stop = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        if start <= first and last <= stop:
            span = (stop[0] - start[0], stop[1] - start[1])
            if best_span is None or span < best_span:
                best, best_span = node, span
    return best


def _canonical(node: object) -> str:
    """A node as text: class name and non-empty fields, recursively (no positions)."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={_canonical(value)}" for name, value in ast.iter_fields(node)
                  if name not in _SKIPPED_FIELDS and value is not None and value != []]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(v) for v in node) + "]"
    return f"{type(node).__name__}:{node!r}"
