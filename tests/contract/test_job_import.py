"""Contract: whole jobs imported under their own ids (``conveyor migrate``): state,
attempts, errors, history and logs kept; ids already present skipped (idempotent)."""

from __future__ import annotations

import time

import pytest

from conveyor import records
from conveyor.backends.base import (
    AttemptRecord,
    Backend,
    IntegrityCheckParams,
    JobClaimParams,
    JobFinishParams,
    JobFlow,
    JobImport,
    JobImportParams,
    JobLogListParams,
    JobLogRecord,
    JobRecord,
)
from conveyor.errors import ConveyorError
from conveyor.states import FinishKind, JobState


def record(job_id: str, state: JobState, **kw: object) -> JobRecord:
    now = time.time()
    fields: dict[str, object] = dict(
        id=job_id, task="t", queue="q", state=state, priority=0, payload='{"args":[1],"kwargs":{}}',
        attempt=0, max_attempts=3, rescues=0, token=0, run_at=now - 5, created_at=now - 10,
        timeout=None, lease=30.0, worker_id=None, lease_until=None, cancel_requested=False,
        result=None, error=None, reason=None, started_at=None, finished_at=None,
    )  # fmt: skip
    fields.update(kw)
    return JobRecord(**fields)  # type: ignore[arg-type]


def test_import_keeps_state_history_and_skips_present_ids(backend: Backend) -> None:
    err = '{"type":"ValueError","message":"boom","traceback":"tb"}'
    dead = record(
        "d1", JobState.DEAD, attempt=3, token=3, error=err, reason="attempts exhausted",
        started_at=time.time() - 2, finished_at=time.time() - 1,
    )  # fmt: skip
    attempt = AttemptRecord("d1", 3, 3, "w9", dead.started_at, dead.finished_at, "dead", err)
    log = JobLogRecord("d1", 3, 1000.5, "ERROR", "t", "it failed")
    jobs = [
        JobImport(dead, [attempt], [log]),
        JobImport(record("q1", JobState.QUEUED)),
        JobImport(record("s1", JobState.SCHEDULED, run_at=time.time() + 3600)),
    ]
    assert sorted(backend.job_import_many(JobImportParams(jobs))) == ["d1", "q1", "s1"]
    assert backend.job_import_many(JobImportParams(jobs)) == []  # a rerun adds nothing
    got = {j.id: j for j in backend.job_get_many(["d1", "q1", "s1"])}
    assert got["d1"].state is JobState.DEAD and got["d1"].error == err
    assert got["d1"].attempt == 3 and got["d1"].reason == "attempts exhausted"
    assert got["d1"].created_at == pytest.approx(dead.created_at)
    assert backend.job_attempts("d1") == [attempt]
    assert backend.job_log_list(JobLogListParams("d1")) == [log]
    assert got["s1"].state is JobState.SCHEDULED
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []  # indexes complete
    claimed = backend.job_claim(JobClaimParams("w", [("q", 10)], 10))
    assert [c.id for c in claimed] == ["q1"]  # imported jobs are claimable


def test_running_jobs_are_refused(backend: Backend) -> None:
    running = records.replace(record("r1", JobState.RUNNING), worker_id="w", token=1)
    with pytest.raises(ConveyorError):
        backend.job_import_many(JobImportParams([JobImport(running)]))
    assert backend.job_get_many(["r1"]) == []


def test_a_waiting_job_imports_with_its_parents_and_is_piped_when_they_succeed(
    backend: Backend,
) -> None:
    parent = record("p1", JobState.QUEUED)
    child = records.replace(
        record("c1", JobState.WAITING, payload='{"args":[2],"kwargs":{}}'), waiting_on=1
    )
    orphan = record("c2", JobState.WAITING)
    with pytest.raises(ConveyorError):  # waiting on nothing: it would wait forever
        backend.job_import_many(JobImportParams([JobImport(orphan)]))
    flow = JobFlow("c1", pipe=1, parents=("p1",), unique_until=2e9)
    # The child first: its parent arrives later in the same import.
    imported = backend.job_import_many(
        JobImportParams([JobImport(child, flow=flow), JobImport(parent)])
    )
    assert imported == ["c1", "p1"]
    assert backend.job_flow_many(["c1", "p1", "nope"]) == [flow, JobFlow("p1")]
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
    (claimed,) = backend.job_claim(JobClaimParams("w", [("q", 10)], 10))  # not the child
    assert claimed.id == "p1"
    backend.job_finish_many(
        [JobFinishParams(claimed.id, claimed.token, FinishKind.SUCCEEDED, result="10")]
    )
    (released,) = backend.job_claim(JobClaimParams("w", [("q", 10)], 10))
    assert released.id == "c1" and released.payload.startswith('{"args":[10,2]')


def test_a_unique_key_goes_to_one_job_and_a_passed_window_gives_it_up(backend: Backend) -> None:
    old = time.time() - 100
    done = records.replace(
        record("h1", JobState.SUCCEEDED, finished_at=old, started_at=old), unique_key="k1"
    )
    backend.job_import_many(
        JobImportParams([JobImport(done, flow=JobFlow("h1", unique_until=old))])
    )
    # k1's holder finished and its window passed: the key moves; k2 is given twice in
    # one batch (two jobs never hold one key: the first keeps it); a rerun changes nothing.
    jobs = [
        JobImport(records.replace(record("a1", JobState.QUEUED), unique_key="k1")),
        JobImport(records.replace(record("a2", JobState.QUEUED), unique_key="k2")),
        JobImport(records.replace(record("a3", JobState.QUEUED), unique_key="k2")),
    ]
    assert backend.job_import_many(JobImportParams(jobs)) == ["a1", "a2", "a3"]
    assert backend.job_import_many(JobImportParams(jobs)) == []
    got = {j.id: j.unique_key for j in backend.job_get_many(["h1", "a1", "a2", "a3"])}
    assert got == {"h1": None, "a1": "k1", "a2": "k2", "a3": None}
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []


def test_import_carries_durable_steps(backend: Backend) -> None:
    # conveyor migrate copies a durable job's steps, so it resumes where it was.
    from conveyor.backends.base import StepRecord

    if "steps" not in backend.features:
        pytest.skip(f"backend {backend.name!r} keeps no durable steps")
    steps = [
        StepRecord("st1", 0, "charge", "succeeded", '"r-1"', None, 1, 10.0, 11.0),
        StepRecord("st1", 1, "sleep", "succeeded", "12.5", None, 1, 11.0, 11.0),
    ]
    done = record("st2", JobState.SUCCEEDED, result="1", finished_at=time.time())
    items = [
        JobImport(record("st1", JobState.SCHEDULED, run_at=time.time() + 60), steps=steps),
        JobImport(done, steps=[StepRecord("st2", 0, "a", "succeeded", "1")]),
    ]
    assert sorted(backend.job_import_many(JobImportParams(items))) == ["st1", "st2"]
    assert backend.job_step_list("st1") == steps
    assert [s.name for s in backend.job_step_list("st2")] == ["a"]
