"""Operations on the SQLite backend: the shared engine's (:mod:`conveyor.backends.sql.ops`)
bound to this store -- reads through the backend's lock (``_read``, which copes with
text that is not UTF-8), writes in its ``BEGIN IMMEDIATE`` transaction (``_write``,
whose commit wakes idle workers itself), this process's clock -- plus what is
SQLite's own: ``PRAGMA quick_check`` after the audit, and online backup.

Kept apart from ``backend.py`` (the hot path) as a mixin of :class:`SQLiteBackend`.

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.backends.base import QueuePauseParams
    >>> b = SQLiteBackend("sqlite:///:memory:")
    >>> b.queue_pause(QueuePauseParams("mail"))
    >>> [(q.queue, q.paused) for q in b.queue_list()]
    [('mail', True)]
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from conveyor.backends.base import IntegrityProblem
from conveyor.backends.sql.dialect import Executor
from conveyor.backends.sql.ops import SqlOperations
from conveyor.backends.sqlite.dialect import SQLITE
from conveyor.private_files import create_private


class SQLiteOpsMixin(SqlOperations):
    """Ops methods of :class:`~conveyor.backends.sqlite.backend.SQLiteBackend`."""

    _dialect = SQLITE
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[tuple[object, ...]]]

    def _ops_rows(
        self, sql: str, args: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        return self._read(sql, args)

    def _ops_tx(self) -> AbstractContextManager[Executor]:
        return self._write()

    def _ops_now(self) -> float:
        return time.time()

    def _ops_integrity_extra(self) -> list[IntegrityProblem]:
        with self._lock:
            quick = [str(r[0]) for r in self._conn.execute("PRAGMA quick_check").fetchall()]
        if quick == ["ok"]:
            return []
        return [IntegrityProblem("sqlite_quick_check", None, q) for q in quick]

    def backup(self, path: str, progress: Callable[[int, int], None] | None = None) -> None:
        """Online copy of the whole database into ``path`` (``sqlite3.Connection.backup``):
        consistent, and writers are only paused between page batches. ``path`` must not
        exist (``FileExistsError``); it is created 0600, and removed again if the copy
        fails.

        Example::

            app.backend.backup("/backups/jobs-2026-11-30.db")
        """
        # Created here, 0600 and exclusively: SQLite would create it with the umask's
        # mode (0644: the copy of every job's arguments readable by every local user).
        os.close(create_private(path))
        try:
            target = sqlite3.connect(path)
        except BaseException:
            os.unlink(path)
            raise
        try:

            def step(status: int, remaining: int, total: int) -> None:
                if progress is not None:
                    progress(total - remaining, total)

            with self._lock:
                self._conn.backup(target, pages=1024, progress=step)
        except BaseException:
            target.close()
            os.unlink(path)  # ours, and empty or half written: no file beats a bad one
            raise
        target.close()
