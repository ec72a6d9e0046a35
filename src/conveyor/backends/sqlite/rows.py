"""Row <-> record mapping for the SQLite backend (kept apart so backend.py stays small).

Example:
    >>> JOB_COLUMNS.split(", ")[0]
    'id'
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Sequence
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


#: The RETURNING columns of queries/claim.sql's job_claim: ClaimedJob's, then limit_key.
CLAIM_COLUMNS = ", ".join(decoding.CLAIM_NAMES) + ", limit_key"
_FIELDS = len(decoding.CLAIM_NAMES)
_NUM = (int, float)
_OPT_TEXT = (str, type(None))
#: Column type tuples of a well-formed claim row (the fast path: no per-field work).
_CLAIM_OK = frozenset(
    (str, str, str, str, int, int, int, timeout, lease, run_at, started, int, int, *tail)
    for timeout in (float, int, type(None))
    for lease in _NUM
    for run_at in _NUM
    for started in _NUM
    for tail in itertools.product(_OPT_TEXT, (float, int, type(None)), _OPT_TEXT)
)


class _Lossy(tuple):  # type: ignore[type-arg]
    """A claim row read with :func:`lossy_text`: its text must be checked."""


def job_record(row: tuple[Any, ...]) -> JobRecord:
    """Build a JobRecord from a row selected with JOB_COLUMNS, whatever it holds (see
    :func:`conveyor.backends.decoding.job_record`)."""
    return decoding.job_record(row)


def claimed_job(row: tuple[Any, ...]) -> ClaimedJob:
    """Build a ClaimedJob from a row of :data:`CLAIM_COLUMNS` (one read again with
    :func:`lossy_text` is checked field by field). A well-formed row costs one type
    check; any other still becomes a ClaimedJob, with ``problem`` saying what is wrong."""
    if type(row) is tuple and tuple(map(type, row)) in _CLAIM_OK:
        return ClaimedJob(*row[:_FIELDS])
    return decoding.claimed_job(row[:_FIELDS])


def claim_rows(
    conn: Any,
    sent: Any,
    worker_id: str,
    queue: str | None,
    now: float | None,
    before: Sequence[ClaimedJob],
) -> list[Any]:
    """The rows of one ``job_claim`` statement. A claimed row holding text that is not
    UTF-8 fails the fetch after the UPDATE has applied (SQLite applies RETURNING's
    changes on the first step), so those rows are read again, bad bytes escaped: they run
    as ClaimedJobs with a ``problem`` and end dead, rather than failing every claim."""
    try:
        return sent.fetchall()  # type: ignore[no-any-return]
    except sqlite3.OperationalError as exc:
        if not is_undecodable_text(exc):
            raise
    conn.text_factory = lossy_text
    try:
        # queue None: a ring chunk's statement (any of its queues).
        found = conn.execute(
            f"SELECT {CLAIM_COLUMNS} FROM jobs WHERE state = 'running' "
            "AND worker_id = ? AND started_at = ? AND (? IS NULL OR queue = ?)",
            (worker_id, now, queue, queue),
        ).fetchall()
    finally:
        conn.text_factory = str
    seen = {j.id for j in before}  # claimed by this claim's earlier statements
    return [_Lossy(r) for r in found if r[0] not in seen]


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
