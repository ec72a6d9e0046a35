"""A small cron parser: five fields, ``*``, ranges, steps, lists and names, in a time zone.

Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12 or jan-dec), day
of week (0-7 or sun-sat; 0 and 7 are Sunday). ``*/15``, ``1-5``, ``mon-fri``,
``0,30``, ``10-50/20`` all work; ``@hourly``, ``@daily``, ``@weekly``, ``@monthly`` and
``@yearly`` are shorthands. As in Vixie cron, when both day fields are restricted a day
matches if *either* does.

Time zones (``zoneinfo``): a local time skipped by a DST change does not fire that day;
a local time that happens twice fires once (the first).

Example:
    >>> import datetime, zoneinfo
    >>> c = Cron.parse("*/5 9-17 * * mon-fri")
    >>> paris = zoneinfo.ZoneInfo("Europe/Paris")
    >>> start = datetime.datetime(2026, 3, 6, 17, 57, tzinfo=paris)  # a Friday
    >>> c.next_after(start).isoformat()
    '2026-03-09T09:00:00+01:00'
"""

from __future__ import annotations

import dataclasses
import datetime

from conveyor.errors import ConfigurationError

_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_ALIASES = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
#: (name, low, high, names) per field, in order.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
)
#: How far ahead to look for a match (covers Feb 29 and every DST rule).
_MAX_DAYS = 366 * 8


def _value(text: str, names: dict[str, int], field: str) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if not text.isdigit():
        raise ConfigurationError(f"cron {field}: {text!r} is not a number or a name")
    return int(text)


def _parse_field(
    text: str, field: str, low: int, high: int, names: dict[str, int]
) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() else 0 if step_text else 1
        if step < 1:
            raise ConfigurationError(f"cron {field}: bad step in {part!r}")
        if body == "*":
            start, end = low, high
        elif "-" in body:
            a, b = body.split("-", 1)
            start, end = _value(a, names, field), _value(b, names, field)
        else:
            start = _value(body, names, field)
            end = high if step_text else start
        if not (low <= start <= high and low <= end <= high and start <= end):
            raise ConfigurationError(f"cron {field}: {part!r} is outside {low}-{high}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


@dataclasses.dataclass(frozen=True, slots=True)
class Cron:
    """A parsed cron expression; :meth:`next_after` gives the next firing time."""

    expr: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    @classmethod
    def parse(cls, expr: str) -> Cron:
        text = _ALIASES.get(expr.strip().lower(), expr)
        parts = text.split()
        if len(parts) != 5:
            raise ConfigurationError(f"cron needs 5 fields (min hour dom month dow), got {expr!r}")
        sets = [_parse_field(p, *spec[:3], spec[3]) for p, spec in zip(parts, _FIELDS, strict=True)]
        weekdays = frozenset(d % 7 for d in sets[4])
        return cls(
            expr, sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] != "*", parts[4] != "*"
        )

    def _day_matches(self, day: datetime.date) -> bool:
        if day.month not in self.months:
            return False
        dom = day.day in self.days
        dow = (day.weekday() + 1) % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow

    def next_after(self, after: datetime.datetime) -> datetime.datetime:
        """The first matching minute strictly after ``after`` (aware), in its zone."""
        tz = after.tzinfo
        if tz is None:
            raise ValueError("next_after needs an aware datetime")
        start = after.replace(second=0, microsecond=0, tzinfo=None) + datetime.timedelta(minutes=1)
        hours, minutes = sorted(self.hours), sorted(self.minutes)
        day = start.date()
        for _ in range(_MAX_DAYS):
            if self._day_matches(day):
                for hour in hours:
                    for minute in minutes:
                        local = datetime.datetime.combine(day, datetime.time(hour, minute))
                        if local < start:
                            continue
                        aware = local.replace(tzinfo=tz)
                        # Skipped by a DST jump: the wall time does not exist today.
                        back = aware.astimezone(datetime.UTC).astimezone(tz)
                        if back.replace(tzinfo=None) == local:
                            return aware
            day += datetime.timedelta(days=1)
        raise ConfigurationError(f"cron {self.expr!r} never fires")
