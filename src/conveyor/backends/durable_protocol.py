"""The Durable protocol: durable jobs' step records, events sent to a job, joins, and
the deadlines of its waits (feature ``steps``). Part of the seam;
:mod:`conveyor.backends.protocols` composes it into ``Backend`` and re-exports it (kept
apart so that module stays small).

Example::

    steps = backend.job_step_list(job_id)   # one read per replay
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from conveyor.backends.durable_params import (
    EventWaitResult,
    JobEventSendParams,
    JobEventWaitParams,
    JobJoinParams,
    JobStepSaveParams,
    JobStepSaveThroughParams,
    StepRecord,
)
from conveyor.states import JobState


class Durable(Protocol):
    """Durable jobs (feature ``steps``): a job's step records, events sent to it, and
    the deadlines of its waits. Step writes are fenced by the claim token, as finishes."""

    def job_event_send(self, params: JobEventSendParams) -> bool:
        """Store one event for the job and, when the job waits for that name (state
        ``waiting``, its ``waiting`` step names it), move it to ``queued`` in the same
        transaction or script; True when it was woken. Raises JobNotFound."""
        ...

    def job_event_wait(self, params: JobEventWaitParams) -> EventWaitResult:
        """Atomically, fenced by the token: consume the oldest event of that name and
        save it as the step; or save the step ``timed_out`` past its deadline; or save it
        ``waiting`` and park the job (``waiting``, attempt given back, no worker, run_at =
        the deadline). See :class:`~conveyor.backends.durable_params.JobEventWaitParams`."""
        ...

    def job_join_mark(self, params: JobJoinParams) -> JobState | None:
        """Mark that ``params.joiner`` waits for the end of ``params.job_id`` (a
        ``conveyor.join``), unless it has ended: whatever way it ends (finish, cancel,
        delete, expiry, a rescue to dead) then wakes the joiner if it waits in its join
        step ``join:<job_id>`` (the store's ``settle``, where workflows' dependants move).
        Returns the job's state read with the mark (under its row lock), None if gone."""
        ...

    def job_event_list(self, job_id: str) -> list[JobEventSendParams]:
        """The events sent to the job and not consumed yet, oldest first, as the sends
        that stored them (``sent_at`` 0.0 where the store keeps no time: Redis, memory);
        what an export carries so that an import delivers them still."""
        ...

    def job_step_list(self, job_id: str) -> list[StepRecord]:
        """The job's step records by position (one read per replay)."""
        ...

    def job_step_save(self, params: JobStepSaveParams) -> bool:
        """Write one step record while the job runs under the token (one statement, one
        commit); False when refused (the attempt lost its job)."""
        ...

    def job_step_save_many(self, params: Sequence[JobStepSaveParams]) -> list[bool]:
        """Several jobs' checkpoints in one transaction / script call (the worker's group
        commit, ``worker/checkpointer.py``): each fenced by its own token as
        :meth:`job_step_save`, whose answers these are, in order. A refused one (its job
        lost) writes nothing and refuses nothing else."""
        ...

    def job_step_save_through(self, params: JobStepSaveThroughParams) -> bool:
        """``job_step_save`` through a task's connection (one of
        :meth:`transaction_connection`'s), in its open transaction, no commit: the
        checkpoint of ``@app.step(transaction=True)`` commits with the step's writes.
        Stores without feature ``transactional_completion`` raise ConfigurationError."""
        ...

    def job_wake_due(self, limit: int) -> int:
        """Jobs waiting for an event whose deadline passed (store clock) -> ``queued``
        (they replay and time out); returns how many, at most ``limit``."""
        ...
