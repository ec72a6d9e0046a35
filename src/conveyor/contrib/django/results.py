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
        enqueued_at=_time(record.created_at),
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
