"""Limits that do not burn attempts: ``concurrency=N`` running jobs at once and
``rate="100/m"`` starts per period, per task or per key (a function of the arguments).

A job over its limit is claimed and put straight back (``scheduled`` a moment later) in
the same transaction, with its attempt given back: no error, no retry budget spent.
Running jobs are counted from the store, so the limit holds across every worker and
host, and the slot of a holder whose worker died is free again once it is rescued.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(concurrency=2, rate="100/m", limit_key=lambda account, _: account)
    ... def call_api(account: str, payload: dict) -> None: ...
    >>> parse_rate("100/m")
    (100, 60.0)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from conveyor.backends.base import LimitSpec
from conveyor.codec import encode
from conveyor.errors import ConfigurationError

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*\.?\d*)\s*([smhd])\s*$")

LimitKey = Callable[..., Any] | str | None


def parse_rate(rate: str) -> tuple[int, float]:
    """``"100/m"`` -> (100, 60.0); also ``"5/10s"``. Units: s, m, h, d."""
    match = _RATE.match(rate)
    if match is None or int(match.group(1)) < 1:
        raise ConfigurationError(f"rate must look like '100/m' or '5/10s', got {rate!r}")
    count, multiplier, unit = match.groups()
    period = (float(multiplier) if multiplier else 1.0) * _UNITS[unit]
    if period <= 0:
        raise ConfigurationError(f"rate period must be > 0, got {rate!r}")
    return int(count), period


def check_options(concurrency: int | None, rate: str | None) -> None:
    if concurrency is not None and concurrency < 1:
        raise ConfigurationError(f"concurrency must be >= 1, got {concurrency}")
    if rate is not None:
        parse_rate(rate)


def check_queue_caps(caps: Mapping[str, int] | None) -> None:
    """``App(queue_concurrency={...})``: queue names to counts >= 1.

    >>> check_queue_caps({"reports": 0})
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: queue_concurrency of 'reports' must be an int >= 1, got 0
    """
    if caps is None:
        return
    if not isinstance(caps, Mapping):
        raise ConfigurationError(
            f"queue_concurrency must map queue names to counts, got {type(caps).__name__}"
        )
    for queue, cap in caps.items():
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigurationError(
                f"queue_concurrency of {queue!r} must be an int >= 1, got {cap!r}"
            )


def check_queue_settings(caps: Mapping[str, int] | None, aging: Mapping[str, float] | None) -> None:
    """The app's per-queue settings: ``queue_concurrency`` and ``priority_aging``."""
    check_queue_caps(caps)
    check_aging(aging)


def check_aging(steps: Mapping[str, float] | None) -> None:
    """``App(priority_aging={...})``: queue names to seconds > 0.

    >>> check_aging({"reports": 0})
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: priority_aging of 'reports' must be seconds > 0, got 0
    """
    if steps is None:
        return
    if not isinstance(steps, Mapping):
        raise ConfigurationError(
            f"priority_aging must map queue names to seconds, got {type(steps).__name__}"
        )
    for queue, step in steps.items():
        if isinstance(step, bool) or not isinstance(step, int | float) or not step > 0:
            raise ConfigurationError(
                f"priority_aging of {queue!r} must be seconds > 0, got {step!r}"
            )


def queue_limit(queue: str, caps: Mapping[str, int] | None) -> LimitSpec | None:
    """The queue-wide limit a job of ``queue`` counts against (no limit of its own).

    >>> queue_limit("reports", {"reports": 4})
    LimitSpec(key='queue:reports', concurrency=4, rate_count=None, rate_period=None)
    """
    cap = None if caps is None else caps.get(queue)
    return None if cap is None else LimitSpec(f"queue:{queue}", cap)


def limit_for(
    task: str,
    concurrency: int | None,
    rate: str | None,
    key: LimitKey,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> LimitSpec | None:
    """The limit a job counts against, or None. A string key is shared by every task
    that names it; a function's answer is scoped to the task; no key: the whole task."""
    if concurrency is None and rate is None:
        return None
    if key is None:
        name = task
    elif callable(key):
        value = key(*args, **kwargs)
        name = f"{task}:{value if isinstance(value, str) else encode(value)}"
    else:
        name = key
    count, period = parse_rate(rate) if rate is not None else (None, None)
    return LimitSpec(name, concurrency, count, period)
