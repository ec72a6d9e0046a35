"""Stored job values -> records, whatever a row holds (shared by every backend).

Rows can be written around the API (a migration, a shell, a raw ``HSET``): a state
conveyor does not know, a BLOB or non-UTF-8 payload, text where a number belongs.
Decoding never raises on them: a value of the wrong type is repaired (a BLOB decoded
with its bad bytes escaped, a non-number read as 0) and noted, so listings can show the
row as what it is and the worker can finish it dead with the reason.

Example:
    >>> job = job_record(["j", "t", "q", "bogus", "x", b"\\xff", 0, 1, 0, 0, 0.0, 0.0,
    ...                   None, 30.0, None, None, 0, None, None, None, None, None,
    ...                   None, None, None, 0, None, None])
    >>> job.stored_state
    'bogus'
    >>> for problem in job.problems:
    ...     print(problem)
    priority is not a number ('x')
    payload is a BLOB (1 bytes), not text
    unknown state 'bogus'
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from conveyor import records
from conveyor.backends.records import ClaimedJob, JobRecord, PeriodicRecord, WorkerInfo
from conveyor.states import JobState

#: How each JOB_COLUMNS value decodes: text, number (int/float), or nullable (opt_).
JOB_KINDS = (
    "text", "text", "text", "state", "int", "text", "int", "int", "int", "int",
    "float", "float", "opt_float", "float", "opt_text", "opt_float", "int",
    "opt_text", "opt_text", "opt_text", "opt_float", "opt_float",
    "opt_float", "opt_text", "opt_text", "int", "opt_text", "opt_float",
)  # fmt: skip
JOB_NAMES = tuple(records.fields(JobRecord))[:28]
#: The fields of a claim (SQLite's RETURNING columns, Redis's claim reply), in order.
CLAIM_NAMES = (
    "id", "task", "queue", "payload", "attempt", "max_attempts", "token", "timeout",
    "lease", "run_at", "started_at", "rescues", "priority", "headers", "expires_at",
)  # fmt: skip
CLAIM_KINDS = (
    "text", "text", "text", "text", "int", "int", "int", "opt_float", "float", "float",
    "float", "int", "int", "opt_text", "opt_float",
)  # fmt: skip


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
    row: Sequence[Any], names: tuple[str, ...], kinds: tuple[str, ...], problems: list[str]
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


def job_record(row: Sequence[Any]) -> JobRecord:
    """Build a JobRecord from the JOB_NAMES values of a stored job, whatever they hold: a
    value of the wrong type is repaired and noted in ``problems``, an unknown state kept
    in ``stored_state``, text read with :func:`lossy_text` noted as not UTF-8."""
    problems: list[str] = []
    values = _decode(row, JOB_NAMES, JOB_KINDS, problems)
    _utf8_problems(values, JOB_NAMES, problems)
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


def claimed_job(row: Sequence[Any]) -> ClaimedJob:
    """Build a ClaimedJob from the CLAIM_NAMES values of a claimed row. A row whose
    values are not what the schema says still becomes one, with ``problem`` saying what
    is wrong, so that the worker finishes it dead instead of failing the claim."""
    problems: list[str] = []
    values = _decode(row, CLAIM_NAMES, CLAIM_KINDS, problems)
    _utf8_problems(values, CLAIM_NAMES, problems)
    values.append("; ".join(problems) or None)
    return ClaimedJob(*values)


#: The counts a rescue decides on (``rules.rescue_state``), in the order it reads them.
RESCUE_NAMES = ("attempt", "max_attempts", "rescues")


def rescue_counts(
    attempt: object, max_attempts: object, rescues: object
) -> tuple[int, int, int, str | None]:
    """The counts of a running job a rescue found, as ints whatever the row holds, and
    what is wrong with them (None for a normal row): the rescue then buries the row
    dead with that reason instead of failing on it at every pass.

    >>> rescue_counts("1", "3", "2.13e+16")
    (1, 3, 21300000000000000, None)
    >>> rescue_counts("", 3, "x")
    (0, 3, 0, "attempt is not a number (''); rescues is not a number ('x')")
    """
    problems: list[str] = []
    a, m, r = (
        int(_number(value, name, "int", problems) or 0)
        for value, name in zip((attempt, max_attempts, rescues), RESCUE_NAMES, strict=True)
    )
    return a, m, r, "; ".join(problems) or None


def number_or_none(value: object) -> float | None:
    """A stored number as float; None for NULL, NaN or anything that is not a number
    (an aggregate such as ``MIN(run_at)`` over a row written around the API).

    >>> number_or_none(2), number_or_none("soon"), number_or_none(b"1"), number_or_none(None)
    (2.0, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def finite_or_none(value: object) -> float | None:
    """A stored number as float; None for NULL, NaN, an infinity or anything that is not
    a number. For values shown as they are (an age in ``status --json``, whose readers
    cannot parse ``Infinity``).

    >>> finite_or_none(2), finite_or_none(float("inf")), finite_or_none("x")
    (2.0, None, None)
    """
    number = number_or_none(value)
    return number if number is not None and math.isfinite(number) else None


#: The stored fields of a worker row (every store's workers table or hash), in order.
WORKER_NAMES = (
    "id", "host", "pid", "pid_started", "started_at", "queues", "concurrency", "pool",
    "heartbeat_at", "last_fetch_at", "running",
)  # fmt: skip
WORKER_KINDS = (
    "text", "text", "int", "opt_float", "float", "queues", "int", "text", "float",
    "opt_float", "int",
)  # fmt: skip


def _queues(value: object, problems: list[str]) -> tuple[str, ...]:
    """A worker's ``queues`` field (a JSON list of names) as a tuple; () when it is not."""
    text = value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else value
    try:
        names = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        names = None
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return tuple(names)
    problems.append(f"queues is not a JSON list of names ({_short(value)})")
    return ()


def worker_info(row: Sequence[Any]) -> WorkerInfo:
    """Build a WorkerInfo from the WORKER_NAMES values of a stored worker, whatever they
    hold: a ``queues`` that is not JSON reads as none, a time that is text, NaN or
    infinite as 0 (None where the field may be NULL), each noted in ``problems``. One odd
    row must not stop ``conveyor status``, the dashboard or the rescuer.

    >>> w = worker_info(["w1", "h", 7, None, 1.0, "not json", 2, "thread", "soon", None, 0])
    >>> w.queues, w.heartbeat_at
    ((), 0.0)
    >>> for problem in w.problems:
    ...     print(problem)
    queues is not a JSON list of names ('not json')
    heartbeat_at is not a number ('soon')
    """
    problems: list[str] = []
    values: list[Any] = []
    for value, name, kind in zip(row, WORKER_NAMES, WORKER_KINDS, strict=True):
        if kind == "queues":
            values.append(_queues(value, problems))
        elif kind == "text":
            values.append(_text(value, name, problems))
        else:
            number = _number(value, name, kind, problems)
            if kind.endswith("float") and number is not None:
                number = float(number)  # a repaired 0 is a time like any other
            if isinstance(number, float) and not math.isfinite(number):
                problems.append(f"{name} is not a finite number ({number!r})")
                number = None if kind.startswith("opt_") else 0.0
            values.append(number)
    _utf8_problems(values, WORKER_NAMES, problems)
    values.append(tuple(problems))
    return WorkerInfo(*values)


def periodic_record(row: Sequence[Any]) -> PeriodicRecord:
    """Build a PeriodicRecord from (name, spec, last_slot, last_fired_at, last_job_id,
    next_slot), whatever they hold: a time that is text, NaN or infinite reads as None
    (never fired / not planned), so ``conveyor status`` shows the schedule and the
    scheduler fires it from now and rewrites the row, instead of failing every tick.

    >>> periodic_record(["p", "* * * * *", "soon", float("nan"), None, 60.0])
    PeriodicRecord(name='p', spec='* * * * *', last_slot=None, last_fired_at=None, last_job_id=None, next_slot=60.0, paused=False, run_requested_at=None)
    """
    problems: list[str] = []  # a PeriodicRecord has nowhere to show them: repaired only
    name, spec, last_slot, fired, job_id, next_slot = row[:6]
    # then, where the store keeps them (schedules pause and "run now"): paused, run time
    paused, requested = [*row[6:8], None, None][:2]
    times = [
        number_or_none(_number(v, "time", "opt_float", problems))
        for v in (last_slot, fired, next_slot, requested)
    ]
    finite = [t if t is not None and math.isfinite(t) else None for t in times]
    return PeriodicRecord(
        _text(name, "name", problems),
        _text(spec, "spec", problems),
        finite[0],
        finite[1],
        None if job_id is None else _text(job_id, "last_job_id", problems),
        finite[2],
        paused=_flag(paused),
        run_requested_at=finite[3],
    )


def _flag(value: object) -> bool:
    """A stored flag (1, "1", b"1", True) as bool; anything else (NULL, junk) is False.

    >>> _flag(1), _flag(b"1"), _flag("0"), _flag(None), _flag("yes")
    (True, True, False, False, False)
    """
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value in (1, True) or value == "1"
