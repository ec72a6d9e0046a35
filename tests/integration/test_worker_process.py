"""Real worker processes, real signals, on every backend: rescue after SIGKILL, release on
SIGTERM, prefetch, a second INT, quiet and stack dumps; on SQLite also the file's mode and
four processes on one file without "database is locked"."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from tests.integration import app_tasks
from tests.integration.conftest import ROOT, wait_for, worker_env
from tests.support.backends import BACKEND_URLS

Spawn = Callable[..., subprocess.Popen[str]]


@pytest.fixture(params=sorted(BACKEND_URLS))
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store on each backend for the worker processes of one test."""
    return BACKEND_URLS[request.param](request, tmp_path)


def _app(url: str) -> conveyor.App:
    app_tasks.app.url = url
    app_tasks.app.close()
    return app_tasks.app


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_sigkill_mid_job_is_rescued_and_completed_by_another_worker(
    url: str, spawn_worker: Spawn, tmp_path: Path
) -> None:
    _app(url)
    marker = tmp_path / "started"
    job = app_tasks.sleepy.enqueue(1.0, str(marker))
    first = spawn_worker("-c", "2", url=url)
    wait_for(lambda: len(_lines(marker)) == 1, what="first attempt to start")
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    second = spawn_worker("-c", "2", url=url)
    assert job.result(timeout=30) == second.pid
    record = job.refresh()
    assert record.attempt == 2 and record.rescues == 1
    assert [a.outcome for a in job.attempts()] == ["lost", "succeeded"]
    assert [int(line.split()[1]) for line in _lines(marker)] == [1, 2]


def test_sigkill_one_of_two_workers_the_other_finishes_everything(
    url: str, spawn_worker: Spawn, tmp_path: Path
) -> None:
    _app(url)
    marker = tmp_path / "started"
    slow = app_tasks.sleepy.enqueue(1.0, str(marker))
    first = spawn_worker("-c", "1", url=url)
    wait_for(lambda: len(_lines(marker)) == 1, what="the first attempt to start")
    second = spawn_worker("-c", "2", url=url)
    quick = [app_tasks.noop.enqueue(i) for i in range(20)]
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    # Same host, dead PID: the second worker's rescuer proves it dead and requeues.
    assert slow.result(timeout=20) == second.pid
    assert [j.result(timeout=10) for j in quick] == list(range(20))
    assert [a.outcome for a in slow.attempts()] == ["lost", "succeeded"]
    assert slow.refresh().rescues == 1
    assert second.poll() is None


def test_sigterm_lets_short_jobs_finish_and_releases_long_ones(
    url: str, spawn_worker: Spawn, tmp_path: Path
) -> None:
    app = _app(url)
    marker = tmp_path / "started"
    short = app_tasks.sleepy.enqueue(0.3, str(marker))
    long = app_tasks.sleepy.enqueue(60, str(marker))
    proc = spawn_worker("-c", "2", "--shutdown-timeout", "1.5", url=url)
    wait_for(lambda: len(_lines(marker)) == 2, what="both jobs to start")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    assert short.refresh().state is JobState.SUCCEEDED
    record = long.refresh()
    assert record.state is JobState.QUEUED and record.attempt == 0 and record.worker_id is None
    assert app.backend.worker_list() == []


