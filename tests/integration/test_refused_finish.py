"""A result the store refuses to write (over its size limit) ends the job dead at once:
left running, it would be rescued and run again into the same refusal, and in the
one-slot mode (concurrency 1) the refused write stopped the worker.

Real stores with a lowered size limit stand in for a result too large for any store
(their defaults: 1 GB for SQLite, 512 MB for Redis): SQLite's ``SQLITE_LIMIT_LENGTH`` on
the backend's connection, a redis-server of the test's own with ``proto-max-bulk-len``
at its 1 MB minimum. The refusals are the stores' own (``sqlite3.DataError``, a Redis
``ResponseError``); nothing is mocked. (PostgreSQL's limit, 1 GB of text, cannot be
lowered.)"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from conveyor.worker.worker import Worker
from tests.integration.conftest import wait_for
from tests.support.redis_server import RedisServer

#: (store URL, a function lowering the app's store's limit, a result size over it)
Limited = tuple[str, Callable[[conveyor.App], None], int]


def _sqlite_limit(app: conveyor.App) -> None:
    backend = app.backend
    assert hasattr(backend, "connection") and hasattr(backend, "lock")
    with backend.lock:
        backend.connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100_000)


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def limited(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Limited]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'jobs.db'}", _sqlite_limit, 200_000
        return
    server = RedisServer(tmp_path / "redis").start()
    try:
        import redis

        client = redis.Redis(port=server.port)
        client.config_set("proto-max-bulk-len", 1024 * 1024)
        client.close()
        yield server.url, lambda app: None, 2 * 1024 * 1024
    finally:
        server.stop()


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_result_the_store_refuses_ends_dead_at_once(limited: Limited, concurrency: int) -> None:
    url, lower_limit, size = limited
    app = conveyor.App(url)
    runs: list[int] = []

    @app.task(max_attempts=5)
    def big(n: int) -> str:
        runs.append(conveyor.current_job().attempt)
        return "x" * n

    @app.task
    def small() -> int:
        return 1

    lower_limit(app)
    refused, fine = big.enqueue(size), big.enqueue(10)
    after = small.enqueue()
    worker = Worker(app, concurrency=concurrency).start()
    try:
        wait_for(lambda: refused.refresh().state is JobState.DEAD, what="the refused job dead")
        assert fine.result(timeout=10) == "x" * 10  # the others are written as usual
        assert after.result(timeout=10) == 1  # and the worker goes on
        assert worker.failure is None
    finally:
        worker.stop(timeout=10)
    try:
        assert runs == [1, 1]  # each ran once: never retried, never rescued
        record = refused.refresh()
        assert record.reason == "not retried: running it again would be refused the same way"
        assert record.result is None
        error = json.loads(record.error or "{}")
        assert error["type"] == "FinishRefused"
        assert error["message"].startswith(
            f"the store refused to write the result ({size + 2:,} characters): "
        )
        assert [a.outcome for a in refused.attempts()] == ["dead"]
    finally:
        app.close()
