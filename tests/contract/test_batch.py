"""Batch handlers on every store: jobs run in calls of ``size`` when that many are
ready, a partial failure retries only the failed items, a call that raises fails each
of its items on its own attempts, a concurrency limit counts a call's jobs. (A worker killed mid-call: its jobs are rescued like
any job's, tests/integration/test_flow_processes.py.)

The issue's sizes (10,000 jobs, ``size=100``): ``CONVEYOR_BATCH_JOBS=10000
CONVEYOR_BATCH_SIZE=100``; ``make test`` runs 1,000 jobs in calls of 50."""

from __future__ import annotations

import os
import threading

import conveyor
from conveyor.states import JobState
from conveyor.worker.worker import Worker

JOBS = int(os.environ.get("CONVEYOR_BATCH_JOBS", "1000"))
SIZE = int(os.environ.get("CONVEYOR_BATCH_SIZE", "50"))
NOW = conveyor.Backoff(base=0.0, jitter=0.0)  # retried at once


def test_jobs_run_in_full_calls_when_available(app: conveyor.App) -> None:
    sizes: list[int] = []
    lock = threading.Lock()

    @app.task(batch=conveyor.Batch(size=SIZE, wait=1.0))
    def square(items: list[conveyor.BatchItem[[int]]]) -> list[int]:
        with lock:
            sizes.append(len(items))
        return [item.args[0] ** 2 for item in items]

    jobs = square.enqueue_many([(n,) for n in range(JOBS)])
    worker = Worker(app, concurrency=2).start()
    try:
        for job in jobs[::97]:
            assert job.result(timeout=120) == (jobs.index(job)) ** 2
        for job in jobs:
            job.wait(timeout=120)
    finally:
        worker.stop()
    assert sum(sizes) == JOBS
    # Every call is full but the one that took the last jobs (at most one per slot).
    assert sum(1 for s in sizes if s < SIZE) <= 2, sizes
    assert max(sizes) == SIZE
    records = app.backend.job_get_many([j.id for j in jobs])
    assert {r.state for r in records} == {JobState.SUCCEEDED}
    assert {r.attempt for r in records} == {1}


def test_a_partial_failure_retries_only_the_failed_items(app: conveyor.App) -> None:
    calls: list[list[int]] = []

    @app.task(batch=conveyor.Batch(size=20, wait=0.5), retry=NOW, max_attempts=3)
    def deliver(items: list[conveyor.BatchItem[[int]]]) -> list[object]:
        calls.append(sorted(item.args[0] for item in items))
        return [
            ValueError(f"{item.args[0]} is odd")
            if item.args[0] % 2 and item.attempt == 1
            else item.args[0]
            for item in items
        ]

    jobs = deliver.enqueue_many([(n,) for n in range(20)])
    worker = Worker(app, concurrency=1).start()
    try:
        results = [job.result(timeout=60) for job in jobs]
    finally:
        worker.stop()
    assert results == list(range(20))
    assert calls[0] == list(range(20))
    assert sorted(n for call in calls[1:] for n in call) == list(range(1, 20, 2))
    records = app.backend.job_get_many([j.id for j in jobs])
    assert [r.attempt for r in records] == [1 + n % 2 for n in range(20)]
    assert "is odd" in (records[1].error or "")


def test_a_call_that_raises_fails_each_item_on_its_own_attempts(app: conveyor.App) -> None:
    @app.task(batch=conveyor.Batch(size=5, wait=0.2), max_attempts=1)
    def broken(items: list[conveyor.BatchItem[[str]]]) -> None:
        raise RuntimeError(f"{len(items)} items")

    jobs = broken.enqueue_many([(str(n),) for n in range(5)])
    worker = Worker(app, concurrency=1).start()
    try:
        states = [job.wait(timeout=30).state for job in jobs]
    finally:
        worker.stop()
    assert states == [JobState.DEAD] * 5
    assert all("5 items" in (r.error or "") for r in app.backend.job_get_many([j.id for j in jobs]))


def test_a_concurrency_limit_counts_the_jobs_of_a_call(app: conveyor.App) -> None:
    sizes: list[int] = []

    @app.task(batch=conveyor.Batch(size=12, wait=0.2), concurrency=4)
    def limited(items: list[conveyor.BatchItem[[int]]]) -> None:
        sizes.append(len(items))

    jobs = limited.enqueue_many([(n,) for n in range(12)])
    worker = Worker(app, concurrency=2).start()
    try:
        states = {job.wait(timeout=60).state for job in jobs}
    finally:
        worker.stop()
    assert states == {JobState.SUCCEEDED}
    assert sum(sizes) == 12 and max(sizes) <= 4, sizes
