"""The flow-control methods of the SQLite backend (kept apart so backend.py stays small).

Snooze is one more finish kind (``sql/finish.py``); progress, unique jobs,
workflows, limits and periodic slots are the SQL engine's (:mod:`conveyor.backends.sql`),
bound here and in ``flow_writes.py`` (limits: the claim engine, ``sql/claim.py``).
Every write is one ``BEGIN IMMEDIATE`` transaction like the rest of the backend.

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> SQLiteBackend("sqlite:///:memory:").periodic_list()
    []
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import (
    Dependency,
    JobDependenciesParams,
    JobInsertParams,
    JobProgressParams,
    PeriodicFireParams,
    PeriodicRecord,
)
from conveyor.backends.sql import periodic, schedules
from conveyor.backends.sqlite import flow_writes
from conveyor.backends.sqlite.dialect import SQLITE


class FlowMixin:
    """Flow-control methods; mixed into :class:`SQLiteBackend`."""

    if TYPE_CHECKING:
        _lock: threading.RLock
        _conn: sqlite3.Connection

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]: ...

        def _insert_plain(
            self, conn: sqlite3.Connection, p: JobInsertParams, now: float
        ) -> None: ...

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        with self._lock:
            return flow_writes.dependencies(self._conn, params.ids)

    def _insert_flow(self, params: Sequence[JobInsertParams]) -> list[str]:
        now = time.time()
        with self._write() as conn:
            return flow_writes.insert_flow(conn, params, now)

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        refused = []
        with self._write() as conn:
            for p in params:
                if (
                    conn.execute(
                        "UPDATE jobs SET progress = ?, progress_message = ? "
                        "WHERE id = ? AND token = ? AND state = 'running'",
                        (p.fraction, p.message, p.id, p.token),
                    ).rowcount
                    != 1
                ):
                    refused.append(p.id)
        return refused

    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        now = time.time()
        with self._write() as conn:
            return periodic.periodic_fire(
                SQLITE, conn, params, now, lambda job: self._insert_plain(conn, job, now)
            )

    def periodic_list(self) -> list[PeriodicRecord]:
        found = self._read(schedules.LIST)
        return [decoding.periodic_record(r) for r in found]  # an odd row read, not raised
