"""Primitive annotations are checked at enqueue: ``add.enqueue("1", [2])`` for
``add(a: int, b: int)`` is a ``TypeError`` naming the parameter, not a job that runs,
fails and is retried. ``App(check_types=False)`` turns it off."""

from __future__ import annotations

from typing import Any, Optional

import pytest

import conveyor
from conveyor.backends.base import JobListParams


def _app(**settings: Any) -> conveyor.App:
    return conveyor.App("sqlite:///:memory:", **settings)


def _count(app: conveyor.App) -> int:
    return len(app.backend.job_list(JobListParams(limit=100)))


def test_mismatch_names_parameter_and_type_and_writes_nothing() -> None:
    app = _app()

    @app.task
    def add(a: int, b: int) -> int:
        return a + b

    with pytest.raises(TypeError, match=r"add\(\) argument 'a' must be int, got str '1'"):
        add.enqueue("1", [2])
    with pytest.raises(TypeError, match="argument 'b' must be int, got list"):
        add.enqueue(1, b=[2])
    with pytest.raises(TypeError, match="argument 'a' must be int, got bool"):
        add.enqueue(True, 2)
    with pytest.raises(TypeError, match="argument 'a'"):
        add.enqueue_many([(1, 2), ("x", 2)])
    assert _count(app) == 0
    add.enqueue(1, 2)
    assert _count(app) == 1


GOOD_AND_BAD: list[tuple[Any, Any, Any]] = [
    (float, 1, "1.0"),
    (float, 1.5, True),
    (str, "x", 1),
    (bool, False, 0),
    (None, None, 0),
    (Optional[int], None, 1.5),  # noqa: UP045 - the Optional spelling is checked too
    (int | None, 3, "3"),
    (int | str, "a", 1.5),
    (list[int], [1, 2], [1, "2"]),
    (list[str], [], "abc"),
    (dict[str, float], {"a": 1, "b": 2.5}, {"a": "1"}),
    (list[dict[str, int | None]], [{"a": None}], [{"a": "x"}]),
    (list, [1, "a"], {"a": 1}),
]


@pytest.mark.parametrize(("hint", "good", "bad"), GOOD_AND_BAD)
def test_each_primitive_form_accepts_good_and_refuses_bad(hint: Any, good: Any, bad: Any) -> None:
    app = _app()

    def f(x: Any) -> None: ...

    f.__annotations__["x"] = hint
    task = app.task(name="f")(f)
    task.enqueue(good)
    with pytest.raises(TypeError, match="argument 'x' must be"):
        task.enqueue(bad)
    with pytest.raises(TypeError, match="argument 'x' must be"):
        task.enqueue(x=bad)


def test_unchecked_hints_and_varargs() -> None:
    import datetime

    app = _app()

    @app.task
    def f(when: datetime.date, anything: Any, *rest: int, **extra: str) -> None: ...

    f.enqueue(datetime.date(2026, 1, 1), object.__name__, 1, 2, k="v")
    with pytest.raises(TypeError, match="argument '\\*rest' must be int"):
        f.enqueue(datetime.date(2026, 1, 1), 0, 1, "2")
    with pytest.raises(TypeError, match="argument 'k' must be str"):
        f.enqueue(datetime.date(2026, 1, 1), 0, k=1)


def test_check_types_false_turns_it_off() -> None:
    app = _app(check_types=False)

    @app.task
    def add(a: int, b: int) -> int:
        return a + b

    add.enqueue("1", [2])
    assert _count(app) == 1
