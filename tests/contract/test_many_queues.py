"""A claim over many queues (a queue per tenant): the worker hands the store a
QueueRing, and the store serves the non-empty queues round robin, one job per queue
before any gets a second, from where the last claim stopped; paused queues skipped,
limits admitted, a long run of empty queues walked in a few statements (bench W7)."""

from __future__ import annotations

import threading
import time

import conveyor
from conveyor.backends.base import Backend, JobClaimParams, QueuePauseParams
from conveyor.backends.queue_ring import QueueRing
from conveyor.worker.worker import Worker
from tests.contract.helpers import insert, register
from tests.support.flow import needs


def _tenants(n: int) -> QueueRing:
    return QueueRing(f"t{k}" for k in range(n))


def _claim(backend: Backend, ring: QueueRing, n: int) -> list[str]:
    return sorted(j.queue for j in backend.job_claim(JobClaimParams("w1", ring, n)))


def test_one_job_per_non_empty_queue_first_then_a_top_up(backend: Backend) -> None:
    register(backend)
    ring = _tenants(300)
    insert(backend, 2, queue="t7")
    (urgent,) = insert(backend, 1, queue="t7", priority=9)
    insert(backend, 1, queue="t150")
    insert(backend, 2, queue="t299")
    first = backend.job_claim(JobClaimParams("w1", ring, 2))
    # The first two non-empty queues in the ring's order, each its first job.
    assert sorted(j.queue for j in first) == ["t150", "t7"]
    assert urgent in {j.id for j in first}
    # The next claim starts after t150: t299, then t7 (wrapping), then tops up from both.
    assert ring[0] == ("t151", 1)
    assert _claim(backend, ring, 5) == ["t299", "t299", "t7", "t7"]
    assert _claim(backend, ring, 5) == []


def test_tenants_are_served_round_robin(backend: Backend) -> None:
    register(backend)
    ring = _tenants(50)
    for queue in ("t3", "t20", "t41"):
        insert(backend, 3, queue=queue)
    got = [_claim(backend, ring, 1)[0] for _ in range(9)]
    assert got == ["t3", "t20", "t41"] * 3


def test_paused_queues_are_skipped(backend: Backend) -> None:
    register(backend)
    for queue in ("t1", "t2", "t3"):
        insert(backend, 1, queue=queue)
    backend.queue_pause(QueuePauseParams("t2"))
    ring = _tenants(40)
    assert _claim(backend, ring, 3) == ["t1", "t3"]
    assert _claim(backend, ring, 3) == []


def test_a_long_run_of_empty_queues_is_walked(backend: Backend) -> None:
    register(backend)
    ring = _tenants(3000)
    assert _claim(backend, ring, 4) == []
    insert(backend, 2, queue="t2999")
    insert(backend, 1, queue="t1")
    ring.start = 2  # t1 is the last place of this turn
    assert _claim(backend, ring, 4) == ["t1", "t2999", "t2999"]


def test_a_worker_on_many_queues_runs_every_job_within_its_limits(
    backend_url: str, backend: Backend
) -> None:
    needs(backend, "limits")
    app = conveyor.App(backend_url)
    lock, running, peak, done = threading.Lock(), [0], [0], []

    @app.task(concurrency=1, limit_key="shared", max_attempts=1)
    def call(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
            done.append(i)
        return i

    queues = [f"t{k}" for k in range(60)]
    jobs = [call.with_options(queue=queues[(i * 7) % 60]).enqueue(i) for i in range(12)]
    worker = Worker(app, concurrency=4, queues=queues).start()
    try:
        for job in jobs:
            job.wait(timeout=20)
    finally:
        worker.stop()
        app.close()
    assert sorted(done) == list(range(12))
    assert peak[0] == 1  # the key's limit held across the tenants' queues
