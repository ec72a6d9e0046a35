"""Durable jobs (feature ``steps``) on every store: step checkpoints fenced by the
claim token, replay serving saved steps, NonDeterministic, durable sleep, events sent
to a job and its waits (parked, woken, timed out), and removal with the job."""

from __future__ import annotations

import time

import pytest

import conveyor
from conveyor.backends.base import (
    STEP_FAILED,
    STEP_SUCCEEDED,
    STEP_TIMED_OUT,
    STEP_WAITING,
    WAIT_PARKED,
    WAIT_RECEIVED,
    WAIT_REFUSED,
    WAIT_TIMED_OUT,
    Backend,
    IntegrityCheckParams,
    JobEventSendParams,
    JobEventWaitParams,
    JobStepSaveParams,
    StepRecord,
)
from conveyor.errors import JobNotFound
from conveyor.retry import Backoff
from conveyor.states import JobState
from tests.contract.helpers import claim, insert, register
from tests.support.flow import drain, needs


def _step(
    job_id: str, pos: int, name: str = "s", result: str = '"r"', state: str = STEP_SUCCEEDED
) -> StepRecord:
    return StepRecord(job_id, pos, name, state, result, None, 1, 1.0, 2.0)


def _wait(
    job_id: str, token: int, pos: int = 0, event: str = "go", deadline: float = 1e11
) -> JobEventWaitParams:
    return JobEventWaitParams(job_id, token, pos, f"wait_for:{event}", event, deadline, time.time())


def _state(backend: Backend, job_id: str) -> JobState:
    return backend.job_get_many([job_id])[0].state


