"""Real ``conveyor worker`` processes on a test Redis (the signal and rescue behaviours
of every backend are in test_worker_process.py): a Redis restart with AOF in the
middle of a run (the worker reconnects, keeps its heartbeat and keeps consuming), and
enqueue during an outage raising ``conveyor.BackendUnavailable``."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from subprocess import Popen

import pytest

import conveyor
from conveyor.backends.base import JobCountParams, JobFilter
from conveyor.states import JobState
from tests.integration import app_tasks
from tests.integration.conftest import wait_for
from tests.support.redis_server import RedisServer, with_prefix

pytestmark = [pytest.mark.redis, pytest.mark.slow]

Spawn = Callable[..., Popen[str]]


def _app(url: str) -> conveyor.App:
    app_tasks.app.url = url
    app_tasks.app.close()
    return app_tasks.app


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _succeeded(app: conveyor.App) -> int:
    f = JobFilter(states=(JobState.SUCCEEDED,))
    return app.backend.job_count(JobCountParams(f))


def test_worker_survives_a_redis_restart_with_aof(spawn_worker: Spawn, tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", aof=True).start()
    try:
        url = with_prefix(server.url, "restart")
        app = _app(url)
        jobs = [app_tasks.sleepy.enqueue(0.05) for _ in range(60)]
        proc = spawn_worker("-c", "4", url=url)
        wait_for(lambda: _succeeded(app) >= 5, what="the run to get going")
        server.restart()  # while busy: SIGTERM flushes the AOF; claims and finishes fail
        wait_for(lambda: _succeeded(app) == 60, timeout=30, what="every job to succeed")
        assert all(j.refresh().state is JobState.SUCCEEDED for j in jobs)
        # While idle (blocked waiting for work): the wait fails and must not end the loop.
        time.sleep(0.5)
        server.stop()
        with pytest.raises(conveyor.BackendUnavailable):
            app_tasks.noop.enqueue(0)  # a clear conveyor error, not a redis-py one
        time.sleep(1.0)
        restarted = time.time()
        server.start()
        later = [app_tasks.noop.enqueue(i) for i in range(10)]  # it keeps consuming
        assert [j.result(timeout=30) for j in later] == list(range(10))
        # The heartbeat service came back too: the worker is listed with a fresh beat.
        wait_for(
            lambda: any(w.heartbeat_at > restarted for w in app.backend.worker_list()),
            what="a heartbeat after the restart",
        )
        assert proc.poll() is None
    finally:
        _app("sqlite:///:memory:")
        server.stop()
