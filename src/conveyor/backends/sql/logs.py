"""Per-job logs on any SQL store: storing a batch under the per-job bound, with one
truncation marker, and reading a job's records back in the order they were written
(``Dialect.log_order``: SQLite's ``rowid``, PostgreSQL's ``seq`` column).

Example (any SQL store)::

    backend.job_log_insert_many(JobLogInsertParams(records, max_per_job=1000))
    backend.job_log_list(JobLogListParams("01J...", limit=100))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from conveyor.backends.base import (
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
)
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.store import SqlStore

_LOG_INSERT = (
    "INSERT INTO job_logs (job_id, attempt, ts, level, logger, message) VALUES (?, ?, ?, ?, ?, ?)"
)


def log_args(r: JobLogRecord) -> tuple[object, ...]:
    return (r.job_id, r.attempt, r.ts, r.level, r.logger, r.message)


def insert_logs(d: Dialect, ex: Executor, records: Sequence[JobLogRecord]) -> None:
    """Write ``records`` as they are, in the caller's transaction (nothing for none)."""
    if records:
        ex.executemany(d.sql(_LOG_INSERT), [log_args(r) for r in records])


def _bounded(
    records: Sequence[JobLogRecord], have: Counter[str], limit: int
) -> tuple[list[JobLogRecord], int]:
    """The records to write, at most ``limit`` per job counting those it ``have``, then
    exactly one marker per job (after it the count is limit + 1, so no second one); and
    how many of them are the job's own (not markers)."""
    keep: list[JobLogRecord] = []
    marked: set[str] = set()
    for r in records:  # in the order given, per job
        if have[r.job_id] < limit:
            keep.append(r)
            have[r.job_id] += 1
        elif have[r.job_id] == limit and r.job_id not in marked:
            marked.add(r.job_id)
            have[r.job_id] += 1
            keep.append(
                JobLogRecord(
                    r.job_id, r.attempt, r.ts, "WARNING", TRUNCATED_LOGGER,
                    TRUNCATED_MESSAGE.format(limit=limit),
                )
            )  # fmt: skip
    return keep, len(keep) - len(marked)


class SqlLogs(SqlStore):
    """The log methods of the Operations protocol, on any SQL store."""

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        """Store records, at most ``max_per_job`` per job, then one truncation marker.
        A job's records come from the one worker running it, so counting then inserting
        in one transaction keeps the bound."""
        if not params.records:
            return 0
        d = self._dialect
        job_ids = sorted({r.job_id for r in params.records})
        with self._ops_tx() as ex:
            have = Counter[str]()
            for where, args in d.in_list("job_id", job_ids):
                query = d.sql(
                    f"SELECT job_id, COUNT(*) FROM job_logs WHERE {where} GROUP BY job_id"
                )
                for job_id, n in ex.execute(query, args).fetchall():
                    have[str(job_id)] = int(str(n))
            keep, stored = _bounded(params.records, have, params.max_per_job)
            insert_logs(d, ex, keep)
            if keep:
                self._search_note_each(ex, sorted({r.job_id for r in keep}))
        return stored

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        d = self._dialect
        found = self._ops_rows(
            d.sql(
                "SELECT job_id, attempt, ts, level, logger, message FROM job_logs "
                f"WHERE job_id = ? ORDER BY {d.log_order} LIMIT ?"
            ),
            (params.job_id, params.limit),
        )
        return [
            JobLogRecord(str(j), int(str(a)), float(str(t)), str(lv), str(lg), str(m))
            for j, a, t, lv, lg, m in found
        ]
