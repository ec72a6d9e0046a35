"""The Redis backend against a real redis-server: transitions, fencing, rescue, waiting.

The generic contract suite (tests/contract) checks the shared semantics on every
backend; these tests pin what is specific to Redis (server clock, key layout, TTLs,
blocking waits, scripts surviving restarts) and the core transitions directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from conveyor.backends.base import (
    JobCancelParams,
    JobClaimParams,
    JobExtendLeasesParams,
    JobFinishParams,
    JobInsertParams,
    JobListParams,
    JobReleaseParams,
    JobRescueParams,
    JobRetryParams,
    JobWaitParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.backends.redis.backend import RedisBackend
from conveyor.errors import ConveyorError, JobNotFound
from conveyor.states import FinishKind, JobState
from tests.support.redis_server import delete_prefix, unique_prefix, with_prefix

pytestmark = pytest.mark.redis


@pytest.fixture
def prefix() -> str:
    return unique_prefix()


@pytest.fixture
def rb(redis_url: str, prefix: str) -> Iterator[RedisBackend]:
    backend = RedisBackend(with_prefix(redis_url, prefix))
    yield backend
    backend.close()
    delete_prefix(redis_url, prefix)


def insert(rb: RedisBackend, *ids: str, queue: str = "q", **kw: object) -> None:
    rb.job_insert_many(
        [JobInsertParams(id=i, task="t", queue=queue, payload="{}", **kw) for i in ids]  # type: ignore[arg-type]
    )


def worker(rb: RedisBackend, worker_id: str = "w1") -> WorkerInfo:
    info = WorkerInfo(
        id=worker_id, host="h", pid=1, pid_started=None, started_at=time.time(),
        queues=("q",), concurrency=8, pool="thread",
    )  # fmt: skip
    rb.worker_heartbeat(WorkerHeartbeatParams(worker=info))
    return info


def claim(rb: RedisBackend, n: int = 10, worker_id: str = "w1", queue: str = "q") -> list:  # type: ignore[type-arg]
    return rb.job_claim(JobClaimParams(worker_id=worker_id, queues=((queue, n),), total=n))


def finish(
    job_id: str, token: int, kind: FinishKind = FinishKind.SUCCEEDED, **kw: object
) -> JobFinishParams:
    return JobFinishParams(id=job_id, token=token, kind=kind, **kw)  # type: ignore[arg-type]


def test_url_hides_password_and_keys_share_one_hash_tag(rb: RedisBackend, prefix: str) -> None:
    other = RedisBackend(f"redis://:secret@127.0.0.1:1/0?prefix={prefix}")
    assert "secret" not in other.url and other.url.startswith("redis://:***@127.0.0.1:1/0")
    insert(rb, "a")
    worker(rb)
    claim(rb)
    keys = list(rb.client.scan_iter(match=f"*{prefix}*"))
    assert keys and all(k.startswith("{" + prefix + "}:") for k in keys)
    assert rb.name == "redis" and "sql" not in rb.features


def test_insert_is_all_or_nothing_on_duplicate_id(rb: RedisBackend) -> None:
    insert(rb, "a")
    with pytest.raises(ConveyorError, match="already exists"):
        insert(rb, "b", "a")
    assert [j.id for j in rb.job_get_many(["a", "b"])] == ["a"]
    big = [f"x{i:04}" for i in range(1200)]
    insert(rb, big[900])
    with pytest.raises(ConveyorError, match="x0900"):
        insert(rb, *big)
    assert len(rb.job_list(JobListParams(limit=2000))) == 2  # nothing of the batch


def test_claim_finish_is_fenced_by_token(rb: RedisBackend) -> None:
    insert(rb, "a", "b")
    worker(rb)
    a, b = sorted(claim(rb), key=lambda j: j.id)
    assert (a.attempt, a.token) == (1, 1)
    rec = rb.job_get_many(["a"])[0]
    assert rec.state is JobState.RUNNING and rec.worker_id == "w1"
    assert rec.lease_until == pytest.approx(a.claimed_at + 30.0)
    refused = rb.job_finish_many(
        [finish("a", a.token, result="42", worker_id="w1", attempt=1, started_at=a.claimed_at),
         finish("b", b.token + 1, result="x")]
    )  # fmt: skip
    assert refused == ["b"]
    done = rb.job_get_many(["a", "b"])
    assert (done[0].state, done[0].result, done[0].worker_id) == (JobState.SUCCEEDED, "42", None)
    assert done[1].state is JobState.RUNNING  # the stale finish did not touch it
    # A second finish of the same claim is refused too: the job left running.
    assert rb.job_finish_many([finish("a", a.token)]) == ["a"]
    (attempt,) = rb.job_attempts("a")
    assert (attempt.outcome, attempt.token, attempt.worker_id, attempt.attempt) == (
        "succeeded", 1, "w1", 1,
    )  # fmt: skip


def test_retry_dead_cancelled_drop(rb: RedisBackend) -> None:
    insert(rb, "r", "d", "c", "x")
    worker(rb)
    jobs = {j.id: j for j in claim(rb)}
    later = time.time() + 60
    err = '{"type": "E", "message": "m", "traceback": ""}'
    assert rb.job_finish_many([
        finish("r", jobs["r"].token, FinishKind.RETRY, error=err, run_at=later),
        finish("d", jobs["d"].token, FinishKind.DEAD, error=err, reason="boom"),
        finish("c", jobs["c"].token, FinishKind.CANCELLED, reason="stop"),
        finish("x", jobs["x"].token, FinishKind.DROP),
    ]) == []  # fmt: skip
    r, d, c = rb.job_get_many(["r", "d", "c", "x"])
    assert (r.state, r.run_at, r.error) == (JobState.SCHEDULED, pytest.approx(later), err)
    assert (d.state, d.reason) == (JobState.DEAD, "boom")
    assert (c.state, c.reason) == (JobState.CANCELLED, "stop")
    assert rb.job_attempts("x") == [] and [a.outcome for a in rb.job_attempts("r")] == ["failed"]
    stats = {s.queue: s.counts for s in rb.queue_stats()}
    assert stats == {"q": {"scheduled": 1, "dead": 1, "cancelled": 1}}


def test_claim_orders_by_priority_then_run_at_and_tops_up(rb: RedisBackend) -> None:
    now = time.time()
    rb.job_insert_many([
        JobInsertParams(id="low-old", task="t", queue="a", payload="{}", priority=0, run_at=now - 9),
        JobInsertParams(id="high", task="t", queue="a", payload="{}", priority=5),
        JobInsertParams(id="low-new", task="t", queue="a", payload="{}", priority=0, run_at=now - 1),
        JobInsertParams(id="neg", task="t", queue="a", payload="{}", priority=-3, run_at=now - 99),
        *(JobInsertParams(id=f"b{i}", task="t", queue="b", payload="{}") for i in range(3)),
    ])  # fmt: skip
    worker(rb)
    first = rb.job_claim(JobClaimParams(worker_id="w1", queues=(("a", 2), ("b", 1)), total=3))
    assert {j.id for j in first} == {"high", "low-old", "b0"}
    assert first[0].id == "high"
    # Top-up: queue a has 2 left but its limit is 1; b fills the rest of total.
    second = rb.job_claim(JobClaimParams(worker_id="w1", queues=(("a", 1), ("b", 1)), total=4))
    assert {j.id for j in second} == {"low-new", "b1", "b2", "neg"}


def test_release_does_not_count_an_attempt(rb: RedisBackend) -> None:
    insert(rb, "a")
    worker(rb)
    (a,) = claim(rb)
    assert rb.job_release_many(JobReleaseParams("w1", [("a", a.token + 7)])) == ["a"]
    assert rb.job_release_many(JobReleaseParams("w1", [("a", a.token)])) == []
    rec = rb.job_get_many(["a"])[0]
    assert (rec.state, rec.attempt, rec.worker_id) == (JobState.QUEUED, 0, None)
    assert [(x.outcome, x.attempt) for x in rb.job_attempts("a")] == [("released", 1)]
    (again,) = claim(rb)
    assert (again.attempt, again.token) == (1, 2)


def test_extend_leases_reports_cancel_and_lost_claims(rb: RedisBackend) -> None:
    insert(rb, "a", "b")
    worker(rb)
    a, _ = sorted(claim(rb), key=lambda j: j.id)
    before = rb.job_get_many(["a"])[0].lease_until
    rb.job_cancel_many(JobCancelParams(["a"], reason="user"))
    assert rb.job_get_many(["a"])[0].state is JobState.RUNNING  # running: only requested
    time.sleep(0.01)
    status = rb.job_extend_leases(JobExtendLeasesParams("w1", [("a", a.token), ("b", 99)]))
    assert [(s.id, s.held, s.cancel_requested) for s in status] == [
        ("a", True, True), ("b", False, False),
    ]  # fmt: skip
    assert rb.job_get_many(["a"])[0].lease_until > before  # type: ignore[operator]


def test_cancel_queued_and_retry(rb: RedisBackend) -> None:
    insert(rb, "a")
    insert(rb, "s", run_at=time.time() + 60)
    out = rb.job_cancel_many(JobCancelParams(["a", "s", "missing"]))
    assert [(r.id, r.state) for r in out] == [("a", JobState.CANCELLED), ("s", JobState.CANCELLED)]
    assert claim(rb) == []
    retried = rb.job_retry_many(JobRetryParams(["a"]))
    assert (retried[0].state, retried[0].attempt, retried[0].finished_at) == (
        JobState.QUEUED, 0, None,
    )  # fmt: skip
    assert rb.client.ttl(rb.keys.job("a")) == -1  # the result TTL is gone again
    worker(rb)
    assert [j.id for j in claim(rb)] == ["a"]


def test_rescue_dead_worker_by_id_and_cap_to_dead(rb: RedisBackend) -> None:
    insert(rb, "a", max_attempts=10)
    worker(rb)
    for round_ in range(1, 4):
        (job,) = claim(rb)
        rescued = rb.job_rescue(JobRescueParams(["w1"], stale_before=time.time() - 60))
        assert [(r.job_id, r.worker_id, r.state) for r in rescued] == [("a", "w1", JobState.QUEUED)]
        assert rb.job_get_many(["a"])[0].rescues == round_
        # The claim is gone: the old worker's finish is refused.
        assert rb.job_finish_many([finish("a", job.token)]) == ["a"]
        worker(rb)
    claim(rb)
    (last,) = rb.job_rescue(JobRescueParams(["w1"], stale_before=time.time() - 60, max_rescues=3))
    assert last.state is JobState.DEAD
    rec = rb.job_get_many(["a"])[0]
    assert (rec.state, rec.reason, rec.worker_id) == (JobState.DEAD, "worker lost", None)
    assert [a.outcome for a in rb.job_attempts("a")] == ["lost"] * 4


def test_rescue_never_touches_a_live_worker(rb: RedisBackend) -> None:
    insert(rb, "a", "b")
    worker(rb, "live")
    claim(rb, 1, worker_id="live")
    worker(rb, "old")
    claim(rb, 1, worker_id="old")
    # Both heartbeats are fresh: nothing is rescued.
    assert rb.job_rescue(JobRescueParams([], stale_before=time.time() - 30)) == []
    # A stale_before in the future makes every heartbeat stale: the check runs in the
    # script against the server clock, so use a heartbeat-free worker instead.
    rb.worker_deregister("old")
    rescued = rb.job_rescue(JobRescueParams([], stale_before=time.time() - 30))
    assert [(r.worker_id, r.state) for r in rescued] == [("old", JobState.QUEUED)]
    assert [w.id for w in rb.worker_list()] == ["live"]


def test_rescue_stale_heartbeat_and_attempts_spent(rb: RedisBackend) -> None:
    insert(rb, "a", max_attempts=1)
    worker(rb)
    claim(rb)
    assert rb.job_rescue(JobRescueParams([], stale_before=time.time() - 5)) == []
    time.sleep(0.05)
    (r,) = rb.job_rescue(JobRescueParams([], stale_before=time.time() - 0.01))
    assert r.state is JobState.DEAD  # attempt 1 of max 1: no attempt left
    assert rb.worker_list() == []  # a stale worker holding nothing is forgotten


def test_scheduled_jobs_are_promoted_by_claim(rb: RedisBackend) -> None:
    insert(rb, "later", run_at=time.time() + 0.2)
    worker(rb)
    assert rb.job_get_many(["later"])[0].state is JobState.SCHEDULED
    assert claim(rb) == []
    rb.client.delete(rb.keys.wake)  # the insert's wake token: already acted on
    started = time.monotonic()
    rb.work_wait(5.0)  # returns at the due time, not after 5 s
    assert time.monotonic() - started < 1.0
    time.sleep(0.05)
    assert [j.id for j in claim(rb)] == ["later"]
    insert(rb, "soon", run_at=time.time() + 0.05)
    time.sleep(0.1)
    assert rb.job_promote_due() == 1


def test_work_wait_wakes_for_a_sooner_scheduled_job(rb: RedisBackend) -> None:
    insert(rb, "far", run_at=time.time() + 60)
    rb.client.delete(rb.keys.wake)
    timer = threading.Timer(0.1, insert, (rb, "near"), {"run_at": time.time() + 0.3})
    timer.start()
    started = time.monotonic()
    rb.work_wait(3.0)  # woken by the insert
    rb.work_wait(3.0)  # then sleeps only until "near" is due
    timer.join()
    assert 0.25 < time.monotonic() - started < 1.5


def test_work_wait_wakes_on_insert(rb: RedisBackend) -> None:
    rb.work_wait(0.01)  # drain
    rb.client.delete(rb.keys.wake)
    started = time.monotonic()
    rb.work_wait(0.2)
    assert 0.15 < time.monotonic() - started < 1.0
    timer = threading.Timer(0.2, insert, (rb, "a"))
    timer.start()
    started = time.monotonic()
    rb.work_wait(5.0)
    assert time.monotonic() - started < 2.0
    timer.join()


def test_job_wait_blocks_until_finished(rb: RedisBackend) -> None:
    insert(rb, "a")
    worker(rb)
    (a,) = claim(rb)
    assert rb.job_wait(JobWaitParams("a", timeout=0.2)) is None
    timer = threading.Timer(0.3, rb.job_finish_many, ([finish("a", a.token, result="1")],))
    timer.start()
    started = time.monotonic()
    results = []
    waiters = [
        threading.Thread(target=lambda: results.append(rb.job_wait(JobWaitParams("a", 10.0))))
        for _ in range(3)
    ]
    for t in waiters:
        t.start()
    for t in waiters:
        t.join()
    timer.join()
    assert time.monotonic() - started < 2.0  # woken by Redis, well before any slice ends
    assert [r.state for r in results if r] == [JobState.SUCCEEDED] * 3
    with pytest.raises(JobNotFound):
        rb.job_wait(JobWaitParams("missing", 0.1))


def test_results_expire_and_leave_the_indexes(redis_url: str, prefix: str) -> None:
    rb = RedisBackend(with_prefix(redis_url, prefix) + "&result_ttl=1")
    insert(rb, "a", "b")
    worker(rb)
    (a, b) = claim(rb)
    rb.job_finish_many([finish(a.id, a.token), finish(b.id, b.token, FinishKind.DEAD)])
    assert 0 < rb.client.ttl(rb.keys.job("a")) <= 1
    assert 0 < rb.client.ttl(rb.keys.attempts("a")) <= 1
    assert len(rb.job_list(JobListParams())) == 2
    time.sleep(2.1)
    assert rb.job_get_many(["a", "b"]) == []
    rb.job_rescue(JobRescueParams([], stale_before=time.time() - 60))  # prunes in passing
    assert rb.client.zcard(rb.keys.jobs) == 0 and rb.client.zcard(rb.keys.expiry) == 0
    assert rb.job_list(JobListParams()) == []
    assert rb.queue_stats() == []
    rb.close()
    delete_prefix(redis_url, prefix)


def test_job_list_filters_and_pages_by_id(rb: RedisBackend) -> None:
    insert(rb, *(f"j{i:02}" for i in range(12)))
    insert(rb, "k1", queue="other")
    page = rb.job_list(JobListParams(queue="q", limit=5))
    assert [r.id for r in page] == [f"j{i:02}" for i in range(5)]
    page = rb.job_list(JobListParams(queue="q", after_id=page[-1].id, limit=100))
    assert len(page) == 7
    assert [r.id for r in rb.job_list(JobListParams(queue="other"))] == ["k1"]
    assert rb.job_list(JobListParams(state=JobState.RUNNING)) == []
    assert len(rb.job_list(JobListParams(task="t"))) == 13
    assert rb.job_delete_many(["j00", "k1", "nope"]) == 2
    (stats,) = rb.queue_stats()
    assert (stats.queue, stats.counts) == ("q", {"queued": 11})
    assert stats.oldest_ready_age is not None and 0 <= stats.oldest_ready_age < 5


def test_worker_heartbeat_keeps_last_fetch(rb: RedisBackend) -> None:
    info = worker(rb)
    rb.worker_heartbeat(WorkerHeartbeatParams(worker=info, last_fetch_at=123.5, running=3))
    rb.worker_heartbeat(WorkerHeartbeatParams(worker=info, running=2))
    (w,) = rb.worker_list()
    assert (w.id, w.last_fetch_at, w.running, w.queues) == ("w1", 123.5, 2, ("q",))
    assert w.heartbeat_at == pytest.approx(time.time(), abs=5)
    rb.worker_deregister("w1")
    assert rb.worker_list() == []


def test_expired_lease_is_rescued_even_with_a_live_heartbeat(rb: RedisBackend) -> None:
    insert(rb, "a", lease=0.05)
    worker(rb)
    claim(rb)
    time.sleep(0.15)
    worker(rb)  # fresh heartbeat: only the lease says the claim is lost
    (r,) = rb.job_rescue(JobRescueParams([], stale_before=time.time() - 0.05))
    assert (r.job_id, r.state) == ("a", JobState.QUEUED)
    assert [w.id for w in rb.worker_list()] == ["w1"]  # a live worker is kept


def test_waiters_wake_on_rescue_cancel_and_delete(rb: RedisBackend) -> None:
    insert(rb, "lost", queue="r", max_attempts=1)
    insert(rb, "queued", "gone")
    worker(rb)
    assert [j.id for j in claim(rb, 1, queue="r")] == ["lost"]
    results: dict[str, object] = {}

    def wait(job_id: str) -> None:
        try:
            results[job_id] = rb.job_wait(JobWaitParams(job_id, 10.0))
        except JobNotFound as exc:
            results[job_id] = exc

    threads = [threading.Thread(target=wait, args=(i,)) for i in ("lost", "queued", "gone")]
    for t in threads:
        t.start()
    time.sleep(0.2)
    started = time.monotonic()
    rb.job_rescue(JobRescueParams(["w1"], stale_before=time.time() - 60))
    rb.job_cancel_many(JobCancelParams(["queued"]))
    rb.job_delete_many(["gone"])
    for t in threads:
        t.join()
    assert time.monotonic() - started < 2.0
    assert results["lost"].state is JobState.DEAD  # type: ignore[union-attr]
    assert results["queued"].state is JobState.CANCELLED  # type: ignore[union-attr]
    assert isinstance(results["gone"], JobNotFound)


def test_unwatched_jobs_finish_without_notification_keys(rb: RedisBackend) -> None:
    insert(rb, "a")
    worker(rb)
    (a,) = claim(rb)
    rb.job_finish_many([finish("a", a.token)])
    assert rb.client.exists(rb.keys.done("a")) == 0
    # A wait that starts after the finish returns at once from the hash.
    assert rb.job_wait(JobWaitParams("a", 5.0)).state is JobState.SUCCEEDED  # type: ignore[union-attr]


def test_concurrent_claimers_never_share_a_job(redis_url: str, prefix: str) -> None:
    url = with_prefix(redis_url, prefix)
    seed = RedisBackend(url)
    seed.job_insert_many(
        [JobInsertParams(id=f"j{i:05}", task="t", queue="q", payload="{}") for i in range(3000)]
    )
    got: dict[str, list[str]] = {}

    def run(worker_id: str) -> None:
        backend = RedisBackend(url)
        mine = got.setdefault(worker_id, [])
        while jobs := claim(backend, 50, worker_id=worker_id):
            mine += [j.id for j in jobs]
            backend.job_finish_many([finish(j.id, j.token) for j in jobs])
        backend.close()

    threads = [threading.Thread(target=run, args=(f"w{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [i for ids in got.values() for i in ids]
    assert len(claimed) == len(set(claimed)) == 3000
    assert {s.queue: s.counts for s in seed.queue_stats()} == {"q": {"succeeded": 3000}}
    seed.close()
    delete_prefix(redis_url, prefix)


def test_wait_ignores_a_stale_notification_of_a_reused_id(rb: RedisBackend) -> None:
    insert(rb, "a")
    rb.job_wait(JobWaitParams("a", 0.01))  # watched
    rb.job_delete_many(["a"])  # notifies done:a
    insert(rb, "a")  # same id again, queued
    started = time.monotonic()
    assert rb.job_wait(JobWaitParams("a", 0.3)) is None  # waits, does not spin or return
    assert 0.25 < time.monotonic() - started < 2.0
