"""What the worker calls for a Django task: the function, framed as Django's backends do.

Around each attempt, where the task runs (the worker's thread or event loop, or a pool's
child process), :func:`runner`'s function:

- sends Django's ``task_started`` signal with the job's ``TaskResult`` (``RUNNING``), read
  from the store once per attempt (the same read gives a ``takes_context`` task its
  ``TaskContext``); Django's own receiver logs ``Task id=... state=RUNNING``;
- calls the function, then holds its return value to Django's JSON rules
  (``django.utils.json.normalize_json``: tuples become lists, bytes text) and to what
  JSON can store (string keys, no NaN). A value outside them fails the job at once with
  ``TypeError`` (:data:`NOT_JSON`), never retried: it would be the same value again;
- sends ``task_finished`` with the attempt's end: ``SUCCESSFUL``, ``FAILED`` (its last
  attempt, cancelled, or a result that is not JSON) or ``READY`` (failed, retried later),
  the error in ``errors``. A failure's signal is sent inside the ``except`` block, so
  receivers (Django's logs the traceback at ERROR) see ``sys.exc_info()``.

The signals go out before the worker writes the attempt's end to the store. A job whose
process dies, or a sync task that outruns its ``timeout`` in a process pool, sends no
``task_finished`` (as with Django's database backend's worker).

Example::

    from django.tasks.signals import task_finished

    @receiver(task_finished)
    def audit(sender, task_result, **kwargs):
        print(task_result.id, task_result.status)   # in the worker's process
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import inspect
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.tasks import TaskResult, TaskResultStatus
from django.tasks.base import TaskError
from django.tasks.exceptions import TaskResultDoesNotExist
from django.tasks.signals import task_finished, task_started
from django.utils.json import normalize_json

from conveyor.codec import encode
from conveyor.context import JobContext, current_job
from conveyor.errors import ConveyorError, JobCancelled, Snooze
from conveyor.retry import RetryDecision, RetryDelayHook

if TYPE_CHECKING:
    from django.tasks import Task as DjangoTask

#: How the ``TypeError`` of a return value that is not JSON starts: the retry hook
#: (:func:`final_hook`) knows it by its type and this text, which survive a process
#: pool's boundary (the error crosses it as its type name and message).
NOT_JSON = "the task's return value is not JSON (Django's task rules): "


def runner(django_task: DjangoTask) -> Callable[..., Any]:
    """The function the conveyor task calls: the Django function with the signals and
    the JSON rule around it, and the ``context`` argument filled in for ``takes_context``
    tasks. It keeps the function's name, module and signature (minus ``context``), so
    arguments are checked at enqueue against what the caller passes."""
    func = django_task.func
    signature = inspect.signature(func)
    if django_task.takes_context:
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            attempt = _Attempt(django_task, args, kwargs)
            try:
                if django_task.takes_context:
                    raw = await func(attempt.context(), *args, **kwargs)
                else:
                    raw = await func(*args, **kwargs)
                return attempt.succeeded(raw)
            except BaseException as exc:
                attempt.failed(exc)
                raise

        run: Callable[..., Any] = run_async
    else:

        @functools.wraps(func)
        def run_sync(*args: Any, **kwargs: Any) -> Any:
            attempt = _Attempt(django_task, args, kwargs)
            try:
                if django_task.takes_context:
                    raw = func(attempt.context(), *args, **kwargs)
                else:
                    raw = func(*args, **kwargs)
                return attempt.succeeded(raw)
            except BaseException as exc:
                attempt.failed(exc)
                raise

        run = run_sync
    run.__signature__ = signature  # type: ignore[attr-defined]
    if django_task.takes_context:
        run.__annotations__ = {
            k: v for k, v in func.__annotations__.items() if k in signature.parameters
        }
    run.django_task = django_task  # type: ignore[attr-defined]
    return run


def final_hook(user_hook: RetryDelayHook | None) -> RetryDelayHook:
    """The ``retry_delay`` hook of every Django task: a result that is not JSON ends the
    job dead at once ("archive"); any other error is the user's hook's (or the backoff's).

    >>> final_hook(None)(1, TypeError(NOT_JSON + "Unsupported type: <class 'set'>"), None)
    'archive'
    >>> final_hook(None)(1, TypeError("bad argument"), None) is None
    True
    """

    def hook(attempt: int, error: BaseException, job: Any) -> RetryDecision:
        if is_not_json(error):
            return "archive"
        return None if user_hook is None else user_hook(attempt, error, job)

    return hook


def is_not_json(error: BaseException) -> bool:
    """True for the error of a return value that is not JSON, here or from a child
    process (a ``RemoteError`` carrying the type's name)."""
    name = getattr(error, "type_name", None) or type(error).__name__
    return name == "TypeError" and str(error).startswith(NOT_JSON)


class _Attempt:
    """One attempt of a Django task: its ``TaskResult`` as it goes, and the signals."""

    def __init__(
        self, django_task: DjangoTask, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self.task = django_task
        self.job: JobContext | None = _current()
        self.result = self._running(args, kwargs)
        task_started.send(type(django_task.get_backend()), task_result=self.result)

    def context(self) -> Any:
        from django.tasks import TaskContext

        return TaskContext(task_result=self.result)

    def succeeded(self, raw: Any) -> Any:
        try:
            value = normalize_json(raw)
            encode(value)  # what the store holds: string keys, no NaN, not too deep
        except (TypeError, ValueError, ConveyorError, RecursionError) as exc:
            raise TypeError(f"{NOT_JSON}{exc}") from exc  # failed() sends the signal
        result = dataclasses.replace(
            self.result, status=TaskResultStatus.SUCCESSFUL, finished_at=_now()
        )
        object.__setattr__(result, "_return_value", value)
        self._send_finished(result)
        return value

    def failed(self, exc: BaseException) -> None:
        status = self._status_after(exc)
        error = TaskError(
            exception_class_path=f"{type(exc).__module__}.{type(exc).__qualname__}",
            traceback="".join(traceback.format_exception(exc)),
        )
        result = dataclasses.replace(
            self.result,
            status=status,
            finished_at=_now() if status is TaskResultStatus.FAILED else None,
            errors=[*self.result.errors, error],
        )
        self._send_finished(result)

    def _send_finished(self, result: TaskResult) -> None:
        self.result = result
        task_finished.send(type(self.task.get_backend()), task_result=result)

    def _status_after(self, exc: BaseException) -> TaskResultStatus:
        """The job's status once the worker has decided this failure: ``READY`` when
        it runs again (a retry, a snooze), else ``FAILED`` (a ``retry_delay`` hook of
        the user's that drops or archives is not asked here)."""
        job = self.job
        if isinstance(exc, Snooze):
            return TaskResultStatus.READY
        if isinstance(exc, JobCancelled) or is_not_json(exc) or job is None:
            return TaskResultStatus.FAILED
        if job.cancel_requested or job.attempt >= job.max_attempts:
            return TaskResultStatus.FAILED
        return TaskResultStatus.READY

    def _running(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> TaskResult:
        """The job's TaskResult as stored now (``RUNNING``, this attempt's worker in
        ``worker_ids``); outside the store (conveyor's testing modes, which never open
        it) one made from the job's context and the call."""
        job = self.job
        backend = self.task.get_backend()
        if job is not None and getattr(backend.app, "intercept", None) is None:
            try:
                found: TaskResult = backend.get_result(job.id)
                return found
            except (TaskResultDoesNotExist, ConveyorError):
                pass
        from conveyor.contrib.django.results import enqueued_at

        attempt = job.attempt if job is not None else 1
        started = _now()
        try:
            plain_args, plain_kwargs = normalize_json(list(args)), normalize_json(kwargs)
        except (TypeError, ValueError):  # typed by the signature (a date): not shown
            plain_args, plain_kwargs = [], {}
        return TaskResult(
            task=self.task,
            id=job.id if job is not None else "",
            status=TaskResultStatus.RUNNING,
            enqueued_at=enqueued_at(job.id) if job is not None else None,
            started_at=started,
            last_attempted_at=started,
            finished_at=None,
            args=plain_args,
            kwargs=plain_kwargs,
            backend=self.task.backend,
            errors=[],
            worker_ids=["testing"] * attempt,  # one per attempt: TaskContext.attempt
        )


def _current() -> JobContext | None:
    try:
        return current_job()
    except LookupError:  # called directly, not by a worker
        return None


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
