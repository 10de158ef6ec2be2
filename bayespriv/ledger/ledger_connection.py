"""The ledger's file and its SQLite connection (:class:`LedgerConnection`): opening and checking the file,
one connection per object and process (reset in a forked child), transactions, the check of the
invariants, and the errors that name the file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bayespriv._validation import fail
from bayespriv.errors import LedgerError, ParameterTypeError, ValidationError
from .ledger_schema import ALTERED_REMEDY, SCHEMA_VERSION, install_schema, invariant_problem, schema_problem

__all__ = ["LedgerConnection", "ledger_path"]

#: Connections a forked child inherited: kept referenced, never closed or used in the child.
_INHERITED: list[sqlite3.Connection] = []

#: Every LedgerConnection of this process, to reset in a forked child (:meth:`LedgerConnection.forget`).
_CONNECTIONS: "weakref.WeakSet[LedgerConnection]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for connection in list(_CONNECTIONS):
        connection.forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def ledger_path(path: Any) -> Path:
    """The ledger file ``path`` names, resolved; a path that is not a file path (or names an in-memory
    database) is refused."""
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterTypeError(f"path must be a file path (str or os.PathLike); got {path!r} of type "
                                 f"{type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise ParameterTypeError(f"path must be a file path (str or os.PathLike of str); got {text!r}")
    if text in ("", ":memory:") or text.startswith("file::memory:"):
        raise fail("path", "a file path (an in-memory database cannot be shared or survive a crash)", text)
    return Path(text).resolve()


class LedgerConnection:
    """The SQLite file of a :class:`~bayespriv.ledger.Ledger` and this process's connection to it.

    It holds the file's path, the busy timeout, the ledger's identity (``ledger_id``, kept in the file) and
    one connection per object and process, opened at the first operation and kept open between operations
    (``persistent``; False opens and closes one per operation). Every connection runs WAL with
    ``synchronous=FULL`` and foreign keys on; :meth:`transaction` is ``BEGIN IMMEDIATE``. Threads take
    turns under a lock; a forked child sets the parent's connection aside and opens its own.

    Parameters
    ----------
    path : pathlib.Path
        The ledger file (checked by :func:`ledger_path`).
    timeout : float
        Seconds a writer waits for another process's transaction (SQLite's busy timeout).
    persistent : bool
        Keep the connection open between operations (the default).

    Notes
    -----
    Nothing is opened here: :meth:`open` creates or checks the file.
    """

    def __init__(self, path: Path, timeout: float, *, persistent: bool = True) -> None:
        self.path = path
        self.timeout = timeout
        self.persistent = persistent
        #: The random id kept in the file (None until :meth:`open`): a file with another id is another ledger.
        self.ledger_id: str | None = None
        self._schema_cookie: int | None = None
        self._lock = threading.RLock()
        #: The open connection, the process that opened it and the (device, inode) of the file it opened.
        self._con: sqlite3.Connection | None = None
        self._con_pid: int | None = None
        self._con_file: tuple[int, int] | None = None
        #: (device, inode) of the file this object opened: a different file at ``path`` later is refused.
        self._file_id: tuple[int, int] | None = None
        _CONNECTIONS.add(self)

    # -- opening -----------------------------------------------------------------------------------
    def open(self, create: bool) -> None:
        """Open the file and check it, once, before any other operation.

        Stages: the file system allows it; SQLite reads it; WAL; the schema is exactly a ledger's
        (migrate an older one); the rows keep the ledger's invariants (:func:`invariant_problem`).
        Then the file's identity (device, inode) is kept: a different file at ``path`` later is refused.

        Parameters
        ----------
        create : bool
            Create the file when it does not exist.

        Raises
        ------
        LedgerError
            The file cannot be used as a ledger; the message names the path and what to do.
        """
        self._check_file_system(create)
        with self.connect("rwc" if create else "rw") as con:
            check = con.execute("PRAGMA quick_check").fetchone()[0]
            if check != "ok":
                raise self.error("is damaged (SQLite's quick_check failed: " + str(check)[:200] + ")",
                                 "restore it from a backup")
            mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise self.error(f"cannot use SQLite's WAL journal here (journal_mode={mode!r})",
                                 "put the ledger on a local file system")
            con.execute("PRAGMA foreign_keys = OFF")  # a migration rebuilds `budgets` (a no-op inside a transaction)
            try:
                with self.transaction(con):
                    ledger_id = install_schema(con, self)
                    cookie = con.execute("PRAGMA schema_version").fetchone()[0]
            finally:
                con.execute("PRAGMA foreign_keys = ON")  # the connection stays open for the next operations
            self.ledger_id, self._schema_cookie = ledger_id, cookie
        self._file_id = self._file_identity()

    def _check_file_system(self, create: bool) -> None:
        parent = self.path.parent
        if self.path.is_dir():
            raise fail("path", "a file, not a directory", str(self.path))
        if not parent.is_dir():
            raise self.error(f"is in a directory that does not exist ({str(parent)!r})",
                             "create the directory first (mkdir -p) or choose another path")
        if not self.path.exists():
            if not create:
                raise self.error("does not exist", "pass the path of an existing ledger, or create=True to start one")
            if Path(str(self.path) + "-wal").exists():
                raise self.error("is missing but its write-ahead log (-wal) is still there: the ledger was deleted "
                                 "and the log may hold spent budget", "restore the ledger file from a backup")
        elif not os.access(self.path, os.R_OK | os.W_OK):
            raise self._read_only_error()
        if not os.access(parent, os.W_OK | os.X_OK):
            raise self._read_only_error()

    # -- connections -------------------------------------------------------------------------------
    @contextmanager
    def connect(self, mode: str = "rw") -> Iterator[sqlite3.Connection]:
        """The connection of this object and process, for one operation.

        Holds the object's lock for the whole operation (threads take turns). Every sqlite3 error
        inside becomes a :class:`LedgerError` naming the path, and the connection is closed (the next
        operation opens a new one); a file that is no longer this ledger (deleted, replaced) is refused
        before anything is read or written.

        Parameters
        ----------
        mode : str
            SQLite's open mode: ``"rw"`` (SQLite never creates the file here) or ``"rwc"`` (:meth:`open`).

        Yields
        ------
        sqlite3.Connection
            In autocommit mode: wrap writes in :meth:`transaction`.
        """
        if not self.persistent:
            with self._connect_once(mode) as con:
                yield con
            return
        if self._con_pid is not None and self._con_pid != os.getpid():
            self.forget()  # forked without os.register_at_fork's hook (e.g. from C code)
        with self._lock:
            con = None
            try:
                con = self._connection(mode)
                if self.ledger_id is not None:
                    self._check_identity(con)
                    self._check_schema(con)
                yield con
            except sqlite3.Error as exc:
                self._drop_connection()
                raise self._sqlite_error(exc) from exc
            except LedgerError:
                self._drop_connection()
                raise
            finally:
                if con is not None and self._con is con and con.in_transaction:  # a failed ROLLBACK: start afresh
                    self._drop_connection()

    def _connection(self, mode: str) -> sqlite3.Connection:
        """Inside the lock: the open connection, or a new one, to the file this object opened.

        A file deleted, moved or replaced since is refused before SQLite opens anything at the path
        (which would read a log left beside it by the file that was there).
        """
        found = self._file_identity()
        if self._file_id is not None and found != self._file_id:
            self._drop_connection()  # SQLite neither checkpoints nor deletes the log of a moved file on close
            if found is None:
                raise self._missing_error()
            raise self._replaced_error()
        if self._con is not None and found != self._con_file:  # pragma: no cover - bound file, other connection
            self._drop_connection()
        if self._con is None:
            con = self._new_connection(mode)
            self._con, self._con_pid, self._con_file = con, os.getpid(), self._file_identity()
        return self._con

    def _file_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the file at ``path``, or None when there is none."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _new_connection(self, mode: str) -> sqlite3.Connection:
        """A new connection with the ledger's settings: busy timeout, ``synchronous=FULL``, foreign keys."""
        try:
            con = sqlite3.connect(f"{self.path.as_uri()}?mode={mode}", uri=True, timeout=self.timeout,
                                  isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc) from exc
        try:
            con.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            con.execute("PRAGMA synchronous = FULL")
            con.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            con.close()
            raise self._sqlite_error(exc) from exc
        return con

    @contextmanager
    def _connect_once(self, mode: str = "rw") -> Iterator[sqlite3.Connection]:
        """A new connection for one operation, closed after it (what every operation did before the
        ledger kept its connection: reachable through ``persistent = False``)."""
        con = self._new_connection(mode)
        try:
            if self.ledger_id is not None:
                self._check_identity(con)
                self._check_schema(con)
            yield con
        except sqlite3.Error as exc:
            raise self._sqlite_error(exc) from exc
        finally:
            con.close()

    def close(self) -> None:
        """Close this process's connection to the file; idempotent (the next operation opens a new one).

        In a forked child the connection is the parent's: it is set aside unclosed (:meth:`forget`).
        """
        if self._con_pid is not None and self._con_pid != os.getpid():
            self.forget()
            return
        with self._lock:
            self._drop_connection()

    def _drop_connection(self) -> None:
        """Close this process's connection (the next operation opens a new one)."""
        con, self._con, self._con_pid, self._con_file = self._con, None, None, None
        if con is not None:
            try:
                con.close()
            except sqlite3.Error:  # pragma: no cover - closing a broken connection
                pass

    def forget(self) -> None:
        """In a forked child: a fresh lock (another thread may have held the parent's at the fork), and
        the parent's connection set aside unclosed — SQLite forbids using a connection across
        ``fork()``, and closing it could checkpoint the parent's log from a stale copy of its state."""
        self._lock = threading.RLock()
        if self._con is not None:
            _INHERITED.append(self._con)
        self._con, self._con_pid, self._con_file = None, None, None

    def _check_identity(self, con: sqlite3.Connection) -> None:
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'ledger_id'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is None or row[0] != self.ledger_id:
            raise self._replaced_error()

    def _replaced_error(self) -> LedgerError:
        return self.error("is no longer the ledger this object opened (the file was replaced, e.g. deleted and "
                          "created again, or moved: another file or another ledger_id is at its path)",
                          "restore the original file from a backup; to use the new file deliberately, open it "
                          "with Ledger(path)")

    def _missing_error(self) -> LedgerError:
        return self.error("no longer exists (deleted or moved while this Ledger was in use). A new, empty ledger "
                          "is NOT created, because it would forget the budget already spent",
                          "restore the file from a backup; to start a new ledger deliberately, call Ledger(path)")

    def _check_schema(self, con: sqlite3.Connection) -> None:
        """Re-check the schema when SQLite's schema cookie moved since open (one PRAGMA otherwise)."""
        cookie = con.execute("PRAGMA schema_version").fetchone()[0]
        if cookie == self._schema_cookie:
            return
        problem = schema_problem(con, SCHEMA_VERSION)
        if problem is not None:
            raise self.error(f"{problem} (the schema changed after this Ledger opened the file)", ALTERED_REMEDY)
        self._schema_cookie = cookie

    @staticmethod
    @contextmanager
    def transaction(con: sqlite3.Connection) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` on ``con`` (the write lock is taken before what is spent is read), ``COMMIT`` on
        exit, ``ROLLBACK`` on any exception: everything written inside is on disk together or not at all."""
        con.execute("BEGIN IMMEDIATE")  # take the write lock before reading what is spent
        try:
            yield
        except BaseException:
            try:
                con.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is broken: SQLite rolls back on its own; keep the first error
                pass
            raise
        con.execute("COMMIT")

    # -- the invariants ------------------------------------------------------------------------------
    def verify(self) -> None:
        """SQLite's integrity check, the exact schema and every invariant of the rows
        (:func:`invariant_problem` with ``thorough=True``); :class:`ValidationError` naming the first failure."""
        with self.connect() as con:
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                raise ValidationError(f"ledger must pass SQLite's integrity check; got {ok!r}")
            problem = schema_problem(con, SCHEMA_VERSION) or invariant_problem(con, thorough=True)
        if problem is not None:
            raise ValidationError(f"ledger {str(self.path)!r} must keep its invariants; got: {problem}")

    # -- errors ------------------------------------------------------------------------------------
    def error(self, problem: str, remedy: str) -> LedgerError:
        """The :class:`LedgerError` saying that the file ``problem`` (e.g. "is read-only") and what to do."""
        return LedgerError(f"ledger file {str(self.path)!r} {problem}; {remedy}. Nothing was spent.")

    def _read_only_error(self) -> LedgerError:
        return self.error("is read-only (the file, or its directory, where SQLite writes the -wal and -shm files "
                          "next to it)", "give this user write access to both, or copy the ledger to a writable "
                          "directory (copy the -wal file with it)")

    def _sqlite_error(self, exc: sqlite3.Error) -> LedgerError:
        """Translate a sqlite3 error into what happened to the file and what to do."""
        msg = str(exc)
        low = msg.lower()
        if not self.path.parent.is_dir():
            return self.error(f"is in a directory that does not exist ({str(self.path.parent)!r})",
                              "create the directory or restore it")
        if not self.path.exists():
            return self._missing_error()
        if "readonly" in low or "read-only" in low or not os.access(self.path, os.W_OK):
            return self._read_only_error()
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            return self.error(f"is corrupt or truncated (SQLite: {msg})", "restore it from a backup; do not delete "
                              "it or start a new ledger in its place, since it holds the spent budget")
        if "locked" in low or "busy" in low:
            return self.error(f"stayed locked by another process for more than timeout={self.timeout:g} s "
                              f"(SQLite: {msg})", "retry, or pass a larger timeout")
        if "no such table" in low or "no such column" in low:
            return self.error(f"is not a bayespriv ledger of this version (SQLite: {msg})",
                              "open it with Ledger(path) to check and migrate it, or use the right file")
        return self.error(f"cannot be used (SQLite: {type(exc).__name__}: {msg})",
                          "check the disk and the file's permissions")
