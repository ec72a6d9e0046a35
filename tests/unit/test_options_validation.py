"""Every job option is checked where it is given: ``@app.task(...)``, ``with_options(...)``
and ``App(...)`` defaults refuse the same bad values with an error naming the option.

A stored ``priority="abc"`` used to crash every SQLite worker at each claim; these checks
keep such values out of the store.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

import pytest

import conveyor

# (option, bad value, expected exception, text the message must contain)
BAD_OPTIONS: list[tuple[str, Any, type[Exception], str]] = [
    ("priority", "abc", TypeError, "priority"),
    ("priority", 1.5, TypeError, "priority"),
    ("priority", math.nan, TypeError, "priority"),
    ("priority", True, TypeError, "priority"),
    ("priority", 2**70, ValueError, "priority"),
    ("priority", 900, ValueError, "-899..899"),
    ("priority", -900, ValueError, "-899..899"),
    ("timeout", "abc", TypeError, "timeout"),
    ("timeout", 0, ValueError, "timeout"),
    ("timeout", -1, ValueError, "timeout"),
    ("timeout", math.nan, ValueError, "timeout"),
    ("timeout", math.inf, ValueError, "timeout"),
    ("timeout", datetime.timedelta(seconds=5), TypeError, "timeout"),
    ("max_attempts", 0, ValueError, "max_attempts"),
    ("max_attempts", 2.0, TypeError, "max_attempts"),
    ("max_attempts", "3", TypeError, "max_attempts"),
    ("queue", "", ValueError, "queue"),
    ("queue", "a\udc80", ValueError, "queue"),
    ("queue", "mail\n", ValueError, "queue"),
    ("queue", "q" * 201, ValueError, "queue"),
    ("queue", 7, TypeError, "queue"),
    ("unique_key", "k\x00", ValueError, "unique_key"),
    ("unique_key", "k\udc80", ValueError, "unique_key"),
    ("unique_key", 1.5, TypeError, "unique_key"),
    ("unique_for", 0, ValueError, "unique_for"),
    ("unique_for", math.nan, ValueError, "unique_for"),
]

TASK_ONLY: list[tuple[str, Any, type[Exception], str]] = [
    ("lease", 0, ValueError, "lease"),
    ("lease", math.inf, ValueError, "lease"),
    ("lease", "30", TypeError, "lease"),
    ("concurrency", 0, ValueError, "concurrency"),
    ("concurrency", "2", TypeError, "concurrency"),
    ("name", "t\udc80", ValueError, "task name"),
    ("name", "a\tb", ValueError, "task name"),
]

PER_CALL_ONLY: list[tuple[str, Any, type[Exception], str]] = [
    ("delay", math.nan, ValueError, "delay"),
    ("delay", -1, ValueError, "delay"),
    ("delay", "soon", TypeError, "delay"),
    ("delay", datetime.timedelta(days=-1), ValueError, "delay"),
    ("at", math.nan, ValueError, "when must be finite"),
]


def _fn(x: int) -> None: ...


def _by_decorator(app: conveyor.App, option: str, value: Any) -> None:
    app.task(**{option: value})(_fn)


def _by_with_options(app: conveyor.App, option: str, value: Any) -> None:
    app.task(name="t")(_fn).with_options(**{option: value})


def _by_app_defaults(app: conveyor.App, option: str, value: Any) -> None:
    conveyor.App("sqlite:///:memory:", **{option: value})


WHERE: dict[str, Callable[[conveyor.App, str, Any], None]] = {
    "decorator": _by_decorator,
    "with_options": _by_with_options,
    "app_defaults": _by_app_defaults,
}
APP_DEFAULTS = {"queue", "priority", "max_attempts", "timeout", "lease"}


def _cases() -> list[Any]:
    cases = []
    for option, value, exc, text in BAD_OPTIONS + TASK_ONLY + PER_CALL_ONLY:
        for where in WHERE:
            if where == "with_options" and (option, value, exc, text) in TASK_ONLY:
                continue
            if where != "with_options" and (option, value, exc, text) in PER_CALL_ONLY:
                continue
            if where == "app_defaults" and option not in APP_DEFAULTS:
                continue
            cases.append(
                pytest.param(where, option, value, exc, text, id=f"{where}-{option}={value!r:.20}")
            )
    return cases


@pytest.mark.parametrize(("where", "option", "value", "exc", "text"), _cases())
def test_bad_option_is_refused_where_given(
    where: str, option: str, value: Any, exc: type[Exception], text: str
) -> None:
    app = conveyor.App("sqlite:///:memory:")
    with pytest.raises(exc, match=text.replace(".", r"\.")) as raised:
        WHERE[where](app, option, value)
    assert isinstance(raised.value, conveyor.ConfigurationError)
    app.close()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("priority", -899),
        ("priority", 899),
        ("timeout", 0.001),
        ("unique_for", datetime.timedelta(seconds=5)),
        ("max_attempts", 1),
        ("queue", "mail-eu.1 fast"),
        ("queue", "q" * 200),
        ("queue", "émail"),
        ("unique_key", "user:7"),
        ("unique_key", 7),
    ],
)
def test_good_option_values_are_accepted(option: str, value: Any) -> None:
    app = conveyor.App("sqlite:///:memory:")
    task = app.task(**{option: value})(_fn)
    task.with_options(**{option: value}).enqueue(1)
    app.close()


def test_delay_zero_and_aware_datetime_at_are_accepted() -> None:
    app = conveyor.App("sqlite:///:memory:")
    task = app.task(_fn)
    task.with_options(delay=0).enqueue(1)
    task.with_options(at=datetime.datetime.now(datetime.UTC)).enqueue(1)
    app.close()


def test_enqueue_after_refuses_nan_and_negative_delays() -> None:
    app = conveyor.App("sqlite:///:memory:")
    task = app.task(_fn)
    with pytest.raises(ValueError, match="delay"):
        task.enqueue_after(math.nan, 1)
    with pytest.raises(ValueError, match="delay"):
        task.enqueue_after(-5, 1)
    app.close()


def test_a_unique_key_function_answer_with_a_lone_surrogate_is_refused() -> None:
    app = conveyor.App("sqlite:///:memory:")
    task = app.task(unique_key=lambda x: f"k{x}\udc80")(_fn)
    with pytest.raises(ValueError, match="unique key"):
        task.enqueue(1)
    app.close()
