"""Cancel, manual retry, waiting on a job, workers and queue statistics."""

from __future__ import annotations

import threading
import time

import pytest

from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobFinishParams,
    JobRetryParams,
    JobWaitParams,
)
from conveyor.errors import JobNotFound
from conveyor.states import FinishKind, JobState
from tests.contract.helpers import claim, insert, register


def test_cancel_queued_and_scheduled_at_once_running_by_request(backend: Backend) -> None:
    register(backend)
    (queued,) = insert(backend)
    (scheduled,) = insert(backend, run_at=time.time() + 60)
    (running_id,) = insert(backend, queue="r")
    (_running,) = claim(backend, queues=("r",))
    records = backend.job_cancel_many(JobCancelParams([queued, scheduled, running_id, "nope"]))
    states = {r.id: r.state for r in records}
    assert states == {
        queued: JobState.CANCELLED,
        scheduled: JobState.CANCELLED,
        running_id: JobState.RUNNING,
    }
    assert backend.job_get_many([running_id])[0].cancel_requested
    assert claim(backend) == []


def test_finished_jobs_are_not_cancelled_and_can_be_retried(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (job,) = claim(backend)
    backend.job_finish_many(
        [JobFinishParams(id=job.id, token=job.token, kind=FinishKind.DEAD, reason="x")]
    )
    backend.job_cancel_many(JobCancelParams([job.id]))
    assert backend.job_get_many([job.id])[0].state is JobState.DEAD
    (retried,) = backend.job_retry_many(JobRetryParams([job.id]))
    assert retried.state is JobState.QUEUED and retried.attempt == 0
    assert claim(backend)[0].id == job.id


def test_wait_returns_when_another_thread_finishes_the_job(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (job,) = claim(backend)
    assert backend.job_wait(JobWaitParams(job.id, 0.05)) is None

    def finish() -> None:
        time.sleep(0.2)
        backend.job_finish_many(
            [JobFinishParams(id=job.id, token=job.token, kind=FinishKind.SUCCEEDED, result="1")]
        )

    threading.Thread(target=finish).start()
    started = time.monotonic()
    record = backend.job_wait(JobWaitParams(job.id, 5.0))
    assert record is not None and record.state is JobState.SUCCEEDED
    assert time.monotonic() - started < 2.0
    with pytest.raises(JobNotFound):
        backend.job_wait(JobWaitParams("missing", 0.1))


def test_queue_stats_and_workers(backend: Backend) -> None:
    register(backend, "w1")
    insert(backend, 3, queue="a")
    insert(backend, 1, queue="b", run_at=time.time() + 60)
    claim(backend, 1, queues=("a",))
    stats = {s.queue: s for s in backend.queue_stats()}
    assert stats["a"].counts == {"queued": 2, "running": 1}
    assert stats["b"].counts == {"scheduled": 1}
    assert stats["a"].oldest_ready_age is not None and stats["b"].oldest_ready_age is None
    (w,) = backend.worker_list()
    assert w.id == "w1" and w.heartbeat_at > time.time() - 5
    backend.worker_deregister("w1")
    assert backend.worker_list() == []
