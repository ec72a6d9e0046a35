"""Finishing: fenced by token, every attempt recorded, each target state."""

from __future__ import annotations

import json
import time

from conveyor.backends.base import Backend, ClaimedJob, JobFinishParams, JobReleaseParams
from conveyor.states import FinishKind, JobState
from tests.contract.helpers import claim, insert, register

#: a start time exact in binary and in 6 decimals (Redis keeps times as "%.6f")
STARTED = 1_700_000_000.25
ERR = json.dumps({"type": "ValueError", "message": "boom", "traceback": "Traceback..."})


def _finish(backend: Backend, job_id: str, token: int, kind: FinishKind, **kw: object) -> list[str]:
    return backend.job_finish_many(
        [
            JobFinishParams(
                id=job_id,
                token=token,
                kind=kind,
                worker_id="w1",
                attempt=1,
                started_at=time.time(),
                **kw,
            )
        ]
    )  # type: ignore[arg-type]


def test_success_stores_the_result_and_an_attempt(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (job,) = claim(backend)
    assert _finish(backend, job.id, job.token, FinishKind.SUCCEEDED, result="42") == []
    record = backend.job_get_many([job.id])[0]
    assert record.state is JobState.SUCCEEDED and record.result == "42"
    assert record.finished_at is not None and record.worker_id is None
    (attempt,) = backend.job_attempts(job.id)
    assert (attempt.outcome, attempt.attempt, attempt.worker_id) == ("succeeded", 1, "w1")


def test_stale_token_is_refused_and_the_newer_attempt_kept(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (first,) = claim(backend)
    backend.job_release_many(JobReleaseParams("w1", [(first.id, first.token)]))
    (second,) = claim(backend)
    assert second.token > first.token
    assert _finish(backend, first.id, first.token, FinishKind.SUCCEEDED, result='"old"') == [
        first.id
    ]
    record = backend.job_get_many([first.id])[0]
    assert record.state is JobState.RUNNING and record.token == second.token
    assert _finish(backend, second.id, second.token, FinishKind.SUCCEEDED, result='"new"') == []
    assert backend.job_get_many([first.id])[0].result == '"new"'


def test_retry_goes_to_scheduled_keeping_the_error(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (job,) = claim(backend)
    run_at = time.time() + 60
    _finish(backend, job.id, job.token, FinishKind.RETRY, error=ERR, run_at=run_at)
    record = backend.job_get_many([job.id])[0]
    assert record.state is JobState.SCHEDULED and abs(record.run_at - run_at) < 0.01
    assert record.error == ERR and record.attempt == 1
    assert backend.job_attempts(job.id)[0].outcome == "failed"


def test_dead_keeps_error_type_message_traceback(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (job,) = claim(backend)
    _finish(backend, job.id, job.token, FinishKind.DEAD, error=ERR, reason="attempts exhausted")
    record = backend.job_get_many([job.id])[0]
    assert record.state is JobState.DEAD and record.reason == "attempts exhausted"
    assert json.loads(record.error or "{}")["traceback"] == "Traceback..."


def test_drop_deletes_and_cancelled_is_final(backend: Backend) -> None:
    register(backend)
    insert(backend, 2)
    a, b = claim(backend)
    _finish(backend, a.id, a.token, FinishKind.DROP)
    _finish(backend, b.id, b.token, FinishKind.CANCELLED, reason="stop")
    assert backend.job_get_many([a.id]) == []
    assert backend.job_get_many([b.id])[0].state is JobState.CANCELLED


def test_a_batch_applies_fresh_finishes_and_refuses_stale_ones(backend: Backend) -> None:
    register(backend)
    insert(backend, 3)
    jobs = claim(backend)
    params = [
        JobFinishParams(id=j.id, token=j.token, kind=FinishKind.SUCCEEDED, result="1") for j in jobs
    ]
    params.append(JobFinishParams(id=jobs[0].id, token=jobs[0].token + 5, kind=FinishKind.DEAD))
    assert backend.job_finish_many(params) == [jobs[0].id]
    assert {r.state for r in backend.job_get_many([j.id for j in jobs])} == {JobState.SUCCEEDED}


def test_a_batch_of_successes_fences_each_job_by_its_own_token(backend: Backend) -> None:
    """Successes only (the hot path's batch, one statement on SQLite): each row is fenced
    on its own; a refused one keeps its state and gets no attempt row; the same job
    twice in a batch is applied once and refused once."""
    register(backend)
    insert(backend, 4)
    jobs = claim(backend, 4)
    assert len(jobs) == 4

    def ok(j: ClaimedJob, token: int, result: str) -> JobFinishParams:
        return JobFinishParams(
            id=j.id,
            token=token,
            kind=FinishKind.SUCCEEDED,
            worker_id="w1",
            attempt=j.attempt,
            result=result,
            started_at=STARTED,
            finished_at=STARTED + 0.5,
        )

    stale = jobs[1]
    batch = [ok(jobs[0], jobs[0].token, '"a"'), ok(stale, stale.token + 1, '"stale"')]
    batch += [ok(jobs[2], jobs[2].token, "null"), ok(jobs[3], jobs[3].token, '{"n": 3}')]
    assert backend.job_finish_many(batch) == [stale.id]
    found = {r.id: r for r in backend.job_get_many([j.id for j in jobs])}
    assert found[stale.id].state is JobState.RUNNING and found[stale.id].result is None
    assert backend.job_attempts(stale.id) == []
    for j, result in ((jobs[0], '"a"'), (jobs[2], "null"), (jobs[3], '{"n": 3}')):
        record = found[j.id]
        assert (record.state, record.result, record.worker_id) == (JobState.SUCCEEDED, result, None)
        assert record.finished_at == STARTED + 0.5
        (attempt,) = backend.job_attempts(j.id)
        assert (attempt.outcome, attempt.token, attempt.worker_id) == ("succeeded", j.token, "w1")
        assert (attempt.started_at, attempt.error) == (STARTED, None)
    twice = [ok(stale, stale.token, '"first"'), ok(stale, stale.token, '"second"')]
    assert backend.job_finish_many(twice) == [stale.id]
    assert backend.job_get_many([stale.id])[0].result == '"first"'


def test_release_does_not_count_an_attempt(backend: Backend) -> None:
    register(backend)
    insert(backend)
    (job,) = claim(backend)
    assert backend.job_release_many(JobReleaseParams("w1", [(job.id, job.token)])) == []
    record = backend.job_get_many([job.id])[0]
    assert record.state is JobState.QUEUED and record.attempt == 0 and record.worker_id is None
    assert claim(backend)[0].attempt == 1
    assert backend.job_release_many(JobReleaseParams("w1", [(job.id, job.token)])) == [job.id]
