"""Bulk actions on the PostgreSQL backend: cancel, manual retry, delete, purge, clearing
a task's old results (``result_ttl``) and the import of whole jobs (``conveyor migrate``), each one transaction.

Target states come from :mod:`conveyor.rules` (``CANCEL_AT_ONCE``, ``RETRY_BY_HAND``,
``WAS_CANCELLED`` / ``WAS_DELETED`` for the dependants); the statements only apply them.
Id lists travel as one array parameter (``id = ANY(%s)``), so no list is ever too long
for a statement. Times are the server's clock (:data:`~conveyor.backends.postgres.sql.NOW`).

Example (needs a server)::

    backend.job_cancel_many(JobCancelParams(["01J..."]))   # queued -> cancelled at once
    backend.job_purge(JobPurgeParams(finished_before=time.time() - 7 * 86400))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from conveyor.backends.base import (
    JobCancelParams,
    JobClearResultsParams,
    JobExpireDueParams,
    JobFlow,
    JobImport,
    JobImportParams,
    JobLogRecord,
    JobPurgeParams,
    JobRecord,
    JobRetryParams,
)
from conveyor.backends.params import check_importable
from conveyor.backends.postgres import flow
from conveyor.backends.postgres.sql import NOW
from conveyor.rules import (
    CANCEL_AT_ONCE,
    EXPIRE_UNCLAIMED,
    EXPIRED_REASON,
    RETRY_BY_HAND,
    WAS_CANCELLED,
    WAS_DELETED,
    WAS_EXPIRED,
    sql_states,
)

if TYPE_CHECKING:
    import psycopg

    Cursor = psycopg.Cursor[tuple[object, ...]]

_CANCEL_NOW = f"""
UPDATE jobs SET state = 'cancelled', reason = %s, finished_at = {NOW}
WHERE id = ANY(%s) AND state IN ({sql_states(CANCEL_AT_ONCE)})
RETURNING id
"""
#: The expiry sweep: unstarted jobs past their expires_at (server clock), over the
#: jobs_expiring partial index; SKIP LOCKED: a row a claim holds is the claim's.
_EXPIRE_DUE = f"""
UPDATE jobs SET state = 'expired', reason = %s, finished_at = {NOW}, waiting_on = 0
WHERE id IN (
    SELECT id FROM jobs
    WHERE expires_at <= {NOW} AND state IN ({sql_states(EXPIRE_UNCLAIMED)})
    ORDER BY expires_at LIMIT %s FOR UPDATE SKIP LOCKED
  )
  AND state IN ({sql_states(EXPIRE_UNCLAIMED)})
RETURNING id
"""
_CANCEL_REQUEST = (
    "UPDATE jobs SET cancel_requested = 1, reason = %s WHERE id = ANY(%s) AND state = 'running'"
)
_RETRY = f"""
UPDATE jobs SET state = 'queued', attempt = 0, rescues = 0, run_at = {NOW},
    cancel_requested = 0, finished_at = NULL, result = NULL, reason = NULL
