"""Durable jobs in every pool (thread, async, process, interpreter): a step runs once and
is replayed, a durable sleep and a ``wait_for`` give the slot back, ``spawn``/``join`` and
``publish`` work from a child process and a subinterpreter, whose checkpoints go through
their own store connection fenced by the worker's claim token (docs/durable.md#pools).
``.ci/pools313`` runs this module on 3.13, where the interpreter pool exists."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from tests.integration import pool_tasks as t
from tests.integration.test_pools import HAS_INTERPRETERS, burst, pool, url

pytestmark = pytest.mark.slow
__all__ = ["pool", "url"]  # the fixtures, shared with test_pools.py


def drive(pool: str, job: conveyor.Job[object], budget: float = 30.0) -> list[str]:
    """Run ``pool`` bursts until ``job`` finishes, sending ``approved`` once it waits;
    the states seen between bursts."""
    seen: list[str] = []
    end = time.monotonic() + budget
    while time.monotonic() < end:
        now = job.refresh().state
        seen.append(now.value)
        if now.is_finished:
            return seen
        if now is JobState.WAITING:
            job.send("approved", "yes")
        burst(pool)
        time.sleep(0.1)
    raise AssertionError(f"job did not finish in {budget} s: {seen}")


def test_steps_sleep_join_publish_and_wait_for_run_in_every_pool(
    pool: str, url: str, tmp_path: Path
) -> None:
    log = tmp_path / "runs.log"
    job = t.flow.enqueue(str(log))
    seen = drive(pool, job)
    assert job.result(timeout=1) == ["CHARGE", 42, "yes", "SHIP"], seen
    assert log.read_text().split() == ["charge", "ship"]  # each step ran once
    assert "waiting" in seen  # parked: no slot held while it waited
    assert job.read("total") == 42
    steps = [s for s in job.steps() if s.position >= 0]
    child = steps[2].result and conveyor.codec.decode(steps[2].result)
    assert [s.name for s in steps] == ["pool.note", "sleep", "spawn:pool.add", f"join:{child}",
                                       "wait_for:approved", "pool.note"]  # fmt: skip


def test_async_steps_run_in_every_pool(pool: str, url: str, tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    job = t.aflow.enqueue(str(log))
    drive(pool, job)
    assert job.result(timeout=1) == ["CHARGE", "yes", "SHIP"]
    assert log.read_text().split() == ["charge", "ship"]


@pytest.fixture(params=["process", "interpreter"])
def child_pool(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "interpreter" and not HAS_INTERPRETERS:
        pytest.skip("interpreter pool needs Python >= 3.13; run .ci/pools313")
    return name


def test_a_childs_steps_reach_every_store(
    child_pool: str, backend_url: str, tmp_path: Path
) -> None:
    # The child (a process, a subinterpreter) opens its own connection to the worker's
    # store: each store's driver, from a child, fenced by the token the job carries.
    t.app.close()
    t.app.url = backend_url
    try:
        log = tmp_path / "runs.log"
        job = t.approve.enqueue(str(log))
        drive(child_pool, job)
        assert job.result(timeout=1) == ["CHARGE", "yes", "SHIP"]
        assert log.read_text().split() == ["charge", "ship"]
    finally:
        t.app.close()


def test_a_memory_store_refuses_steps_in_a_child(tmp_path: Path) -> None:
    # memory:// lives in the worker's process: a child could only save to its own copy.
    t.app.close()
    t.app.url = "memory://pool-steps"
    try:
        job = t.aflow.enqueue(str(tmp_path / "runs.log"))
        burst("process")
        assert job.refresh().state is JobState.DEAD
        assert "memory:// store lives in the worker's process" in (job.refresh().error or "")
    finally:
        t.app.close()
