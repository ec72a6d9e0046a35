"""Hash <-> record mapping and script argument encoding for the Redis backend.

Hashes hold the same fields as the SQLite rows; an absent field is NULL. Plain script
arguments encode a NULL number as ``""``; batch arguments are JSON where times travel as
decimal strings (Lua numbers would keep only 14 significant digits).

Example:
    >>> opt_num(None), opt_num(1.5), num(None), num(2)
    ('', '1.5', None, '2.0')
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from conveyor.backends import decoding
from conveyor.backends.base import AttemptRecord, ClaimedJob, JobRecord, WorkerInfo

#: HMGET order of a job hash: the fields of JobRecord.
JOB_FIELDS = (
    "id", "task", "queue", "state", "priority", "payload", "attempt", "max_attempts",
    "rescues", "token", "run_at", "created_at", "timeout", "lease", "worker_id",
    "lease_until", "cancel_requested", "result", "error", "reason", "started_at",
    "finished_at", "progress", "progress_message", "unique_key", "waiting_on", "headers",
    "expires_at",
)  # fmt: skip
#: HMGET order of a worker hash: the fields of WorkerInfo.
WORKER_FIELDS = (
    "id", "host", "pid", "pid_started", "started_at", "queues", "concurrency", "pool",
    "heartbeat_at", "last_fetch_at", "running",
)  # fmt: skip


#: Raw UTF-8 rather than \u escapes: cjson passes bytes through untouched. One encoder
#: for every call (``json.dumps`` with options builds a new one each time; ~1 µs of a
#: single enqueue); ``encode`` keeps no state between calls, so threads may share it.
json_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def opt_num(value: float | None) -> str:
    """A nullable number as a script argument: ``""`` is NULL."""
    return "" if value is None else repr(float(value))


def num(value: float | None) -> str | None:
    """A nullable time inside a JSON argument: a decimal string (Lua keeps it verbatim)."""
    return None if value is None else repr(float(value))


def _float(value: str | None) -> float | None:
    return None if value is None else float(value)


def job_record(v: Sequence[str | None]) -> JobRecord | None:
    """Build a JobRecord from an HMGET of JOB_FIELDS; None when the hash is gone. A hash
    written around the API decodes too, its oddities noted (:mod:`..decoding`)."""
    if v[0] is None:
        return None
    values: list[Any] = list(v)
    values[16] = 1 if v[16] == "1" else 0  # absent or "0": no cancel requested
    values[25] = v[25] or 0
    return decoding.job_record(values)


def claimed_job(j: Sequence[Any]) -> ClaimedJob:
    """Build a ClaimedJob from one entry of job_claim.lua's reply (strings; ``false``
    for an absent field). Well-formed entries take the fast path; any other still
    becomes a ClaimedJob, with ``problem`` saying what is wrong."""
    try:
        return ClaimedJob(
            id=j[0], task=j[1], queue=j[2], payload=j[3], attempt=int(j[4]),
            max_attempts=int(j[5]), token=int(j[6]), timeout=float(j[7]) if j[7] else None,
            lease=float(j[8]), run_at=float(j[9]), claimed_at=float(j[10]),
            rescues=int(j[11]), priority=int(j[12]), headers=j[13] or None,
            expires_at=float(j[14]) if j[14] else None,
        ) if all(isinstance(x, str) for x in j[:4]) and _utf8(j[3]) else _odd_claim(j)  # fmt: skip
    except (TypeError, ValueError):
        return _odd_claim(j)


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _odd_claim(j: Sequence[Any]) -> ClaimedJob:
    return decoding.claimed_job([None if x is False else x for x in j][:15])


def attempt_record(entry: str) -> AttemptRecord:
    """Build an AttemptRecord from one JSON entry of an ``attempts:<id>`` list."""
    d = json.loads(entry)
    return AttemptRecord(
        job_id=d["job_id"], attempt=int(d["attempt"]), token=int(d["token"]),
        worker_id=d["worker_id"], started_at=_float(d["started_at"]),
        finished_at=_float(d["finished_at"]), outcome=d["outcome"], error=d["error"],
    )  # fmt: skip


def worker_info(v: Sequence[str | None]) -> WorkerInfo | None:
    """Build a WorkerInfo from an HMGET of WORKER_FIELDS; None when the hash is gone (an
    absent ``running`` reads 0: hashes written before it existed)."""
    if v[0] is None:
        return None
    # A hash written around the API decodes too, its oddities in ``problems``.
    return decoding.worker_info([*v[:10], v[10] or 0])


def chunks(items: Sequence[str], size: int = 1000) -> list[Sequence[str]]:
    """Split id lists so one script call never holds Redis for long."""
    return [items[i : i + size] for i in range(0, len(items), size)]
