"""Rescue: jobs of dead workers come back (counting an attempt) or go dead past the cap."""

from __future__ import annotations

import time

from conveyor.backends.base import Backend, JobExtendLeasesParams, JobRescueParams
from conveyor.states import JobState
from tests.contract.helpers import claim, insert, register


def _rescue(
    backend: Backend, dead: list[str] | None = None, ttl: float = 30.0, cap: int = 3
) -> dict[str, JobState]:
    found = backend.job_rescue(JobRescueParams(dead or [], time.time() - ttl, cap))
    return {r.job_id: r.state for r in found}


def test_jobs_of_a_worker_proved_dead_are_requeued(backend: Backend) -> None:
    register(backend, "dead")
    register(backend, "alive")
    insert(backend, 2)
    (mine,) = claim(backend, 1, "dead")
    (theirs,) = claim(backend, 1, "alive")
    assert _rescue(backend, ["dead"]) == {mine.id: JobState.QUEUED}
    record = backend.job_get_many([mine.id])[0]
    assert record.state is JobState.QUEUED and record.rescues == 1 and record.attempt == 1
    assert backend.job_get_many([theirs.id])[0].state is JobState.RUNNING
    assert backend.job_attempts(mine.id)[-1].outcome == "lost"
    assert "dead" not in {w.id for w in backend.worker_list()}


def test_a_stale_heartbeat_is_dead_but_a_fresh_one_is_not(backend: Backend) -> None:
    register(backend, "w1")
    insert(backend)
    (job,) = claim(backend)
    assert _rescue(backend, ttl=30.0) == {}
    time.sleep(0.3)
    assert _rescue(backend, ttl=0.1) == {job.id: JobState.QUEUED}


def test_a_heartbeat_keeps_claims_and_reports_cancel_requests(backend: Backend) -> None:
    from conveyor.backends.base import JobCancelParams

    register(backend, "w1")
    insert(backend)
    (job,) = claim(backend)
    backend.job_cancel_many(JobCancelParams([job.id]))
    (status,) = backend.job_extend_leases(JobExtendLeasesParams("w1", [(job.id, job.token)]))
    assert status.held and status.cancel_requested
    _rescue(backend, ["w1"])
    (status,) = backend.job_extend_leases(JobExtendLeasesParams("w1", [(job.id, job.token)]))
    assert not status.held


def test_past_max_rescues_the_job_is_dead_with_worker_lost(backend: Backend) -> None:
    insert(backend, max_attempts=100)
    for n in range(4):
        register(backend, f"w{n}")
        (job,) = claim(backend, 1, f"w{n}")
        state = _rescue(backend, [f"w{n}"], cap=3)[job.id]
        assert state is (JobState.QUEUED if n < 3 else JobState.DEAD)
    record = backend.job_get_many([job.id])[0]
    assert record.state is JobState.DEAD and record.reason == "worker lost"
    assert len([a for a in backend.job_attempts(job.id) if a.outcome == "lost"]) == 4


def test_a_lost_job_with_no_attempts_left_is_dead(backend: Backend) -> None:
    register(backend, "w1")
    insert(backend, max_attempts=1)
    (job,) = claim(backend)
    assert _rescue(backend, ["w1"]) == {job.id: JobState.DEAD}


def test_a_durable_job_that_saved_a_step_is_rescued_uncharged(backend: Backend) -> None:
    # The poison-pill cap counts rescues of attempts that got nowhere: a durable job that
    # saved a step during its lost attempt (killed between steps, not by them) comes back
    # with no rescue counted and its attempt given back, past the cap too; one that saved
    # nothing since its claim (its worker died inside a step) is charged as any other.
    from conveyor.backends.base import JobStepSaveParams, StepRecord

    if "steps" not in backend.features:
        return
    insert(backend, max_attempts=100)
    for n in range(5):  # more kills than the cap of 3
        register(backend, f"w{n}")
        (job,) = claim(backend, 1, f"w{n}")
        now = time.time() + 0.01  # after the claim on this clock and on a server's
        step = StepRecord(job.id, n, f"s{n}", "succeeded", "1", None, 1, now, now)
        assert backend.job_step_save(JobStepSaveParams(step, job.token))
        assert _rescue(backend, [f"w{n}"], cap=3)[job.id] is JobState.QUEUED
    record = backend.job_get_many([job.id])[0]
    assert record.rescues == 0 and record.attempt == 0
    register(backend, "w9")
    time.sleep(0.05)  # the last step finished before this claim
    (job,) = claim(backend, 1, "w9")  # dies inside its next step: nothing saved
    assert _rescue(backend, ["w9"], cap=3)[job.id] is JobState.QUEUED
    assert backend.job_get_many([job.id])[0].rescues == 1
