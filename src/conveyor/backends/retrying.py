"""Retry a backend call with exponential backoff while the backend is unavailable.

Backend methods raise :class:`conveyor.errors.BackendUnavailable` when Redis cannot be
reached and are safe to call again once it is back (connections and scripts are
re-established on the next call). They do not retry by themselves: a claim or a finish
whose reply was lost may have been applied, so the caller decides what is safe to repeat
(a heartbeat or a claim loop: yes; a finish: the fencing token makes it harmless).

Not Redis specific and imports no redis: the worker may use it on any backend.

Example:
    >>> calls = []
    >>> def flaky() -> str:
    ...     calls.append(1)
    ...     if len(calls) < 3:
    ...         raise BackendUnavailable("down")
    ...     return "ok"
    >>> call_with_backoff(flaky, sleep=lambda s: None)
    'ok'
    >>> from itertools import islice
    >>> list(islice(backoff_delays(0.1, 1.0), 6))
    [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from conveyor.errors import BackendUnavailable

T = TypeVar("T")

#: First delay and cap: a Redis restart takes about a second; a failover up to ~30 s.
#: Capping at 5 s keeps a worker from staying idle long after Redis is back.
BASE_DELAY = 0.1
MAX_DELAY = 5.0


def backoff_delays(base: float = BASE_DELAY, cap: float = MAX_DELAY) -> Iterator[float]:
    """Endless delays: base, 2*base, 4*base, ... capped at ``cap``."""
    delay = base
    while True:
        yield delay
        delay = min(cap, delay * 2)  # stays at cap: no overflow when retrying forever


def call_with_backoff(
    fn: Callable[[], T],
    *,
    attempts: int | None = None,
    base: float = BASE_DELAY,
    cap: float = MAX_DELAY,
    sleep: Callable[[float], object] = time.sleep,
    on_retry: Callable[[BackendUnavailable, float], object] | None = None,
) -> T:
    """Call ``fn`` until it returns; after each ``BackendUnavailable`` wait and retry.

    ``attempts`` bounds the number of calls (``None``: forever); the last error is
    re-raised when it runs out. ``on_retry(error, delay)`` lets the caller log each wait.
    """
    delays = backoff_delays(base, cap)
    tried = 0
    while True:
        try:
            return fn()
        except BackendUnavailable as exc:
            tried += 1
            if attempts is not None and tried >= attempts:
                raise
            delay = next(delays)
            if on_retry is not None:
                on_retry(exc, delay)
            sleep(delay)
