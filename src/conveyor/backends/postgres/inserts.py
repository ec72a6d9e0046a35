"""The SQL side of ``job_insert_many`` on PostgreSQL, on any cursor and in any transaction.

Shared by the backend's own insert (a pooled connection, its transaction) and by a
transactional enqueue through the caller's connection (``transactional.py``, inside the
caller's transaction): statements only, no commit, no notification (each caller sends
its own ``pg_notify`` in the same transaction, so it is delivered at commit only).

Large batches of plain jobs go through ``COPY ... FROM STDIN`` (:func:`copy_rows`)
when the cursor can: a sync psycopg cursor outside pipeline mode (the backend's own
connection, or a caller's sync connection). Smaller batches, pipelined connections
and the asyncio path (a loop-bridged cursor, no ``copy``) take the one ``INSERT ...
SELECT unnest(...)`` statement; both write the same rows. Flow jobs (unique keys,
workflows, limits) never do: their conflicts are settled in SQL.

Example::

    with backend._tx() as cur:
        ids = insert_in(cur, params)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from conveyor.backends.base import JobInsertBatchParams, JobInsertParams
from conveyor.backends.postgres import flow, sql

Cursor = Any  # psycopg.Cursor[tuple[Any, ...]]; Any keeps psycopg out of import time


def insert_in(cur: Cursor, jobs: Sequence[JobInsertParams] | JobInsertBatchParams) -> Sequence[str]:
    """Write ``jobs`` with ``cur`` in the transaction it is in; the id standing for each
    (an existing job's on a unique conflict), as ``job_insert_many`` returns."""
    if isinstance(jobs, JobInsertBatchParams):
        if _copyable(cur, len(jobs.ids)):
            copy_rows(cur, batch_rows(jobs, flow.server_now(cur)))
        else:
            cur.execute(sql.JOB_INSERT_BATCH, batch_args(jobs))
        return jobs.ids
    if all(p.is_plain for p in jobs):
        if _copyable(cur, len(jobs)):
            copy_rows(cur, plain_rows(jobs, flow.server_now(cur)))
        else:
            cur.execute(sql.JOB_INSERT, plain_args(jobs))
        return [p.id for p in jobs]
    return flow.insert_flow(cur, jobs, flow.server_now(cur))


def needs_transaction(jobs: Sequence[JobInsertParams] | JobInsertBatchParams) -> bool:
    """Does :func:`insert_in` need a cursor outside pipeline mode for ``jobs``: a batch
    large enough for ``COPY``, or flow jobs (their statements read as they go)? The
    rest is one statement, which the backend pipelines with its notification."""
    if isinstance(jobs, JobInsertBatchParams):
        return len(jobs.ids) >= COPY_MIN
    return len(jobs) >= COPY_MIN or not all(p.is_plain for p in jobs)


#: Below this many jobs one INSERT statement is as fast as COPY plus its clock read
#: (a guess: E2 measures 10,000 and 100,000 jobs, where COPY is ~1.5x faster).
COPY_MIN = 200

#: The columns :func:`copy_rows` writes, in this order (the rest take their defaults,
#: as with :data:`sql.JOB_INSERT`).
COPY_COLUMNS = (
    "id, task, queue, state, priority, payload, max_attempts, run_at, created_at, "
    "timeout, lease, headers"
)
Row = tuple[Any, ...]


def _copyable(cur: Cursor, n: int) -> bool:
    """Can ``cur`` run ``COPY`` here, and is the batch large enough to gain from it?"""
    if n < COPY_MIN:
        return False
    import psycopg
    from psycopg import pq

    return (
        isinstance(cur, psycopg.Cursor)
        and cur.connection.info.pipeline_status == pq.PipelineStatus.OFF
    )


def copy_rows(cur: Cursor, rows: Iterable[Row]) -> None:
    """Write ``rows`` (in :data:`COPY_COLUMNS` order) with one ``COPY FROM STDIN``."""
    with cur.copy(f"COPY jobs ({COPY_COLUMNS}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _state(run_at: float | None, now: float) -> str:
    # As sql.JOB_INSERT's CASE: a run_at ahead of the server's clock is scheduled.
    return "scheduled" if run_at is not None and run_at > now else "queued"


def plain_rows(params: Sequence[JobInsertParams], now: float) -> Iterator[Row]:
    """:func:`copy_rows` rows of plain jobs, ``now`` the server's clock."""
    for p in params:
        run_at = now if p.run_at is None else p.run_at
        yield (
            p.id,
            p.task,
            p.queue,
            _state(p.run_at, now),
            p.priority,
            p.payload,
            p.max_attempts,
            run_at,
            now,
            p.timeout,
            p.lease,
            p.headers,
        )


def batch_rows(params: JobInsertBatchParams, now: float) -> Iterator[Row]:
    """:func:`copy_rows` rows of a batch: the shared options once, per job its id,
    payload and headers."""
    state = _state(params.run_at, now)
    run_at = now if params.run_at is None else params.run_at
    headers = params.headers if params.headers is not None else [None] * len(params.ids)
    task, queue, priority = params.task, params.queue, params.priority
    max_attempts, timeout, lease = params.max_attempts, params.timeout, params.lease
    for job_id, payload, header in zip(params.ids, params.payloads, headers, strict=True):
        yield (
            job_id, task, queue, state, priority, payload, max_attempts, run_at, now,
            timeout, lease, header,
        )  # fmt: skip


def plain_args(params: Sequence[JobInsertParams]) -> tuple[list[Any], ...]:
    """The arrays of :data:`sql.JOB_INSERT`, one per column."""
    return (
        [p.id for p in params],
        [p.task for p in params],
        [p.queue for p in params],
        [p.priority for p in params],
        [p.payload for p in params],
        [p.max_attempts for p in params],
        [p.run_at for p in params],
        [p.timeout for p in params],
        [p.lease for p in params],
        [p.headers for p in params],
        [p.expires_at for p in params],
    )


def batch_args(params: JobInsertBatchParams) -> Mapping[str, Any]:
    """The parameters of :data:`sql.JOB_INSERT_BATCH`: shared options once, three arrays
    (``headers is None``: no job of the batch has any, a column of NULLs)."""
    headers = [None] * len(params.ids) if params.headers is None else list(params.headers)
    return {
        "task": params.task,
        "queue": params.queue,
        "run_at": params.run_at,
        "priority": params.priority,
        "max_attempts": params.max_attempts,
        "timeout": params.timeout,
        "lease": params.lease,
        "expires_at": params.expires_at,
        "ids": list(params.ids),
        "payloads": list(params.payloads),
        "headers": headers,
    }
