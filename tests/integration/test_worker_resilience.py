"""A slot is never lost: whatever a task raises (BaseException included), or a row that
reaches the worker with a timeout it cannot use, the attempt ends with a reason and the
slot serves the next job; ``--burst`` ends. Issue 12, items 2 and 3."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from conveyor.worker.worker import Worker

POOLS = [("thread", 1), ("thread", 2), ("async", 2)]


def make_app(tmp_path: Path) -> conveyor.App:
    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}", heartbeat_interval=0.05)

    @app.task(name="exits", max_attempts=1)
    def exits(code: int) -> None:
        sys.exit(code)

    @app.task(name="interrupts", max_attempts=1)
    def interrupts() -> None:
        raise KeyboardInterrupt

    @app.task(name="generator_exit", max_attempts=1)
    def generator_exit() -> None:
        raise GeneratorExit

    @app.task(name="deep", max_attempts=1)
    def deep() -> list[object]:
        value: list[object] = []
        for _ in range(5000):
            value = [value]
        return value

    @app.task(name="async_exits", max_attempts=1)
    async def async_exits() -> None:
        await asyncio.sleep(0)
        raise SystemExit(3)

    @app.task(name="fine")
    def fine(n: int) -> int:
        return n

    return app


def run_burst(app: conveyor.App, pool: str, concurrency: int) -> Worker:
    worker = Worker(app, pool=pool, concurrency=concurrency, burst=True, shutdown_timeout=2)
    worker.start()
    assert worker.join(20), "the burst never ended: a slot was lost"
    return worker


@pytest.mark.parametrize(("pool", "concurrency"), POOLS)
def test_base_exceptions_end_the_attempt_and_the_slot_serves_on(
    tmp_path: Path, pool: str, concurrency: int
) -> None:
    app = make_app(tmp_path)
    bad = [
        app.tasks["exits"].enqueue(3),
        app.tasks["interrupts"].enqueue(),
        app.tasks["generator_exit"].enqueue(),
        app.tasks["deep"].enqueue(),
        app.tasks["async_exits"].enqueue(),
    ]
    good = [app.tasks["fine"].enqueue(n) for n in range(4)]
    worker = run_burst(app, pool, concurrency)
    assert worker.failure is None
    errors = {}
    for job in bad:
        record = job.refresh()
        assert record.state is JobState.DEAD, (job.id, record.state)
        errors[record.task] = record.error or ""
    assert "SystemExit" in errors["exits"]
    assert "KeyboardInterrupt" in errors["interrupts"]
    assert "GeneratorExit" in errors["generator_exit"]
    assert "RecursionError" in errors["deep"] or "EncodeError" in errors["deep"]
    assert "SystemExit" in errors["async_exits"]
    assert [job.result() for job in good] == [0, 1, 2, 3]


@pytest.mark.parametrize(("pool", "concurrency"), POOLS)
@pytest.mark.parametrize("timeout", ["abc", -1.0])
def test_a_row_with_an_unusable_timeout_goes_dead_with_the_reason(
    tmp_path: Path, pool: str, concurrency: int, timeout: object
) -> None:
    app = make_app(tmp_path)
    job = app.tasks["fine"].enqueue(1)
    after = app.tasks["fine"].enqueue(2)
    backend = app.backend
    with backend.lock:  # written around the API, as a bad row can arrive
        backend.connection.execute("UPDATE jobs SET timeout = ? WHERE id = ?", (timeout, job.id))
    run_burst(app, pool, concurrency)
    record = job.refresh()
    assert record.state is JobState.DEAD
    # A number that is unusable (-1) is the runner's refusal; text where the number
    # belongs ("abc") is already caught when the claimed row is decoded.
    reason = record.reason or ""
    assert "invalid timeout" in reason or "timeout is not a number ('abc')" in reason, reason
    assert ("abc" in reason) == (timeout == "abc"), reason
    assert after.result() == 2


def break_pool(worker: Worker) -> None:
    """Take a slot away from under the worker, as a crash in the pool would: the event
    loop stopped (async), one slot thread ended (thread)."""
    executor = worker.executor
    if worker.pool == "async":
        loop = executor._loop  # type: ignore[attr-defined]
        loop.call_soon_threadsafe(loop.stop)
    else:
        executor._threads._queue.put(None)  # type: ignore[attr-defined]  # one slot ends


@pytest.mark.parametrize("pool", ["thread", "async"])
def test_a_worker_whose_pool_died_stops_with_an_error(
    tmp_path: Path, pool: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_app(tmp_path)
    worker = Worker(app, pool=pool, concurrency=2, shutdown_timeout=1)
    worker.start()
    assert worker.failure is None
    break_pool(worker)
    assert worker.join(10), "the worker kept heartbeating with a dead pool"
    assert worker.failure is not None and "pool lost" in worker.failure
    assert any("is stopping" in r.getMessage() for r in caplog.records)
    assert app.backend.worker_list() == []  # deregistered: nobody counts its capacity


def test_run_raises_worker_failed_when_the_worker_stops_on_its_own(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    worker = Worker(app, pool="async", concurrency=1, shutdown_timeout=1)

    def once_started() -> None:
        worker._started.wait(10)
        break_pool(worker)

    threading.Thread(target=once_started, daemon=True).start()
    with pytest.raises(conveyor.WorkerFailed, match="pool lost event loop"):
        worker.run(install_signals=False)
