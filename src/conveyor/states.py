"""Job states and the transitions between them.

One enum for every backend. The diagram in ``docs/state-machine.md`` is the picture of
this module; change both together.

Example:
    >>> JobState.QUEUED in ACTIVE_STATES
    True
    >>> JobState.SUCCEEDED.is_finished
    True
"""

from __future__ import annotations

import enum


class JobState(enum.StrEnum):
    """Where a job is in its life. Every job is in exactly one state until deleted."""

    #: Waiting for its ``run_at`` time (a delay, a schedule or a retry backoff).
    #: Moved to ``queued`` by the promoter once due.
    SCHEDULED = "scheduled"
    #: Waiting for its parents in a workflow (``depends_on``, chains, group callbacks).
    #: Moved to ``queued`` in the transaction that finishes its last parent, or to
    #: ``cancelled`` when a parent ends dead or cancelled. Claims never read it. Or a
    #: durable job parked by ``conveyor.wait_for``: queued by the event it waits for
    #: (``job.send``) or when its timeout passes.
    WAITING = "waiting"
    #: Ready to be claimed by any worker listening on its queue.
    QUEUED = "queued"
    #: Claimed by one worker, under a lease and a fencing token.
    RUNNING = "running"
    #: Finished: the task returned. Kept (with its result) until retention prunes it.
    SUCCEEDED = "succeeded"
    #: Finished: attempts exhausted, worker lost too often, unknown task, bad payload,
    #: or a retry hook answered ``"archive"``. Kept with its error for inspection.
    DEAD = "dead"
    #: Finished: cancelled by a user before or while it ran. Never retried.
    CANCELLED = "cancelled"
    #: Finished: not started before its ``expires`` time (``with_options(expires=)``);
    #: it never ran. Ended by the worker that claimed it, or swept from ``queued`` /
    #: ``scheduled`` by a worker's promoter. Its dependants are cancelled, as for ``dead``.
    EXPIRED = "expired"

    @property
    def is_finished(self) -> bool:
        """True for the four terminal states."""
        return self in FINISHED_STATES


FINISHED_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED, JobState.EXPIRED}
)
#: The finished states a job may have run in (an expired job never started): the jobs
#: whose run and wait times conveyor/durations.py sums up.
RAN_STATES = frozenset({JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED})
ACTIVE_STATES = frozenset({JobState.WAITING, JobState.SCHEDULED, JobState.QUEUED, JobState.RUNNING})


class FinishKind(enum.StrEnum):
    """How a worker ends one attempt of a running job (the completer's vocabulary).
    Where each kind takes the job is :data:`conveyor.rules.FINISH`."""

    SUCCEEDED = "succeeded"  # -> succeeded, result stored
    RETRY = "retry"  # -> scheduled at run_at (backoff), error kept on the attempt
    DEAD = "dead"  # -> dead, error and reason kept
    CANCELLED = "cancelled"  # -> cancelled (cancel was requested while it ran)
    DROP = "drop"  # -> deleted (a retry hook answered "drop")
    SNOOZE = "snooze"  # -> scheduled at run_at, the attempt given back (conveyor.Snooze)
    EXPIRED = "expired"  # -> expired, never run (claimed past its expires_at)
