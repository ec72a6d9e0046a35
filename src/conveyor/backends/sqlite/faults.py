"""SQLite errors that mean "the store cannot serve now", as :class:`conveyor.StoreError`.

Disk full, an I/O error (``ulimit -f``, a failing disk), locked beyond ``busy_timeout``,
a read-only file or directory, a file that cannot be opened: the store is there but
cannot take the write. These become :class:`~conveyor.errors.StoreError` (a
:class:`~conveyor.errors.BackendUnavailable`), so a worker backs off and retries exactly
as for a Redis outage, and a producer gets one error naming the cause. Every other
SQLite error (a malformed ``--where``, a constraint) is a bug or a usage error and is
raised as it is.

:func:`translate_store_errors` wraps every public method of the backend class once, at
import: no per-call cost beyond one ``try``.

Also here: the identity of the open file (:func:`file_identity`), which the worker's
heartbeat compares so that a store deleted or replaced under a running worker stops it.

Example:
    >>> import sqlite3
    >>> exc = sqlite3.OperationalError("database or disk is full")
    >>> exc.sqlite_errorcode = 13
    >>> str(store_error(exc, "/srv/jobs.db"))
    'SQLite store /srv/jobs.db: database or disk is full (disk full: free space on its file system)'
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any, TypeVar

from conveyor.backends.translating import translating_methods
from conveyor.errors import StoreError, StoreReplaced

_T = TypeVar("_T", bound=type)

#: Primary result codes (https://sqlite.org/rescode.html) that mean "cannot serve now",
#: with what to do about each.
TRANSIENT = {
    5: "locked beyond busy_timeout: another process holds the write lock",  # SQLITE_BUSY
    6: "locked: another connection holds a table lock",  # SQLITE_LOCKED
    8: "read-only: the file or its directory is not writable by this user",  # SQLITE_READONLY
    10: "I/O error: the disk failed, or a file size limit (ulimit -f) was hit",  # SQLITE_IOERR
    13: "disk full: free space on its file system",  # SQLITE_FULL
    14: "cannot open the file or its -wal/-shm beside it",  # SQLITE_CANTOPEN
    15: "locking protocol error",  # SQLITE_PROTOCOL
}
_BY_TEXT = {
    "database is locked": 5,
    "readonly database": 8,
    "disk i/o error": 10,
    "database or disk is full": 13,
    "unable to open database file": 14,
}
#: Public methods left as they are: plumbing, and ``close`` (a failing close is moot).
_NOT_WRAPPED = frozenset({"close", "connection", "lock", "features", "name"})


def primary_code(exc: sqlite3.Error) -> int | None:
    """The primary result code of ``exc`` (from the extended one when present, else
    recognised from the message)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    text = str(exc).lower()
    return next((c for needle, c in _BY_TEXT.items() if needle in text), None)


def store_error(exc: sqlite3.Error, path: str) -> StoreError | None:
    """The :class:`StoreError` for ``exc``, or ``None`` when it is not a store fault."""
    code = primary_code(exc)
    if code not in TRANSIENT:
        return None
    return StoreError(f"SQLite store {path}: {exc} ({TRANSIENT[code]})")


def translate_store_errors(cls: _T) -> _T:
    """Wrap each public method of ``cls`` (and of its mixins) so that a store fault
    leaves it as :class:`StoreError`, its cause chained."""
    return translating_methods(cls, _translate, _NOT_WRAPPED)


def _translate(backend: Any, exc: Exception) -> StoreError | None:
    return store_error(exc, backend.target.path) if isinstance(exc, sqlite3.Error) else None


def file_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the store file; ``None`` for ``:memory:`` or a missing file."""
    if path == ":memory:":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def check_same_file(path: str, opened: tuple[int, int] | None) -> None:
    """Raise :class:`StoreReplaced` if ``path`` is no longer the file opened as
    ``opened``: deleted (the worker would serve an unlinked file nobody else sees) or
    replaced (new jobs written to the new file would never be consumed)."""
    if opened is None:
        return
    now = file_identity(path)
    if now is None:
        raise StoreReplaced(
            f"the SQLite store {path} was deleted while this worker had it open; "
            "stopping (restart the worker to open the store at that path again)"
        )
    if now != opened:
        raise StoreReplaced(
            f"the SQLite store {path} was replaced by another file while this worker had "
            "it open; stopping (restart the worker to serve the new file)"
        )
