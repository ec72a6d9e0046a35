"""Poison isolation with real worker processes (issue 12, item 4): a job that kills its
worker (``os.abort()``) among 20 innocent jobs. Workers are restarted as a supervisor
would; only the poison job may end ``dead`` "worker lost", every innocent job runs and
succeeds (their ``max_attempts=1``: a counted rescue would bury them at once)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import conveyor
from conveyor.states import JobState
from tests.integration.conftest import ROOT, worker_env
from tests.support.backends import BACKEND_URLS, GENERIC_URLS

INNOCENT = 20


def supervise(url: str, args: list[str], limit: int = 12) -> list[int]:
    """Run ``conveyor worker --burst`` again each time it dies, until one ends the burst;
    the exit statuses."""
    statuses: list[int] = []
    while len(statuses) < limit:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "conveyor.cli",
                "worker",
                "tests.integration.poison_tasks:app",
                "--burst",
                *args,
            ],
            cwd=ROOT,
            env=worker_env(url),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        statuses.append(done.returncode)
        if done.returncode == 0:
            return statuses
        assert done.returncode == -signal.SIGABRT, done.stderr[-2000:]
    raise AssertionError(f"the burst never ended: exit statuses {statuses}")


#: (worker arguments, id): four slots; one slot and four prefetched.
WORKERS = [(["-c", "4"], "c4"), (["-c", "1", "--prefetch", "4"], "c1p4")]


# MariaDB runs the first only: its rescue is what it tests; the second is the worker's.
@pytest.mark.parametrize(
    ("args", "backend_name"),
    [
        pytest.param(args, name, id=f"{label}-{name}")
        for args, label in WORKERS
        for name in sorted(BACKEND_URLS if label == "c4" else GENERIC_URLS)
    ],
)
def test_only_the_poison_job_ends_dead(
    request: pytest.FixtureRequest, tmp_path: Path, backend_name: str, args: list[str]
) -> None:
    url = BACKEND_URLS[backend_name](request, tmp_path)
    app = conveyor.App(url)  # the producer: the same task names as poison_tasks

    @app.task(name="innocent", max_attempts=1)
    def innocent(i: int) -> int: ...

    @app.task(name="poison", max_attempts=1)
    def poison() -> None: ...

    jobs = [innocent.enqueue(i) for i in range(INNOCENT // 2)]
    pill = poison.enqueue()
    jobs += [innocent.enqueue(i) for i in range(INNOCENT // 2, INNOCENT)]
    started = time.monotonic()
    statuses = supervise(url, args)
    records = [j.refresh() for j in jobs]
    unlucky = [(r.id, r.state, r.reason) for r in records if r.state is not JobState.SUCCEEDED]
    assert unlucky == [], f"innocent jobs punished for the poison (exits {statuses})"
    record = pill.refresh()
    assert record.state is JobState.DEAD and record.reason == "worker lost", record
    assert [j.result() for j in jobs] == list(range(INNOCENT))
    assert len(statuses) >= 2, statuses  # the poison did kill a worker
    assert time.monotonic() - started < 40, statuses
    app.close()


def run_worker(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "conveyor.cli",
            "worker",
            "tests.integration.poison_tasks:app",
            "--burst",
            *args,
        ],
        cwd=ROOT,
        env=worker_env(url),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_os_exit_in_the_process_pool_fails_the_job_and_the_worker_goes_on(
    tmp_path: Path,
) -> None:
    """Issue 12, item 5: in the process pool ``os._exit(0)`` ends the child only: the job
    fails with the reason, the worker serves the next one and its exit status stays
    meaningful (0 here: the burst ended)."""
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = conveyor.App(url)

    @app.task(name="exits_now", max_attempts=1)
    def exits_now(code: int) -> None: ...

    @app.task(name="innocent", max_attempts=1)
    def innocent(i: int) -> int: ...

    quitter = exits_now.enqueue(0)
    after = innocent.enqueue(7)
    done = run_worker(url, "--pool", "process", "-c", "1")
    assert done.returncode == 0, done.stderr[-2000:]
    record = quitter.refresh()
    assert record.state is JobState.DEAD
    assert "WorkerChildDied" in (record.error or ""), record.error
    assert after.result() == 7
    app.close()


def test_os_exit_in_the_thread_pool_ends_the_worker_with_that_status(tmp_path: Path) -> None:
    """The documented limit (docs/guarantees.md#exit-status): in the thread pool nothing
    can run after ``os._exit(n)``; the process ends with ``n``, and its job is rescued as
    for a killed worker (here by the next worker, alone: the cap buries it, max_attempts=1)."""
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    app = conveyor.App(url)

    @app.task(name="exits_now", max_attempts=1)
    def exits_now(code: int) -> None: ...

    quitter = exits_now.enqueue(5)
    assert run_worker(url, "-c", "2").returncode == 5
    assert run_worker(url, "-c", "2").returncode == 0
    record = quitter.refresh()
    assert record.state is JobState.DEAD and record.reason == "worker lost", record
    app.close()
