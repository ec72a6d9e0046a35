"""Snooze: ``raise conveyor.Snooze(s)`` re-schedules the job without using an attempt."""

from __future__ import annotations

import time

import conveyor
from conveyor.backends.base import Backend
from conveyor.states import JobState
from tests.support.flow import drain, needs


def test_snooze_reschedules_without_an_attempt(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "snooze")
    calls: list[int] = []

    @app.task(max_attempts=1)
    def poll() -> str:
        calls.append(conveyor.current_job().attempt)
        if len(calls) < 3:
            raise conveyor.Snooze(0.05)
        return "ready"

    job = poll.enqueue()
    deadline = time.monotonic() + 10
    while job.status is not JobState.SUCCEEDED and time.monotonic() < deadline:
        drain(app)
        time.sleep(0.02)
    assert job.result(timeout=0) == "ready"
    # max_attempts=1 and three runs: the snoozes did not count; each run was attempt 1.
    assert calls == [1, 1, 1]
    outcomes = [a.outcome for a in job.attempts()]
    assert outcomes == ["snoozed", "snoozed", "succeeded"]
    assert job.refresh().attempt == 1


def test_snoozed_job_waits_scheduled(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "snooze")

    @app.task
    def later() -> None:
        raise conveyor.Snooze(60)

    job = later.enqueue()
    drain(app)
    record = job.refresh()
    assert record.state is JobState.SCHEDULED
    assert record.attempt == 0
    assert record.run_at > time.time() + 50
    assert record.error is None
