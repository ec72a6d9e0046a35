"""Celery's ``apply_async`` options conveyor does not take, and what it offers instead.

``Enqueuer.apply_async`` (task.py) takes Celery's spelling of an enqueue; an option it
does not take is refused with one line saying what conveyor offers (docs/migrating.md).

Example:
    >>> print(refusal(["ignore_result"]))
    apply_async() does not take ignore_result: use @app.task(store_result=False)
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor import options
from conveyor.task_options import Delay, When, epoch_of

_NO_KWARGS: Mapping[str, Any] = {}

#: Celery ``apply_async`` options conveyor does not take -> what it offers instead.
_RETRIES = (
    "a job's retries are the task's options, @app.task(max_attempts=5, retry=conveyor.Backoff(...))"
)
#: Celery's retry/retry_policy retry the *publishing* of the message to the broker.
_PUBLISH = (
    "an enqueue is one write to the store, and raises conveyor.BackendUnavailable when "
    "the store is unreachable (catch it to try again); " + _RETRIES
)
_CELERY_INSTEAD = {
    "retry": _PUBLISH,
    "retry_policy": _PUBLISH,
    "max_retries": _RETRIES,
    "link": "chain steps with a.s(...) | b.s(...), or job.then(b.s()) after an enqueue",
    "link_error": "run a handler on failure with job.on_failure(handler.s())",
    "task_id": "conveyor makes the job id (job.id); for one job per key use "
    "with_options(unique_key=...)",
    "time_limit": "limit a run with @app.task(timeout=seconds) or with_options(timeout=...)",
    "soft_time_limit": "limit a run with @app.task(timeout=seconds) or with_options(timeout=...)",
    "headers": "use with_options(headers={...}).enqueue(...) (str -> str)",
    "ignore_result": "use @app.task(store_result=False)",
    "routing_key": "jobs are routed by queue=",
    "exchange": "jobs are routed by queue=",
    "serializer": "arguments are stored as JSON by conveyor's codec; there is nothing to choose",
    "compression": "arguments are stored as JSON by conveyor's codec; there is nothing to choose",
}
_APPLY_ASYNC_TAKES = "args, kwargs, countdown, eta, expires, queue and priority"


def refusal(names: Sequence[str]) -> str:
    """The one-line error for Celery options ``apply_async`` does not take."""
    name = names[0]
    instead = _CELERY_INSTEAD.get(
        name,
        f"it takes {_APPLY_ASYNC_TAKES}; other options are task.with_options(...)'s "
        "(docs/migrating.md)",
    )
    more = f" (nor {', '.join(names[1:])})" if len(names) > 1 else ""
    return f"apply_async() does not take {name}{more}: {instead}"


def celery_args(args: Sequence[Any] | None) -> Sequence[Any]:
    """``apply_async(args=...)`` checked: a tuple or list (``None``: none)."""
    if args is None:
        return ()
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            "apply_async(args=...) takes a tuple or list of positional arguments, got "
            f"{type(args).__name__} (task.delay(x) passes arguments directly)"
        )
    return args


def celery_kwargs(kwargs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``apply_async(kwargs=...)`` checked: a mapping (``None``: none)."""
    if kwargs is None:
        return _NO_KWARGS
    if not isinstance(kwargs, Mapping):
        raise TypeError(
            f"apply_async(kwargs=...) takes a dict of keyword arguments, got {type(kwargs).__name__}"
        )
    return kwargs


def celery_run_at(countdown: Delay | None, eta: When | None) -> float | None:
    """When a job given ``countdown`` (checked first) or ``eta`` runs (``None``: now)."""
    if countdown is not None:
        return time.time() + options.check_seconds("countdown", countdown, allow_zero=True)
    if eta is not None:
        if isinstance(eta, datetime.datetime) and eta.tzinfo is None:
            raise ValueError(
                "apply_async(eta=...) needs an aware datetime (with tzinfo, e.g. "
                "datetime.now(timezone.utc)) or epoch seconds; conveyor does not guess "
                "a naive one's zone"
            )
        return epoch_of(eta)
    return None
