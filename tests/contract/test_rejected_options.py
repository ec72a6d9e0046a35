"""A job whose options or arguments are refused writes nothing, on every backend.

``with_options(priority="abc")`` used to be stored on SQLite (then every worker with
``-c > 1`` died at each claim, ``bad operand type for unary -``); NaN arguments were
stored as non-JSON ``NaN``; a lone surrogate in a queue name raised a bare
``UnicodeEncodeError`` from the driver.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import JobListParams


def _jobs(app: conveyor.App) -> list[Any]:
    return app.backend.job_list(JobListParams(limit=100))


BAD_OPTIONS: list[dict[str, Any]] = [
    {"priority": "abc"},
    {"priority": 2**70},
    {"priority": math.nan},
    {"timeout": "abc"},
    {"timeout": 0},
    {"timeout": -1},
    {"delay": math.nan},
    {"max_attempts": 0},
    {"queue": "q\udc80"},
    {"unique_key": "k\udc80"},
]


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda o: f"{o}"[:40])
def test_rejected_option_writes_nothing(app: conveyor.App, options: dict[str, Any]) -> None:
    @app.task
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises((TypeError, ValueError)):
        add.with_options(**options).enqueue_many([(1, 2), (3, 4)])
    assert _jobs(app) == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((math.nan, 1), TypeError),  # float where int: the type check
        (("1", [2]), TypeError),
        ((1, math.inf), TypeError),
    ],
)
def test_rejected_arguments_write_nothing(
    app: conveyor.App, args: tuple[Any, ...], error: type[Exception]
) -> None:
    @app.task
    def add(a: int, b: int) -> int:
        return a + b

    @app.task
    def anything(a: object, b: object) -> None: ...

    with pytest.raises(error):
        add.enqueue_many([(1, 2), args])
    with pytest.raises(conveyor.EncodeError):
        anything.enqueue_many([(1, 2), (math.nan, {1: "x"})])
    with pytest.raises(conveyor.EncodeError):
        anything.with_options(depends_on=[]).enqueue("x\udc80", 1)
    assert _jobs(app) == []


def test_refused_unique_key_from_a_function_writes_nothing(app: conveyor.App) -> None:
    @app.task(unique_key=lambda name: name + "\udc80")
    def greet(name: str) -> None: ...

    with pytest.raises(ValueError, match="unique key"):
        greet.enqueue("bob")
    assert _jobs(app) == []
