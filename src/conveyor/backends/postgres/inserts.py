"""The SQL side of ``job_insert_many`` on PostgreSQL, on any cursor and in any transaction.

Shared by the backend's own insert (a pooled connection, its transaction) and by a
transactional enqueue through the caller's connection (``transactional.py``, inside the
caller's transaction): statements only, no commit, no notification (each caller sends
its own ``pg_notify`` in the same transaction, so it is delivered at commit only).

Example::

    with backend._tx() as cur:
        ids = insert_in(cur, params)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.base import JobInsertBatchParams, JobInsertParams
from conveyor.backends.postgres import flow, sql

Cursor = Any  # psycopg.Cursor[tuple[Any, ...]]; Any keeps psycopg out of import time


def insert_in(cur: Cursor, jobs: Sequence[JobInsertParams] | JobInsertBatchParams) -> Sequence[str]:
    """Write ``jobs`` with ``cur`` in the transaction it is in; the id standing for each
    (an existing job's on a unique conflict), as ``job_insert_many`` returns."""
    if isinstance(jobs, JobInsertBatchParams):
        cur.execute(sql.JOB_INSERT_BATCH, batch_args(jobs))
        return jobs.ids
    if all(p.is_plain for p in jobs):
        cur.execute(sql.JOB_INSERT, plain_args(jobs))
        return [p.id for p in jobs]
    return flow.insert_flow(cur, jobs, flow.server_now(cur))


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
