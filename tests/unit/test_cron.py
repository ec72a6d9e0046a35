"""The cron parser and next-fire computation (pure)."""

from __future__ import annotations

import datetime
import zoneinfo

import pytest

from conveyor.cron import Cron
from conveyor.errors import ConfigurationError

UTC = datetime.UTC
PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def nxt(expr: str, when: datetime.datetime) -> datetime.datetime:
    return Cron.parse(expr).next_after(when)


def test_fields_steps_ranges_lists_names() -> None:
    c = Cron.parse("0,30 9-17/4 * jan-mar mon-fri")
    assert c.minutes == {0, 30} and c.hours == {9, 13, 17}
    assert c.months == {1, 2, 3} and c.weekdays == {1, 2, 3, 4, 5}
    assert Cron.parse("* * * * 7").weekdays == {0}  # 7 is Sunday too
    assert Cron.parse("5/20 * * * *").minutes == {5, 25, 45}


def test_next_after_basic() -> None:
    t = datetime.datetime(2026, 1, 1, 12, 3, 30, tzinfo=UTC)
    assert nxt("*/5 * * * *", t) == datetime.datetime(2026, 1, 1, 12, 5, tzinfo=UTC)
    assert nxt("@daily", t) == datetime.datetime(2026, 1, 2, 0, 0, tzinfo=UTC)
    assert nxt("0 0 29 2 *", t) == datetime.datetime(2028, 2, 29, tzinfo=UTC)
    # strictly after: a time exactly on a slot gives the next one
    on = datetime.datetime(2026, 1, 1, 12, 5, tzinfo=UTC)
    assert nxt("*/5 * * * *", on) == datetime.datetime(2026, 1, 1, 12, 10, tzinfo=UTC)


def test_day_of_month_or_day_of_week_when_both_restricted() -> None:
    t = datetime.datetime(2026, 3, 2, tzinfo=UTC)  # Monday 2 March
    # the 15th OR a Friday: Friday 6 March comes first
    assert nxt("0 0 15 * fri", t).day == 6


def test_dst_in_paris() -> None:
    # 2026-03-29: 02:00 -> 03:00 in Paris; 02:30 does not exist that day.
    t = datetime.datetime(2026, 3, 28, 12, 0, tzinfo=PARIS)
    fired = nxt("30 2 * * *", t)
    assert fired.date() == datetime.date(2026, 3, 30)
    # 2026-10-25: 02:30 happens twice; it fires once (the first).
    t = datetime.datetime(2026, 10, 25, 1, 0, tzinfo=PARIS)
    first = nxt("30 2 * * *", t)
    assert first.utcoffset() == datetime.timedelta(hours=2)
    assert nxt("30 2 * * *", first).date() == datetime.date(2026, 10, 26)


@pytest.mark.parametrize(
    "bad", ["* * * *", "60 * * * *", "* * * * mon-xyz", "*/0 * * * *", "5-1 * * * *"]
)
def test_bad_expressions(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        Cron.parse(bad)
