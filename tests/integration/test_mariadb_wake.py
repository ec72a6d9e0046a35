"""An idle MariaDB worker is woken by a write from another process, well before its
next poll: an event sent to a parked job, a plain enqueue. The
wake is ``KILL QUERY`` of the waiter's sleep (``backends/mariadb/wake.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest

import conveyor
from conveyor.backends.mariadb import backend as mariadb_backend
from conveyor.backends.mariadb import wake
from conveyor.backends.mariadb.wake import IdleWaiter, lock_names
from conveyor.states import JobState
from conveyor.worker import fetching
from tests.support import mariadb_server

SLOW_POLL = 2.0

#: The other process: each second, one send to a parked job, then one enqueue; it
#: prints when each write returned (its commit and the wake were done by then).
_OTHER = """
import json, sys, time
import conveyor
app = conveyor.App(sys.argv[1])
stamp = app.task(name="wake.stamp")(lambda: time.time())
times = []
for job_id in sys.argv[2:]:
    time.sleep(1.0)  # the worker is idle by then, asleep in its wait
    app.job(job_id).send("go")
    times.append(["send", job_id, time.time()])
    time.sleep(1.0)
    job = stamp.enqueue()
    times.append(["enqueue", job.id, time.time()])
print(json.dumps(times))
"""


@contextmanager
def _worker(app: conveyor.App) -> Iterator[conveyor.Worker]:
    worker = conveyor.Worker(app, concurrency=2)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(30)


def _until(predicate: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_write_from_another_process_wakes_an_idle_worker(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = mariadb_server.isolated_url(request)
    # Polls 2 s apart: a write found by polling waits 1 s on average, so the test fails
    # unless the wake works (all three under 0.5 s by chance: 1 in 64).
    monkeypatch.setattr(fetching, "IDLE_WAIT", SLOW_POLL)
    monkeypatch.setattr(mariadb_backend, "POLL_MAX", SLOW_POLL)
    app = conveyor.App(url)

    @app.task(name="wake.waiter")
    def waiter() -> float:
        conveyor.wait_for("go", timeout=600)
        return time.time()

    app.task(name="wake.stamp")(lambda: time.time())
    parked = waiter.enqueue_many([()] * 3)
    try:
        with _worker(app):
            _until(lambda: all(j.status is JobState.WAITING for j in parked), 30)
            done = subprocess.run(
                [sys.executable, "-c", _OTHER, url, *[j.id for j in parked]],
                capture_output=True, text=True, timeout=120, check=True,
            )  # fmt: skip
            latencies: dict[str, list[float]] = {"send": [], "enqueue": []}
            for kind, job_id, written in json.loads(done.stdout):
                ran = float(app.job(job_id).result(timeout=30))
                latencies[kind].append(ran - written)
    finally:
        app.close()
    for kind, found in latencies.items():
        assert max(found) < SLOW_POLL / 4, (kind, found)


def test_the_lock_names_are_per_database() -> None:
    assert lock_names("a") != lock_names("b")
    assert len(set(lock_names("a"))) == len(lock_names("a"))


def test_a_writer_that_may_not_wake_the_worker_leaves_it_to_poll(
    request: pytest.FixtureRequest,
) -> None:
    """Another database user may not KILL the worker's query (error 1095): the enqueue
    still succeeds, the waiter sleeps its poll out, and that id is not tried again."""
    url = mariadb_server.isolated_url(request)
    base = request.getfixturevalue("mariadb_url")
    parts = urlsplit(url)
    user = f"w_{uuid.uuid4().hex[:12]}"
    mariadb_server.execute(base, f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
    request.addfinalizer(lambda: mariadb_server.execute(base, f"DROP USER '{user}'@'%'"))
    mariadb_server.execute(base, f"GRANT ALL PRIVILEGES ON {parts.path[1:]}.* TO '{user}'@'%'")
    limited = urlunsplit(parts._replace(netloc=f"{user}:pw@{parts.hostname}:{parts.port}"))
    waiting = conveyor.App(url)
    waiter = IdleWaiter(waiting.backend.target)  # type: ignore[attr-defined]
    woken: list[bool] = []
    thread = threading.Thread(target=lambda: woken.append(waiter.wait(1.5)))
    writer = conveyor.App(limited)
    try:
        thread.start()
        time.sleep(0.5)  # asleep, holding its slot
        writer.task(name="wake.stamp")(lambda: None).enqueue()  # no error: it polls
        thread.join(10)
        assert woken == [False]  # slept the whole 1.5 s, not woken
        target = waiter.target
        assert (target.host, target.port, waiter._conn.thread_id()) in wake._refused
    finally:
        waiter.close()
        writer.close()
        waiting.close()


def test_a_result_waiter_and_a_sleeping_job_need_no_poll(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Polls 2 s apart: ``job.result()`` returns at the job's finish (its lock rung),
    and a durable sleep resumes at its wake time (the idle worker's sleep ends when the
    next scheduled job comes due), each well under a poll."""
    url = mariadb_server.isolated_url(request)
    monkeypatch.setattr(fetching, "IDLE_WAIT", SLOW_POLL)
    monkeypatch.setattr(mariadb_backend, "POLL_MAX", SLOW_POLL)
    monkeypatch.setattr(mariadb_backend, "POLL_FIRST", SLOW_POLL)
    app = conveyor.App(url)

    @app.task(name="wake.slow")
    def slow() -> float:
        time.sleep(0.3)
        return time.time()

    @app.task(name="wake.sleeper")
    def sleeper() -> float:
        conveyor.sleep(0.7)
        return time.time()

    try:
        with _worker(app):
            job = slow.enqueue()
            ended = float(job.result(timeout=30))
            result_late = time.time() - ended
            sleeping = sleeper.enqueue()
            resumed = float(sleeping.result(timeout=30))
            woke_at = float(sleeping.steps()[0].result or "0")
    finally:
        app.close()
    assert result_late < SLOW_POLL / 4, result_late
    assert 0 <= resumed - woke_at < SLOW_POLL / 4, resumed - woke_at
