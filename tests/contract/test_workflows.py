"""Workflows: chains, groups with a callback, depends_on, failure propagation, restart."""

from __future__ import annotations

import conveyor
from conveyor.backends.base import Backend
from conveyor.states import JobState
from tests.support.flow import drain, needs


def _tasks(app: conveyor.App) -> dict[str, conveyor.Task]:  # type: ignore[type-arg]
    @app.task
    def fetch(n: int) -> int:
        return n * 10

    @app.task
    def add(x: int, y: int = 1) -> int:
        return x + y

    @app.task
    def total(values: list[int], bonus: int = 0) -> int:
        return sum(values) + bonus

    @app.task(max_attempts=1)
    def boom(x: int = 0) -> int:
        raise RuntimeError("boom")

    @app.task
    def note(*args: object) -> str:
        return "ran"

    return {"fetch": fetch, "add": add, "total": total, "boom": boom, "note": note}


def test_chain_passes_results(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    last = conveyor.chain(t["fetch"].s(2), t["add"].s(y=5), t["add"].s()).enqueue()
    assert last.status is JobState.WAITING
    parents = last.dependencies()
    assert len(parents) == 1 and parents[0].status is JobState.WAITING
    drain(app)
    assert last.result(timeout=5) == 26  # (2*10)+5, +1
    assert parents[0].result(timeout=0) == 25


def test_group_then_callback_gets_all_results(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    cb = (
        conveyor.group(t["fetch"].s(1), t["fetch"].s(2), t["fetch"].s(3))
        .then(t["total"].s(bonus=4))
        .enqueue()
    )
    assert [p.status for p in cb.dependencies()] == [JobState.QUEUED] * 3
    drain(app)
    assert cb.result(timeout=5) == 64


def test_job_then_and_depends_on(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    a = t["fetch"].enqueue(1)
    b = a.then(t["add"].s(y=2))
    c = t["note"].with_options(depends_on=[a, b]).enqueue()
    assert c.dependencies() == [a, b]
    drain(app)
    assert b.result(timeout=5) == 12
    assert c.result(timeout=5) == "ran"


def test_parent_dead_cancels_dependants_transitively(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    last = conveyor.chain(t["boom"].s(), t["add"].s(), t["add"].s()).enqueue()
    middle = last.dependencies()[0]
    drain(app)
    assert middle.status is JobState.CANCELLED
    record = last.refresh()
    assert record.state is JobState.CANCELLED
    assert "dependency" in (record.reason or "")
    assert "ended dead" in (middle.refresh().reason or "")


def test_cancel_parent_cancels_children_and_late_child(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    a = t["fetch"].with_options(delay=60).enqueue(1)
    b = a.then(t["add"])
    a.cancel()
    assert b.status is JobState.CANCELLED
    late = t["note"].with_options(depends_on=[a]).enqueue()
    assert late.status is JobState.CANCELLED  # a parent already failed: never runs


def test_already_succeeded_parent_makes_child_ready(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    a = t["fetch"].enqueue(4)
    drain(app)
    b = a.then(t["add"])
    assert b.status is JobState.QUEUED
    drain(app)
    assert b.result(timeout=5) == 41


def test_restart_resumes_a_chain(app: conveyor.App, backend: Backend, backend_url: str) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    last = conveyor.chain(t["fetch"].s(1), t["add"].s()).enqueue()
    app.close()  # "restart": a new app object on the same store runs the rest
    app2 = conveyor.App(backend_url)
    _tasks(app2)
    try:
        drain(app2)
        assert app2.job(last.id).result(timeout=5) == 11
    finally:
        app2.close()


def test_deleting_an_unfinished_parent_cancels_its_dependants(
    app: conveyor.App, backend: Backend
) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    a = t["fetch"].with_options(delay=60).enqueue(1)
    b = a.then(t["add"])
    assert backend.job_delete_many([a.id]) == 1
    assert b.status is JobState.CANCELLED
    assert b.dependencies() == []


def test_on_failure_handler(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    seen: list[dict[str, object]] = []

    @app.task
    def alert(info: dict[str, object]) -> str:
        seen.append(info)
        return "alerted"

    last = conveyor.chain(t["boom"].s(), t["add"].s()).enqueue()
    handler = last.on_failure(alert.s())
    ok = t["fetch"].enqueue(1)
    unneeded = ok.on_failure(alert.s())
    assert handler.status is JobState.WAITING
    drain(app)
    assert handler.result(timeout=5) == "alerted"
    assert seen[0]["job_id"] == last.id and seen[0]["state"] == "cancelled"
    # The last step never ran: the handler is told the error of the step that failed.
    assert "ended dead" in str(seen[0]["reason"])
    error = seen[0]["error"]
    assert isinstance(error, dict)
    assert error["type"] == "RuntimeError" and error["message"] == "boom"
    assert 'raise RuntimeError("boom")' in str(error["traceback"])
    assert unneeded.status is JobState.CANCELLED
    assert "not needed" in (unneeded.refresh().reason or "")
    # A handler attached after the failure runs at once, told the same.
    late = last.on_failure(alert.s())
    assert late.status is JobState.QUEUED
    drain(app)
    assert late.result(timeout=5) == "alerted"
    assert seen[-1]["job_id"] == last.id and seen[-1]["error"] == error


def test_on_failure_handler_of_a_dead_job_gets_its_error(
    app: conveyor.App, backend: Backend
) -> None:
    needs(backend, "workflows")
    t = _tasks(app)

    @app.task
    def alert(info: dict[str, object]) -> dict[str, object]:
        return info

    dead = t["boom"].enqueue()
    handler = dead.on_failure(alert.s())
    cancelled = t["fetch"].with_options(delay=60).enqueue(1)
    told_of_cancel = cancelled.on_failure(alert.s())
    cancelled.cancel()  # a user's cancel: no error to tell
    drain(app)
    info = handler.result(timeout=5)
    assert info["job_id"] == dead.id and info["state"] == "dead"
    assert info["reason"] == "attempts exhausted (1/1)"
    assert info["error"]["type"] == "RuntimeError"  # type: ignore[index]
    info = told_of_cancel.result(timeout=5)
    assert info["state"] == "cancelled" and info["error"] is None
