"""Row <-> record mapping for the SQLite backend (kept apart so backend.py stays small).

Example:
    >>> JOB_COLUMNS.split(", ")[0]
    'id'
"""

from __future__ import annotations

import sqlite3
from typing import Any

from conveyor.backends import decoding
from conveyor.backends.base import ClaimedJob, JobRecord

#: Column order of JobRecord, used by every SELECT that builds one.
JOB_COLUMNS = (
    "id, task, queue, state, priority, payload, attempt, max_attempts, rescues, token, "
    "run_at, created_at, timeout, lease, worker_id, lease_until, cancel_requested, "
    "result, error, reason, started_at, finished_at, "
    "progress, progress_message, unique_key, waiting_on, headers, expires_at"
)


#: The RETURNING columns of queries/job_claim.sql, in ClaimedJob order.
CLAIM_COLUMNS = ", ".join(decoding.CLAIM_NAMES)
_NUM = (int, float)
#: Column type tuples of a well-formed claim row (the fast path: no per-field work).
_CLAIM_OK = frozenset(
    (str, str, str, str, int, int, int, timeout, lease, run_at, started, int, int, headers, expires)
    for timeout in (float, int, type(None))
    for lease in _NUM
    for run_at in _NUM
    for started in _NUM
    for headers in (str, type(None))
    for expires in (float, int, type(None))
)


def job_record(row: tuple[Any, ...]) -> JobRecord:
    """Build a JobRecord from a row selected with JOB_COLUMNS, whatever it holds (see
    :func:`conveyor.backends.decoding.job_record`)."""
    return decoding.job_record(row)


def claimed_job(row: tuple[Any, ...], *, lossy: bool = False) -> ClaimedJob:
    """Build a ClaimedJob from a RETURNING row of queries/job_claim.sql (``lossy``: read
    with :func:`lossy_text`, so check its text). A well-formed row costs one type check;
    any other still becomes a ClaimedJob, with ``problem`` saying what is wrong."""
    if not lossy and tuple(map(type, row)) in _CLAIM_OK:
        return ClaimedJob(*row)
    return decoding.claimed_job(row)


def lossy_text(data: bytes) -> str:
    """A ``text_factory`` for rows that hold invalid UTF-8: bad bytes become surrogate
    escapes (noted by ``job_record(lossy=True)``) instead of failing the whole query."""
    return data.decode("utf-8", "surrogateescape")


def is_undecodable_text(exc: BaseException) -> bool:
    """True for the error sqlite3 raises when a TEXT value is not UTF-8."""
    return isinstance(exc, sqlite3.OperationalError) and "Could not decode" in str(exc)


def chunks(items: list[str], size: int = 500) -> list[list[str]]:
    """Split id lists so an ``IN (...)`` never exceeds SQLite's variable limit."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def placeholders(n: int) -> str:
    return ", ".join("?" * n)
