"""The workers' rows on any SQL store: a heartbeat (the row written, or its time and
counts moved on) and a deregistration, in the caller's transaction. The heartbeat's
statement is the store's ``worker_heartbeat`` (an upsert, stamped with the store's
clock: the caller's ``now`` on SQLite, the server's on PostgreSQL).

Example::

    heartbeat(SQLITE, conn, WorkerHeartbeatParams(worker, running=2), time.time())
"""

from __future__ import annotations

import json

from conveyor.backends.base import WorkerHeartbeatParams
from conveyor.backends.sql.dialect import Dialect, Executor


def heartbeat(d: Dialect, ex: Executor, params: WorkerHeartbeatParams, now: float | None) -> None:
    """Write the worker's row, or move its heartbeat, last fetch and running count on."""
    w = params.worker
    ex.execute(
        d.queries["worker_heartbeat"],
        {
            "id": w.id,
            "host": w.host,
            "pid": w.pid,
            "pid_started": w.pid_started,
            "started_at": w.started_at,
            "now": now,
            "last_fetch_at": params.last_fetch_at,
            "queues": json.dumps(list(w.queues)),
            "concurrency": w.concurrency,
            "pool": w.pool,
            "running": params.running,
        },
    )


def deregister(d: Dialect, ex: Executor, worker_id: str) -> None:
    """The worker's row goes (a clean shutdown)."""
    ex.execute(d.sql("DELETE FROM workers WHERE id = ?"), (worker_id,))
