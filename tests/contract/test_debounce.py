"""Debounce and throttle on unique keys: a burst of enqueues runs once, with the last
arguments, after a quiet period that ``max_wait`` caps; throttle keeps one job a period."""

from __future__ import annotations

import time

import conveyor
from conveyor.backends.base import Backend
from conveyor.worker.worker import Worker
from tests.support.flow import needs


def test_a_burst_runs_once_with_the_last_arguments(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")
    ran: list[int] = []

    @app.task(unique_key=lambda doc, n: doc, debounce=0.4, max_wait=30)
    def reindex(doc: str, n: int) -> None:
        ran.append(n)

    first = reindex.enqueue("d1", 0)
    start = first.refresh().created_at
    jobs = [first]
    for n in range(1, 100):  # a burst, within the quiet period of the one before
        jobs.append(reindex.enqueue("d1", n))
    assert {j.id for j in jobs} == {first.id}  # one job, replaced in place
    record = first.refresh()
    assert record.state == "scheduled"
    # Quiet for 0.4 s after the last enqueue (max_wait: the next test).
    assert record.run_at > time.time() and record.run_at > start + 0.4
    worker = Worker(app, concurrency=1).start()
    try:
        first.wait(timeout=10)
    finally:
        worker.stop()
    assert ran == [99]


def test_max_wait_holds_under_a_steady_stream(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task(unique_key="feed", debounce=0.2, max_wait=0.3)
    def rebuild(n: int) -> None: ...

    job = rebuild.enqueue(0)
    created = job.refresh().created_at
    for n in range(1, 4):
        time.sleep(0.05)
        rebuild.enqueue(n)
    assert job.refresh().run_at <= created + 0.3 + 1e-3


def test_throttle_keeps_one_job_a_period(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task(unique_key=lambda account: account, throttle=60)
    def notify(account: str) -> None: ...

    a = notify.enqueue("acme")
    assert notify.enqueue("acme") == a and notify.enqueue("other") != a
