"""The finish rule, expiry, cancel and manual retry: where a job's end takes it.

Part of the rules (re-exported by :mod:`conveyor.rules`, which says how they are used).

Example:
    >>> FINISH[FinishKind.SNOOZE].gives_back_attempt
    True
    >>> JobState.RUNNING in CANCEL_AT_ONCE
    False
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.records import record
from conveyor.states import FinishKind, JobState

# -- finish --------------------------------------------------------------------------------

#: How a cancelled job reads to its dependants (user cancel, or a cancelled parent's).
WAS_CANCELLED = "was cancelled"
#: How a deleted unfinished job reads to its dependants (it can never release them).
WAS_DELETED = "was deleted"
#: How an expired job reads to its dependants, and the ``reason`` it ends with.
WAS_EXPIRED = "expired"
EXPIRED_REASON = "expired before it started"


def is_expired(expires_at: float | None, now: float) -> bool:
    """True when a job with ``expires_at`` (epoch seconds, None: never) may no longer
    start at ``now``: the claim-time rule (the worker ends it ``expired`` without running
    it) and the sweep's (``queued``/``scheduled`` jobs nobody claimed in time).

    >>> is_expired(None, 1e12), is_expired(100.0, 99.9), is_expired(100.0, 100.0)
    (False, False, True)
    """
    return expires_at is not None and now >= expires_at


@record
class FinishRule:
    """What ending one attempt with ``kind`` does to the job."""

    kind: FinishKind
    #: the state the job lands in; ``None``: the row and its history are deleted
    state: JobState | None
    #: the ``outcome`` of the attempt record written with it (``None``: none is kept)
    attempt_outcome: str | None
    #: True when the attempt is given back (``attempt - 1``: a snooze is not a try)
    gives_back_attempt: bool
    #: how the end reads to the job's dependants ("dependency <id> <this>"); ``None``
    #: when it is not a failure (success releases them; retry/snooze: not ended yet)
    parent_failed: str | None
    #: the one-letter code of this kind on the wire to the Redis finish script
    code: str

    @property
    def ends_job(self) -> bool:
        """True when the job is finished (or deleted) by this finish, not rescheduled."""
        return self.state is None or self.state.is_finished


FINISH: dict[FinishKind, FinishRule] = {
    r.kind: r
    for r in (
        FinishRule(FinishKind.SUCCEEDED, JobState.SUCCEEDED, "succeeded", False, None, "s"),
        FinishRule(FinishKind.RETRY, JobState.SCHEDULED, "failed", False, None, "r"),
        FinishRule(FinishKind.DEAD, JobState.DEAD, "dead", False, "ended dead", "d"),
        FinishRule(
            FinishKind.CANCELLED, JobState.CANCELLED, "cancelled", False, WAS_CANCELLED, "c"
        ),
        FinishRule(FinishKind.DROP, None, None, False, "was dropped", "x"),
        FinishRule(FinishKind.SNOOZE, JobState.SCHEDULED, "snoozed", True, None, "z"),
        # Never ran: the attempt is recorded (the claim counted it) as "expired", and
        # dependants are cancelled as behind a dead parent ("dependency <id> expired").
        FinishRule(FinishKind.EXPIRED, JobState.EXPIRED, "expired", False, WAS_EXPIRED, "e"),
    )
}
#: The attempt outcome of a graceful release (shutdown): back to queued, not an attempt.
RELEASED = "released"
#: ``reason`` of a job whose attempt ran but produced what conveyor refuses to store (a
#: result that cannot be encoded, ``conveyor.worker.outcome.Outcome.refused``): running
#: the same code again is refused the same way, so it finishes ``DEAD`` at once, whatever
#: attempts are left, the job's ``error`` saying what was refused. What the task raises
#: itself is never such a refusal: it is retried by the task's policy.
REFUSED_REASON = "not retried: running it again would be refused the same way"

# -- cancel and manual retry ---------------------------------------------------------------

#: A user's cancel ends a job in these states at once (``cancelled``); a ``running`` one
#: is only marked ``cancel_requested`` and its worker ends it (fenced by its token).
CANCEL_AT_ONCE = (JobState.QUEUED, JobState.SCHEDULED, JobState.WAITING)
#: A manual retry (``conveyor retry``) puts jobs in these states back to ``queued`` with
#: their attempts and rescues starting over; other states are left alone.
RETRY_BY_HAND = (JobState.DEAD, JobState.CANCELLED, JobState.SUCCEEDED)


def sql_states(states: Sequence[JobState]) -> str:
    """``'a', 'b'`` for an SQL ``IN (...)`` list of states (constants, never user data).

    >>> sql_states(CANCEL_AT_ONCE)
    "'queued', 'scheduled', 'waiting'"
    """
    return ", ".join(f"'{s.value}'" for s in states)