WHERE id = ANY(%s) AND state IN ({sql_states(RETRY_BY_HAND)})
"""
#: Old finished jobs (reads the jobs_finished partial index). SKIP LOCKED: a purge never
#: waits on a row another transaction holds (a manual retry of it, say); the next takes it.
_PURGE_IDS = """
SELECT id FROM jobs
WHERE state = ANY(%s) AND finished_at IS NOT NULL AND finished_at < %s
LIMIT %s FOR UPDATE SKIP LOCKED
"""

#: A task's result_ttl: drop the results of its succeeded jobs that finished in the window
#: (reads the jobs_finished index by state and finished_at); the rows stay. No lower
#: bound given: from the oldest. SKIP LOCKED as for the purge.
_CLEAR_RESULTS = """
UPDATE jobs SET result = NULL
WHERE id IN (
    SELECT id FROM jobs
    WHERE state = 'succeeded'
      AND finished_at >= COALESCE(%(after)s::float8, '-Infinity')
      AND finished_at < %(before)s
      AND task = %(task)s AND result IS NOT NULL
    LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
"""

#: Columns an import writes, with their array types; the claim columns (worker_id,
#: lease_until) stay NULL.
IMPORT_COLUMNS = {
    "id": "text", "task": "text", "queue": "text", "state": "text", "priority": "int",
    "payload": "text", "attempt": "int", "max_attempts": "int", "rescues": "int",
    "token": "bigint", "run_at": "float8", "created_at": "float8", "timeout": "float8",
    "lease": "float8", "cancel_requested": "int", "result": "text", "error": "text",
    "reason": "text", "started_at": "float8", "finished_at": "float8", "unique_key": "text",
    "waiting_on": "int", "headers": "text", "pipe": "int", "unique_until": "float8",
    "expires_at": "float8",
}  # fmt: skip
#: Fields of JobImport.flow, not of the job's record.
_FLOW_COLUMNS = ("pipe", "unique_until")
#: Finished holders past their window give their keys up (as at an insert), then the
#: holders left of the imported jobs' keys.
_RELEASE_KEYS = f"""
UPDATE jobs SET unique_key = NULL FROM unnest(%s::text[], %s::text[]) AS k(task, key)
WHERE jobs.task = k.task AND jobs.unique_key = k.key
  AND state IN ('succeeded', 'dead', 'cancelled', 'expired')
  AND (unique_until IS NULL OR unique_until <= {NOW})
"""
_KEY_HOLDERS = """
SELECT jobs.task, jobs.unique_key, jobs.id
FROM jobs JOIN unnest(%s::text[], %s::text[]) AS k(task, key)
  ON jobs.task = k.task AND jobs.unique_key = k.key
"""
#: A whole page of jobs in one statement: one array per column, unnested into rows; ids
#: already present (a rerun) are skipped, and RETURNING names those inserted.
_IMPORT_JOBS = (
    f"INSERT INTO jobs ({', '.join(IMPORT_COLUMNS)}) "
    f"SELECT * FROM unnest({', '.join(f'%s::{t}[]' for t in IMPORT_COLUMNS.values())}) "
    "ON CONFLICT (id) DO NOTHING RETURNING id"
)
_IMPORT_ATTEMPT = (
    "INSERT INTO attempts (job_id, token, attempt, worker_id, started_at, finished_at, "
    "outcome, error) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING"
)
LOG_INSERT = (
    "INSERT INTO job_logs (job_id, attempt, ts, level, logger, message) "
    "VALUES (%s, %s, %s, %s, %s, %s)"
)


def log_args(r: JobLogRecord) -> tuple[object, ...]:
    return (r.job_id, r.attempt, r.ts, r.level, r.logger, r.message)


def _importable_keys(cur: Cursor, jobs: Sequence[JobImport]) -> list[object]:
    """The unique key each imported job keeps: its own, unless another job holds it here
    (then it comes without: two jobs never hold one key, and skipping the job would lose
    it), or an earlier job of this batch took it."""
    keyed = [(i.job.task, i.job.unique_key) for i in jobs if i.job.unique_key is not None]
    if not keyed:
        return [None for _ in jobs]
    tasks, keys = [t for t, _ in keyed], [k for _, k in keyed]
    cur.execute(_RELEASE_KEYS, (tasks, keys))
    held = {(str(t), str(k)): str(i) for t, k, i in cur.execute(_KEY_HOLDERS, (tasks, keys))}
    kept: list[object] = []  # a column of the import's arrays
    for item in jobs:
        j, pair = item.job, (item.job.task, item.job.unique_key or "")
        if j.unique_key is None or held.setdefault(pair, j.id) != j.id:
            kept.append(None)
        else:
            kept.append(j.unique_key)
    return kept


class PostgresBulkOps:
    """Bulk actions of :class:`~conveyor.backends.postgres.backend.PostgresBackend`."""

    _tx: Callable[[], AbstractContextManager[Cursor]]
    _notify: Callable[[Cursor], None]
    job_get_many: Callable[[Sequence[str]], list[JobRecord]]

    def _settle_ended(self, cur: Cursor, ended: Mapping[str, str]) -> None:
        """Move the dependants of parents that ended without succeeding (``{id: why}``)
        as the rules say (:func:`conveyor.backends.postgres.flow.settle`), in the
        caller's transaction; wake workers when one became ready (an on_failure
        handler)."""
        if not ended:
            return
        # Only parents with dependants: settling the others changes nothing, and costs
        # a statement each (a purge of 1000 dead jobs: 1000 round trips).
        found = cur.execute(
            "SELECT DISTINCT parent_id FROM job_deps WHERE parent_id = ANY(%s)", (list(ended),)
        ).fetchall()
        parents = {str(r[0]): ended[str(r[0])] for r in found}
        if parents and flow.settle(cur, (), parents, flow.server_now(cur)):
            self._notify(cur)

    def job_cancel_many(self, params: JobCancelParams) -> list[JobRecord]:
        ids = list(params.ids)
        with self._tx() as cur:
            cancelled = cur.execute(_CANCEL_NOW, (params.reason, ids)).fetchall()
            self._settle_ended(cur, {str(r[0]): WAS_CANCELLED for r in cancelled})
            # Running jobs: the worker sees the request on its next lease extension.
            cur.execute(_CANCEL_REQUEST, (params.reason, ids))
        return self.job_get_many(ids)

    def job_retry_many(self, params: JobRetryParams) -> list[JobRecord]:
        ids = list(params.ids)
        with self._tx() as cur:
            if cur.execute(_RETRY, (ids,)).rowcount:
                self._notify(cur)  # they are ready now: wake a worker
        return self.job_get_many(ids)

    def job_delete_many(self, ids: Sequence[str]) -> int:
        with self._tx() as cur:
            return self._delete_in(cur, list(ids))

    def job_purge(self, params: JobPurgeParams) -> int:
        states = [str(s) for s in params.states]
        with self._tx() as cur:
            found = cur.execute(_PURGE_IDS, (states, params.finished_before, params.limit))
            return self._delete_in(cur, [str(r[0]) for r in found.fetchall()])

    def job_expire_due(self, params: JobExpireDueParams) -> int:
        with self._tx() as cur:
            expired = cur.execute(_EXPIRE_DUE, (EXPIRED_REASON, params.limit)).fetchall()
            self._settle_ended(cur, {str(r[0]): WAS_EXPIRED for r in expired})
        return len(expired)

    def job_clear_results(self, params: JobClearResultsParams) -> int:
        args = {
            "task": params.task,
            "after": params.finished_after,
            "before": params.finished_before,
            "limit": params.limit,
        }
        with self._tx() as cur:
            return int(cur.execute(_CLEAR_RESULTS, args).rowcount)

    def _delete_in(self, cur: Cursor, ids: list[str]) -> int:
        """Delete jobs with their attempts, logs and workflow edges. Dependants of a parent
        deleted before it succeeded are settled first: it can never release them."""
        if not ids:
            return 0
        unfinished = cur.execute(
            "SELECT id FROM jobs WHERE id = ANY(%s) AND state != 'succeeded'", (ids,)
        ).fetchall()
        self._settle_ended(cur, {str(r[0]): WAS_DELETED for r in unfinished})
        deleted = cur.execute("DELETE FROM jobs WHERE id = ANY(%s)", (ids,)).rowcount
        cur.execute("DELETE FROM attempts WHERE job_id = ANY(%s)", (ids,))
        cur.execute("DELETE FROM job_logs WHERE job_id = ANY(%s)", (ids,))
        cur.execute(
            "DELETE FROM job_deps WHERE child_id = ANY(%s) OR parent_id = ANY(%s)", (ids, ids)
        )
        return deleted

    # -- import (conveyor migrate) -------------------------------------------------------

    def job_import_many(self, params: JobImportParams) -> list[str]:
        for item in params.jobs:  # all checked before anything is written
            check_importable(item)
        if not params.jobs:
            return []
        columns: list[list[object]] = [[] for _ in IMPORT_COLUMNS]
        for item in params.jobs:
            flow = item.flow or JobFlow(item.job.id)
            for values, name in zip(columns, IMPORT_COLUMNS, strict=True):
                values.append(getattr(flow if name in _FLOW_COLUMNS else item.job, name))
        names = list(IMPORT_COLUMNS)
        columns[names.index("state")] = [str(j.job.state) for j in params.jobs]
        columns[names.index("cancel_requested")] = [
            int(j.job.cancel_requested) for j in params.jobs
        ]
        with self._tx() as cur:
            columns[names.index("unique_key")] = _importable_keys(cur, params.jobs)
            new = {str(r[0]) for r in cur.execute(_IMPORT_JOBS, columns).fetchall()}
            # The first of an id given twice is the row inserted (rows go in in order).
            first = {i.job.id: i for i in reversed(params.jobs)}
            items = [first[job_id] for job_id in dict.fromkeys(i.job.id for i in params.jobs)
                     if job_id in new]  # fmt: skip
            attempts = [
                (i.job.id, a.token, a.attempt, a.worker_id, a.started_at, a.finished_at,
                 a.outcome, a.error)
                for i in items
                for a in i.attempts
            ]  # fmt: skip
            if attempts:
                cur.executemany(_IMPORT_ATTEMPT, attempts)
            logs = [log_args(r) for i in items for r in i.logs]
            if logs:
                cur.executemany(LOG_INSERT, logs)
            edges = [
                (parent, i.job.id, n)
                for i in items
                if i.flow is not None
                for n, parent in enumerate(i.flow.parents)
            ]
            if edges:
                cur.executemany(
                    "INSERT INTO job_deps (parent_id, child_id, position) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    edges,
                )
            if new:
                self._notify(cur)
        return [i.job.id for i in items]
