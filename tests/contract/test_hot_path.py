"""The hot-path calls on every backend: the ack riding with the next claim
(``job_finish_and_claim``), the batch insert of plain jobs (``job_insert_many`` with ``JobInsertBatchParams``), and
the worker's one-slot mode that uses the first (the fetcher runs the job itself)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import conveyor
from conveyor.backends.base import (
    Backend,
    JobClaimParams,
    JobFinishParams,
    JobInsertBatchParams,
    JobReleaseParams,
)
from conveyor.ids import new_ids
from conveyor.states import FinishKind, JobState
from conveyor.worker.worker import Worker
from tests.contract.helpers import claim, insert, register

FAST = conveyor.Backoff(base=0.01, factor=1, max=0.01, jitter=0)


def _done(job_id: str, token: int, result: str = "1") -> JobFinishParams:
    return JobFinishParams(
        id=job_id,
        token=token,
        kind=FinishKind.SUCCEEDED,
        worker_id="w1",
        attempt=1,
        result=result,
        started_at=time.time(),
    )


def test_finish_and_claim_writes_the_finishes_and_claims_the_next(backend: Backend) -> None:
    register(backend)
    ids = insert(backend, 3)
    first, second = claim(backend, 2)
    backend.job_release_many(JobReleaseParams("w1", [(second.id, second.token)]))
    stale, jobs = backend.job_finish_and_claim(
        [_done(first.id, first.token, '"a"'), _done(second.id, second.token)],
        JobClaimParams("w1", [("q", 5)], 5),
    )
    assert stale == [second.id]  # released meanwhile: fenced out, as job_finish_many
    assert sorted(j.id for j in jobs) == sorted(set(ids) - {first.id})
    record = backend.job_get_many([first.id])[0]
    assert record.state is JobState.SUCCEEDED and record.result == '"a"'
    assert [a.outcome for a in backend.job_attempts(first.id)] == ["succeeded"]


def test_finish_and_claim_with_nothing_to_finish_is_a_claim(backend: Backend) -> None:
    register(backend)
    insert(backend, 2)
    stale, jobs = backend.job_finish_and_claim([], JobClaimParams("w1", [("q", 1)], 1))
    assert stale == [] and len(jobs) == 1
    assert backend.job_get_many([jobs[0].id])[0].state is JobState.RUNNING


def test_insert_batch_matches_insert_many(backend: Backend) -> None:
    ids = new_ids(3)
    backend.job_insert_many(
        JobInsertBatchParams(
            task="t",
            queue="q",
            ids=ids,
            payloads=[f'{{"args":[{i}],"kwargs":{{}}}}' for i in range(3)],
            priority=2,
            max_attempts=3,
            timeout=1.5,
            lease=10.0,
        )
    )
    later = new_ids(1)
    backend.job_insert_many(
        JobInsertBatchParams(
            task="t", queue="q", ids=later, payloads=["{}"], run_at=time.time() + 3600
        )
    )
    records = backend.job_get_many(ids + later)
    assert [r.state for r in records] == [JobState.QUEUED] * 3 + [JobState.SCHEDULED]
    assert [r.payload for r in records[:3]] == [f'{{"args":[{i}],"kwargs":{{}}}}' for i in range(3)]
    assert {(r.priority, r.max_attempts, r.timeout, r.lease) for r in records[:3]} == {
        (2, 3, 1.5, 10.0)
    }


def test_enqueue_many_errors_write_nothing(app: conveyor.App) -> None:
    @app.task
    def add(a: int, b: int = 0) -> int:
        return a + b

    with pytest.raises(TypeError):
        add.enqueue_many([(1,), (1, 2, 3)])
    with pytest.raises(conveyor.errors.EncodeError, match="positional argument 0"):
        add.enqueue_many([(1,), (object(),)])
    with pytest.raises(TypeError, match="enqueue_many items"):
        add.enqueue_many([(1,), 5])  # type: ignore[list-item]
    assert sum(sum(s.counts.values()) for s in app.backend.queue_stats()) == 0
    jobs = add.enqueue_many([(1,), [2, 3], {"a": 4}, conveyor.Args(5, b=1)])
    assert len({j.id for j in jobs}) == 4 and [j.id for j in jobs] == sorted(j.id for j in jobs)
    Worker(app, concurrency=1, burst=True).run(install_signals=False)
    assert [j.result(timeout=5) for j in jobs] == [1, 5, 4, 6]


# -- the one-slot worker (concurrency 1, thread pool: jobs run in the fetcher thread) ----


@pytest.fixture
def one_slot(app: conveyor.App) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.stop(timeout=10)


def test_one_slot_worker_runs_inline_and_retries(app: conveyor.App, one_slot: list[Worker]) -> None:
    seen: list[str] = []
    calls = {"n": 0}

    @app.task(max_attempts=3, retry=FAST)
    def flaky() -> str:
        seen.append(threading.current_thread().name)
        calls["n"] += 1
        if calls["n"] < 3:
            raise ValueError("again")
        return "ok"

    worker = Worker(app, concurrency=1, shutdown_timeout=5.0).start()
    one_slot.append(worker)
    job = flaky.enqueue()
    assert job.result(timeout=20) == "ok"
    # Where the store gains from it, no pool thread and no hand-off; elsewhere the pool.
    inline = "ack_with_claim" in app.backend.features
    assert set(seen) == ({"conveyor-fetcher"} if inline else {"conveyor-thread-0"})
    assert [a.outcome for a in job.attempts()] == ["failed", "failed", "succeeded"]


def test_one_slot_worker_times_out_a_sync_task(app: conveyor.App, one_slot: list[Worker]) -> None:
    @app.task(timeout=0.3, max_attempts=1)
    def spin() -> None:
        end = time.monotonic() + 5
        while time.monotonic() < end:  # pure Python: interruptible at bytecode
            pass

    @app.task
    def after() -> str:
        return "next"

    one_slot.append(Worker(app, concurrency=1, shutdown_timeout=5.0).start())
    job, nxt = spin.enqueue(), after.enqueue()
    with pytest.raises(conveyor.JobFailed) as info:
        job.result(timeout=20)
    assert info.value.error_type == "JobTimeout"
    assert nxt.result(timeout=20) == "next"  # the fetcher thread survived the interrupt


def test_one_slot_graceful_stop_releases_the_running_job(app: conveyor.App) -> None:
    started = threading.Event()

    @app.task
    def long() -> None:
        started.set()
        time.sleep(2)

    job = long.enqueue()
    worker = Worker(app, concurrency=1, shutdown_timeout=0.2).start()
    assert started.wait(10)
    worker.stop(timeout=10)
    record = job.refresh()
    assert record.state is JobState.QUEUED and record.attempt == 0
    assert [a.outcome for a in job.attempts()] == ["released"]
    time.sleep(2.2)  # the job returns in the abandoned thread: its finish is not written
    assert job.refresh().state is JobState.QUEUED


def test_one_slot_stop_writes_the_last_finish(app: conveyor.App) -> None:
    @app.task
    def quick(i: int) -> int:
        return i

    jobs = quick.enqueue_many([(i,) for i in range(50)])
    worker = Worker(app, concurrency=1, shutdown_timeout=5.0).start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if sum(1 for j in jobs if j.refresh().state is JobState.SUCCEEDED) >= 10:
            break
        time.sleep(0.01)
    worker.stop(timeout=10)
    states = [j.refresh().state for j in jobs]
    # Every job is either done or back in the queue: none stuck running, none lost.
    assert set(states) <= {JobState.SUCCEEDED, JobState.QUEUED}
    assert states.count(JobState.SUCCEEDED) >= 10


def test_insert_batch_is_all_or_nothing(backend: Backend) -> None:
    (taken,) = new_ids(1)
    backend.job_insert_many(JobInsertBatchParams("t", "q", [taken], ["{}"]))
    fresh = new_ids(2)
    with pytest.raises(Exception):  # noqa: B017 - each store raises its own duplicate error
        backend.job_insert_many(
            JobInsertBatchParams("t", "q", [fresh[0], taken, fresh[1]], ["{}", "{}", "{}"])
        )
    assert backend.job_get_many(fresh) == []
    backend.job_insert_many(JobInsertBatchParams("t", "q", fresh, ["{}", "{}"]))  # usable
    assert len(backend.job_get_many(fresh)) == 2


def test_sqlite_wait_after_an_empty_claim_sees_another_connection(tmp_path: object) -> None:
    from conveyor.backends.sqlite.backend import SQLiteBackend

    url = f"sqlite:///{tmp_path}/wake.db"
    fetcher, producer = SQLiteBackend(url), SQLiteBackend(url)  # two connections
    try:
        register(fetcher)
        assert claim(fetcher) == []
        insert(producer)  # commits after the empty claim, on another connection
        t = time.monotonic()
        fetcher.work_wait(5.0)
        assert time.monotonic() - t < 1.0  # seen through data_version, not the timeout
        assert len(claim(fetcher)) == 1
        t = time.monotonic()
        fetcher.work_wait(5.0)  # right after a non-empty claim: no waiting
        assert time.monotonic() - t < 0.5
    finally:
        fetcher.close()
        producer.close()


def test_sqlite_batched_success_keeps_times_exact(tmp_path: object) -> None:
    """SQLite's batch of successes carries times through JSON (sqlite/queries/finish.sql):
    each float must come back bit for bit (a scalar json_extract(value, '$') would not: up to
    21 ulps off on this SQLite; the array element '$[i]' the batch reads is exact)."""
    import random

    from conveyor.backends.sqlite.backend import SQLiteBackend

    backend = SQLiteBackend(f"sqlite:///{tmp_path}/times.db")
    try:
        register(backend)
        insert(backend, 200)
        jobs = claim(backend, 200)
        rng = random.Random(16)
        times = {j.id: (time.time() - rng.random() * 1e5, time.time() + rng.random()) for j in jobs}
        batch = [
            JobFinishParams(
                j.id,
                j.token,
                FinishKind.SUCCEEDED,
                "w1",
                j.attempt,
                None,
                started_at=times[j.id][0],
                finished_at=times[j.id][1],
            )
            for j in jobs
        ]
        assert backend.job_finish_many(batch) == []
        for record in backend.job_get_many(list(times)):
            assert record.finished_at == times[record.id][1]
            (attempt,) = backend.job_attempts(record.id)
            assert (attempt.started_at, attempt.finished_at) == times[record.id]
    finally:
        backend.close()
