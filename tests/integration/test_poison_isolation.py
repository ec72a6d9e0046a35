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
from tests.support.backends import BACKEND_URLS

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


@pytest.mark.parametrize("backend_name", sorted(BACKEND_URLS))
@pytest.mark.parametrize("args", [["-c", "4"], ["-c", "1", "--prefetch", "4"]], ids=["c4", "c1p4"])
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
