"""Schedules steered by operators on every store: pause (stored, obeyed inside every
worker's fire, skipped slots not caught up after a resume), resume, "run now" (enqueued
once however many workers see the request), unknown names refused."""

from __future__ import annotations

import conveyor
from conveyor.backends.base import (
    Backend,
    JobListParams,
    PeriodicFireParams,
    PeriodicPauseParams,
    PeriodicResumeParams,
    PeriodicRunParams,
)
from conveyor.periodic import Schedule
from tests.support.flow import needs


def _schedule(app: conveyor.App) -> Schedule:
    @app.periodic(every=10.0, catch_up="all", name="steered")
    @app.task(name="steered-task")
    def tick() -> None: ...

    return app.schedules["steered"]


def _fire(
    backend: Backend,
    schedule: Schedule,
    slots: list[float],
    run: float | None = None,
) -> list[float]:
    return backend.periodic_fire(
        PeriodicFireParams(
            "steered",
            "every 10s",
            [(s, schedule.job_params()) for s in slots],
            max(slots, default=0.0) + 10.0,
            run=None if run is None else (run, schedule.job_params()),
        )
    )


def _jobs(backend: Backend) -> int:
    return len(backend.job_list(JobListParams(task="steered-task")))


def test_unknown_schedule_is_refused(backend: Backend) -> None:
    needs(backend, "periodic")
    assert not backend.periodic_pause(PeriodicPauseParams("nope"))
    assert not backend.periodic_resume(PeriodicResumeParams("nope"))
    assert not backend.periodic_run_request(PeriodicRunParams("nope"))
    assert backend.periodic_list() == []  # a refusal creates no schedule


def test_paused_schedule_fires_nothing_and_skips_its_slots(
    app: conveyor.App, backend: Backend
) -> None:
    needs(backend, "periodic")
    schedule = _schedule(app)
    assert _fire(backend, schedule, [10.0]) == [10.0]
    assert backend.periodic_pause(PeriodicPauseParams("steered"))
    assert backend.periodic_pause(PeriodicPauseParams("steered"))  # idempotent
    (record,) = backend.periodic_list()
    assert record.paused and record.last_slot == 10.0
    assert _fire(backend, schedule, [20.0, 30.0]) == []
    assert _jobs(backend) == 1
    (record,) = backend.periodic_list()
    # the skipped slots are the last ones: a resume does not catch them up
    assert record.last_slot == 30.0 and record.paused
    assert backend.periodic_resume(PeriodicResumeParams("steered"))
    (record,) = backend.periodic_list()
    assert not record.paused
    assert schedule.due_slots(record.last_slot, 35.0) == []
    assert _fire(backend, schedule, [40.0]) == [40.0]
    assert _jobs(backend) == 2


def test_run_now_is_enqueued_once_even_when_paused(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "periodic")
    schedule = _schedule(app)
    _fire(backend, schedule, [10.0])
    slot_job = backend.periodic_list()[0].last_job_id
    backend.periodic_pause(PeriodicPauseParams("steered"))
    assert backend.periodic_run_request(PeriodicRunParams("steered"))
    (record,) = backend.periodic_list()
    requested = record.run_requested_at
    assert requested is not None
    # a second request before a worker took the first is the same run
    assert backend.periodic_run_request(PeriodicRunParams("steered"))
    assert backend.periodic_list()[0].run_requested_at == requested
    # two workers saw the request: one run is enqueued
    _fire(backend, schedule, [], run=requested)
    _fire(backend, schedule, [], run=requested)
    assert _jobs(backend) == 2
    (record,) = backend.periodic_list()
    assert record.run_requested_at is None and record.paused
    assert record.last_slot == 10.0  # a run now moves no slot
    ran = {j.id for j in backend.job_list(JobListParams(task="steered-task"))}
    assert record.last_job_id in ran and record.last_job_id != slot_job


def test_worker_obeys_pause_and_run_now(app: conveyor.App, backend: Backend) -> None:
    """The real scheduler tick: paused fires nothing, a run request is enqueued."""
    needs(backend, "periodic")
    from conveyor.worker.services.scheduler import Scheduler
    from conveyor.worker.worker import Worker

    @app.periodic(every=3600.0, name="hourly")
    @app.task(name="hourly-task")
    def hourly() -> None: ...

    scheduler = Scheduler(Worker(app, concurrency=1))
    scheduler.tick()  # plans the schedule: the store knows it now
    assert backend.periodic_pause(PeriodicPauseParams("hourly"))
    assert backend.periodic_run_request(PeriodicRunParams("hourly"))
    scheduler.tick()
    scheduler.tick()
    found = backend.job_list(JobListParams(task="hourly-task"))
    assert len(found) == 1
    (record,) = backend.periodic_list()
    assert record.paused and record.run_requested_at is None
    assert record.last_job_id == found[0].id
