"""The flow-control methods of the SQLite backend (kept apart so backend.py stays small).

Snooze is one more finish query (``job_finish_snooze.sql``); progress, unique jobs,
workflows, limits and periodic slots live here and in ``flow_writes.py`` /
``claim_limits.py``.
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
from conveyor.backends.sqlite import flow_writes

#: Slot rows older than this before the oldest slot being fired are pruned (seconds).
#: Only slots after the schedule's last fired one are ever fired again, so this is slack
#: for a worker that stalls between reading the schedule and firing.
SLOT_RETENTION = 86400.0


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
        fired: list[float] = []
        last: tuple[float, str] | None = None
        with self._write() as conn:
            for slot, job in params.slots:
                # The primary key (name, slot) makes this exactly once across workers.
                if (
                    conn.execute(
                        "INSERT OR IGNORE INTO periodic_slots (name, slot, job_id, fired_at) "
                        "VALUES (?, ?, ?, ?)",
                        (params.name, slot, job.id, now),
                    ).rowcount
                    != 1
                ):
                    continue
                if job.is_plain:
                    self._insert_plain(conn, job, now)
                else:
                    flow_writes.insert_flow(conn, [job], now)
                fired.append(slot)
                last = (slot, job.id)
            conn.execute(
                "INSERT INTO periodic_schedules (name, spec, next_slot) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, "
                "next_slot = excluded.next_slot",
                (params.name, params.spec, params.next_slot),
            )
            if fired:
                conn.execute(
                    "DELETE FROM periodic_slots WHERE name = ? AND slot < ?",
                    (params.name, min(fired) - SLOT_RETENTION),
                )
            if last is not None:
                conn.execute(
                    "UPDATE periodic_schedules SET last_slot = ?, last_fired_at = ?, "
                    "last_job_id = ? WHERE name = ? AND (last_slot IS NULL OR last_slot < ?)",
                    (last[0], now, last[1], params.name, last[0]),
                )
        return fired

    def periodic_list(self) -> list[PeriodicRecord]:
        found = self._read(
            "SELECT name, spec, last_slot, last_fired_at, last_job_id, next_slot "
            "FROM periodic_schedules ORDER BY name"
        )
        return [decoding.periodic_record(r) for r in found]  # an odd row read, not raised
