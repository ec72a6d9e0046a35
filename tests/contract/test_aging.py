"""Priority aging: a ready job waiting longer than its queue's step gains a priority
(and its wait counts again from then), below the highest priority."""

from __future__ import annotations

import time

import pytest

import conveyor
from conveyor.backends.base import Backend, JobAgeParams, JobClaimParams
from conveyor.worker.worker import Worker
from tests.support.flow import needs


# serial: the two passes must fall within 0.2 s of each other (else the aged job's wait,
# counted again from the first, is aged again).
@pytest.mark.serial
def test_a_waiting_job_gains_priority(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "aging")

    @app.task(queue="reports")
    def render(i: int) -> None: ...

    old, other = render.enqueue(1), render.with_options(queue="mail").enqueue(2)
    capped = render.with_options(priority=3).enqueue(3)
    time.sleep(0.25)
    fresh = render.enqueue(4)
    assert backend.job_age_many(JobAgeParams("reports", 0.2, 3)) == 1
    assert [j.refresh().priority for j in (old, other, capped, fresh)] == [1, 0, 3, 0]
    # Its wait counts again from the step: not aged twice for the same wait.
    assert backend.job_age_many(JobAgeParams("reports", 0.2, 3)) == 0
    # Claimed in the new order: the aged job before the fresh one.
    claimed = backend.job_claim(JobClaimParams("w", [("reports", 3)], 3))
    assert [c.id for c in claimed] == [capped.id, old.id, fresh.id]


def test_the_worker_ages_the_queues_the_app_names(backend_url: str, backend: Backend) -> None:
    needs(backend, "aging")
    app = conveyor.App(backend_url, priority_aging={"reports": 0.1})

    @app.task(queue="reports")
    def render(i: int) -> None: ...

    job = render.enqueue(1)
    worker = Worker(app, concurrency=1, queues=["mail"]).start()  # ages, never claims it
    try:
        deadline = time.monotonic() + 5
        while job.refresh().priority < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop()
        app.close()
    assert job.refresh().priority >= 2
