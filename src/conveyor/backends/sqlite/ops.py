"""Operations on the SQLite backend: listing and counting by filter, purge, pause and
resume, per-job logs, the integrity audit and online backup.

Kept apart from ``backend.py`` (the hot path) as a mixin of :class:`SQLiteBackend`; it
uses the backend's connection, lock and ``_write`` transaction helper.

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.backends.base import QueuePauseParams
    >>> b = SQLiteBackend("sqlite:///:memory:")
    >>> b.queue_pause(QueuePauseParams("mail"))
    >>> [(q.queue, q.paused) for q in b.queue_list()]
    [('mail', True)]
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from conveyor.backends import decoding
from conveyor.backends.base import (
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    FinishedBucket,
    IntegrityCheckParams,
    IntegrityProblem,
    JobClearResultsParams,
    JobCountParams,
    JobExpireDueParams,
    JobFinishedHistogramParams,
    JobFlow,
    JobImportParams,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
    JobPurgeParams,
    JobRecord,
    QueueInfo,
    QueuePauseParams,
    QueueResumeParams,
    QueueStats,
    check_histogram,
)
from conveyor.backends.filter_sql import job_list_sql
from conveyor.backends.params import check_importable
from conveyor.backends.records import queue_list_of
from conveyor.backends.sqlite import dialect, rows
from conveyor.backends.sqlite.connection import load_query
from conveyor.backends.sqlite.filter_sql import SQLITE, filter_sql
from conveyor.private_files import create_private
from conveyor.rules import EXPIRED_REASON, WAS_DELETED, WAS_EXPIRED
from conveyor.states import JobState

#: Loaded here rather than in the backend's query table: only the dashboard reads it.
_HISTOGRAM_SQL = load_query("job_finished_histogram")
#: Only the pruner's sweep reads it.
_EXPIRE_DUE_SQL = load_query("job_expire_due")


class SQLiteOpsMixin:
    """Ops methods of :class:`~conveyor.backends.sqlite.backend.SQLiteBackend`."""

    #: operations features this backend implements (see ``tests/support/features.py``)

    _conn: sqlite3.Connection
    _lock: threading.RLock
    _sql: dict[str, str]
    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[tuple[object, ...]]]
    queue_stats: Callable[[], list[QueueStats]]

    # -- jobs by filter ------------------------------------------------------------------

    def job_list(self, params: JobListParams) -> list[JobRecord]:
        sql, args = job_list_sql(params, SQLITE, rows.JOB_COLUMNS)
        return [rows.job_record(r) for r in self._read(sql, args)]

    def job_count(self, params: JobCountParams) -> int:
        where, args = filter_sql(params.filter)
        return int(str(self._read(f"SELECT COUNT(*) FROM jobs WHERE {where}", args)[0][0]))

    def job_purge(self, params: JobPurgeParams) -> int:
        states = json.dumps([str(s) for s in params.states])
        with self._write() as conn:
            ids = [
                str(r[0])
                for r in conn.execute(
                    self._sql["job_purge"],
                    {
                        "states": states,
                        "finished_before": params.finished_before,
                        "limit": params.limit,
                    },
                )
            ]
            delete_jobs(conn, ids)
        return len(ids)

    def job_expire_due(self, params: JobExpireDueParams) -> int:
        from conveyor.backends.sqlite import flow_writes  # the hot path never needs it

        now = time.time()
        with self._write() as conn:
            args = {"reason": EXPIRED_REASON, "now": now, "limit": params.limit}
            ids = [str(r[0]) for r in conn.execute(_EXPIRE_DUE_SQL, args).fetchall()]
            # Dependants move in the same commit, as behind a dead parent.
            flow_writes.settle(conn, (), dict.fromkeys(ids, WAS_EXPIRED), now)
        return len(ids)

    def job_clear_results(self, params: JobClearResultsParams) -> int:
        after = params.finished_after
        with self._write() as conn:
            cursor = conn.execute(
                self._sql["job_clear_results"],
                {
                    "task": params.task,
                    "finished_after": -math.inf if after is None else after,
                    "finished_before": params.finished_before,
                    "limit": params.limit,
                },
            )
            return cursor.rowcount

    # -- queues --------------------------------------------------------------------------

    def queue_list(self) -> list[QueueInfo]:
        flags = self._read("SELECT name, paused FROM queues")
        paused = {str(n) for n, p in flags if p}
        return queue_list_of(self.queue_stats(), paused, flagged=[str(n) for n, _ in flags])

    def queue_pause(self, params: QueuePauseParams) -> None:
        self._set_paused(params.queue, True)

    def queue_resume(self, params: QueueResumeParams) -> None:
        # The write bumps data_version, which wakes idle workers to claim at once.
        self._set_paused(params.queue, False)

    def _set_paused(self, queue: str, paused: bool) -> None:
        with self._write() as conn:
            conn.execute(
                self._sql["queue_pause"],
                {"queue": queue, "paused": int(paused), "now": time.time()},
            )

    # -- logs ----------------------------------------------------------------------------

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        stored = 0
        limit = params.max_per_job
        ordered = sorted(enumerate(params.records), key=lambda p: (p[1].job_id, p[0]))
        with self._write() as conn:
            for job_id, group in itertools.groupby(ordered, key=lambda p: p[1].job_id):
                records = [r for _, r in group]
                have = int(
                    conn.execute(
                        "SELECT COUNT(*) FROM job_logs WHERE job_id = ?", (job_id,)
                    ).fetchone()[0]
                )
                room = max(0, limit - have)
                keep = records[:room]
                conn.executemany(self._sql["job_log_insert"], [_log_args(r) for r in keep])
                stored += len(keep)
                if len(records) > room and have <= limit:
                    # Exactly one marker: after it the count is limit + 1, so have > limit.
                    first = records[room]
                    marker = JobLogRecord(
                        job_id,
                        first.attempt,
                        first.ts,
                        "WARNING",
                        TRUNCATED_LOGGER,
                        TRUNCATED_MESSAGE.format(limit=limit),
                    )
                    conn.execute(self._sql["job_log_insert"], _log_args(marker))
        return stored

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        found = self._read(
            "SELECT job_id, attempt, ts, level, logger, message FROM job_logs "
            "WHERE job_id = ? ORDER BY rowid LIMIT ?",
            (params.job_id, params.limit),
        )
        return [
            JobLogRecord(str(j), int(str(a)), float(str(t)), str(lv), str(lg), str(m))
            for j, a, t, lv, lg, m in found
        ]

    # -- import (conveyor migrate) -------------------------------------------------------

    def job_import_many(self, params: JobImportParams) -> list[str]:
        for item in params.jobs:  # all checked before anything is written
            check_importable(item)
        inserted: list[str] = []
        with self._write() as conn:
            for item in params.jobs:
                j, flow = item.job, item.flow or JobFlow(item.job.id)
                values = {c: getattr(flow if c in _FLOW_COLUMNS else j, c) for c in _IMPORT_COLUMNS}
                values["state"] = str(j.state)
                values["cancel_requested"] = int(j.cancel_requested)
                values["unique_key"] = _importable_key(conn, j)
                cur = conn.execute(_IMPORT_SQL, values)
                if cur.rowcount == 0:
                    continue  # already there: a rerun after an interruption
                inserted.append(j.id)
                conn.executemany(
                    "INSERT OR IGNORE INTO attempts (job_id, token, attempt, worker_id, "
                    "started_at, finished_at, outcome, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (j.id, a.token, a.attempt, a.worker_id, a.started_at, a.finished_at,
                         a.outcome, a.error)
                        for a in item.attempts
                    ],
                )  # fmt: skip
                conn.executemany(self._sql["job_log_insert"], [_log_args(r) for r in item.logs])
                conn.executemany(
                    "INSERT OR IGNORE INTO job_deps (parent_id, child_id, position) VALUES (?, ?, ?)",
                    [(parent, j.id, n) for n, parent in enumerate(flow.parents)],
                )
        return inserted

    def job_flow_many(self, ids: Sequence[str]) -> list[JobFlow]:
        found: dict[str, JobFlow] = {}
        for chunk in rows.chunks(list(ids)):
            marks = rows.placeholders(len(chunk))
            parents: dict[str, list[str]] = {}
            for child, parent in self._read(
                f"SELECT child_id, parent_id FROM job_deps WHERE child_id IN ({marks}) "
                "ORDER BY child_id, position",
                chunk,
            ):
                parents.setdefault(str(child), []).append(str(parent))
            for job_id, pipe, until in self._read(
                f"SELECT id, pipe, unique_until FROM jobs WHERE id IN ({marks})", chunk
            ):
                found[str(job_id)] = JobFlow(
                    str(job_id), int(str(pipe)), tuple(parents.get(str(job_id), ())),
                    decoding.number_or_none(until),
                )  # fmt: skip
        return [found[i] for i in ids if i in found]

    # -- audit and backup ----------------------------------------------------------------

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        found = self._read(
            dialect.SQLITE.queries["integrity_check"],
            {"stale_before": time.time() - params.heartbeat_ttl},
        )
        problems = [
            IntegrityProblem(str(k), None if j is None else str(j), str(d)) for k, j, d in found
        ]
        with self._lock:
            quick = [str(r[0]) for r in self._conn.execute("PRAGMA quick_check").fetchall()]
        if quick != ["ok"]:
            problems += [IntegrityProblem("sqlite_quick_check", None, q) for q in quick]
        return problems

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

    # -- throughput history (the dashboard's chart) --------------------------------------

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        check_histogram(params, time.time())
        found = self._read(_HISTOGRAM_SQL, {"since": params.since, "bucket_s": params.bucket_s})
        return [
            FinishedBucket(
                params.since + int(str(b)) * params.bucket_s, str(q), JobState(str(s)), int(str(n))
            )
            for b, q, s, n in found
        ]


#: Columns an import writes; the claim columns (worker_id, lease_until) stay NULL.
_IMPORT_COLUMNS = (
    "id", "task", "queue", "state", "priority", "payload", "attempt", "max_attempts",
    "rescues", "token", "run_at", "created_at", "timeout", "lease", "cancel_requested",
    "result", "error", "reason", "started_at", "finished_at", "headers", "unique_key",
    "waiting_on", "pipe", "unique_until", "expires_at",
)  # fmt: skip
#: Columns from JobImport.flow, not from the job's record.
_FLOW_COLUMNS = ("pipe", "unique_until")
_IMPORT_SQL = (
    f"INSERT OR IGNORE INTO jobs ({', '.join(_IMPORT_COLUMNS)}) "
    f"VALUES ({', '.join(':' + c for c in _IMPORT_COLUMNS)})"
)


def _importable_key(conn: sqlite3.Connection, j: JobRecord) -> str | None:
    """The unique key an imported job keeps: its own, unless another job holds it here
    (then it comes without: two jobs never hold one key, and skipping it would lose it).
    A finished holder whose window passed gives the key up, as at an insert."""
    if j.unique_key is None:
        return None
    conn.execute(
        "UPDATE jobs SET unique_key = NULL WHERE task = ? AND unique_key = ? "
        "AND state IN ('succeeded', 'dead', 'cancelled') "
        "AND (unique_until IS NULL OR unique_until <= ?)",
        (j.task, j.unique_key, time.time()),
    )
    held = conn.execute(
        "SELECT id FROM jobs WHERE task = ? AND unique_key = ?", (j.task, j.unique_key)
    ).fetchone()
    return j.unique_key if held is None or held[0] == j.id else None


def _log_args(r: JobLogRecord) -> dict[str, object]:
    return {
        "job_id": r.job_id,
        "attempt": r.attempt,
        "ts": r.ts,
        "level": r.level,
        "logger": r.logger,
        "message": r.message,
    }


def delete_jobs(conn: sqlite3.Connection, ids: Sequence[str]) -> int:
    """Delete jobs with their attempts, logs and workflow edges (inside the caller's
    transaction). Dependants of a parent deleted before it succeeded are cancelled: it can
    never release them."""
    from conveyor.backends.sqlite import flow_writes

    deleted = 0
    now = time.time()
    for chunk in rows.chunks(list(ids)):
        marks = rows.placeholders(len(chunk))
        unfinished = conn.execute(
            f"SELECT id FROM jobs WHERE id IN ({marks}) AND state != 'succeeded'", chunk
        ).fetchall()
        flow_writes.settle(conn, (), {str(r[0]): WAS_DELETED for r in unfinished}, now)
        deleted += conn.execute(f"DELETE FROM jobs WHERE id IN ({marks})", chunk).rowcount
        conn.execute(f"DELETE FROM attempts WHERE job_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM job_logs WHERE job_id IN ({marks})", chunk)
        conn.execute(
            f"DELETE FROM job_deps WHERE child_id IN ({marks}) OR parent_id IN ({marks})",
            (*chunk, *chunk),
        )
    return deleted
