"""PostgreSQL restarts in the middle of a run: a real worker (threads) backs off while
the server is down, resumes when it is back, and every job ends succeeded — none lost,
none run into a second success. The cluster is this test's own (it is stopped)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

import conveyor
from conveyor.errors import BackendUnavailable
from conveyor.states import JobState
from tests.support.postgres_server import PostgresServer, with_schema

pytestmark = pytest.mark.slow

JOBS = 300


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    server = PostgresServer().init().start()
    yield server
    with contextlib.suppress(RuntimeError):  # already down: the test failed meanwhile
        server.stop("immediate")
    server.remove()


def _states(app: conveyor.App, ids: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    try:
        for job in app.backend.job_get_many(ids):
            counts[job.state.value] = counts.get(job.state.value, 0) + 1
    except BackendUnavailable:
        pass  # asked while the server is down: ask again
    return counts


def _wait_for_succeeded(app: conveyor.App, ids: list[str], at_least: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _states(app, ids).get(JobState.SUCCEEDED.value, 0) < at_least:
        assert time.monotonic() < deadline, f"stuck at {_states(app, ids)}"
        time.sleep(0.1)


def test_a_worker_rides_out_a_server_restart(own_server: PostgresServer) -> None:
    url = with_schema(own_server.url, "restart")
    app = conveyor.App(url, heartbeat_interval=0.2, heartbeat_ttl=3.0, rescue_interval=0.3)
    runs: dict[int, int] = {}

    @app.task(name="work", lease=2.0, max_attempts=20)
    def work(n: int) -> int:
        runs[n] = runs.get(n, 0) + 1
        time.sleep(0.002)
        return n

    ids = [j.id for j in work.enqueue_many([(n,) for n in range(JOBS)])]
    worker = conveyor.Worker(app, concurrency=4).start()
    try:
        _wait_for_succeeded(app, ids, 20, timeout=60)
        own_server.stop("fast")  # every connection is cut, the pool's and the listener's
        time.sleep(1.0)
        own_server.start()
        _wait_for_succeeded(app, ids, JOBS, timeout=90)
    finally:
        worker.stop(30)
    states = _states(app, ids)
    assert states == {JobState.SUCCEEDED.value: JOBS}
    assert sorted(runs) == list(range(JOBS))  # every job ran (a cut finish may run twice)
    app.close()
