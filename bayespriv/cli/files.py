"""Files the ``bayespriv`` command reads and writes: input checks, the CSV reader, output paths and atomic writes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from bayespriv.cli.problems import _ArgumentProblem


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
