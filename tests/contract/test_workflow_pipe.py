"""``|`` between signatures, groups and chains (Celery's spelling) builds the workflow
``.then`` builds: the same steps, stored the same way, run with the same results, on
every store."""

from __future__ import annotations

from typing import Any

import pytest

import conveyor
from conveyor.backends.base import Backend
from conveyor.compose import Chain
from conveyor.errors import ConfigurationError
from conveyor.states import JobState
from tests.support.flow import drain, needs


def _tasks(app: conveyor.App) -> dict[str, conveyor.Task[Any, Any]]:
    @app.task
    def fetch(n: int) -> int:
        return n * 10

    @app.task
    def add(x: int, y: int = 1) -> int:
        return x + y

    @app.task
    def total(values: list[int], bonus: int = 0) -> int:
        return sum(values) + bonus

    return {"fetch": fetch, "add": add, "total": total}


def _shape(jobs: list[conveyor.Job[Any]]) -> list[tuple[str, str, int, list[int]]]:
    """Each stored step: its task, state, parents' count and the parents' positions."""
    position = {job.id: n for n, job in enumerate(jobs)}
    return [
        (
            job.refresh().task,
            job.refresh().state.value,
            job.refresh().waiting_on,
            sorted(position[parent.id] for parent in job.dependencies()),
        )
        for job in jobs
    ]


def test_pipe_builds_and_runs_the_chain_then_builds(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    piped = t["fetch"].s(2) | t["add"].s(y=5) | t["add"].s()
    assert isinstance(piped, Chain)
    then = t["fetch"].s(2).then(t["add"].s(y=5), t["add"].s())
    piped_jobs, then_jobs = piped.enqueue_all(), then.enqueue_all()
    assert _shape(piped_jobs) == _shape(then_jobs)
    assert [j.refresh().payload for j in piped_jobs] == [j.refresh().payload for j in then_jobs]
    assert piped_jobs[-1].status is JobState.WAITING
    drain(app)
    assert piped_jobs[-1].result(timeout=5) == then_jobs[-1].result(timeout=5) == 26


def test_pipe_with_groups_and_chains(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "workflows")
    t = _tasks(app)
    fan_in = conveyor.group(t["fetch"].s(1), t["fetch"].s(2)) | t["total"].s(bonus=4)
    head = t["fetch"].s(3) | t["add"].s()
    joined = head | (t["add"].s(y=2) | t["add"].s())  # a chain | a chain: one chain
    assert len(joined.steps) == 4
    fan_out = t["fetch"].s(1) | conveyor.group(t["add"].s(), t["add"].s(y=2))
    last = fan_in.delay()  # Celery's name for enqueue
    single = t["fetch"].s(4).delay()
    joined_last = joined.enqueue()
    members = fan_out.enqueue_all()
    drain(app)
    assert last.result(timeout=5) == 34
    assert single.result(timeout=5) == 40
    assert joined_last.result(timeout=5) == 34  # 30+1, +2, +1
    assert [m.result(timeout=5) for m in members] == [10, 11, 12]


def test_pipe_refuses_what_then_refuses(app: conveyor.App) -> None:
    t = _tasks(app)
    g = conveyor.group(t["fetch"].s(1))
    with pytest.raises(ConfigurationError, match="a group cannot follow a group"):
        _ = g | conveyor.group(t["fetch"].s(2))
    with pytest.raises(TypeError, match=r"not Task \(write task\.s\(\.\.\.\) to make a step\)"):
        _ = t["fetch"].s(1) | t["add"]
