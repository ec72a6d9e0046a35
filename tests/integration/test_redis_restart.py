"""Redis restarts (AOF on) in the middle of a run: a worker-like loop built on the
backend and ``call_with_backoff`` reconnects and every job still completes."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

import pytest

from conveyor.backends.base import (
    JobClaimParams,
    JobFinishParams,
    JobInsertParams,
    JobRescueParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.backends.redis.backend import RedisBackend
from conveyor.backends.retrying import call_with_backoff
from conveyor.errors import BackendUnavailable
from conveyor.states import FinishKind
from tests.support.redis_server import RedisServer, with_prefix

pytestmark = [pytest.mark.redis, pytest.mark.slow]

JOBS = 3000


def worker_loop(rb: RedisBackend, stop: threading.Event, outages: list[str]) -> None:
    me = WorkerInfo(
        id="w1", host="h", pid=1, pid_started=None, started_at=time.time(), queues=("q",),
        concurrency=50, pool="thread",
    )  # fmt: skip

    def note(exc: BackendUnavailable, delay: float) -> None:
        outages.append(str(exc))

    def retrying(fn):  # type: ignore[no-untyped-def]
        return call_with_backoff(fn, base=0.05, cap=0.5, on_retry=note)

    retrying(lambda: rb.worker_heartbeat(WorkerHeartbeatParams(worker=me)))
    last_rescue = 0.0
    while not stop.is_set():
        jobs = retrying(lambda: rb.job_claim(JobClaimParams("w1", (("q", 50),), 50)))
        if jobs:
            done = [
                JobFinishParams(id=j.id, token=j.token, kind=FinishKind.SUCCEEDED) for j in jobs
            ]
            retrying(lambda done=done: rb.job_finish_many(done))  # refused after a lost reply: fine
        if time.monotonic() - last_rescue > 0.3:
            # A claim whose reply was lost in the restart is running under an expired
            # lease: the rescuer gives it back (as it would for a crashed worker).
            retrying(lambda: rb.worker_heartbeat(WorkerHeartbeatParams(worker=me)))
            retrying(lambda: rb.job_rescue(JobRescueParams([], time.time() - 0.5, 10)))
            last_rescue = time.monotonic()
        if not jobs:
            retrying(lambda: rb.work_wait(0.1))


def test_jobs_complete_across_a_redis_restart(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", aof=True).start()
    rb = RedisBackend(with_prefix(server.url, "restart"))
    try:
        rb.job_insert_many(
            [JobInsertParams(id=f"j{i:05}", task="t", queue="q", payload="{}", lease=0.5)
             for i in range(JOBS)]
        )  # fmt: skip
        stop = threading.Event()
        outages: list[str] = []
        thread = threading.Thread(target=worker_loop, args=(rb, stop, outages))
        thread.start()
        time.sleep(0.1)
        server.restart()  # SIGTERM: the AOF is flushed, the script cache is not kept
        deadline = time.monotonic() + 30
        counts: dict[str, int] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(BackendUnavailable):
                counts = {s.queue: s.counts for s in rb.queue_stats()}.get("q", {})
            if counts == {"succeeded": JOBS}:
                break
            time.sleep(0.1)
        stop.set()
        thread.join(10)
        assert counts == {"succeeded": JOBS}
        assert outages, "the restart should have been noticed"
    finally:
        rb.close()
        server.stop()