def test_step_checkpoints_are_fenced_and_read_in_order(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    assert backend.job_step_save(JobStepSaveParams(_step(job_id, 1, "b"), job.token))
    assert backend.job_step_save(JobStepSaveParams(_step(job_id, 0, "a"), job.token))
    assert not backend.job_step_save(JobStepSaveParams(_step(job_id, 2), job.token + 1))
    # a position is written once, unless replaced (a failed run's record)
    assert not backend.job_step_save(JobStepSaveParams(_step(job_id, 0, "x"), job.token))
    failed = _step(job_id, 1, "b", state=STEP_FAILED)
    assert backend.job_step_save(JobStepSaveParams(failed, job.token, replace=True))
    steps = backend.job_step_list(job_id)
    assert [(s.position, s.name, s.state, s.result) for s in steps] == [
        (0, "a", STEP_SUCCEEDED, '"r"'),
        (1, "b", STEP_FAILED, '"r"'),
    ]
    assert backend.job_step_list("nope") == []


def test_wait_parks_the_job_and_a_send_wakes_it(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    assert backend.job_event_wait(_wait(job_id, job.token)).status == WAIT_PARKED
    parked = backend.job_get_many([job_id])[0]
    assert parked.state is JobState.WAITING and parked.attempt == 0 and parked.worker_id is None
    assert [s.state for s in backend.job_step_list(job_id)] == [STEP_WAITING]
    # parked on an event, not orphaned: the audit finds nothing wrong with it
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
    assert claim(backend) == []
    assert backend.job_event_send(JobEventSendParams(job_id, "other", "1")) is False
    assert _state(backend, job_id) is JobState.WAITING
    assert backend.job_event_send(JobEventSendParams(job_id, "go", '{"ok": true}')) is True
    assert _state(backend, job_id) is JobState.QUEUED
    (again,) = claim(backend)
    assert again.attempt == 1  # the parked attempt was given back
    got = backend.job_event_wait(_wait(job_id, again.token))
    assert (got.status, conveyor.codec.decode(got.payload)) == (WAIT_RECEIVED, {"ok": True})
    (step,) = backend.job_step_list(job_id)
    assert step.state == STEP_SUCCEEDED and conveyor.codec.decode(step.result) == {"ok": True}
    assert backend.job_event_wait(_wait(job_id, again.token + 7, 1)).status == WAIT_REFUSED


def test_events_sent_before_the_wait_are_kept_and_consumed_once_in_order(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    for n in (1, 2):
        assert backend.job_event_send(JobEventSendParams(job_id, "go", str(n))) is False
    (job,) = claim(backend)
    assert backend.job_event_wait(_wait(job_id, job.token, 0)).payload == "1"
    assert backend.job_event_wait(_wait(job_id, job.token, 1)).payload == "2"
    assert backend.job_event_wait(_wait(job_id, job.token, 2)).status == WAIT_PARKED
    with pytest.raises(JobNotFound):
        backend.job_event_send(JobEventSendParams("no-such-job", "go", "1"))


def test_a_wait_past_its_deadline_is_queued_and_times_out(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    deadline = time.time() + 0.3
    assert backend.job_event_wait(_wait(job_id, job.token, deadline=deadline)).status == WAIT_PARKED
    assert backend.job_wake_due(10) == 0
    time.sleep(0.4)
    assert backend.job_wake_due(10) == 1
    assert _state(backend, job_id) is JobState.QUEUED
    (again,) = claim(backend)
    assert (
        backend.job_event_wait(_wait(job_id, again.token, deadline=deadline)).status
        == WAIT_TIMED_OUT
    )
    assert [s.state for s in backend.job_step_list(job_id)] == [STEP_TIMED_OUT]


def test_steps_and_events_go_with_their_job(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    backend.job_step_save(JobStepSaveParams(_step(job_id, 0), job.token))
    backend.job_event_send(JobEventSendParams(job_id, "go", "1"))
    assert backend.job_delete_many([job_id]) == 1
    assert backend.job_step_list(job_id) == []


def test_replay_serves_finished_steps_and_reruns_failed_ones(
    app: conveyor.App, backend: Backend
) -> None:
    needs(backend, "steps")
    runs: list[str] = []

    @app.step(max_attempts=2, retry=Backoff(base=0.0, jitter=0.0))
    def charge(order: int) -> dict[str, int]:
        runs.append("charge")
        return {"order": order}

    @app.step
    def ship(order: int) -> str:
        runs.append("ship")
        if runs.count("ship") == 1:
            raise RuntimeError("carrier down")
        return f"shipped {order}"

    @app.task(max_attempts=3, retry=Backoff(base=0.0, jitter=0.0))
    def fulfil(order: int) -> list[object]:
        return [charge(order), ship(order)]

    job = fulfil.enqueue(7)
    drain(app)
    assert job.result(timeout=10) == [{"order": 7}, "shipped 7"]
    assert runs == ["charge", "ship", "ship"]  # charge was served on the retry
    steps = backend.job_step_list(job.id)
    assert [(s.name.rsplit(".", 1)[-1], s.state) for s in steps] == [
        ("charge", STEP_SUCCEEDED),
        ("ship", STEP_SUCCEEDED),
    ]


def test_a_different_step_on_replay_ends_the_job_dead(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "steps")
    seen: list[int] = []

    @app.step(name="first")
    def first() -> int:
        return 1

    @app.step(name="other")
    def other() -> int:
        return 2

    @app.task(max_attempts=5, retry=Backoff(base=0.0, jitter=0.0))
    def drifting() -> int:
        seen.append(1)
        value = (first if len(seen) == 1 else other)()
        if len(seen) == 1:
            raise RuntimeError("retry me")
        return value

    job = drifting.enqueue()
    drain(app)
    record = job.refresh()
    assert record.state is JobState.DEAD and len(seen) == 2
    assert "NonDeterministic" in (record.error or "") and "'other'" in (record.error or "")


def test_durable_sleep_frees_the_slot_and_resumes(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "steps")
    runs: list[str] = []

    @app.step(name="before")
    async def before() -> str:
        runs.append("before")
        return "b"

    @app.task(max_attempts=1)
    async def napper() -> str:
        value = await before()
        conveyor.sleep(0.3)
        return value + "!"

    job = napper.enqueue()
    deadline = time.monotonic() + 10
    while job.status is not JobState.SUCCEEDED and time.monotonic() < deadline:
        drain(app)
        time.sleep(0.05)
    assert job.result(timeout=0) == "b!"
    assert runs == ["before"]  # served on the replay after the sleep
    # the sleep ended an attempt that was given back (max_attempts=1 and two runs)
    assert [a.outcome for a in job.attempts()] == ["snoozed", "succeeded"]
    assert [s.name for s in backend.job_step_list(job.id)] == ["before", "sleep"]


def test_wait_for_resumes_on_a_send_through_the_job_handle(
    app: conveyor.App, backend: Backend
) -> None:
    needs(backend, "steps")

    @app.task
    def approve(order: int) -> object:
        answer = conveyor.wait_for("approved", timeout=60)
        try:
            conveyor.wait_for("never", timeout=0.01)
        except TimeoutError:
            return [order, answer, "timed out"]
        return None

    job = approve.enqueue(3)
    drain(app)
    assert job.status is JobState.WAITING
    assert job.send("approved", {"by": "ada"}) is True
    drain(app)
    time.sleep(0.05)
    app.backend.job_wake_due(10)
    drain(app)
    assert job.result(timeout=10) == [3, {"by": "ada"}, "timed out"]


def test_spawn_enqueues_a_child_once_and_join_waits_for_it(
    app: conveyor.App, backend: Backend
) -> None:
    needs(backend, "steps")
    needs(backend, "unique")
    children: list[int] = []

    @app.task(name="child")
    def child(n: int) -> int:
        children.append(n)
        return n * 10

    @app.task(name="parent", max_attempts=3, retry=Backoff(base=0.0, jitter=0.0))
    def parent() -> int:
        kid = conveyor.spawn(child, 4)
        return int(conveyor.join(kid, poll=0.05)) + 1

    job = parent.enqueue()
    deadline = time.monotonic() + 20
    while job.status is not JobState.SUCCEEDED and time.monotonic() < deadline:
        drain(app)
        time.sleep(0.06)
    assert job.result(timeout=0) == 41
    assert children == [4]  # the parent replayed (its join snoozed), the child ran once
    names = [s.name for s in backend.job_step_list(job.id)]
    assert names[0] == "spawn:child" and names[1].startswith("join:")
