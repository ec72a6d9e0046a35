"""Row <-> record mapping for the SQLite backend (kept apart so backend.py stays small).

Example:
    >>> JOB_COLUMNS.split(", ")[0]
    'id'
"""

from __future__ import annotations

import json
from typing import Any

from conveyor.backends.base import AttemptRecord, JobRecord, WorkerInfo
from conveyor.states import JobState

#: Column order of JobRecord, used by every SELECT that builds one.
JOB_COLUMNS = (
    "id, task, queue, state, priority, payload, attempt, max_attempts, rescues, token, "
    "run_at, created_at, timeout, lease, worker_id, lease_until, cancel_requested, "
    "result, error, reason, started_at, finished_at, "
    "progress, progress_message, unique_key, waiting_on"
)
ATTEMPT_COLUMNS = "job_id, attempt, token, worker_id, started_at, finished_at, outcome, error"
WORKER_COLUMNS = (
    "id, host, pid, pid_started, started_at, queues, concurrency, pool, heartbeat_at, "
    "last_fetch_at, running"
)


def job_record(row: tuple[Any, ...]) -> JobRecord:
    """Build a JobRecord from a row selected with JOB_COLUMNS."""
    values = list(row)
    values[3] = JobState(values[3])
    values[16] = bool(values[16])
    return JobRecord(*values)


def attempt_record(row: tuple[Any, ...]) -> AttemptRecord:
    return AttemptRecord(*row)


def worker_info(row: tuple[Any, ...]) -> WorkerInfo:
    values = list(row)
    values[5] = tuple(json.loads(values[5]))
    return WorkerInfo(*values)


def chunks(items: list[str], size: int = 500) -> list[list[str]]:
    """Split id lists so an ``IN (...)`` never exceeds SQLite's variable limit."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def placeholders(n: int) -> str:
    return ", ".join("?" * n)
