"""One malformed ``workers`` row must not stop the rescuer (issue 21), on every store.

Real worker processes: the first runs a long job and is SIGKILLed; the second, whose own
row and one more row were then corrupted by hand (a ``queues`` that is not JSON), must
still rescue that job and run it to the end, logging each odd row once, not every tick.
Before the fix ``worker_list()`` raised inside the rescuer's tick, every tick, and the
killed worker's job stayed ``running`` forever.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import conveyor
from tests.integration import app_tasks
from tests.integration.conftest import wait_for
from tests.support.backends import BACKEND_URLS
from tests.support.odd_rows import worker_row

Spawn = Callable[..., subprocess.Popen[str]]


@pytest.fixture(params=sorted(BACKEND_URLS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return BACKEND_URLS[request.param](request, tmp_path)


def _app(url: str) -> conveyor.App:
    app_tasks.app.url = url
    app_tasks.app.close()
    return app_tasks.app


# serial: the first worker must still be running its 4-second job when it is killed.
@pytest.mark.serial
def test_a_malformed_worker_row_does_not_stop_the_rescuer(
    url: str, spawn_worker: Spawn, tmp_path: Path
) -> None:
    app = _app(url)
    marker = tmp_path / "started"
    # Long enough to still run when the second worker is up and its row corrupted.
    job = app_tasks.sleepy.enqueue(4.0, str(marker))
    first = spawn_worker("-c", "1", url=url)
    wait_for(lambda: marker.exists(), what="the job to start in the first worker")
    second = spawn_worker("-c", "1", url=url)

    def second_id() -> str | None:
        return next((w.id for w in app.backend.worker_list() if w.pid == second.pid), None)

    wait_for(lambda: second_id() is not None, what="the second worker to register")
    rescuer_row = second_id()
    assert rescuer_row is not None
    worker_row(url, rescuer_row, queues="not json")  # its own row: rewritten by no beat
    worker_row(url, "hand-written", queues="[broken")
    odd = {w.id: w.problems for w in app.backend.worker_list() if w.problems}
    assert set(odd) == {rescuer_row, "hand-written"}

    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert job.result(timeout=30) == second.pid  # rescued, then run by the second worker
    assert job.refresh().rescues == 1
    assert [a.outcome for a in job.attempts()] == ["lost", "succeeded"]

    second.send_signal(signal.SIGTERM)
    out, err = second.communicate(timeout=15)
    logged = (out + err).splitlines()
    for worker_id in odd:
        skipped = [line for line in logged if f"skipping worker row {worker_id!r}" in line]
        assert len(skipped) == 1, logged  # once, though the rescuer ticked every 0.2 s
    assert "queues is not a JSON list of names" in skipped[0]
    assert not [line for line in logged if "Traceback" in line], logged


def test_the_job_of_a_killed_worker_whose_own_row_is_malformed_is_rescued_by_heartbeat(
    url: str, spawn_worker: Spawn, tmp_path: Path
) -> None:
    """The pid of an odd row is not believed, so the dead worker is found the other way:
    its heartbeat goes stale (heartbeat_ttl is 3 s in app_tasks)."""
    app = _app(url)
    marker = tmp_path / "started"
    job = app_tasks.sleepy.enqueue(4.0, str(marker))
    first = spawn_worker("-c", "1", url=url)
    wait_for(lambda: marker.exists(), what="the job to start in the first worker")
    (victim,) = [w.id for w in app.backend.worker_list() if w.pid == first.pid]
    worker_row(url, victim, queues="not json")
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    second = spawn_worker("-c", "1", url=url)
    assert job.result(timeout=30) == second.pid
    assert [a.outcome for a in job.attempts()] == ["lost", "succeeded"]
