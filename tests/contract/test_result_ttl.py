"""Contract: ``job_clear_results`` (a task's ``result_ttl``) drops the results of one
task's succeeded jobs finished in a window, and nothing else (every backend)."""

from __future__ import annotations

import time

import pytest

import conveyor
from conveyor import ResultNotStored
from conveyor.backends.base import Backend, JobClearResultsParams, JobFinishParams
from conveyor.states import FinishKind, JobState
from tests.contract.helpers import claim, insert
from tests.support.features import needs


def _finish(backend: Backend, task: str, finished_at: float, kind: FinishKind) -> str:
    [job_id] = insert(backend, task=task)
    [c] = [c for c in claim(backend) if c.id == job_id]
    backend.job_finish_many(
        [
            JobFinishParams(
                c.id,
                c.token,
                kind,
                result='"kept"' if kind is FinishKind.SUCCEEDED else None,
                error='{"type": "E", "message": "m", "traceback": ""}'
                if kind is FinishKind.DEAD
                else None,
                attempt=c.attempt,
                finished_at=finished_at,
            )
        ]
    )
    return job_id


def test_results_in_the_window_are_cleared_and_the_jobs_stay(backend: Backend) -> None:
    needs(backend, "result_ttl")
    now = time.time()
    old = _finish(backend, "t.ttl", now - 3600, FinishKind.SUCCEEDED)
    older = _finish(backend, "t.ttl", now - 7200, FinishKind.SUCCEEDED)
    recent = _finish(backend, "t.ttl", now - 10, FinishKind.SUCCEEDED)
    other_task = _finish(backend, "t.other", now - 3600, FinishKind.SUCCEEDED)
    dead = _finish(backend, "t.ttl", now - 3600, FinishKind.DEAD)

    window = JobClearResultsParams("t.ttl", finished_before=now - 60, finished_after=now - 5000)
    assert backend.job_clear_results(window) == 1  # `older` finished before the window
    assert backend.job_clear_results(window) == 0  # nothing left to clear: idempotent
    assert backend.job_clear_results(JobClearResultsParams("t.ttl", now - 60)) == 1

    records = {r.id: r for r in backend.job_get_many([old, older, recent, other_task, dead])}
    assert len(records) == 5  # every job is still there
    assert (records[old].state, records[old].result) == (JobState.SUCCEEDED, None)
    assert records[older].result is None
    assert records[recent].result == '"kept"'
    assert records[other_task].result == '"kept"'
    assert records[dead].state is JobState.DEAD and records[dead].error is not None
    assert records[old].attempt == 1


def test_the_limit_bounds_one_call(backend: Backend) -> None:
    needs(backend, "result_ttl")
    now = time.time()
    for _ in range(3):
        _finish(backend, "t.many", now - 3600, FinishKind.SUCCEEDED)
    params = JobClearResultsParams("t.many", finished_before=now, limit=2)
    assert backend.job_clear_results(params) == 2
    assert backend.job_clear_results(params) == 1


def test_result_of_a_cleared_job_says_why(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "result_ttl")

    @app.task(name="t.report", result_ttl=30)
    def report() -> str:
        return "done"

    job = report.enqueue()
    conveyor.Worker(app, concurrency=1, burst=True).run(install_signals=False)
    assert job.result(timeout=5) == "done"
    assert backend.job_clear_results(JobClearResultsParams("t.report", time.time() + 1)) == 1
    assert job.refresh().state is JobState.SUCCEEDED
    with pytest.raises(ResultNotStored, match="result_ttl=30"):
        job.result()
