"""Durable jobs on the memory store: step records and events under the store's lock
(the :class:`~conveyor.backends.protocols.Durable` protocol, feature ``steps``).

The same behaviour as the SQL engine's ``sql/steps.py``, in Python: a step is saved
only while its job runs under the token; a send and a wait are atomic under the lock,
so an event is never left unread beside a parked job.

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> from conveyor.backends.base import JobEventSendParams, JobInsertParams
    >>> b = MemoryBackend("memory://")
    >>> b.job_insert_many([JobInsertParams(id="j", task="t", queue="q", payload="{}")])
    ['j']
    >>> b.job_event_send(JobEventSendParams("j", "approved", "true"))  # not waiting
    False
    >>> b.job_step_list("j")
    []
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from conveyor.backends.base import (
    JOIN_PREFIX,
    STEP_SUCCEEDED,
    STEP_TIMED_OUT,
    STEP_WAITING,
    WAIT_PARKED,
    WAIT_RECEIVED,
    WAIT_REFUSED,
    WAIT_TIMED_OUT,
    EventWaitResult,
    JobEventSendParams,
    JobEventWaitParams,
    JobJoinParams,
    JobStepSaveParams,
    JobStepSaveThroughParams,
    StepRecord,
)
from conveyor.backends.memory.flow import wake_waiting
from conveyor.backends.memory.store import MemoryStore, Row
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.records import replace
from conveyor.states import JobState


def _held(store: MemoryStore, job_id: str, token: int) -> Row | None:
    row = store.jobs.get(job_id)
    if row is None or row.state is not JobState.RUNNING or row.token != token:
        return None
    return row


class MemorySteps:
    """The Durable protocol under the memory store's lock."""

    store: MemoryStore

    def job_step_list(self, job_id: str) -> list[StepRecord]:
        with self.store.lock:
            saved = self.store.steps.get(job_id, {})
            return [saved[p] for p in sorted(saved)]

    def job_event_list(self, job_id: str) -> list[JobEventSendParams]:
        with self.store.lock:
            sent = self.store.events.get(job_id, ())
            return [JobEventSendParams(job_id, str(n), str(p)) for n, p, used in sent if not used]

    def job_step_save(self, params: JobStepSaveParams) -> bool:
        step = params.step
        with self.store.lock:
            if _held(self.store, step.job_id, params.token) is None:
                return False
            saved = self.store.steps.setdefault(step.job_id, {})
            if step.position in saved and not params.replace:
                return False  # the SQL stores' primary key refuses it too
            saved[step.position] = step
            if step.position == 0:  # started: expires= no longer applies
                row = self.store.jobs[step.job_id]
                row.expires_at = None
            return True

    def job_step_save_many(self, params: Sequence[JobStepSaveParams]) -> list[bool]:
        return [self.job_step_save(one) for one in params]

    def job_step_save_through(self, params: JobStepSaveThroughParams) -> bool:
        """No task connection to commit a step's writes through (SQL stores only)."""
        raise ConfigurationError(
            "@app.step(transaction=True) commits a step's writes with its checkpoint on "
            "SQLite and PostgreSQL only"
        )

    def job_event_send(self, params: JobEventSendParams) -> bool:
        with self.store.write() as store:
            row = store.jobs.get(params.job_id)
            if row is None:
                raise JobNotFound(params.job_id)
            store.events.setdefault(params.job_id, []).append([params.name, params.payload, False])
            return wake_waiting(store, row.id, params.name, time.time())

    def job_join_mark(self, params: JobJoinParams) -> JobState | None:
        with self.store.write() as store:
            row = store.jobs.get(params.job_id)
            if row is None:
                return None
            marks = store.children.setdefault(row.id, [])
            mark = JOIN_PREFIX + params.joiner
            if not row.state.is_finished and mark not in marks:
                marks.append(mark)  # its end wakes the joiner (flow.settle)
            return row.state

    def job_event_wait(self, params: JobEventWaitParams) -> EventWaitResult:
        p = params
        with self.store.write() as store:
            row = _held(store, p.job_id, p.token)
            if row is None:
                return EventWaitResult(WAIT_REFUSED)
            now = time.time()
            step = StepRecord(p.job_id, p.position, p.name, STEP_WAITING,
                              json.dumps(p.deadline), None, 1, p.started_at or now, now)  # fmt: skip
            saved = store.steps.setdefault(p.job_id, {})
            for event in store.events.get(p.job_id, ()):
                if event[0] == p.event and not event[2]:
                    event[2] = True
                    payload = str(event[1])
                    saved[p.position] = replace(step, state=STEP_SUCCEEDED, result=payload)
                    return EventWaitResult(WAIT_RECEIVED, payload)
            if now >= p.deadline:
                saved[p.position] = replace(step, state=STEP_TIMED_OUT)
                return EventWaitResult(WAIT_TIMED_OUT)
            saved[p.position] = step
            row.state, row.run_at, row.attempt = JobState.WAITING, p.deadline, row.attempt - 1
            row.worker_id = row.lease_until = row.expires_at = None  # started: no expiry
            return EventWaitResult(WAIT_PARKED)

    def job_wake_due(self, limit: int) -> int:
        now, woken = time.time(), 0
        with self.store.write() as store:
            for job_id, steps in store.steps.items():
                row = store.jobs.get(job_id)
                if woken >= limit or row is None or row.state is not JobState.WAITING:
                    continue
                if row.run_at <= now and any(s.state == STEP_WAITING for s in steps.values()):
                    row.state, row.run_at = JobState.QUEUED, now
                    woken += 1
        return woken
