"""Fair queues: a queue's ready jobs are served round-robin across ``fair_key`` values,
so one key's backlog does not starve another key's few jobs."""

from __future__ import annotations

import os
import threading

import pytest

import conveyor
from conveyor.backends.base import Backend
from conveyor.worker.worker import Worker
from tests.support.flow import needs

#: The issue's proof at a small size: key A's backlog, then ten jobs of each other key
#: (CONVEYOR_FAIR_BACKLOG=2000 or 10000 for the issue's sizes; the bound is the same).
BACKLOG = int(os.environ.get("CONVEYOR_FAIR_BACKLOG", "400"))
FEW, OTHERS = 10, ("b", "c", "d", "e")


@pytest.mark.parametrize("workers", [1, 3])
def test_a_backlog_does_not_starve_other_keys(
    app: conveyor.App, backend: Backend, workers: int
) -> None:
    needs(backend, "fair")
    lock = threading.Lock()
    started: list[str] = []
    others_done = threading.Event()

    @app.task(fair_key=lambda tenant, n: tenant, max_attempts=1)
    def sync(tenant: str, n: int) -> None:
        with lock:
            started.append(tenant)
            if sum(1 for t in started if t != "a") == FEW * len(OTHERS):
                others_done.set()

    sync.enqueue_many([("a", n) for n in range(BACKLOG)])
    for n in range(FEW):
        for tenant in OTHERS:
            sync.enqueue(tenant, n)
    # prefetch=0: each claim is one job, so start order is the store's order; with a
    # prefetch, jobs a worker buffers start when it gets to them (docs/flow.md).
    pool = [Worker(app, concurrency=1, prefetch=0).start() for _ in range(workers)]
    try:
        assert others_done.wait(timeout=60)
    finally:
        for w in pool:
            w.stop(timeout=5)
    # Every job of B-E started within the first 60 started after they were enqueued.
    last = max(i for i, t in enumerate(started) if t != "a")
    assert last < 60, started[:80]


def test_weights_and_priority(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "fair")
    order: list[str] = []

    @app.task(fair_key=lambda tenant, **_: tenant, fair_weights={"big": 2}, max_attempts=1)
    def sync(tenant: str, **_: object) -> None:
        order.append(tenant)

    jobs = sync.enqueue_many([("big",)] * 6)
    jobs += sync.enqueue_many([("small",)] * 3)
    jobs.append(sync.with_options(priority=5).enqueue("late"))  # priority first, as ever
    worker = Worker(app, concurrency=1).start()
    try:
        for job in jobs:
            job.wait(timeout=10)
    finally:
        worker.stop()
    assert order[0] == "late"
    # Weight 2: two turns of "big" to one of "small" while both have jobs.
    assert order[1:7].count("big") == 4 and order[1:7].count("small") == 2
