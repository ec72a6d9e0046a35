"""The workflow rules: how a child reacts to its parents' ends, at insert and later.

Part of the rules (re-exported by :mod:`conveyor.rules`, which says how they are used).

Example:
    >>> on_parent_end(PIPE_ONE, parent_succeeded=False)
    <ChildEffect.CANCEL: 'cancel'>
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from conveyor.finish_rules import WAS_EXPIRED
from conveyor.records import record
from conveyor.states import JobState

# -- workflows: how a child reacts to its parents ------------------------------------------

#: ``pipe`` of a workflow child (``JobInsertParams.pipe``): what it gets from its parents.
PIPE_NONE = 0  # nothing
PIPE_ONE = 1  # the one parent's result, as its first argument (a chain step)
PIPE_ALL = 2  # the list of the parents' results in order (a group's callback)
PIPE_FAILURE = 3  # an on_failure handler: ready when its one parent fails
#: a sequence's next job (``sequence_key``): waits on the job enqueued before it with the
#: same key; behind a failed one it is held (``on_failure="block"``) or goes on ("skip")
PIPE_SEQUENCE = 4
PIPE_SEQUENCE_SKIP = 5
SEQUENCE_PIPES = (PIPE_SEQUENCE, PIPE_SEQUENCE_SKIP)


class ChildEffect(enum.StrEnum):
    """What a parent's end does to a child that waits on it."""

    COUNT_DOWN = "count_down"  # one parent fewer to wait for; ready (results piped) at 0
    RELEASE = "release"  # ready now, told what happened to the parent (on_failure)
    CANCEL = "cancel"  # cancelled, and its own dependants after it (transitively)
    HOLD = "hold"  # keeps waiting, with a reason saying why (a blocked sequence)


#: (child is an on_failure handler, the parent succeeded) -> effect. The one table both
#: backends walk when a parent ends or when a child is inserted behind an ended parent.
CHILD_EFFECT: dict[tuple[bool, bool], ChildEffect] = {
    (False, True): ChildEffect.COUNT_DOWN,
    (False, False): ChildEffect.CANCEL,
    (True, True): ChildEffect.CANCEL,
    (True, False): ChildEffect.RELEASE,
}


#: (a sequence's next job skips failures, the one before it succeeded) -> effect.
SEQUENCE_EFFECT: dict[tuple[bool, bool], ChildEffect] = {
    (False, True): ChildEffect.COUNT_DOWN,
    (False, False): ChildEffect.HOLD,
    (True, True): ChildEffect.COUNT_DOWN,
    (True, False): ChildEffect.COUNT_DOWN,
}


def on_parent_end(pipe: int, *, parent_succeeded: bool) -> ChildEffect:
    """The effect on a waiting child (by its ``pipe``) of one parent's end.

    >>> on_parent_end(PIPE_SEQUENCE, parent_succeeded=False)
    <ChildEffect.HOLD: 'hold'>
    """
    if pipe in SEQUENCE_PIPES:
        return SEQUENCE_EFFECT[(pipe == PIPE_SEQUENCE_SKIP, parent_succeeded)]
    return CHILD_EFFECT[(pipe == PIPE_FAILURE, parent_succeeded)]


_BLOCKED = "sequence blocked: "


def sequence_blocked_reason(parent: str, why: str) -> str:
    """``reason`` of a sequence's job held behind ``parent``, which failed (``why``).

    >>> sequence_blocked_reason("j1", "ended dead")
    'sequence blocked: j1 ended dead'
    """
    return f"{_BLOCKED}{parent} {why}"


def is_sequence_blocked(reason: str | None) -> bool:
    """Whether a waiting job's ``reason`` says it is held behind a failed job (so an
    operator's release may make it ready)."""
    return isinstance(reason, str) and reason.startswith(_BLOCKED)


_DEPENDENCY = "dependency "
_NOT_NEEDED = " succeeded: failure handler not needed"


def cancelled_reason(parent: str, why: str) -> str:
    """``reason`` of a child cancelled because ``parent`` failed (``why``: e.g. "ended dead").

    >>> from conveyor.finish_rules import FINISH
    >>> from conveyor.states import FinishKind
    >>> cancelled_reason("j1", FINISH[FinishKind.DEAD].parent_failed or "")
    'dependency j1 ended dead'
    """
    return f"{_DEPENDENCY}{parent} {why}"


def not_needed_reason(parent: str) -> str:
    """``reason`` of an on_failure handler cancelled because its parent succeeded."""
    return f"{_DEPENDENCY}{parent}{_NOT_NEEDED}"


def failed_dependency(reason: str | None) -> str | None:
    """The parent whose failure a child was cancelled behind, read back from the child's
    :func:`cancelled_reason`; None for any other reason (a handler "not needed", a
    user's cancel).

    >>> failed_dependency(cancelled_reason("j1", "ended dead"))
    'j1'
    >>> failed_dependency(not_needed_reason("j1")) is None, failed_dependency(None) is None
    (True, True)
    """
    if not isinstance(reason, str) or not reason.startswith(_DEPENDENCY):
        return None  # (a row written around the API may hold anything)
    if reason.endswith(_NOT_NEEDED):
        return None
    parent, space, _ = reason[len(_DEPENDENCY) :].partition(" ")
    return parent if parent and space else None


