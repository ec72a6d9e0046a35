"""One executor suite, run against every pool: thread, async, process, interpreter.

The interpreter pool needs Python >= 3.13: on older Pythons its cases are skipped with
that reason (``.ci/pools313`` runs this module on 3.13 with ``CI=true``, where they run).
Real processes and real signals throughout; worker subprocesses run with cwd = repo root
so they import ``tests.integration.pool_tasks:app``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobInsertParams
from conveyor.ids import new_id
from conveyor.states import JobState
from tests.integration import pool_tasks as t

pytestmark = pytest.mark.slow

SPEC = "tests.integration.pool_tasks:app"
ROOT = Path(__file__).resolve().parents[2]
HAS_INTERPRETERS = sys.version_info >= (3, 13)


@pytest.fixture(params=["thread", "async", "process", "interpreter"])
def pool(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "interpreter" and not HAS_INTERPRETERS:
        pytest.skip(
            f"interpreter pool needs Python >= 3.13 (this is {sys.version.split()[0]}); "
            "run .ci/pools313"
        )
    return name


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """Points the shared task app at this test's own database."""
    store = f"sqlite:///{tmp_path / 'jobs.db'}"
    t.app.close()
    t.app.url = store
    yield store
    t.app.close()


def burst(pool: str, **options: object) -> None:
    """Run a worker in this process until nothing is ready or running."""
    conveyor.Worker(
        t.app,
        pool=pool,
        concurrency=2,
        burst=True,
        app_spec=SPEC,
        **options,  # type: ignore[arg-type]
    ).run(install_signals=False)


def state(job: conveyor.Job[object]) -> JobState:
    return job.refresh().state


# -- the generic suite ---------------------------------------------------------------------


def test_success_returns_the_result(pool: str, url: str) -> None:
    jobs = [t.add.enqueue(i, i) for i in range(6)]
    burst(pool)
    assert [j.result(timeout=1) for j in jobs] == [2 * i for i in range(6)]


def test_failure_is_retried_then_succeeds(pool: str, url: str) -> None:
    job = t.flaky.enqueue()
    burst(pool)
    record = job.refresh()
    assert record.state == JobState.SUCCEEDED
    assert record.attempt == 2
    assert job.attempts()[0].outcome == "failed"
    assert '"ValueError"' in (job.attempts()[0].error or "")


def test_class_tasks_run_with_their_retry_delay(pool: str, url: str) -> None:
    """A class-based task is found by name in every pool (children and subinterpreters
    import it), its classmethod ``retry_delay`` decides the retries."""
    assert t.Scale.task.name == "tests.integration.pool_tasks.Scale"
    retried = t.Scale.enqueue(21)
    archived = t.Scale.enqueue(-1)
    awaited = t.AsyncScale.enqueue(5)
    burst(pool)
    assert retried.result(timeout=1) == 42
    assert retried.refresh().attempt == 2
    record = archived.refresh()
    assert (record.state, record.attempt, record.reason) == (
        JobState.DEAD,
        1,
        "archived by retry_delay hook",
    )
    assert awaited.result(timeout=1) == [5, 15]


def test_store_result_false_succeeds_with_no_result(pool: str, url: str) -> None:
    job = t.opaque.enqueue()
    burst(pool)
    record = job.refresh()
    assert (record.state, record.result) == (JobState.SUCCEEDED, None)
    with pytest.raises(conveyor.ResultNotStored):
        job.result(timeout=1)


def test_unknown_task_goes_dead(pool: str, url: str) -> None:
    job_id = new_id()
    t.app.backend.job_insert_many(
        [
            JobInsertParams(
                id=job_id, task="pool.nope", queue="default", payload='{"args":[],"kwargs":{}}'
            )
        ]
    )
    burst(pool)
    record = t.app.job(job_id).refresh()
    assert record.state == JobState.DEAD
    assert "unknown task" in (record.reason or "")


