"""Contract: durable state survives an export and an import (``conveyor export`` /
``import``, ``migrate``) on every store: a job parked on ``conveyor.wait_for`` comes
back parked and a send resumes it; events sent and not consumed yet come back and a
wait consumes them, in order; a job parked in ``conveyor.join(child)`` comes back
parked and its child's end wakes it, whether the child ends after the import, had
ended before it, or is imported after it. Each job is read as an export reads it (its record,
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
    JobFinishParams,
    JobImport,
    JobImportParams,
    JobJoinParams,
)
from conveyor.backends.params import FinishKind
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


def _joining(backend: Backend) -> tuple[str, str]:
    """A child (queue ``kids``) and a job parked in its join, as conveyor.join parks."""
    register(backend)
    (child,) = insert(backend, queue="kids")
    (joiner,) = insert(backend)
    (job,) = claim(backend)
    assert backend.job_join_mark(JobJoinParams(child, joiner)) is JobState.QUEUED
    name = f"join:{child}"
    wait = JobEventWaitParams(joiner, job.token, 0, name, name, 1e11, time.time())
    assert backend.job_event_wait(wait).status == WAIT_PARKED
    return child, joiner


def _end(backend: Backend, job_id: str) -> None:
    (kid,) = claim(backend, queues=("kids",))
    assert kid.id == job_id
    finish = JobFinishParams(kid.id, kid.token, FinishKind.SUCCEEDED, "w1", 1, "7")
    assert backend.job_finish_many([finish]) == []


def _states(backend: Backend, *ids: str) -> list[JobState]:
    return [j.state for j in backend.job_get_many(list(ids))]


def test_an_imported_join_is_woken_by_its_childs_end(backend: Backend) -> None:
    needs(backend, "steps")
    child, joiner = _joining(backend)
    item = _exported_as(backend, joiner, "imported-joiner")
    assert backend.job_import_many(JobImportParams([item])) == ["imported-joiner"]
    assert _states(backend, "imported-joiner") == [JobState.WAITING]
    assert claim(backend) == []  # parked: no worker takes it before the child ends
    _end(backend, child)  # wakes the original and, through the mark restored, the copy
    assert _states(backend, joiner, "imported-joiner") == [JobState.QUEUED] * 2
    assert backend.integrity_check(IntegrityCheckParams(30.0)) == []


def test_a_join_of_a_child_ended_before_the_import_comes_back_queued(backend: Backend) -> None:
    needs(backend, "steps")
    child, joiner = _joining(backend)
    item = _exported_as(backend, joiner, "imported-late")  # exported while parked
    _end(backend, child)
    assert backend.job_import_many(JobImportParams([item])) == ["imported-late"]
    assert _states(backend, "imported-late") == [JobState.QUEUED]


def test_a_join_imported_before_its_child_is_woken_by_the_childs_import(
    backend: Backend,
) -> None:
    needs(backend, "steps")
    child, joiner = _joining(backend)
    item = _exported_as(backend, joiner, "imported-first")
    _end(backend, child)
    steps = [records.replace(s, name="join:child-to-come") for s in item.steps]
    backend.job_import_many(JobImportParams([records.replace(item, steps=steps)]))
    assert _states(backend, "imported-first") == [JobState.WAITING]  # its child: not here
    ended = _exported_as(backend, child, "child-to-come")  # comes ended, in a later batch
    assert backend.job_import_many(JobImportParams([ended])) == ["child-to-come"]
    assert _states(backend, "imported-first") == [JobState.QUEUED]
