"""The import of whole jobs on any SQL store (``conveyor migrate``): each job with its
attempts, logs, workflow edges, durable steps and unconsumed events, as they were in the
store it comes from.

A job whose id is already here is skipped (a rerun after an interruption), and so are
its attempts, logs and edges. Jobs go in a few dozen rows a statement (a page of a
migration is a handful of statements, not one per job); the history with
``executemany``. A job
keeps its unique key unless another job holds it here (then it comes without: two jobs
never hold one key, and skipping the job would lose it); a finished holder whose window
passed gives the key up first, as at an insert.

Example (any SQL store)::

    backend.job_import_many(JobImportParams(jobs))    # the ids written
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.backends.base import JobFlow, JobImport, JobImportParams, join_of
from conveyor.backends.durable_params import parked_event
from conveyor.backends.params import check_importable
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.flow import wake_waiting
from conveyor.backends.sql.logs import insert_logs
from conveyor.backends.sql.steps import COLUMNS as STEP_COLUMNS
from conveyor.backends.sql.steps import step_args
from conveyor.backends.sql.store import SqlStore

_STEP_VALUES = ", ".join("?" * 9)
#: Columns an import writes; the claim columns (worker_id, lease_until) stay NULL.
IMPORT_COLUMNS = (
    "id", "task", "queue", "state", "priority", "payload", "attempt", "max_attempts",
    "rescues", "token", "run_at", "created_at", "timeout", "lease", "cancel_requested",
    "result", "error", "reason", "started_at", "finished_at", "headers", "unique_key",
    "waiting_on", "pipe", "unique_until", "expires_at",
)  # fmt: skip
#: Columns from JobImport.flow, not from the job's record.
_FLOW_COLUMNS = ("pipe", "unique_until")
_JOBS = f"jobs ({', '.join(IMPORT_COLUMNS)}) VALUES "
_ROW = f"({', '.join('?' * len(IMPORT_COLUMNS))})"
#: Rows of one multi-row insert: 38 x 26 = 988 parameters, under the lowest cap of any
#: store (SQLite before 3.32: 999).
_ROWS_PER_INSERT = 38
_ATTEMPT = (
    "attempts (job_id, token, attempt, worker_id, started_at, finished_at, outcome, error) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_EVENT = "INSERT INTO job_events (job_id, name, payload, sent_at) VALUES (?, ?, ?, ?)"
_EDGE = "job_deps (parent_id, child_id, position) VALUES (?, ?, ?)"
#: Holders that give their key up once their window passed (as at an insert).
_FINISHED = frozenset({"succeeded", "dead", "cancelled", "expired"})


def _new(d: Dialect, ex: Executor, jobs: Sequence[JobImport]) -> list[JobImport]:
    """The jobs to write: ids not here yet (locked where rows lock, so a concurrent
    import of the same id waits), the first of an id given twice."""
    ids = list(dict.fromkeys(i.job.id for i in jobs))
    present: set[str] = set()
    for where, args in d.in_list("id", ids):
        query = d.sql(f"SELECT id FROM jobs WHERE {where}{d.lock}")
        present.update(str(r[0]) for r in ex.execute(query, args).fetchall())
    first = {i.job.id: i for i in reversed(jobs)}
    return [first[i] for i in ids if i not in present]


def _gives_up(state: object, until: object, now: float) -> bool:
    # A text until (a row written around the API) sorts after every number: never.
    if str(state) not in _FINISHED:
        return False
    return until is None or (isinstance(until, (int, float)) and until <= now)


def _importable_keys(
    d: Dialect, ex: Executor, jobs: Sequence[JobImport], now: float
) -> list[str | None]:
    """The unique key each job keeps: its own, unless another job holds it here or an
    earlier job of this batch took it (then it comes without: two jobs never hold one
    key, and skipping the job would lose it)."""
    pairs = {(i.job.task, i.job.unique_key) for i in jobs if i.job.unique_key is not None}
    held: dict[tuple[str, str], str] = {}
    released: list[str] = []
    keys = sorted({k for _, k in pairs})
    for where, args in d.in_list("unique_key", keys):
        query = d.sql(f"SELECT id, task, unique_key, state, unique_until FROM jobs WHERE {where}")
        for job_id, task, key, state, until in ex.execute(query, args).fetchall():
            if (str(task), str(key)) not in pairs:
                continue
            if _gives_up(state, until, now):
                released.append(str(job_id))
            else:
                held[(str(task), str(key))] = str(job_id)
    for where, args in d.in_list("id", released):
        ex.execute(d.sql(f"UPDATE jobs SET unique_key = NULL WHERE {where}"), args)
    kept: list[str | None] = []
    for item in jobs:
        j = item.job
        pair = (j.task, j.unique_key or "")
        mine = j.unique_key is not None and held.setdefault(pair, j.id) == j.id
        kept.append(j.unique_key if mine else None)
    return kept


def _row(item: JobImport, key: str | None) -> list[object]:
    j, flow = item.job, item.flow or JobFlow(item.job.id)
    values = {c: getattr(flow if c in _FLOW_COLUMNS else j, c) for c in IMPORT_COLUMNS}
    values["state"] = str(j.state)
    values["cancel_requested"] = int(j.cancel_requested)
    values["unique_key"] = key
    return list(values.values())


def insert_jobs(d: Dialect, ex: Executor, jobs: Sequence[JobImport], now: float) -> list[str]:
    """Write the jobs not here yet, a few dozen rows a statement; the ids written."""
    new = _new(d, ex, jobs)
    rows = [_row(i, k) for i, k in zip(new, _importable_keys(d, ex, new, now), strict=True)]
    written: list[str] = []
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        part = rows[start : start + _ROWS_PER_INSERT]
        values = d.insert_ignore(_JOBS + ", ".join([_ROW] * len(part)))
        args = [v for r in part for v in r]
        if d.returning:  # exact even if a concurrent import wrote one of them meanwhile
            found = ex.execute(d.sql(f"{values} RETURNING id"), args).fetchall()
            written += [str(r[0]) for r in found]
        else:  # the ids were read locked above
            ex.execute(d.sql(values), args)
            written += [str(r[0]) for r in part]
    return written


def insert_history(d: Dialect, ex: Executor, items: Sequence[JobImport]) -> None:
    """The attempts, logs and workflow edges of jobs just written."""
    attempts = [
        (i.job.id, a.token, a.attempt, a.worker_id, a.started_at, a.finished_at, a.outcome,
         a.error)
        for i in items
        for a in i.attempts
    ]  # fmt: skip
    if attempts:
        ex.executemany(d.sql(d.insert_ignore(_ATTEMPT)), attempts)
    insert_logs(d, ex, [r for i in items for r in i.logs])
    steps = [step_args(s) for i in items for s in i.steps]
    if steps:
        ex.executemany(
            d.sql(d.insert_ignore(f"job_steps ({STEP_COLUMNS}) VALUES ({_STEP_VALUES})")), steps
        )
    # Events not consumed yet, in the order sent (ids grow): a wait here takes them. A
    # parked job comes back parked (its row ``waiting``, run_at its deadline, and its
    # ``waiting`` step): a send wakes it, the deadline sweep times it out.
    events = [(i.job.id, e.name, e.payload, e.sent_at) for i in items for e in i.events]
    if events:
        ex.executemany(d.sql(_EVENT), events)
    edges = [
        (parent, i.job.id, n)
        for i in items
        if i.flow is not None
        for n, parent in enumerate(i.flow.parents)
    ]
    if edges:
        ex.executemany(d.sql(d.insert_ignore(_EDGE)), edges)


def restore_joins(d: Dialect, ex: Executor, items: Sequence[JobImport], now: float) -> int:
    """Joins across an import: a job parked in ``conveyor.join(child)`` marks its child
    again (``join:<joiner>`` among its dependants, as ``job_join_mark`` does), so the
    child's end wakes it; a child here already ended wakes it now. A job imported ended
    wakes the joiners an earlier import marked it with (the child came after them).
    How many were woken."""
    woken = 0
    for item in items:
        event = parked_event(item.steps) if str(item.job.state) == "waiting" else None
        child = join_of(event or "")
        if event is None or child is None:
            continue
        found = ex.execute(d.sql(f"SELECT state FROM jobs WHERE id = ?{d.lock}"), (child,))
        row = found.fetchone()
        if row is not None and str(row[0]) in _FINISHED:
            woken += wake_waiting(d, ex, item.job.id, event, now)
        else:  # here and not ended, or still to come: its end (or import) wakes the joiner
            ex.execute(d.sql(d.insert_ignore(_EDGE)), (child, "join:" + item.job.id, -1))
    ended = [i.job.id for i in items if i.job.state.is_finished]
    for where, args in d.in_list("parent_id", ended):
        marks = ex.execute(d.sql(f"SELECT parent_id, child_id FROM job_deps WHERE {where}"), args)
        for parent, mark in marks.fetchall():
            joiner = join_of(str(mark))
            if joiner is not None:
                woken += wake_waiting(d, ex, joiner, f"join:{parent}", now)
    return woken


class SqlImports(SqlStore):
    """``job_import_many`` of the Operations protocol, on any SQL store."""

    def job_import_many(self, params: JobImportParams) -> list[str]:
        for item in params.jobs:  # all checked before anything is written
            check_importable(item)
        if not params.jobs:
            return []
        d = self._dialect
        with self._ops_tx() as ex:
            written = set(insert_jobs(d, ex, params.jobs, d.clock(ex)))
            self._search_note_each(ex, sorted(written))
            # In the order given, each id once (the first of an id given twice).
            first: dict[str, JobImport] = {}
            for item in params.jobs:
                if item.job.id in written:
                    first.setdefault(item.job.id, item)
            items = list(first.values())
            insert_history(d, ex, items)
            restore_joins(d, ex, items, d.clock(ex))
            if items:
                self._ops_wake(ex)
        return [i.job.id for i in items]
