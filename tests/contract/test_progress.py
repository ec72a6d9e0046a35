"""Progress: ``current_job().progress(f, msg)`` is stored (throttled) and readable."""

from __future__ import annotations

import threading

from click.testing import CliRunner

import conveyor
from conveyor.backends.base import Backend
from conveyor.cli.main import cli
from conveyor.worker.worker import Worker
from tests.support.flow import needs


def test_progress_is_stored_and_readable(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "progress")
    reported = threading.Event()
    release = threading.Event()

    @app.task
    def parse() -> str:
        job = conveyor.current_job()
        for i in range(1000):  # a tight loop: must neither block nor write 1000 times
            job.progress(i / 1000, "warming up")
        job.progress(0.4, "parsing")
        reported.set()
        release.wait(10)
        return "done"

    job = parse.enqueue()
    assert job.progress() == (None, None)
    worker = Worker(app, concurrency=1).start()
    try:
        assert reported.wait(10)
        deadline = threading.Event()
        for _ in range(100):
            if job.progress() == (0.4, "parsing"):
                break
            deadline.wait(0.05)
        assert job.progress() == (0.4, "parsing")
        out = CliRunner().invoke(cli, ["status", "--url", app.url])
        assert out.exit_code == 0, out.output
        assert "40%" in out.output and "parsing" in out.output
    finally:
        release.set()
        worker.stop()
    assert job.result(timeout=5) == "done"


def test_progress_clamped_and_stale_refused(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "progress")
    from conveyor.backends.base import JobProgressParams

    @app.task
    def t() -> None: ...

    job = t.enqueue()
    # Not running: a progress write is refused (fenced like a finish).
    assert backend.job_progress_many([JobProgressParams(job.id, 1, 0.5, "x")]) == [job.id]
    ctx = conveyor.JobContext("j", "t", "q", 1, 1)
    ctx.progress(7, None)
    assert ctx.take_progress() == (1.0, None)
    assert ctx.take_progress() is None
