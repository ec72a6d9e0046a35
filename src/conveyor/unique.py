"""Unique jobs: at most one job per (task, key) while it is active, and for
``unique_for`` after it was enqueued, with a policy for the second enqueue.

``unique_key`` is a value (one job of the task at a time) or a function of the task's
arguments; ``on_conflict="keep"`` returns the existing job's handle, ``"replace"``
replaces its arguments and run time while it has not started. ``debounce=`` is that
with a quiet period: each enqueue pushes the start to that long after it, the last
arguments win, ``max_wait=`` caps the wait from the first enqueue (applied by the store
from the holder's ``created_at``); ``throttle=`` is at most one job per key per period
(``unique_for`` with ``keep``: an enqueue within the period returns the existing job). The check and
the insert are one transaction on SQLite (a unique index is the backstop), so two
processes enqueueing the same key at once make one job.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(unique_key=lambda user_id: user_id, on_conflict="keep")
    ... def sync(user_id: int) -> None: ...
    >>> sync.enqueue(7) == sync.enqueue(7)
    True
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conveyor.codec import encode
from conveyor.errors import ConfigurationError

ON_CONFLICT = ("keep", "replace")

UniqueKey = Callable[..., Any] | str | int | None
Seconds = float | int | datetime.timedelta


def check_options(on_conflict: str, unique_for: Seconds | None) -> None:
    if on_conflict not in ON_CONFLICT:
        raise ConfigurationError(f"on_conflict must be one of {ON_CONFLICT}, got {on_conflict!r}")
    if unique_for is not None and seconds(unique_for) <= 0:
        raise ConfigurationError(f"unique_for must be > 0 seconds, got {unique_for}")


def check_timing(
    unique_key: UniqueKey,
    debounce: Seconds | None,
    max_wait: Seconds | None,
    throttle: Seconds | None,
    unique_for: Seconds | None,
) -> None:
    """One-line errors for debounce / throttle at declaration (both need a unique key).

    >>> check_timing("k", 10, 5, None, None)
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: max_wait must be >= debounce (10.0 s), got 5.0 s
    """
    for name, value in (("debounce", debounce), ("max_wait", max_wait), ("throttle", throttle)):
        if value is not None and seconds(value) <= 0:
            raise ConfigurationError(f"{name} must be > 0 seconds, got {value}")
    if (debounce is not None or throttle is not None) and unique_key is None:
        raise ConfigurationError("debounce and throttle need a unique_key (what to group by)")
    if debounce is not None and throttle is not None:
        raise ConfigurationError("a task takes debounce or throttle, not both")
    if throttle is not None and unique_for is not None:
        raise ConfigurationError("throttle sets unique_for itself: give one of them")
    if max_wait is not None:
        if debounce is None:
            raise ConfigurationError("max_wait caps a debounce: give debounce too")
        if seconds(max_wait) < seconds(debounce):
            raise ConfigurationError(
                f"max_wait must be >= debounce ({seconds(debounce)} s), got {seconds(max_wait)} s"
            )


def seconds(value: Seconds) -> float:
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    return float(value)


def key_for(key: UniqueKey, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
    """The stored key: the function's answer (or the value) as text; JSON for non-text."""
    if key is None:
        return None
    value = key(*args, **kwargs) if callable(key) else key
    if value is None:
        return None
    return value if isinstance(value, str) else encode(value)