def test_prefetched_jobs_of_a_killed_worker_are_rescued_and_sigterm_releases_them(
    url: str, spawn_worker: Spawn, tmp_path: Path
) -> None:
    """`--prefetch`: jobs the worker holds but never started come back both ways: after
    SIGKILL through the rescuer, after SIGTERM at once, attempt not counted."""
    _app(url)
    marker = tmp_path / "started"
    # The long job: long enough to be killed while the others wait prefetched, short
    # enough to run again alone (poison isolation) before the others, in the second worker.
    jobs = [app_tasks.sleepy.enqueue(3 if i == 0 else 0.01, str(marker)) for i in range(4)]
    first = spawn_worker("-c", "1", "--prefetch", "3", url=url)
    wait_for(lambda: len(_lines(marker)) == 1, what="the long job to start")
    wait_for(
        lambda: all(j.refresh().state is JobState.RUNNING for j in jobs),
        what="the other three to be prefetched",
    )
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    # Rescued with batch-mates, each runs alone in the second worker (poison isolation,
    # docs/guarantees.md): one claimed with others is handed back ("released") meanwhile.
    second = spawn_worker("-c", "2", "--prefetch", "2", "--shutdown-timeout", "30", url=url)
    for job in jobs[1:]:  # rescued (attempt 1 lost, never started) and run by the second
        assert job.result(timeout=30) == second.pid
        outcomes = [a.outcome for a in job.attempts()]
        assert outcomes[0] == "lost" and outcomes[-1] == "succeeded", outcomes
        assert set(outcomes[1:-1]) <= {"released"}, outcomes
        assert job.refresh().attempt == 1  # the lost one and the releases not counted
    wait_for(lambda: len(_lines(marker)) == 5, what="the long job to start again")
    blockers = [app_tasks.sleepy.enqueue(60, str(marker)) for _ in range(2)]
    wait_for(lambda: len(_lines(marker)) == 7, what="two long jobs to fill the slots")
    more = [app_tasks.sleepy.enqueue(0.01, str(marker)) for _ in range(2)]
    wait_for(
        lambda: all(j.refresh().state is JobState.RUNNING for j in more),
        what="new jobs to be prefetched behind the long ones",
    )
    second.send_signal(signal.SIGTERM)
    # Released at once, though the long jobs keep their slots for up to 30 s.
    wait_for(lambda: all(j.refresh().state is JobState.QUEUED for j in more), what="release")
    for job in more:
        assert job.refresh().attempt == 0
        assert [a.outcome for a in job.attempts()] == ["released"]
    assert all(b.refresh().state is JobState.RUNNING for b in blockers)
    second.send_signal(signal.SIGINT)  # (a second signal: stop now)


# SQLite only: the second INT is the worker's signal handling; the release it ends with
# is each store's own code, run on every store by the SIGTERM test above and
# tests/contract/test_finish.py (test_release_does_not_count_an_attempt).
@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_second_int_stops_at_once(url: str, spawn_worker: Spawn, tmp_path: Path) -> None:
    _app(url)
    marker = tmp_path / "started"
    job = app_tasks.sleepy.enqueue(60, str(marker))
    proc = spawn_worker("--shutdown-timeout", "60", url=url)
    wait_for(lambda: len(_lines(marker)) == 1, what="job to start")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)  # the first INT starts a graceful stop that would wait 60 s
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0
    assert job.refresh().state is JobState.QUEUED


# SQLite only: quiet (no more claims) and the stack dump are the worker's, no store code.
@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_tstp_quiets_and_ttin_dumps_stacks(url: str, spawn_worker: Spawn) -> None:
    _app(url)
    proc = spawn_worker(url=url)
    assert app_tasks.noop.enqueue(1).result(timeout=15) == 1
    proc.send_signal(signal.SIGTSTP)
    time.sleep(0.5)
    job = app_tasks.noop.enqueue(2)
    time.sleep(1.0)
    assert job.status is JobState.QUEUED
    proc.send_signal(signal.SIGTTIN)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert "quiet" in err and "--- thread MainThread" in err and "conveyor-heartbeat" in err


def test_database_file_is_private(sqlite_url: str) -> None:
    app = _app(sqlite_url)
    app_tasks.noop.enqueue(1)
    path = sqlite_url.removeprefix("sqlite:///")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    app.close()


PRODUCER = """
import sys
from tests.integration import app_tasks
n = int(sys.argv[1])
for i in range(n // 2):
    app_tasks.noop.enqueue(i)
for start in range(0, n // 2, 100):
    app_tasks.noop.enqueue_many([(i,) for i in range(start, start + 100)])
"""


def test_four_processes_at_full_speed_never_see_database_is_locked(
    sqlite_url: str, spawn_worker: Spawn
) -> None:
    app = _app(sqlite_url)
    workers = [spawn_worker("-c", "8"), spawn_worker("-c", "8")]
    producers = [
        subprocess.Popen(
            [sys.executable, "-c", PRODUCER, "2000"],
            cwd=ROOT,
            env=worker_env(sqlite_url),
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for p in producers:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "locked" not in err

    def done() -> bool:
        counts = {s.queue: s.counts for s in app.backend.queue_stats()}.get("default", {})
        return counts.get("succeeded", 0) == 4000

    wait_for(done, timeout=120, what="4000 jobs to succeed")
    for w in workers:
        w.send_signal(signal.SIGTERM)
        assert w.wait(15) == 0
        assert w.stderr is not None
        assert "locked" not in w.stderr.read()
