"""Durable jobs' recovery proof (issue 23): a worker SIGKILLed in a job's second step; a
worker restarted on the same host resumes the job at that step within 0.5 s of its
ready line (the issue's bound; its Python start-up comes before), and the step saved
before the kill does not run again. SQLite; the Fleet's real ``conveyor worker``
processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.durable import recovery

pytestmark = pytest.mark.slow


@pytest.mark.timeout(90)
def test_a_restarted_worker_resumes_the_interrupted_job_at_once(tmp_path: Path) -> None:
    result = recovery(f"sqlite:///{tmp_path / 'jobs.db'}", tmp_path, steps=3, step_seconds=0.5)
    print(result.line())
    assert result.saved_reran == 0, result.line()
    assert result.from_ready <= 0.5, result.line()
