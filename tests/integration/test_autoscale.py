"""The autoscaling signal sizes a real worker pool: examples/autoscale.py (the plain
script docs/operations.md shows) grows a pool of ``conveyor worker`` processes while
jobs wait and shrinks it to its minimum once they are done, with every job run once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobCountParams, JobFilter, JobListParams
from conveyor.scaling import live_workers
from conveyor.states import JobState

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.slow

NAP = """
import time
import conveyor

app = conveyor.App()

@app.task(name="nap")
def nap(seconds: float) -> None:
    time.sleep(seconds)
"""


def _live(app: conveyor.App) -> int:
    return len(live_workers(app.backend.worker_list(), time.time(), ttl=5.0))


def _count(app: conveyor.App, state: JobState) -> int:
    return app.backend.job_count(JobCountParams(JobFilter(states=(state,))))


def test_the_signal_grows_a_worker_pool_and_shrinks_it_when_the_work_is_done(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    (tmp_path / "naps.py").write_text(NAP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONVEYOR_")}
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    env["CONVEYOR_URL"] = url
    app = conveyor.App(url)
    nap = app.task(name="nap")(lambda seconds: None)
    for _ in range(40):
        nap.enqueue(0.5)

    scaler = subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "autoscale.py"), "naps:app", "--url", url,
         "--concurrency", "2", "--min", "0", "--max", "4", "--interval", "0.3"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        most = 0
        deadline = time.monotonic() + 60
        while _count(app, JobState.SUCCEEDED) < 40 and time.monotonic() < deadline:
            most = max(most, _live(app))
            time.sleep(0.1)
        assert _count(app, JobState.SUCCEEDED) == 40
        # grown beyond one worker while 40 jobs of 0.5 s waited (demand 40 / 2 -> the max)
        assert most >= 3
        # then shrunk to --min 0: every worker stopped and deregistered
        deadline = time.monotonic() + 30
        while app.backend.worker_list() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert app.backend.worker_list() == []
    finally:
        scaler.send_signal(signal.SIGTERM)
        out, _ = scaler.communicate(timeout=30)
        app.close()
    assert scaler.returncode == 0, out
    assert "workers 0 -> 4" in out, out
    assert "-> 0" in out, out
    check = conveyor.App(url)
    try:
        jobs = check.backend.job_list(JobListParams(limit=100))
        assert len(jobs) == 40
        # each job ran once: a worker told to stop finished its jobs, nothing re-ran
        assert {len(check.backend.job_attempts(j.id)) for j in jobs} == {1}
    finally:
        check.close()
