"""Limits: concurrency and rate per task or per key, without burning attempts."""

from __future__ import annotations

import threading
import time

import pytest

import conveyor
from conveyor.backends.base import Backend, JobClaimParams, JobFinishParams, LimitOverrideParams
from conveyor.errors import ConfigurationError
from conveyor.limits import parse_rate
from conveyor.states import FinishKind
from conveyor.worker.worker import Worker
from tests.support.flow import needs


class Meter:
    """Counts how many calls run at once, per key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.starts: list[float] = []

    def enter(self, key: str) -> None:
        with self.lock:
            self.now[key] = self.now.get(key, 0) + 1
            self.peak[key] = max(self.peak.get(key, 0), self.now[key])
            self.starts.append(time.monotonic())

    def leave(self, key: str) -> None:
        with self.lock:
            self.now[key] -= 1


def _run_until_done(app: conveyor.App, jobs: list[conveyor.Job], concurrency: int = 8) -> None:  # type: ignore[type-arg]
    worker = Worker(app, concurrency=concurrency).start()
    try:
        for job in jobs:
            job.wait(timeout=20)
    finally:
        worker.stop()


def test_concurrency_per_key(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "limits")
    meter = Meter()

    @app.task(concurrency=1, limit_key=lambda account, i: account, max_attempts=1)
    def call(account: str, i: int) -> int:
        meter.enter(account)
        time.sleep(0.05)
        meter.leave(account)
        return i

    jobs = [call.enqueue(acc, i) for i in range(5) for acc in ("a", "b")]
    _run_until_done(app, jobs)
    assert [j.result(timeout=0) for j in jobs] == [i for i in range(5) for _ in "ab"]
    assert meter.peak == {"a": 1, "b": 1}
    # The limit never cost an attempt: each job ran exactly once, as attempt 1.
    assert all(j.refresh().attempt == 1 for j in jobs)
    assert all([a.outcome for a in j.attempts()] == ["succeeded"] for j in jobs)


def test_concurrency_per_task_across_two_workers(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "limits")
    meter = Meter()

    @app.task(concurrency=2, max_attempts=1)
    def work(i: int) -> None:
        meter.enter("t")
        time.sleep(0.03)
        meter.leave("t")

    jobs = [work.enqueue(i) for i in range(12)]
    other = Worker(app, concurrency=4).start()
    try:
        _run_until_done(app, jobs, concurrency=4)
    finally:
        other.stop()
    assert meter.peak["t"] == 2
    assert all(j.status.value == "succeeded" for j in jobs)


def test_rate_limit(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "limits")
    meter = Meter()

    @app.task(rate="3/1s", max_attempts=1)
    def ping(i: int) -> None:
        meter.enter("r")
        meter.leave("r")

    jobs = [ping.enqueue(i) for i in range(6)]
    _run_until_done(app, jobs)
    starts = sorted(meter.starts)
    assert starts[3] - starts[0] >= 0.9  # the 4th start waited for the window
    assert all(j.refresh().attempt == 1 for j in jobs)


def test_parse_rate_and_bad_options() -> None:
    assert parse_rate("100/m") == (100, 60.0)
    assert parse_rate("5/10s") == (5, 10.0)
    for bad in ("100", "0/s", "1/w"):
        with pytest.raises(ConfigurationError):
            parse_rate(bad)
    app = conveyor.App("sqlite:///:memory:")
    with pytest.raises(ConfigurationError):
        app.task(concurrency=0)(lambda: None)


def test_limits_changed_while_running(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "limits")
    meter = Meter()
    gate = threading.Event()

    @app.task(concurrency=1, limit_key="api", max_attempts=1)
    def call(i: int) -> None:
        meter.enter("api")
        gate.wait(5)
        meter.leave("api")

    call.enqueue(0)
    [listed] = backend.limit_list()
    assert (listed.key, listed.in_force, listed.override) == ("api", (1, None, None), None)
    # Three at once from now on, for every worker's next claim; the code's value kept.
    backend.limit_override(LimitOverrideParams("api", (3, None, None)))
    jobs = [call.enqueue(i) for i in range(1, 4)]
    workers = [Worker(app, concurrency=2).start() for _ in range(3)]
    try:
        deadline = time.monotonic() + 5
        while meter.now.get("api", 0) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        [listed] = backend.limit_list()
        assert listed.in_force == (3, None, None) and listed.concurrency == 1
        assert listed.running == 3
        backend.limit_override(LimitOverrideParams("api", None))  # reset: the code's 1
        gate.set()
        for job in jobs:
            job.wait(timeout=20)
    finally:
        gate.set()
        for w in workers:
            w.stop()
    assert meter.peak["api"] == 3
    assert backend.limit_list()[0].override is None


def test_queue_concurrency_across_workers(backend_url: str, backend: Backend) -> None:
    needs(backend, "limits")
    app = conveyor.App(backend_url, queue_concurrency={"reports": 2})
    meter = Meter()

    @app.task(queue="reports", max_attempts=1)
    def render(i: int) -> None:
        meter.enter("reports")
        time.sleep(0.05)
        meter.leave("reports")

    jobs = [render.enqueue(i) for i in range(4)]
    workers = [Worker(app, concurrency=2, queues=["reports"]).start() for _ in range(2)]
    try:
        for job in jobs:
            job.wait(timeout=20)
    finally:
        for w in workers:
            w.stop()
        app.close()
    assert meter.peak["reports"] == 2  # four slots, two at a time: the queue's cap


def test_one_claim_admits_exactly_the_limit(app: conveyor.App, backend: Backend) -> None:
    """One claim call of many jobs under one key takes exactly the free slots, counting
    the jobs it admits itself, and holders that finished since free theirs (the Redis
    claim counts a key's holders once per call, and only when its set reaches the
    limit; the SQL engine counts them once per claim)."""
    needs(backend, "limits")

    @app.task(queue="lim", concurrency=3, limit_key="k")
    def work(i: int) -> None: ...

    work.enqueue_many([(i,) for i in range(20)])
    claim = JobClaimParams("w1", [("lim", 20)], 20)
    held = backend.job_claim(claim)
    assert len(held) == 3
    for freed, expected in ((2, 2), (3, 3), (1, 1)):
        finished, held = held[:freed], held[freed:]
        backend.job_finish_many(
            [
                JobFinishParams(id=j.id, token=j.token, kind=FinishKind.SUCCEEDED, result="1")
                for j in finished
            ]
        )
        time.sleep(0.45)  # the deferred jobs are due again (0.2-0.4 s)
        got = backend.job_claim(claim)
        assert len(got) == expected, (freed, [j.id for j in got])
        held += got