def test_timeout_fails_the_attempt(pool: str, url: str) -> None:
    task = t.asleepy if pool == "async" else t.sleepy
    job = task.with_options(timeout=0.3, max_attempts=1).enqueue(5.0)
    started = time.monotonic()
    burst(pool)
    assert time.monotonic() - started < 4.0
    record = job.refresh()
    assert record.state == JobState.DEAD
    assert "JobTimeout" in (record.error or "")


def test_child_crash_fails_the_job_and_is_retried(pool: str, url: str) -> None:
    if pool != "process":
        pytest.skip(
            f"in the {pool} pool a crash takes the whole worker down "
            "(covered by the SIGKILL rescue test)"
        )
    jobs = [t.crash_once.enqueue(7), t.add.enqueue(1, 1)]
    burst(pool)
    crashed = jobs[0].refresh()
    assert crashed.state == JobState.SUCCEEDED and crashed.attempt == 2
    first = jobs[0].attempts()[0]
    assert first.outcome == "failed"
    assert "worker child died: exit code 7" in (first.error or "")
    assert jobs[1].result(timeout=1) == 2


def test_recycling_loses_no_job(pool: str, url: str) -> None:
    if pool not in ("process", "interpreter"):
        pytest.skip(f"the {pool} pool has no children to recycle")
    jobs = t.pid.enqueue_many([[] for _ in range(8)])
    burst(pool, max_jobs_per_child=2)
    records = [j.refresh() for j in jobs]
    assert all(r.state == JobState.SUCCEEDED and r.attempt == 1 for r in records)
    if pool == "process":  # 8 jobs, 2 per child: at least 4 distinct children
        assert len({r.result for r in records}) >= 4


# -- real worker processes, real signals -----------------------------------------------------


def spawn_worker(pool: str, url: str, *extra: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CONVEYOR_URL": url,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from conveyor.cli.main import main; main()",
            "worker",
            SPEC,
            "--pool",
            pool,
            "-c",
            "1",
            "--log-level",
            "WARNING",
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stderr=subprocess.PIPE,
    )


def wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """Wait until the task wrote its marker; returns the pid that runs it."""
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.05)
    return int(path.read_text())


def gone(pid: int, timeout: float = 5.0) -> bool:
    """True once ``pid`` no longer runs (a zombie waiting for its reaper counts as gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            return True
        time.sleep(0.05)
    return False


def test_sigterm_releases_the_running_job_and_exits_0(pool: str, url: str, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    job = t.block_once.enqueue(str(marker))
    proc = spawn_worker(pool, url, "--shutdown-timeout", "0.5")
    try:
        runner_pid = wait_for(marker, proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, proc.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait()
    record = job.refresh()
    assert record.state == JobState.QUEUED  # released: not failed, not lost
    assert [a.outcome for a in job.attempts()] == ["released"]
    if pool == "process":
        assert gone(runner_pid), "the child kept running a released job"


def test_sigkill_of_the_worker_then_rescue_by_another(pool: str, url: str, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    job = t.block_once.enqueue(str(marker))
    proc = spawn_worker(pool, url)
    try:
        runner_pid = wait_for(marker, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    # The child dies with its worker: the rescued job cannot run twice at once.
    assert gone(runner_pid), "the dead worker's child is still running the job"
    rescuer = conveyor.Worker(t.app, pool=pool, concurrency=1, app_spec=SPEC).start()
    try:
        assert job.result(timeout=30) == "done on attempt 2"
    finally:
        rescuer.stop(timeout=10)
    assert job.refresh().rescues == 1


def test_sigterm_with_a_task_ignoring_cancel_still_exits(
    pool: str, url: str, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    job = t.stubborn_once.enqueue(str(marker))
    proc = spawn_worker(pool, url, "--shutdown-timeout", "0.5")
    try:
        wait_for(marker, proc)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0, proc.stderr.read().decode()  # type: ignore[union-attr]
        assert time.monotonic() - started < 10.0
    finally:
        proc.kill()
        proc.wait()
    assert job.refresh().state == JobState.QUEUED
