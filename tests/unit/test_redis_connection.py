"""Connection loss: Redis going away raises BackendUnavailable, and every call works
again once it is back, including scripts that a restart dropped from its cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from conveyor.backends.base import JobClaimParams, JobInsertParams, JobWaitParams
from conveyor.backends.redis.backend import RedisBackend
from conveyor.backends.retrying import call_with_backoff
from conveyor.errors import BackendUnavailable
from tests.support.redis_server import RedisServer, with_prefix

pytestmark = pytest.mark.redis


def job(job_id: str) -> JobInsertParams:
    return JobInsertParams(id=job_id, task="t", queue="q", payload="{}")


def test_outage_raises_then_recovers_after_restart(restartable_redis: RedisServer) -> None:
    rb = RedisBackend(with_prefix(restartable_redis.url, "outage"))
    rb.job_insert_many([job("before")])
    restartable_redis.kill()
    with pytest.raises(BackendUnavailable, match="unavailable"):
        rb.job_insert_many([job("during")])
    with pytest.raises(BackendUnavailable):
        rb.job_claim(JobClaimParams(worker_id="w", queues=(("q", 1),), total=1))
    with pytest.raises(BackendUnavailable):
        rb.job_wait(JobWaitParams("before", 1.0))
    # No persistence: the restarted server is empty and its script cache too.
    restartable_redis.start()
    rb.job_insert_many([job("after")])  # EVALSHA -> NOSCRIPT -> reloaded
    (claimed,) = rb.job_claim(JobClaimParams(worker_id="w", queues=(("q", 1),), total=1))
    assert claimed.id == "after"
    rb.close()


def test_aof_restart_keeps_jobs(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "aof", aof=True).start()
    try:
        rb = RedisBackend(with_prefix(server.url, "aof"))
        rb.job_insert_many([job("a"), job("b")])
        server.restart()
        attempts: list[float] = []
        claimed = call_with_backoff(
            lambda: rb.job_claim(JobClaimParams(worker_id="w", queues=(("q", 5),), total=5)),
            attempts=20,
            on_retry=lambda exc, delay: attempts.append(delay),
        )
        assert sorted(j.id for j in claimed) == ["a", "b"]
        rb.close()
    finally:
        server.stop()


def test_unreachable_at_first_use() -> None:
    rb = RedisBackend("redis://127.0.0.1:1/0?prefix=nowhere")  # opening never connects
    with pytest.raises(BackendUnavailable, match=r"redis://127\.0\.0\.1:1/0"):
        rb.queue_stats()
    with pytest.raises(BackendUnavailable):
        call_with_backoff(rb.worker_list, attempts=2, sleep=lambda s: None)


def test_unreachable_cluster_is_unavailable() -> None:
    with pytest.raises(BackendUnavailable, match="cannot be connected"):
        RedisBackend("redis://127.0.0.1:1/0?cluster=1&prefix=nowhere")
