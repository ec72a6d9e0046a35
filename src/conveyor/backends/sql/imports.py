"""The import of whole jobs on any SQL store (``conveyor migrate``): each job with its
attempts, logs and workflow edges, as they were in the store it comes from.

A job whose id is already here is skipped (a rerun after an interruption: the insert
ignores it, ``Dialect.insert_ignore``), and so are its attempts, logs and edges. A job
keeps its unique key unless another job holds it here (then it comes without: two jobs
never hold one key, and skipping the job would lose it); a finished holder whose window
passed gives the key up first, as at an insert.

Example (any SQL store)::

    backend.job_import_many(JobImportParams(jobs))    # the ids written
"""

from __future__ import annotations

from conveyor.backends.base import JobFlow, JobImport, JobImportParams, JobRecord
from conveyor.backends.params import check_importable
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.logs import insert_logs
from conveyor.backends.sql.store import SqlStore

#: Columns an import writes; the claim columns (worker_id, lease_until) stay NULL.
IMPORT_COLUMNS = (
    "id", "task", "queue", "state", "priority", "payload", "attempt", "max_attempts",
    "rescues", "token", "run_at", "created_at", "timeout", "lease", "cancel_requested",
    "result", "error", "reason", "started_at", "finished_at", "headers", "unique_key",
    "waiting_on", "pipe", "unique_until", "expires_at",
)  # fmt: skip
#: Columns from JobImport.flow, not from the job's record.
_FLOW_COLUMNS = ("pipe", "unique_until")
_JOB = f"jobs ({', '.join(IMPORT_COLUMNS)}) VALUES ({', '.join('?' * len(IMPORT_COLUMNS))})"
_ATTEMPT = (
    "attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_EDGE = "job_deps (parent_id, child_id, position) VALUES (?, ?, ?)"


def _importable_key(d: Dialect, ex: Executor, j: JobRecord, now: float) -> str | None:
    """The unique key an imported job keeps (see the module's docstring)."""
    if j.unique_key is None:
        return None
    ex.execute(
        d.sql(
            "UPDATE jobs SET unique_key = NULL WHERE task = ? AND unique_key = ? "
            "AND state IN ('succeeded', 'dead', 'cancelled', 'expired') "
            "AND (unique_until IS NULL OR unique_until <= ?)"
        ),
        (j.task, j.unique_key, now),
    )
    held = ex.execute(
        d.sql("SELECT id FROM jobs WHERE task = ? AND unique_key = ?"), (j.task, j.unique_key)
    ).fetchone()
    return j.unique_key if held is None or held[0] == j.id else None


def import_one(d: Dialect, ex: Executor, item: JobImport, now: float) -> bool:
    """Write one job with its attempts, logs and edges; False: its id was already here."""
    j, flow = item.job, item.flow or JobFlow(item.job.id)
    values = {c: getattr(flow if c in _FLOW_COLUMNS else j, c) for c in IMPORT_COLUMNS}
    values["state"] = str(j.state)
    values["cancel_requested"] = int(j.cancel_requested)
    values["unique_key"] = _importable_key(d, ex, j, now)
    if ex.execute(d.sql(d.insert_ignore(_JOB)), list(values.values())).rowcount == 0:
        return False
    attempts = [
        (j.id, a.token, a.attempt, a.worker_id, a.started_at, a.finished_at, a.outcome, a.error)
        for a in item.attempts
    ]
    if attempts:
        ex.executemany(d.sql(d.insert_ignore(_ATTEMPT)), attempts)
    insert_logs(d, ex, item.logs)
    edges = [(parent, j.id, n) for n, parent in enumerate(flow.parents)]
    if edges:
        ex.executemany(d.sql(d.insert_ignore(_EDGE)), edges)
    return True


class SqlImports(SqlStore):
    """``job_import_many`` of the Operations protocol, on any SQL store."""

    def job_import_many(self, params: JobImportParams) -> list[str]:
        for item in params.jobs:  # all checked before anything is written
            check_importable(item)
        if not params.jobs:
            return []
        d = self._dialect
        with self._ops_tx() as ex:
            now = d.clock(ex)
            inserted = [i.job.id for i in params.jobs if import_one(d, ex, i, now)]
            if inserted:
                self._ops_wake(ex)
        return inserted
