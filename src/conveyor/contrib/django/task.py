"""``ConveyorDjangoTask``: the backend's ``task_class``, Django's ``Task`` plus conveyor's
job options, so ``@task(...)`` takes them (Django >= 6.1 passes the decorator's extra
keywords to the backend's task class; on 6.0 ``@task`` refuses any it does not know).

The options are those of ``@app.task(...)`` that a Django task can use (:data:`OPTIONS`):
attempts and retries, timeouts and leases, unique jobs, concurrency and rate limits,
result lifetime and expiry. Unset (``None``) means the backend's ``OPTIONS`` default,
else conveyor's. A bad value is refused when the task is defined, as Django refuses a
bad ``priority``: :class:`~django.tasks.exceptions.InvalidTask` naming the option.

Example (Django >= 6.1)::

    from datetime import timedelta
    from django.tasks import task
    from conveyor import Backoff

    @task(max_attempts=5, retry=Backoff(base=2), timeout=30, expires=timedelta(hours=1))
    def sync_account(account_id: int) -> None: ...
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from django.tasks import Task

from conveyor.retry import Backoff, RetryDelayHook
from conveyor.task import TaskOptions
from conveyor.unique import UniqueKey

#: The conveyor task options ``@task(...)`` accepts (the fields below).
OPTIONS = (
    "max_attempts",
    "retry",
    "retry_delay",
    "timeout",
    "lease",
    "unique_key",
    "unique_for",
    "on_conflict",
    "concurrency",
    "rate",
    "limit_key",
    "result_ttl",
    "expires",
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConveyorDjangoTask(Task):  # type: ignore[misc]  # Django is untyped (Any)
    """A Django task with conveyor's job options (see the module docstring)."""

    max_attempts: int | None = None
    retry: Backoff | None = None
    retry_delay: RetryDelayHook | None = None
    timeout: float | None = None
    lease: float | None = None
    unique_key: UniqueKey = None
    unique_for: float | datetime.timedelta | None = None
    on_conflict: str | None = None
    concurrency: int | None = None
    rate: str | None = None
    limit_key: Any = None
    result_ttl: float | datetime.timedelta | None = None
    expires: float | datetime.timedelta | None = None


def options_of(task: Any) -> dict[str, Any]:
    """The conveyor options a Django task sets (none for a plain ``django.tasks.Task``).

    >>> options_of(object())
    {}
    """
    found = {name: getattr(task, name, None) for name in OPTIONS}
    return {name: value for name, value in found.items() if value is not None}


def check_options(task: Any, defaults: dict[str, Any]) -> None:
    """Raise (``ConfigurationError``, ``TypeError``) when ``task``'s options, over the
    backend's ``defaults``, are not ones conveyor takes (checked at every ``@task``,
    whether or not the function was registered before).

    >>> from types import SimpleNamespace
    >>> check_options(SimpleNamespace(max_attempts=3), {"timeout": 10})
    >>> check_options(SimpleNamespace(max_attempts=0), {})
    Traceback (most recent call last):
    ...
    conveyor.options.OptionValueError: max_attempts must be an int >= 1, got 0
    """
    TaskOptions(name="_check", **{**defaults, **options_of(task)})
