"""Contract: durable state survives an export and an import (``conveyor export`` /
``import``, ``migrate``) on every store: a job parked on ``conveyor.wait_for`` comes
back parked and a send resumes it; events sent and not consumed yet come back and a
wait consumes them, in order. Each job is read as an export reads it (its record,
steps and unconsumed events) and imported under a new id, as into a fresh store."""

from __future__ import annotations

import time

import pytest

from conveyor import records
from conveyor.backends.base import (
    STEP_SUCCEEDED,
    STEP_WAITING,
    WAIT_PARKED,
    WAIT_RECEIVED,
    Backend,
    IntegrityCheckParams,
    JobEventSendParams,
    JobEventWaitParams,
    JobImport,
    JobImportParams,
)
from conveyor.errors import ConveyorError
from conveyor.states import JobState
from tests.contract.helpers import claim, insert, register
from tests.support.flow import needs


def _wait(job_id: str, token: int, pos: int = 0, deadline: float = 1e11) -> JobEventWaitParams:
    return JobEventWaitParams(job_id, token, pos, "wait_for:go", "go", deadline, time.time())


def _exported_as(backend: Backend, job_id: str, new_id: str) -> JobImport:
    """What export writes for ``job_id`` (record, steps, unconsumed events), renamed."""
    (job,) = backend.job_get_many([job_id])
    steps = [records.replace(s, job_id=new_id) for s in backend.job_step_list(job_id)]
    events = [records.replace(e, job_id=new_id) for e in backend.job_event_list(job_id)]
    return JobImport(records.replace(job, id=new_id), steps=steps, events=events)


def test_a_parked_job_imports_parked_and_a_send_resumes_it(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    assert backend.job_event_wait(_wait(job_id, job.token)).status == WAIT_PARKED
    item = _exported_as(backend, job_id, "imported-parked")
    assert item.events == []  # the wait consumed nothing
    assert backend.job_import_many(JobImportParams([item])) == ["imported-parked"]
    (copy,) = backend.job_get_many(["imported-parked"])
    assert copy.state is JobState.WAITING
    assert [s.state for s in backend.job_step_list(copy.id)] == [STEP_WAITING]
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []
    assert claim(backend) == []  # parked: no worker takes it before its event
    assert backend.job_event_send(JobEventSendParams(copy.id, "go", '"yes"')) is True
    (again,) = claim(backend)
    assert again.id == copy.id
    got = backend.job_event_wait(_wait(copy.id, again.token))
    assert (got.status, got.payload) == (WAIT_RECEIVED, '"yes"')
    assert [s.state for s in backend.job_step_list(copy.id)] == [STEP_SUCCEEDED]


def test_an_imported_parked_job_times_out_at_its_deadline(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    deadline = time.time() + 0.5
    assert backend.job_event_wait(_wait(job_id, job.token, deadline=deadline)).status == WAIT_PARKED
    item = _exported_as(backend, job_id, "imported-deadline")
    backend.job_import_many(JobImportParams([item]))
    time.sleep(max(0.0, deadline - time.time()) + 0.2)
    assert backend.job_wake_due(100) == 2  # the original and its copy
    assert {j.state for j in backend.job_get_many([job_id, item.job.id])} == {JobState.QUEUED}


def test_events_sent_early_survive_the_import_and_are_consumed_in_order(
    backend: Backend,
) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    for n in (1, 2):
        assert backend.job_event_send(JobEventSendParams(job_id, "go", str(n))) is False
    item = _exported_as(backend, job_id, "imported-early")
    assert [(e.name, e.payload) for e in item.events] == [("go", "1"), ("go", "2")]
    assert backend.job_import_many(JobImportParams([item])) == ["imported-early"]
    assert [e.payload for e in backend.job_event_list("imported-early")] == ["1", "2"]
    taken = {j.id: j for j in claim(backend)}
    token = taken["imported-early"].token
    assert backend.job_event_wait(_wait("imported-early", token, 0)).payload == "1"
    assert backend.job_event_wait(_wait("imported-early", token, 1)).payload == "2"
    assert backend.job_event_list("imported-early") == []  # consumed: no longer exported
    assert backend.job_event_wait(_wait("imported-early", token, 2)).status == WAIT_PARKED


def test_a_waiting_job_without_parents_or_a_wait_step_is_refused(backend: Backend) -> None:
    needs(backend, "steps")
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    backend.job_event_wait(_wait(job_id, job.token))
    item = _exported_as(backend, job_id, "imported-bare")
    with pytest.raises(ConveyorError, match="waiting without its parents"):
        backend.job_import_many(JobImportParams([records.replace(item, steps=[])]))
