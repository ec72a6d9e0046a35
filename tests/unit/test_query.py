"""--where parsing: strict paths (nothing a user types reaches SQL), JSON values."""

from __future__ import annotations

import pytest

from conveyor.query import json_path, parse_duration, parse_time, parse_where


@pytest.mark.parametrize(
    "text",
    [
        "kwargs.user_id') OR 1=1 --=1",
        "kwargs.a b=1",
        "args.x=1",
        "args=1",
        "kwargs=1",
        "payload.x=1",
        "kwargs.a-b=1",
        "kwargs.$.x=1",
        "kwargs..a=1",
        "nofield",
        "kwargs.a[0]=1",
    ],
)
def test_bad_paths_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_where(text)


def test_values_are_json_else_strings() -> None:
    assert parse_where("kwargs.a=42").value == 42
    assert parse_where("kwargs.a=true").value is True
    assert parse_where('kwargs.a="42"').value == "42"
    assert parse_where("kwargs.a=hello world").value == "hello world"
    assert parse_where("kwargs.a=a=b").value == "a=b"
    assert parse_where("result=3").path == ()
    assert json_path(parse_where("args.0.name.2=1").path) == "$[0].name[2]"


def test_durations_and_times() -> None:
    assert parse_duration("90") == 90 and parse_duration("2h") == 7200
    assert parse_time("1h", now=10_000) == 6400
    assert parse_time("1700000000") == 1_700_000_000
    assert parse_time("2023-11-14T22:13:20") == 1_700_000_000
    with pytest.raises(ValueError):
        parse_time("yesterday")
