"""A conveyor job as Django's ``TaskResult``: status, times, errors, workers, result.

Status mapping (conveyor state -> ``TaskResultStatus``):

==========================================  ==============
``scheduled``, ``waiting``, ``queued``      ``READY``
``running``                                 ``RUNNING``
``succeeded``                               ``SUCCESSFUL``
``dead``, ``cancelled``, ``expired``          ``FAILED``
==========================================  ==============

A job between two attempts (a failure, retried after a backoff) is ``scheduled``, so
``READY`` with the failed attempt in ``errors``: Django's "ready to be executed again".

``enqueued_at`` is the time in the job's id (made by ``enqueue``, millisecond grain), so
the ``TaskResult`` that ``enqueue`` returns and every later ``get_result`` agree, also
when the write waited for a commit. Arguments and the return value are the stored JSON,
as Django's backends give them back (not decoded by the function's type hints).

Example:
    >>> {state.value: STATUS[state].name for state in JobState}  # every state is mapped
    {'scheduled': 'READY', 'waiting': 'READY', 'queued': 'READY', 'running': 'RUNNING', 'succeeded': 'SUCCESSFUL', 'dead': 'FAILED', 'cancelled': 'FAILED', 'expired': 'FAILED'}
"""

from __future__ import annotations

import builtins
import datetime
import json
from collections.abc import Sequence
from typing import Any

from django.tasks import Task as DjangoTask
from django.tasks import TaskResult, TaskResultStatus
from django.tasks.base import TaskError

from conveyor.backends.records import AttemptRecord, JobRecord
from conveyor.ids import id_time
from conveyor.states import JobState

STATUS: dict[str, TaskResultStatus] = {
    JobState.SCHEDULED: TaskResultStatus.READY,
    JobState.WAITING: TaskResultStatus.READY,
    JobState.QUEUED: TaskResultStatus.READY,
    JobState.RUNNING: TaskResultStatus.RUNNING,
    JobState.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    JobState.DEAD: TaskResultStatus.FAILED,
    JobState.CANCELLED: TaskResultStatus.FAILED,
    JobState.EXPIRED: TaskResultStatus.FAILED,  # never ran: Django has no closer status
}


def task_result(
    django_task: DjangoTask,
    alias: str,
    record: JobRecord,
    attempts: Sequence[AttemptRecord],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    return_value: Any = None,
) -> TaskResult:
    """The ``TaskResult`` of one stored job (``return_value``: the decoded result of a
    succeeded job)."""
    started = [a.started_at for a in attempts if a.started_at is not None]
    workers = [a.worker_id for a in attempts if a.worker_id is not None]
    if record.state is JobState.RUNNING:  # the attempt running now is recorded at its end
        started += [record.started_at] if record.started_at is not None else []
        workers += [record.worker_id] if record.worker_id is not None else []
    errors = [e for e in (_error(a.error) for a in attempts) if e is not None]
    if not errors and record.state is not JobState.SUCCEEDED and record.error:
        errors = [e for e in [_error(record.error)] if e is not None]  # dead before running
    result = TaskResult(
        task=django_task,
        id=record.id,
        status=STATUS[record.state],
        enqueued_at=enqueued_at(record.id, record.created_at),
        started_at=_time(min(started)) if started else None,
        finished_at=_time(record.finished_at) if record.state.is_finished else None,
        last_attempted_at=_time(max(started)) if started else None,
        args=list(args),
        kwargs=kwargs,
        backend=alias,
        errors=errors,
        worker_ids=workers,
    )
    if record.state is JobState.SUCCEEDED:
        object.__setattr__(result, "_return_value", return_value)  # as Django's own backends
    return result


def enqueued_at(job_id: str, created_at: float | None = None) -> datetime.datetime | None:
    """When the job was enqueued: the time in its id (``created_at`` for an id that
    carries none).

    >>> enqueued_at("06H4XTKJYNPE5CDRNS025A49J4")
    datetime.datetime(2026, 12, 7, 5, 11, 57, 429000, tzinfo=datetime.timezone.utc)
    >>> enqueued_at("not-an-id", 0.0)
    datetime.datetime(1970, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    try:
        return _time(id_time(job_id))
    except (ValueError, UnicodeError):  # binascii.Error is a ValueError
        return _time(created_at)


def plain_arguments(payload: str) -> tuple[list[Any], dict[str, Any]]:
    """A stored payload's arguments as JSON (``[], {}`` for one that is not).

    >>> plain_arguments('{"args":[1,"2026-01-02"],"kwargs":{"n":3}}')
    ([1, '2026-01-02'], {'n': 3})
    """
    try:
        data = json.loads(payload)
        args, kwargs = data.get("args", []), data.get("kwargs", {})
    except (ValueError, AttributeError):
        return [], {}
    if not isinstance(args, list) or not isinstance(kwargs, dict):
        return [], {}
    return args, kwargs


def plain_result(stored: str | None) -> Any:
    """A stored return value as JSON (None when there is none or it is not JSON).

    >>> plain_result('[1, {"a": 2}]'), plain_result(None)
    ([1, {'a': 2}], None)
    """
    if stored is None:
        return None
    try:
        return json.loads(stored)
    except ValueError:
        return None


def _time(ts: float | None) -> datetime.datetime | None:
    return None if ts is None else datetime.datetime.fromtimestamp(ts, datetime.UTC)


def _error(stored: str | None) -> TaskError | None:
    """A stored error ``{"type", "message", "traceback"}`` as Django's ``TaskError``."""
    if not stored:
        return None
    try:
        error = json.loads(stored)
    except ValueError:
        return TaskError(exception_class_path="builtins.Exception", traceback=stored)
    traceback = str(error.get("traceback") or error.get("message") or "")
    return TaskError(
        exception_class_path=exception_path(str(error.get("type") or "Exception"), traceback),
        traceback=traceback,
    )


def exception_path(name: str, traceback: str) -> str:
    """The dotted path Django's ``TaskError.exception_class`` imports.

    conveyor stores the class's qualified name; the traceback's last line names the
    module too (``shop.tasks.PaymentError: ...``), except for builtins.

    >>> exception_path("ValueError", "Traceback ...\\nValueError: bad")
    'builtins.ValueError'
    >>> exception_path("PaymentError", "Traceback ...\\nshop.tasks.PaymentError: declined")
    'shop.tasks.PaymentError'
    """
    last = traceback.rstrip().rsplit("\n", 1)[-1]
    named = last.split(":", 1)[0].strip()
    if named.endswith("." + name) and " " not in named:
        return named
    return f"builtins.{name}" if hasattr(builtins, name) else name
