"""Row <-> record mapping for the SQLite backend (kept apart so backend.py stays small).

Example:
    >>> JOB_COLUMNS.split(", ")[0]
    'id'
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from conveyor.backends.base import AttemptRecord, ClaimedJob, JobRecord, WorkerInfo
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


#: How each JOB_COLUMNS value decodes: text, number (int/float), or nullable (opt_).
_JOB_KINDS = (
    "text", "text", "text", "state", "int", "text", "int", "int", "int", "int",
    "float", "float", "opt_float", "float", "opt_text", "opt_float", "int",
    "opt_text", "opt_text", "opt_text", "opt_float", "opt_float",
    "opt_float", "opt_text", "opt_text", "int",
)  # fmt: skip
_JOB_NAMES = tuple(JOB_COLUMNS.split(", "))
#: The RETURNING columns of queries/job_claim.sql, in ClaimedJob order.
_CLAIM_NAMES = (
    "id", "task", "queue", "payload", "attempt", "max_attempts", "token", "timeout",
    "lease", "run_at", "started_at", "rescues", "priority",
)  # fmt: skip
CLAIM_COLUMNS = ", ".join(_CLAIM_NAMES)
_CLAIM_KINDS = (
    "text", "text", "text", "text", "int", "int", "int", "opt_float", "float", "float",
    "float", "int", "int",
)  # fmt: skip
_NUM = (int, float)
#: Column type tuples of a well-formed claim row (the fast path: no per-field work).
_CLAIM_OK = frozenset(
    (str, str, str, str, int, int, int, timeout, lease, run_at, started, int, int)
    for timeout in (float, int, type(None))
    for lease in _NUM
    for run_at in _NUM
    for started in _NUM
)


def _text(value: object, name: str, problems: list[str]) -> str:
    """A text column as str; a BLOB is decoded with its bad bytes escaped (``\\xff``)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        problems.append(f"{name} is a BLOB ({len(value)} bytes), not text")
        return value.decode("utf-8", "backslashreplace")
    if value is None:
        problems.append(f"{name} is NULL")
        return ""
    return str(value)


def _number(value: object, name: str, kind: str, problems: list[str]) -> float | int | None:
    if value is None and kind.startswith("opt_"):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(str(value.decode() if isinstance(value, bytes) else value))
        except (ValueError, UnicodeDecodeError):
            problems.append(f"{name} is not a number ({_short(value)})")
            return None if kind.startswith("opt_") else 0
    if kind.endswith("int"):
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                problems.append(f"{name} is not a finite number ({value!r})")
                return 0
            if not value.is_integer():
                problems.append(f"{name} is not an integer ({value!r})")
            return int(value)
        return value
    return float(value)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _decode(
    row: tuple[Any, ...], names: tuple[str, ...], kinds: tuple[str, ...], problems: list[str]
) -> list[Any]:
    """Every column as its kind, repairs noted in ``problems`` (never raises)."""
    values: list[Any] = []
    for value, name, kind in zip(row, names, kinds, strict=True):
        if kind == "text" or kind == "state":
            values.append(_text(value, name, problems))
        elif kind == "opt_text":
            values.append(None if value is None else _text(value, name, problems))
        else:
            values.append(_number(value, name, kind, problems))
    return values


def _utf8_problems(values: list[Any], names: tuple[str, ...], problems: list[str]) -> None:
    """Note text columns that hold invalid UTF-8 (read with surrogate escapes)."""
    for value, name in zip(values, names, strict=True):
        if isinstance(value, str) and not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                problems.append(f"{name} is not valid UTF-8 text")


def job_record(row: tuple[Any, ...]) -> JobRecord:
    """Build a JobRecord from a row selected with JOB_COLUMNS, whatever it holds: a
    value of the wrong type is repaired and noted in ``problems``, an unknown state kept
    in ``stored_state``, text read with :func:`lossy_text` noted as not UTF-8."""
    problems: list[str] = []
    values = _decode(row, _JOB_NAMES, _JOB_KINDS, problems)
    _utf8_problems(values, _JOB_NAMES, problems)
    stored_state = None
    if values[3] in JobState._value2member_map_:
        values[3] = JobState(values[3])
    else:
        stored_state = values[3]
        problems.append(f"unknown state {_short(stored_state)}")
        values[3] = JobState.DEAD
    values[16] = bool(values[16])
    values += [tuple(problems), stored_state]
    return JobRecord(*values)


def claimed_job(row: tuple[Any, ...], *, lossy: bool = False) -> ClaimedJob:
    """Build a ClaimedJob from a RETURNING row of queries/job_claim.sql. A row whose
    columns are not what the schema says still becomes one, with ``problem`` saying what
    is wrong, so that the worker finishes it dead instead of failing the claim."""
    if not lossy and tuple(map(type, row)) in _CLAIM_OK:
        return ClaimedJob(*row)
    problems: list[str] = []
    values = _decode(row, _CLAIM_NAMES, _CLAIM_KINDS, problems)
    _utf8_problems(values, _CLAIM_NAMES, problems)
    values.append("; ".join(problems) or None)
    return ClaimedJob(*values)


def lossy_text(data: bytes) -> str:
    """A ``text_factory`` for rows that hold invalid UTF-8: bad bytes become surrogate
    escapes (noted by ``job_record(lossy=True)``) instead of failing the whole query."""
    return data.decode("utf-8", "surrogateescape")


def is_undecodable_text(exc: BaseException) -> bool:
    """True for the error sqlite3 raises when a TEXT value is not UTF-8."""
    return isinstance(exc, sqlite3.OperationalError) and "Could not decode" in str(exc)


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
