"""Periodic jobs: ``@app.periodic(cron=..., tz=...)`` or ``@app.periodic(every=...)``.

Every worker runs a scheduler (``worker/services/scheduler.py``) that enqueues the job of
each due *slot* (a firing time). Exactly once per slot however many workers and hosts
run it: the backend records (schedule, slot) under a unique key in the same transaction
as the insert, so the second worker's insert of the same slot is a no-op. There is no
leader to lose.

Slots of ``every=`` are multiples of the period since the epoch (so every worker agrees
on them); slots of ``cron=`` are the matching minutes in ``tz``. Missed slots (no worker
was up) follow ``catch_up``: ``"latest"`` (default) fires only the most recent one,
``"all"`` fires each (up to ``MAX_CATCH_UP``), ``"none"`` fires none of them. A
schedule seen for the first time fires no slot older than ``MISSED_AFTER`` seconds.

Example:
    >>> import datetime, conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.periodic(cron="*/5 * * * *", tz="Europe/Paris")
    ... @app.task
    ... def sweep() -> None: ...
    >>> @app.periodic(every=datetime.timedelta(seconds=30), catch_up="all")
    ... @app.task
    ... def beat() -> None: ...
    >>> sorted(app.schedules)[0].endswith("beat")
    True
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from conveyor.backends.base import JobInsertParams
from conveyor.cron import Cron
from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.task import Task

T = TypeVar("T")
CATCH_UP = ("latest", "all", "none")
#: At most this many missed slots are fired at once with catch_up="all" (the newest).
MAX_CATCH_UP = 1000
#: A slot older than this (seconds) when first seen, or with catch_up="none", is missed.
MISSED_AFTER = 5.0
#: How far back a cron schedule looks for missed slots (bounds the scan after downtime).
_LOOKBACK = 7 * 86400.0


@dataclasses.dataclass(frozen=True)
class Schedule:
    """One periodic schedule of a task."""

    name: str
    task: Task[Any, Any]
    cron: Cron | None
    every: float | None
    tz: str
    catch_up: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def spec(self) -> str:
        """How the schedule reads in ``conveyor status``."""
        if self.cron is not None:
            return f"cron {self.cron.expr} ({self.tz})"
        return f"every {self.every:g}s"

    def next_after(self, ts: float) -> float:
        """The first slot strictly after ``ts`` (epoch seconds)."""
        if self.every is not None:
            return (math.floor(ts / self.every) + 1) * self.every
        assert self.cron is not None
        zone = zoneinfo.ZoneInfo(self.tz)
        return self.cron.next_after(datetime.datetime.fromtimestamp(ts, zone)).timestamp()

    def due_slots(self, last: float | None, now: float) -> list[float]:
        """Slots to fire now, after the last one fired (``None``: never fired)."""
        floor = last if last is not None else now - MISSED_AFTER
        if self.catch_up == "none":
            floor = max(floor, now - MISSED_AFTER)
        if self.every is not None:
            first = self.next_after(max(floor, now - self.every * MAX_CATCH_UP))
            count = max(0, math.floor(now / self.every) - round(first / self.every) + 1)
            slots = [first + i * self.every for i in range(count)]
        else:
            slots = []
            slot = self.next_after(max(floor, now - _LOOKBACK))
            while slot <= now:
                slots.append(slot)
                slot = self.next_after(slot)
        if self.catch_up == "all" and last is not None:
            return slots[-MAX_CATCH_UP:]
        return slots[-1:]

    def job_params(self) -> JobInsertParams:
        return self.task._one(self.args, self.kwargs)


def register(
    app: App,
    *,
    cron: str | None,
    every: datetime.timedelta | float | None,
    tz: str,
    catch_up: str,
    name: str | None,
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None,
) -> Callable[[T], T]:
    """What ``App.periodic`` does (see there)."""
    if (cron is None) == (every is None):
        raise ConfigurationError("periodic() needs exactly one of cron= or every=")
    if catch_up not in CATCH_UP:
        raise ConfigurationError(f"catch_up must be one of {CATCH_UP}, got {catch_up!r}")
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(f"unknown time zone {tz!r}") from None
    parsed = Cron.parse(cron) if cron is not None else None
    period = None
    if every is not None:
        period = every.total_seconds() if isinstance(every, datetime.timedelta) else float(every)
        if period <= 0:
            raise ConfigurationError(f"every must be > 0 seconds, got {every}")

    def decorate(target: T) -> T:
        from conveyor.classtask import as_task
        from conveyor.task import Task

        found = as_task(target)
        task: Task[Any, Any] = found if isinstance(found, Task) else app.task(target)  # type: ignore[call-overload]
        try:
            task.decoder.signature.bind(*args, **(kwargs or {}))
        except TypeError as exc:
            raise ConfigurationError(f"periodic {task.name}: {exc}") from None
        schedule = Schedule(
            name or task.name, task, parsed, period, tz, catch_up, tuple(args), dict(kwargs or {})
        )
        if schedule.name in app.schedules:
            raise ConfigurationError(f"periodic schedule {schedule.name!r} is already registered")
        app.schedules[schedule.name] = schedule
        return target

    return decorate
