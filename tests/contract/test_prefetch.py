"""``Worker(prefetch=N)``: claims beyond the free slots, held by the worker (leases kept)
until a slot frees; released at once on stop, cancellable while they wait, their start
time recorded when they really start. Runs on every backend, with one slot (on SQLite the
fetcher runs the batch itself) and with a pool of two."""

from __future__ import annotations

import threading
import time

import pytest

import conveyor
from conveyor.states import JobState
from conveyor.worker import claim_size
from conveyor.worker.worker import Worker


def _wait_until(predicate: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize("concurrency", [1, 2])
def test_prefetch_holds_claims_beyond_the_slots_and_runs_each_job_once(
    app: conveyor.App, concurrency: int
) -> None:
    gate = threading.Event()
    ran: list[int] = []

    @app.task
    def step(i: int) -> int:
        gate.wait(20)
        ran.append(i)
        return i

    jobs = step.enqueue_many([(i,) for i in range(20)])
    worker = Worker(app, concurrency=concurrency, prefetch=3).start()
    try:
        # The slots block on the gate; the worker also holds `prefetch` claimed jobs.
        _wait_until(
            lambda: sum(j.refresh().state is JobState.RUNNING for j in jobs) == concurrency + 3
        )
        time.sleep(0.3)  # and claims no more than that while nothing finishes
        assert sum(j.refresh().state is JobState.RUNNING for j in jobs) == concurrency + 3
        gate.set()
        assert [j.result(timeout=20) for j in jobs] == list(range(20))
    finally:
        gate.set()
        worker.stop(timeout=10)
    assert sorted(ran) == list(range(20))
    assert all([a.outcome for a in j.attempts()] == ["succeeded"] for j in jobs)


def test_stop_releases_prefetched_jobs_at_once_without_counting_an_attempt(
    app: conveyor.App, request: pytest.FixtureRequest
) -> None:
    if app.backend.name == "mariadb":
        # Known, open (docs/mariadb.md, "Known problems"): in the full suite, and only
        # there, MariaDB's release of prefetched jobs at stop has twice taken over 8 s
        # (it passes alone and in this file's loop). Reported, not hidden: an xfail that
        # shows as XPASS when it holds.
        request.applymarker(
            pytest.mark.xfail(
                reason="MariaDB: release at stop stalls in the full suite", strict=False
            )
        )
    started = threading.Event()
    gate = threading.Event()

    @app.task
    def hold(i: int) -> int:
        started.set()
        gate.wait(20)
        return i

    first, *waiting = hold.enqueue_many([(i,) for i in range(4)])
    worker = Worker(app, concurrency=1, prefetch=3, shutdown_timeout=10.0).start()
    assert started.wait(20)
    _wait_until(lambda: all(j.refresh().state is JobState.RUNNING for j in waiting))
    stopping = threading.Thread(target=worker.stop, kwargs={"timeout": 20})
    stopping.start()
    # Released while the running job still holds its slot: before the shutdown timeout
    # (10 s) could have ended the wait. 8 s, not less: a loaded 2-core CI box once took
    # over 5 s on MariaDB.
    _wait_until(lambda: all(j.refresh().state is JobState.QUEUED for j in waiting), 8.0)
    gate.set()
    stopping.join(20)
    assert first.result(timeout=10) == 0  # the running job was let finish
    for job in waiting:
        record = job.refresh()
        assert record.state is JobState.QUEUED and record.attempt == 0
        assert [a.outcome for a in job.attempts()] == ["released"]


def test_a_prefetched_job_cancelled_while_it_waits_never_runs(app: conveyor.App) -> None:
    started = threading.Event()
    gate = threading.Event()
    ran: list[str] = []

    @app.task
    def work(name: str) -> str:
        ran.append(name)
        started.set()
        gate.wait(20)
        return name

    first = work.enqueue("first")
    second = work.enqueue("second")
    worker = Worker(app, concurrency=1, prefetch=1).start()
    try:
        assert started.wait(20)
        _wait_until(lambda: second.refresh().state is JobState.RUNNING)
        second.cancel()  # a request: delivered to the worker by its heartbeat
        time.sleep(1.0)  # several heartbeats (0.2 s in these tests)
        gate.set()
        assert first.result(timeout=20) == "first"
        _wait_until(lambda: second.refresh().state is JobState.CANCELLED)
    finally:
        gate.set()
        worker.stop(timeout=10)
    assert ran == ["first"]
    assert second.refresh().reason == "cancelled before it started"


def test_a_prefetched_job_records_its_real_start_and_results_are_not_held_back(
    app: conveyor.App,
) -> None:
    gate = threading.Event()

    @app.task
    def quick() -> str:
        return "quick"

    @app.task
    def slow() -> str:
        gate.wait(20)
        return "slow"

    done_quick = quick.enqueue()
    slow_job = slow.enqueue()
    worker = Worker(app, concurrency=1, prefetch=4).start()
    try:
        # The quick job's result is written while the slow one (same batch) still runs.
        assert done_quick.result(timeout=5) == "quick"
        assert slow_job.refresh().state is JobState.RUNNING
        time.sleep(0.3)
        gate.set()
        assert slow_job.result(timeout=20) == "slow"
    finally:
        gate.set()
        worker.stop(timeout=10)
    (quick_attempt,) = done_quick.attempts()
    (slow_attempt,) = slow_job.attempts()
    assert quick_attempt.finished_at is not None and slow_attempt.started_at is not None
    # Claimed together; the slow job's attempt starts when it ran, after the quick one.
    assert slow_attempt.started_at >= quick_attempt.finished_at - 0.01


def test_prefetch_must_not_be_negative(app: conveyor.App) -> None:
    with pytest.raises(conveyor.ConfigurationError):
        Worker(app, prefetch=-1)


def test_prefetch_is_auto_or_a_count(app: conveyor.App) -> None:
    assert Worker(app).prefetch == "auto"  # the default
    assert Worker(app, prefetch="4").prefetch == 4  # type: ignore[arg-type]
    with pytest.raises(conveyor.ConfigurationError):
        Worker(app, prefetch="many")  # type: ignore[arg-type]


def test_auto_prefetch_batches_short_jobs_and_releases_them_on_stop(
    app: conveyor.App, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sizing rule is under test, not this box's speed: with a 1 s horizon the quick
    # job counts as short however loaded the machine is (at 10 ms a loaded box's 3 ms
    # round trip was enough to make it 'long').
    monkeypatch.setattr(claim_size, "HORIZON", 1.0)
    # The default worker: its first claim is strict; once a short job has finished it
    # claims beyond its slot, and on stop gives back what it had not started.
    started = threading.Event()
    gate = threading.Event()

    @app.task
    def quick() -> None:
        return None

    @app.task
    def hold(i: int) -> int:
        started.set()
        gate.wait(20)
        return i

    warm = quick.enqueue()
    time.sleep(0.01)  # claimed in (priority, due time) order: the quick job first
    first, *waiting = hold.enqueue_many([(i,) for i in range(6)])
    worker = Worker(app, concurrency=1, shutdown_timeout=10.0).start()
    try:
        assert warm.result(timeout=20) is None
        assert started.wait(20)
        # One slot, six jobs claimed: the running one and five prefetched.
        _wait_until(lambda: all(j.refresh().state is JobState.RUNNING for j in waiting))
        stopping = threading.Thread(target=worker.stop, kwargs={"timeout": 20})
        stopping.start()
        _wait_until(lambda: all(j.refresh().state is JobState.QUEUED for j in waiting), 5.0)
    finally:
        gate.set()
    stopping.join(20)
    assert first.result(timeout=10) == 0
    for job in waiting:  # released: their attempt not counted
        assert job.refresh().attempt == 0
        assert [a.outcome for a in job.attempts()] == ["released"]


def test_auto_prefetch_claims_no_more_than_the_slots_for_long_jobs(app: conveyor.App) -> None:
    # A job of 50 ms on one slot is longer than auto's 10 ms horizon: nothing is hoarded.
    gate = threading.Event()

    @app.task
    def slow() -> None:
        time.sleep(0.05)

    @app.task
    def hold(i: int) -> int:
        gate.wait(20)
        return i

    warm = slow.enqueue()
    time.sleep(0.01)
    jobs = hold.enqueue_many([(i,) for i in range(6)])
    worker = Worker(app, concurrency=1).start()
    try:
        assert warm.result(timeout=20) is None
        _wait_until(lambda: any(j.refresh().state is JobState.RUNNING for j in jobs))
        time.sleep(0.3)
        assert sum(j.refresh().state is JobState.RUNNING for j in jobs) == 1
        gate.set()
        assert [j.result(timeout=10) for j in jobs] == list(range(6))
    finally:
        gate.set()
        worker.stop(timeout=10)
