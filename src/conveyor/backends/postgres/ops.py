"""The Operations half of the PostgreSQL backend: listing and counting by filter, queue
pause and statistics, per-job logs, workers, the integrity audit, the throughput
history and the workflow fields ``conveyor migrate`` carries (waiting on a job is the
backend's, beside its listeners); bulk actions and import are in ``ops_bulk.py``. Mixed
into ``PostgresBackend``; every method is one transaction: its ``_tx()``, or for one
statement ``_once()`` (autocommit: one round trip).

Listing pages in byte order of ids (``id COLLATE "C"``): ids sort by creation time
as bytes, whatever collation the database was created with. ``jobs.id`` is declared
``COLLATE "C"`` (schema.sql), so the primary key's index gives that order and bounds an
``--after`` page; the explicit collation keeps the order right on a hand-made schema.

``backup`` is left to the engine's own tool: feature ``backup`` is not declared, and
the method says to use ``pg_dump`` (docs/postgres.md#operations-on-postgres).

Example (needs a server; the test suite starts one)::

    backend.queue_pause(QueuePauseParams("mail"))
    [(q.queue, q.paused) for q in backend.queue_list()]     # [('mail', True)]
    backend.job_count(JobCountParams(JobFilter(states=(JobState.DEAD,))))
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import (
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    AttemptRecord,
    FinishedBucket,
    IntegrityCheckParams,
    IntegrityProblem,
    JobCountParams,
    JobFinishedHistogramParams,
    JobFlow,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
    JobRecord,
    QueueInfo,
    QueuePauseParams,
    QueueResumeParams,
    QueueStats,
    WorkerInfo,
    check_histogram,
)
from conveyor.backends.filter_sql import job_list_sql
from conveyor.backends.postgres import dialect
from conveyor.backends.postgres.filter_sql import POSTGRES, filter_sql
from conveyor.backends.postgres.ops_bulk import LOG_INSERT, PostgresBulkOps, log_args
from conveyor.backends.postgres.sql import JOB_COLUMNS, NOW
from conveyor.backends.records import queue_list_of
from conveyor.errors import ConfigurationError
from conveyor.states import JobState

if TYPE_CHECKING:
    import psycopg

    Cursor = psycopg.Cursor[tuple[object, ...]]

#: Byte order of ids, the order they were created in: the collation of ``jobs.id`` and
#: of its index, so naming it again costs nothing (see the module docstring).
ID_ORDER = 'id COLLATE "C"'
_ATTEMPT_COLUMNS = "job_id, attempt, token, worker_id, started_at, finished_at, outcome, error"
_WORKER_COLUMNS = (
    "id, host, pid, pid_started, started_at, queues, concurrency, pool, heartbeat_at, "
    "last_fetch_at, running"
)
_QUEUE_PAUSE = f"""
INSERT INTO queues (name, paused, updated_at) VALUES (%s, %s, {NOW})
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
"""
#: Buckets count from since: bucket n starts at since + n * bucket_s (as on SQLite).
#: The bucket is clamped below 2**63 before the cast: a finished_at written around the API
#: (infinity, NaN, 1e300) lands in the last bucket, as SQLite's saturating CAST puts it,
#: instead of failing the whole dashboard with "bigint out of range".
_HISTOGRAM_SQL = """
SELECT least(floor((finished_at - %(since)s) / %(bucket_s)s), 9223372036854774784)::bigint
       AS bucket, queue, state, count(*)
