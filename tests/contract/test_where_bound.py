"""Contract: a ``--where`` condition bound to the tasks' signatures matches an argument by
parameter name however it was passed (by position or by keyword), and only for the
tasks whose signature puts it there (every backend)."""

from __future__ import annotations

import inspect

import pytest

import conveyor
from conveyor import records
from conveyor.backends.base import ArgSlot, Backend, JobCountParams, JobFilter, JobListParams
from conveyor.query import bind_filter, parse_where
from tests.support.features import needs


@pytest.fixture(autouse=True)
def _needs_filters(backend: Backend) -> None:
    needs(backend, "filters")


def _tasks(app: conveyor.App) -> dict[str, inspect.Signature]:
    @app.task(name="t.welcome")
    def welcome(user_id: object, subject: object = "hi") -> None: ...

    @app.task(name="t.other")
    def other(order: object, user_id: object = None) -> None: ...

    @app.task(name="t.only")
    def only(user_id: object, /, *rest: object) -> None: ...

    welcome.enqueue(42)  # by position
    welcome.enqueue(user_id=42, subject="x")  # by keyword
    welcome.enqueue(43, "x")
    other.enqueue(42)  # position 0 is order here: not a user_id
    other.enqueue(7, 42)  # position 1 is user_id
    other.enqueue(8, user_id=42)
    only.enqueue(42, 1)  # positional-only: never in kwargs
    return {name: inspect.signature(t.fn) for name, t in app.tasks.items()}


def ids_of(backend: Backend, f: JobFilter) -> set[str]:
    found = {j.id for j in backend.job_list(JobListParams(filter=f, limit=1000))}
    assert backend.job_count(JobCountParams(f)) == len(found)
    return found


def count(backend: Backend, sigs: dict[str, inspect.Signature], *where: str, **kw: object) -> int:
    f = JobFilter(where=tuple(parse_where(w) for w in where), **kw)  # type: ignore[arg-type]
    return len(ids_of(backend, bind_filter(f, sigs)))


def test_a_parameter_name_matches_positional_and_keyword_arguments(
    app: conveyor.App, backend: Backend
) -> None:
    sigs = _tasks(app)
    assert count(backend, {}, "kwargs.user_id=42") == 2  # unbound: keyword only
    # bound: welcome(42), welcome(user_id=42), other(7, 42), other(8, user_id=42), only(42)
    assert count(backend, sigs, "kwargs.user_id=42") == 5
    assert count(backend, sigs, "kwargs.user_id=42", task="t.welcome") == 2
    assert count(backend, sigs, "kwargs.user_id=42", task="t.other") == 2
    assert count(backend, sigs, "kwargs.user_id=43") == 1
    assert count(backend, sigs, 'kwargs.subject="x"') == 2  # by keyword and by position
    assert count(backend, sigs, "kwargs.order=42") == 1
    assert count(backend, sigs, "kwargs.user_id=42", "kwargs.order=8") == 1


def test_a_position_matches_the_keyword_of_that_parameter(
    app: conveyor.App, backend: Backend
) -> None:
    sigs = _tasks(app)
    assert count(backend, {}, "args.0=42") == 3  # welcome(42), other(42), only(42)
    # and welcome(user_id=42): its position 0 is user_id
    assert count(backend, sigs, "args.0=42") == 4
    assert count(backend, sigs, "args.1=42") == 2  # other(7, 42), other(8, user_id=42)
    assert count(backend, sigs, "args.1=1") == 1  # only's *rest has no name


def test_bound_conditions_keep_their_typed_json_meaning(
    app: conveyor.App, backend: Backend
) -> None:
    sigs = _tasks(app)
    assert count(backend, sigs, 'kwargs.user_id="42"') == 0  # the string is not the number
    assert count(backend, sigs, "kwargs.user_id=true") == 0
    assert count(backend, sigs, "kwargs.user_id=42.0") == 5
    assert count(backend, sigs, "kwargs.missing=42") == 0


def test_a_bound_slot_applies_only_to_its_tasks(app: conveyor.App, backend: Backend) -> None:
    _tasks(app)
    # A hand-made binding naming one task: other jobs with args.0=42 stay out.
    cond = parse_where("kwargs.user_id=42")
    bound = JobFilter(
        where=(records.replace(cond, bound=(ArgSlot(tasks=("t.only",), root="args", key=0),)),)
    )
    found = backend.job_list(JobListParams(filter=bound, limit=100))
    assert sorted(j.task for j in found) == ["t.only", "t.other", "t.welcome"]
