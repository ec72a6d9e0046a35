"""Sequences: jobs of one ``sequence_key`` run one at a time in enqueue order, across
workers; a failed one blocks the rest (held, visible, releasable) or is skipped."""

from __future__ import annotations

import random
import threading
import time

import conveyor
from conveyor.backends.base import Backend, SequenceReleaseParams
from conveyor.worker.worker import Worker
from tests.support.flow import needs


class Log:
    """Starts and ends per key, and the most running at once per key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: dict[str, list[int]] = {}
        self.running: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def enter(self, key: str, n: int) -> None:
        with self.lock:
            self.order.setdefault(key, []).append(n)
            self.running[key] = self.running.get(key, 0) + 1
            self.peak[key] = max(self.peak.get(key, 0), self.running[key])

    def leave(self, key: str) -> None:
        with self.lock:
            self.running[key] -= 1


def test_order_and_no_overlap_across_three_workers(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "sequences")
    log = Log()
    pauses = random.Random(7)

    @app.task(sequence_key=lambda key, n, pause: key, max_attempts=1)
    def step(key: str, n: int, pause: float) -> None:
        log.enter(key, n)
        time.sleep(pause)
        log.leave(key)

    keys = [f"k{i}" for i in range(4)]
    jobs = [
        step.enqueue(key, n, pauses.choice((0.0, 0.002, 0.005))) for n in range(6) for key in keys
    ]
    workers = [Worker(app, concurrency=3).start() for _ in range(3)]
    try:
        for job in jobs:
            job.wait(timeout=30)
    finally:
        for w in workers:
            w.stop()
    assert log.order == {key: list(range(6)) for key in keys}
    assert log.peak == dict.fromkeys(keys, 1)


def test_a_dead_job_blocks_the_rest_until_released(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "sequences")
    ran: list[int] = []

    @app.task(sequence_key="ledger", max_attempts=1)
    def post(n: int) -> None:
        if n == 1:
            raise ValueError("bad entry")
        ran.append(n)

    first, bad, held, after = (post.enqueue(n) for n in range(4))
    worker = Worker(app, concurrency=2).start()
    try:
        bad.wait(timeout=10)
        late = post.enqueue(4)  # enqueued behind a blocked sequence: waits too
        time.sleep(0.1)
        assert bad.refresh().state == "dead"
        record = held.refresh()
        assert record.state == "waiting"
        assert record.reason == f"sequence blocked: {bad.id} ended dead"
        assert after.refresh().state == "waiting" and late.refresh().state == "waiting"
        assert ran == [0]
        # Only the held job is released; the rest follow it in order.
        assert backend.sequence_release_many(SequenceReleaseParams([after.id, held.id])) == [
            held.id
        ]
        late.wait(timeout=10)
    finally:
        worker.stop()
    assert ran == [0, 2, 3, 4]
    assert first.refresh().state == "succeeded"


def test_skip_goes_past_a_failed_job(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "sequences")
    ran: list[int] = []

    @app.task(sequence_key="feed", on_failure="skip", max_attempts=1)
    def push(n: int) -> None:
        if n == 0:
            raise ValueError("down")
        ran.append(n)

    jobs = [push.enqueue(n) for n in range(3)]
    worker = Worker(app, concurrency=2).start()
    try:
        jobs[-1].wait(timeout=10)
        late = push.enqueue(3)  # behind a sequence whose last failure is past
        late.wait(timeout=10)
    finally:
        worker.stop()
    assert [j.refresh().state for j in jobs] == ["dead", "succeeded", "succeeded"]
    assert ran == [1, 2, 3]


def test_a_retry_keeps_its_place(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "sequences")
    ran: list[tuple[int, int]] = []

    @app.task(sequence_key="s", max_attempts=2, retry=conveyor.Backoff(base=0.05, jitter=0))
    def step(n: int) -> None:
        attempt = conveyor.current_job().attempt
        ran.append((n, attempt))
        if n == 0 and attempt == 1:
            raise ValueError("flaky")

    jobs = [step.enqueue(n) for n in range(3)]
    worker = Worker(app, concurrency=3).start()
    try:
        for job in jobs:
            job.wait(timeout=10)
    finally:
        worker.stop()
    assert ran == [(0, 1), (0, 2), (1, 1), (2, 1)]
