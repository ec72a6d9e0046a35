"""Contract: the throughput history (finished jobs per bucket, queue and state) and the
newest-first job listing, the two reads behind the dashboard's triage views."""

from __future__ import annotations

import json
import time

from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobFinishedHistogramParams,
    JobFinishParams,
    JobListParams,
)
from conveyor.states import FinishKind, JobState
from tests.contract.helpers import claim, insert, register

ERR = json.dumps({"type": "ValueError", "message": "boom", "traceback": "Traceback..."})


def _finish(backend: Backend, kinds: list[FinishKind]) -> None:
    jobs = claim(backend, n=len(kinds))
    assert len(jobs) == len(kinds)
    backend.job_finish_many(
        [
            JobFinishParams(
                id=j.id,
                token=j.token,
                kind=kind,
                worker_id="w1",
                attempt=1,
                error=None if kind is FinishKind.SUCCEEDED else ERR,
                started_at=j.claimed_at,
            )
            for j, kind in zip(jobs, kinds, strict=True)
        ]
    )


def test_finished_jobs_are_counted_per_bucket_queue_and_state(backend: Backend) -> None:
    register(backend)
    insert(backend, 1)
    _finish(backend, [FinishKind.SUCCEEDED])  # before ``since``: not counted
    time.sleep(0.05)
    since = time.time()
    time.sleep(0.05)
    insert(backend, 3)
    _finish(backend, [FinishKind.SUCCEEDED, FinishKind.SUCCEEDED, FinishKind.DEAD])
    (cancelled,) = insert(backend, 1, queue="mail")
    backend.job_cancel_many(JobCancelParams([cancelled]))
    insert(backend, 1)  # still queued: never counted

    buckets = backend.job_finished_histogram(JobFinishedHistogramParams(since, bucket_s=60))
    totals = {(b.queue, b.state): b.count for b in buckets}
    assert totals == {("q", JobState.SUCCEEDED): 2, ("q", JobState.DEAD): 1,
                      ("mail", JobState.CANCELLED): 1}  # fmt: skip
    assert {b.start for b in buckets} == {since}  # all within the first minute

    # Buckets are aligned on ``since``: one-second buckets put these in bucket 0 or 1.
    fine = backend.job_finished_histogram(JobFinishedHistogramParams(since - 10, bucket_s=1))
    assert sum(b.count for b in fine) == 5  # the early success too, now inside the window
    assert all((b.start - (since - 10)) % 1 == 0 for b in fine)
    assert [(b.start, b.queue, b.state) for b in fine] == sorted(
        (b.start, b.queue, b.state) for b in fine
    )
    later = backend.job_finished_histogram(JobFinishedHistogramParams(time.time() + 1, 60))
    assert later == []


def test_job_list_newest_first_pages_downwards(backend: Backend) -> None:
    ids = insert(backend, 5)
    first = backend.job_list(JobListParams(descending=True, limit=2))
    assert [j.id for j in first] == ids[::-1][:2]
    rest = backend.job_list(JobListParams(descending=True, after_id=first[-1].id, limit=10))
    assert [j.id for j in rest] == ids[::-1][2:]
    assert [j.id for j in backend.job_list(JobListParams(limit=10))] == ids  # default: oldest first
