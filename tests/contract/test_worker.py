"""The worker on every backend: results, retries, hooks, unrunnable jobs, cancel, timeouts."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest

import conveyor
from conveyor.backends.base import JobInsertParams
from conveyor.ids import new_id
from conveyor.states import JobState
from conveyor.worker.worker import Worker

FAST = conveyor.Backoff(base=0.01, factor=1, max=0.01, jitter=0)


@pytest.fixture
def running(app: conveyor.App) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.stop(timeout=10)


def start(app: conveyor.App, running: list[Worker], **kw: object) -> Worker:
    worker = Worker(app, shutdown_timeout=kw.pop("shutdown_timeout", 5.0), **kw).start()  # type: ignore[arg-type]
    running.append(worker)
    return worker


def test_results_come_back_typed(app: conveyor.App, running: list[Worker]) -> None:
    @app.task
    def add(a: int, b: int) -> int:
        return a + b

    @app.task
    async def greet(name: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"hello": name}

    start(app, running, concurrency=4)
    assert add.enqueue(2, 3).result(timeout=10) == 5
    assert greet.enqueue("you").result(timeout=10) == {"hello": "you"}


def test_failures_retry_then_die_with_the_remote_traceback(
    app: conveyor.App, running: list[Worker]
) -> None:
    calls: list[int] = []

    @app.task(max_attempts=3, retry=FAST)
    def boom() -> None:
        calls.append(conveyor.current_job().attempt)
        raise KeyError("missing thing")

    start(app, running)
    job = boom.enqueue()
    with pytest.raises(conveyor.JobFailed) as info:
        job.result(timeout=10)
    assert calls == [1, 2, 3]
    assert info.value.error_type == "KeyError" and "missing thing" in info.value.message
    assert 'raise KeyError("missing thing")' in info.value.traceback
    assert info.value.reason == "attempts exhausted (3/3)"
    assert [a.outcome for a in job.attempts()] == ["failed", "failed", "dead"]


def test_retry_delay_hook_seconds_drop_and_archive(
    app: conveyor.App, running: list[Worker]
) -> None:
    seen: list[tuple[int, str]] = []

    def hook(attempt: int, error: BaseException, job: object) -> float | str | None:
        seen.append((attempt, type(error).__name__))
        return {"drop": "drop", "archive": "archive"}.get(str(error).strip("'"), 0.01)

    @app.task(max_attempts=5, retry_delay=hook)
    def fail(mode: str) -> None:
        if conveyor.current_job().attempt < 2 or mode != "soon":
            raise ValueError(mode)

    start(app, running)
    soon, drop, archive = fail.enqueue("soon"), fail.enqueue("drop"), fail.enqueue("archive")
    assert soon.result(timeout=10) is None
    with pytest.raises(conveyor.JobFailed, match="archived"):
        archive.result(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            drop.refresh()
        except conveyor.JobNotFound:
            break
        time.sleep(0.02)
    else:
        pytest.fail("dropped job still exists")
    assert (1, "ValueError") in seen


def test_unknown_task_and_bad_payload_go_dead_without_import(
    app: conveyor.App, running: list[Worker]
) -> None:
    @app.task
    def typed(n: int) -> int:
        return n

    ids = [new_id(), new_id()]
    app.backend.job_insert_many(
        [
            JobInsertParams(
                id=ids[0],
                task="os.system",
                queue="default",
                payload='{"args":["true"],"kwargs":{}}',
            ),
            JobInsertParams(
                id=ids[1], task=typed.name, queue="default", payload='{"args":[1,2,3],"kwargs":{}}'
            ),
        ]
    )
    start(app, running)
    unknown, bad = (app.job(i) for i in ids)
    with pytest.raises(conveyor.JobFailed, match=r"unknown task 'os\.system'"):
        unknown.result(timeout=10)
    with pytest.raises(conveyor.JobFailed, match="undecodable payload"):
        bad.result(timeout=10)
    assert json.loads(bad.refresh().error or "{}")["type"] == "TypeError"


def test_a_result_that_cannot_be_encoded_ends_dead_at_once(
    app: conveyor.App, running: list[Worker]
) -> None:
    calls: list[int] = []

    @app.task(max_attempts=5, retry=FAST)
    def tags() -> set[str]:
        calls.append(conveyor.current_job().attempt)
        return {"a", "b"}  # a set: the codec refuses it, and would on every run

    @app.task(max_attempts=3, retry=FAST)
    async def nan() -> float:
        return float("nan")

    start(app, running)
    job, other = tags.enqueue(), nan.enqueue()
    with pytest.raises(conveyor.JobFailed) as info:
        job.result(timeout=10)
    assert calls == [1]  # not retried
    assert info.value.error_type == "EncodeError"
    assert "cannot encode result" in info.value.message and "set" in info.value.message
    record = job.refresh()
    assert record.state is JobState.DEAD and record.attempt == 1
    assert record.reason == "not retried: running it again would be refused the same way"
    assert json.loads(record.error or "{}")["type"] == "EncodeError"
    assert [a.outcome for a in job.attempts()] == ["dead"]
    with pytest.raises(conveyor.JobFailed, match="nan is not a JSON number"):
        other.result(timeout=10)
    assert [a.outcome for a in other.attempts()] == ["dead"]


def test_cancel_a_running_async_task_and_a_cooperative_sync_task(
    app: conveyor.App, running: list[Worker]
) -> None:
    started = threading.Event()

    @app.task
    async def forever() -> None:
        started.set()
        await asyncio.sleep(60)

    @app.task
    def polite() -> str:
        ctx = conveyor.current_job()
        started.set()
        ctx.wait_cancelled(30)
        ctx.raise_if_cancelled()
        return "not cancelled"

    start(app, running, pool="async")
    for task in (forever, polite):
        started.clear()
        job = task.enqueue()
        assert started.wait(10)
        job.cancel()
        with pytest.raises(conveyor.JobCancelled):
            job.result(timeout=10)
        assert job.refresh().attempt == 1


def test_timeouts_retry_and_never_overlap_the_retry(
    app: conveyor.App, running: list[Worker]
) -> None:
    active: list[int] = []
    overlaps: list[int] = []
    lock = threading.Lock()

    @app.task(timeout=0.3, max_attempts=2, retry=FAST)
    def spin() -> None:
        with lock:
            if active:
                overlaps.append(1)
            active.append(1)
        try:
            end = time.monotonic() + 2
            while time.monotonic() < end:  # pure Python: interruptible at bytecode
                pass
        finally:
            with lock:
                active.pop()

    @app.task(timeout=0.2, max_attempts=1)
    async def slow_async() -> None:
        await asyncio.sleep(5)

    start(app, running, concurrency=4)
    job, ajob = spin.enqueue(), slow_async.enqueue()
    with pytest.raises(conveyor.JobFailed) as info:
        job.result(timeout=20)
    assert info.value.error_type == "JobTimeout"
    with pytest.raises(conveyor.JobFailed, match="timed out"):
        ajob.result(timeout=20)
    assert overlaps == []
    assert [a.outcome for a in job.attempts()] == ["failed", "dead"]


def test_weighted_queues_serve_both_and_priorities_hold(app: conveyor.App) -> None:
    order: list[str] = []

    @app.task
    def mark(tag: str) -> None:
        order.append(tag)

    mark.with_options(queue="low").enqueue_many([("low",)] * 20)
    mark.with_options(queue="high").enqueue_many([("high",)] * 60)
    mark.with_options(queue="high", priority=10).enqueue("first")
    Worker(app, queues=["high:3", "low:1"], concurrency=1, burst=True).run(install_signals=False)
    # priority orders jobs within a queue; weights decide between queues
    assert len(order) == 81 and next(o for o in order if o != "low") == "first"
    first_forty = order[1:41]
    assert 15 <= first_forty.count("high") <= 39 and first_forty.count("low") >= 1


def test_graceful_stop_releases_running_jobs_without_counting_an_attempt(app: conveyor.App) -> None:
    started = threading.Event()

    @app.task
    def long() -> None:
        started.set()
        time.sleep(3)

    job = long.enqueue()
    worker = Worker(app, shutdown_timeout=0.2).start()
    assert started.wait(10)
    worker.stop(timeout=10)
    record = job.refresh()
    assert record.state is JobState.QUEUED and record.attempt == 0
    assert [a.outcome for a in job.attempts()] == ["released"]
    assert app.backend.worker_list() == []


def test_burst_exits_when_nothing_is_ready(app: conveyor.App) -> None:
    @app.task
    def noop(i: int) -> None: ...

    noop.enqueue_many([(i,) for i in range(200)])
    later = noop.enqueue_after(3600, -1)
    Worker(app, concurrency=8, burst=True).run(install_signals=False)
    counts = {s.queue: s.counts for s in app.backend.queue_stats()}["default"]
    assert counts == {"succeeded": 200, "scheduled": 1}
    assert later.status is JobState.SCHEDULED