#: (state, reason, error) of a stored job, None when there is no such job.
JobStory = tuple[str, str | None, str | None] | None


def failure_error(parent: str, lookup: Callable[[str], JobStory]) -> str | None:
    """The stored error (JSON text) an on_failure handler of ``parent`` is given: the
    parent's own, or, for a parent cancelled behind a failed dependency (a chain's last
    step after an earlier step died), that dependency's, followed back to the job that
    failed. None when no job on the way has one (a user's cancel, an expiry). Every
    store applies it when it releases a handler (Redis: ``_flow.lua`` ``failure_error``).

    >>> from conveyor.finish_rules import WAS_CANCELLED
    >>> rows = {"a": ("dead", "attempts exhausted (1/1)", '{"type": "KeyError"}'),
    ...         "b": ("cancelled", cancelled_reason("a", "ended dead"), None),
    ...         "c": ("cancelled", cancelled_reason("b", WAS_CANCELLED), None)}
    >>> failure_error("c", rows.get)
    '{"type": "KeyError"}'
    """
    seen: set[str] = set()
    current: str | None = parent
    while current is not None and current not in seen:
        seen.add(current)
        story = lookup(current)
        if story is None:
            return None
        state, reason, error = story
        if error:
            return error
        current = failed_dependency(reason) if state == JobState.CANCELLED else None
    return None


#: How a parent that already ended reads to a child inserted behind it.
ENDED_AT_INSERT = {
    JobState.DEAD: "ended dead",
    JobState.CANCELLED: "ended cancelled",
    JobState.EXPIRED: WAS_EXPIRED,
}
#: States a job may expire from without a worker (the sweep, ``job_expire_due``: nobody
#: started it in time). A ``waiting`` one is included: it can no longer start in time
#: either, and its parents' ends touch only children still ``waiting``.
EXPIRE_UNCLAIMED = (JobState.QUEUED, JobState.SCHEDULED, JobState.WAITING)
#: How a failed parent reads to an on_failure handler inserted behind it.
FAILED_AT_INSERT = "failed"


@record
class InsertDecision:
    """Where a workflow child starts, from its parents' states at insert time."""

    #: ``waiting`` (parents pending), ``cancelled``, or ``ready`` (queued or scheduled by
    #: its run_at: the store applies :func:`ready_state`)
    state: str
    waiting_on: int = 0
    reason: str | None = None
    #: ready with the failed parent's story first in its arguments (on_failure)
    failure_of: str | None = None
    #: ready with its parents' results first in its arguments (``pipe`` 1 or 2)
    piped: bool = False


def insert_decision(pipe: int, parents: Sequence[str], states: Sequence[str]) -> InsertDecision:
    """The start of a child whose parents (ids, in order) are in ``states`` now: the same
    :data:`CHILD_EFFECT` as when they end later, applied to the ones already ended.

    >>> insert_decision(PIPE_ONE, ["p"], ["running"])
    InsertDecision(state='waiting', waiting_on=1, reason=None, failure_of=None, piped=False)
    >>> insert_decision(PIPE_NONE, ["p"], ["dead"]).reason
    'dependency p ended dead'
    """
    pending = sum(1 for s in states if s != JobState.SUCCEEDED)
    failed = [i for i, s in enumerate(states) if s in ENDED_AT_INSERT]
    if pipe in SEQUENCE_PIPES:
        return _sequence_decision(pipe, parents, states, failed)
    if pipe == PIPE_FAILURE:
        first = states[0]
        if first == JobState.SUCCEEDED:
            effect = on_parent_end(pipe, parent_succeeded=True)
        elif failed:
            effect = on_parent_end(pipe, parent_succeeded=False)
        else:
            return InsertDecision("waiting", pending)
        if effect is ChildEffect.CANCEL:
            return InsertDecision("cancelled", reason=not_needed_reason(parents[0]))
        return InsertDecision("ready", failure_of=parents[0])
    if failed:
        i = failed[0]
        why = ENDED_AT_INSERT[JobState(states[i])]
        return InsertDecision("cancelled", reason=cancelled_reason(parents[i], why))
    if pending:
        return InsertDecision("waiting", pending)
    return InsertDecision("ready", piped=pipe in (PIPE_ONE, PIPE_ALL))


def _sequence_decision(
    pipe: int, parents: Sequence[str], states: Sequence[str], failed: Sequence[int]
) -> InsertDecision:
    """A sequence's next job behind the job enqueued before it (none: ready)."""
    if not parents or states[0] == JobState.SUCCEEDED:
        return InsertDecision("ready")
    if failed:
        effect = on_parent_end(pipe, parent_succeeded=False)
        if effect is ChildEffect.COUNT_DOWN:
            return InsertDecision("ready")
        why = ENDED_AT_INSERT[JobState(states[0])]
        return InsertDecision("waiting", 1, reason=sequence_blocked_reason(parents[0], why))
    return InsertDecision("waiting", 1)


def ready_state(run_at: float, now: float) -> JobState:
    """A job that may run: ``scheduled`` while its ``run_at`` is ahead, else ``queued``."""
    return JobState.SCHEDULED if run_at > now else JobState.QUEUED