FROM jobs
WHERE state IN ('succeeded', 'dead', 'cancelled', 'expired') AND finished_at >= %(since)s
GROUP BY bucket, queue, state
ORDER BY bucket, queue COLLATE "C", state
"""
_PG_DUMP = (
    "backup is only available on the SQLite backend, not postgres; back PostgreSQL up "
    "with its own tools: pg_dump --schema={schema} (or the base backups and replicas "
    "you already run)"
)


def _float(value: object) -> float | None:
    return None if value is None else float(str(value))


class PostgresOperations(PostgresBulkOps):
    """Operations methods of :class:`~conveyor.backends.postgres.backend.PostgresBackend`
    (the ``Operations`` protocol); they share its pool and ``_tx()``."""

    schema: str
    _tx: Callable[[], AbstractContextManager[Cursor]]
    _once: Callable[..., list[tuple[object, ...]]]

    def _rows(
        self, sql: str, args: Sequence[object] | dict[str, object] = ()
    ) -> list[tuple[object, ...]]:
        return self._once(sql, args)

    # -- jobs by filter ------------------------------------------------------------------

    def job_list(self, params: JobListParams) -> list[JobRecord]:
        sql, args = job_list_sql(params, POSTGRES, JOB_COLUMNS, ID_ORDER)
        return [decoding.job_record(r) for r in self._rows(sql, args)]

    def job_count(self, params: JobCountParams) -> int:
        where, args = filter_sql(params.filter)
        return int(str(self._rows(f"SELECT count(*) FROM jobs WHERE {where}", args)[0][0]))

    def job_attempts(self, job_id: str) -> list[AttemptRecord]:
        found = self._rows(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE job_id = %s ORDER BY token", (job_id,)
        )
        return [AttemptRecord(*r) for r in found]  # type: ignore[arg-type]

    def job_flow_many(self, ids: Sequence[str]) -> list[JobFlow]:
        with self._tx() as cur:
            edges = cur.execute(
                "SELECT child_id, parent_id FROM job_deps WHERE child_id = ANY(%s) "
                "ORDER BY child_id, position",
                (list(ids),),
            ).fetchall()
            fields = cur.execute(
                "SELECT id, pipe, unique_until FROM jobs WHERE id = ANY(%s)", (list(ids),)
            ).fetchall()
        parents: dict[str, list[str]] = {}
        for child, parent in edges:
            parents.setdefault(str(child), []).append(str(parent))
        found = {
            str(i): JobFlow(str(i), int(str(pipe)), tuple(parents.get(str(i), ())), _float(until))
            for i, pipe, until in fields
        }
        return [found[i] for i in ids if i in found]

    # -- queues and workers --------------------------------------------------------------

    def queue_stats(self) -> list[QueueStats]:
        # One scan: the counts and the oldest ready job's age per queue together.
        found = self._rows(
            f"SELECT queue, state, count(*), {NOW} - min(run_at) FILTER (WHERE state = 'queued') "
            "FROM jobs GROUP BY queue, state"
        )
        counts: dict[str, dict[str, int]] = {}
        ages: dict[str, float] = {}
        for queue, state, count, age in found:
            counts.setdefault(str(queue), {})[str(state)] = int(str(count))
            if (seconds := decoding.finite_or_none(age)) is not None:  # NaN/inf run_at
                ages[str(queue)] = seconds
        return [QueueStats(q, counts[q], ages.get(q)) for q in sorted(counts)]

    def queue_list(self) -> list[QueueInfo]:
        flags = self._rows("SELECT name, paused FROM queues")
        paused = {str(n) for n, p in flags if p}
        return queue_list_of(self.queue_stats(), paused, flagged=[str(n) for n, _ in flags])

    def queue_pause(self, params: QueuePauseParams) -> None:
        with self._tx() as cur:
            cur.execute(_QUEUE_PAUSE, (params.queue, 1))

    def queue_resume(self, params: QueueResumeParams) -> None:
        with self._tx() as cur:
            cur.execute(_QUEUE_PAUSE, (params.queue, 0))
            self._notify(cur)  # idle workers claim from it at once

    def worker_list(self) -> list[WorkerInfo]:
        found = self._rows(f"SELECT {_WORKER_COLUMNS} FROM workers ORDER BY started_at")
        return [decoding.worker_info(r) for r in found]  # an odd row is noted, not raised

    # -- logs ----------------------------------------------------------------------------

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        """Store records, at most ``max_per_job`` per job, then one truncation marker.
        A job's records come from the one worker running it, so counting then inserting
        in one transaction keeps the bound."""
        if not params.records:
            return 0
        limit = params.max_per_job
        job_ids = sorted({r.job_id for r in params.records})
        keep: list[JobLogRecord] = []
        with self._tx() as cur:
            have = Counter[str]()
            for job_id, n in cur.execute(
                "SELECT job_id, count(*) FROM job_logs WHERE job_id = ANY(%s) GROUP BY job_id",
                (job_ids,),
            ).fetchall():
                have[str(job_id)] = int(str(n))
            marked: set[str] = set()
            for r in params.records:  # in the order given, per job
                if have[r.job_id] < limit:
                    keep.append(r)
                    have[r.job_id] += 1
                elif have[r.job_id] == limit and r.job_id not in marked:
                    # Exactly one marker: after it the count is limit + 1.
                    marked.add(r.job_id)
                    have[r.job_id] += 1
                    keep.append(
                        JobLogRecord(
                            r.job_id, r.attempt, r.ts, "WARNING", TRUNCATED_LOGGER,
                            TRUNCATED_MESSAGE.format(limit=limit),
                        )
                    )  # fmt: skip
            if keep:
                cur.executemany(LOG_INSERT, [log_args(r) for r in keep])
        return len(keep) - len(marked)

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        found = self._rows(
            "SELECT job_id, attempt, ts, level, logger, message FROM job_logs "
            "WHERE job_id = %s ORDER BY seq LIMIT %s",
            (params.job_id, params.limit),
        )
        return [
            JobLogRecord(str(j), int(str(a)), float(str(t)), str(lv), str(lg), str(m))
            for j, a, t, lv, lg, m in found
        ]

    # -- audit, history and backup -------------------------------------------------------

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        found = self._rows(
            dialect.POSTGRES.queries["integrity_check"], {"heartbeat_ttl": params.heartbeat_ttl}
        )
        return [
            IntegrityProblem(str(k), None if j is None else str(j), str(d)) for k, j, d in found
        ]

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        check_histogram(params, time.time())
        found = self._rows(_HISTOGRAM_SQL, {"since": params.since, "bucket_s": params.bucket_s})
        return [
            FinishedBucket(
                params.since + int(str(b)) * params.bucket_s, str(q), JobState(str(s)), int(str(n))
            )
            for b, q, s, n in found
        ]

    def backup(self, path: str) -> None:
        """Not this backend's job (feature ``backup`` is not declared): raises
        ConfigurationError naming ``pg_dump``."""
        raise ConfigurationError(_PG_DUMP.format(schema=self.schema))
