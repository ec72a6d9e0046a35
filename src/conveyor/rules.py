"""Every state-transition rule of conveyor, written once, as plain data and pure functions.

Backends do not decide where a job goes next; they look it up here and apply it with
fenced statements (``... WHERE state = 'running' AND token = ?``). The SQLite backend
imports this module; the Redis scripts get the same tables as Lua constants generated
from it (:func:`lua_prelude`), so no rule exists in both Python and Lua. What must stay
atomic in the store (a claim, the liveness re-check of a rescue, walking a workflow's
dependants inside the finishing transaction) runs in SQL or Lua, but what it decides
comes from these tables. ``docs/architecture.md`` says where each rule lives.

The rules:

* **finish** (:data:`FINISH`): a finish kind -> the target state, the attempt's outcome,
  whether the attempt is given back, and how the job's end looks to its dependants.
* **rescue** (:func:`rescue_state`): a running job of a lost worker -> ``queued`` again
  (counting a rescue) or ``dead`` with reason "worker lost" (the poison-pill cap), which
  only a job its dead worker held alone can reach (poison isolation).
* **dependants** (:func:`on_parent_end`, :func:`insert_decision`): a workflow child ->
  one parent fewer to wait for, released, or cancelled, by its ``pipe`` and the parent's end.
* **cancel and manual retry** (:data:`CANCEL_AT_ONCE`, :data:`RETRY_BY_HAND`): which
  states a user's cancel ends at once, and which a manual retry puts back.
* **limits** (:func:`limit_deferral`): a claimed job over its concurrency or rate limit
  -> back to ``scheduled`` a moment later.
* **retries and their delays** are decided by ``conveyor.worker.outcome`` from the
  task's :class:`~conveyor.retry.Backoff` (pure too; the backend gets ``RETRY`` + ``run_at``),
  except for an attempt whose output conveyor refuses (:data:`REFUSED_REASON`): ``DEAD`` at once.

Example:
    >>> FINISH[FinishKind.RETRY].state
    <JobState.SCHEDULED: 'scheduled'>
    >>> rescue_state(attempt=1, max_attempts=5, rescues=3, max_rescues=3)
    <JobState.DEAD: 'dead'>
    >>> on_parent_end(PIPE_FAILURE, parent_succeeded=True)
    <ChildEffect.CANCEL: 'cancel'>
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Sequence

from conveyor.records import record
from conveyor.states import FINISHED_STATES, FinishKind, JobState

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


# -- rescue --------------------------------------------------------------------------------

#: ``reason`` of a job buried by the poison-pill cap.
WORKER_LOST_REASON = "worker lost"
#: ``error`` (and attempt error) of a rescued or buried job.
WORKER_LOST_ERROR = json.dumps(
    {"type": "WorkerLost", "message": "the worker running this job died", "traceback": ""}
)
#: The attempt outcome of a rescued job.
LOST = "lost"
#: How a job buried by rescue reads to its dependants.
LOST_PARENT_FAILED = "ended dead (worker lost)"


def rescue_state(
    *,
    attempt: int,
    max_attempts: int,
    rescues: int,
    max_rescues: int,
    alone: bool = True,
    odd: bool = False,
) -> JobState:
    """Where a running job of a lost worker goes: ``queued`` (one rescue more), or
    ``dead`` once it was rescued more than ``max_rescues`` times or its attempts are spent
    (a job that kills its worker must not kill every worker in turn).

    Poison isolation: ``alone`` says whether it was the only job its dead worker held
    (running or prefetched). A job held with others is not punished for a death any of
    them may have caused: it goes back to ``queued`` whatever its counts, its attempt
    given back (:func:`rescue_gives_back_attempt`), one rescue more. A job with
    ``rescues > 0`` is then run alone by the next worker that claims it (the worker's
    side of the rule: ``Attempts.isolate`` in ``conveyor/worker/attempts.py``), so the job
    that really kills workers reaches the cap alone and is the only one to end ``dead``
    "worker lost".
    ``max_rescues=0`` (never requeue) is obeyed either way.

    ``odd``: the row's counts are not whole numbers (a row written around the API, see
    ``decoding.rescue_counts``): it ends ``dead``, the backend writing the problem as
    the reason, as the claim refuses such a row; it is never requeued.

    >>> rescue_state(attempt=1, max_attempts=5, rescues=0, max_rescues=3)
    <JobState.QUEUED: 'queued'>
    >>> rescue_state(attempt=5, max_attempts=5, rescues=0, max_rescues=3)
    <JobState.DEAD: 'dead'>
    >>> rescue_state(attempt=5, max_attempts=5, rescues=3, max_rescues=3, alone=False)
    <JobState.QUEUED: 'queued'>
    >>> rescue_state(attempt=0, max_attempts=5, rescues=0, max_rescues=3, odd=True)
    <JobState.DEAD: 'dead'>
    """
    if odd:
        return JobState.DEAD
    if not alone and max_rescues > 0:
        return JobState.QUEUED
    if rescues + 1 > max_rescues or attempt >= max_attempts:
        return JobState.DEAD
    return JobState.QUEUED


def rescue_gives_back_attempt(*, alone: bool) -> bool:
    """Whether a rescue gives the attempt back (as a release does): yes for a job held
    with others by its dead worker (not its fault), no for a job that was alone.

    >>> rescue_gives_back_attempt(alone=False), rescue_gives_back_attempt(alone=True)
    (True, False)
    """
    return not alone


def held_alone(worker_ids: Sequence[str | None]) -> list[bool]:
    """For the rescue candidates' worker ids (one per job), whether each job was the only
    one its worker held.

    >>> held_alone(["w1", "w2", "w1"])
    [False, True, False]
    """
    held: dict[str | None, int] = {}
    for worker in worker_ids:
        held[worker] = held.get(worker, 0) + 1
    return [held[worker] == 1 for worker in worker_ids]


# -- workflows: how a child reacts to its parents ------------------------------------------

#: ``pipe`` of a workflow child (``JobInsertParams.pipe``): what it gets from its parents.
PIPE_NONE = 0  # nothing
PIPE_ONE = 1  # the one parent's result, as its first argument (a chain step)
PIPE_ALL = 2  # the list of the parents' results in order (a group's callback)
PIPE_FAILURE = 3  # an on_failure handler: ready when its one parent fails


class ChildEffect(enum.StrEnum):
    """What a parent's end does to a child that waits on it."""

    COUNT_DOWN = "count_down"  # one parent fewer to wait for; ready (results piped) at 0
    RELEASE = "release"  # ready now, told what happened to the parent (on_failure)
    CANCEL = "cancel"  # cancelled, and its own dependants after it (transitively)


#: (child is an on_failure handler, the parent succeeded) -> effect. The one table both
#: backends walk when a parent ends or when a child is inserted behind an ended parent.
CHILD_EFFECT: dict[tuple[bool, bool], ChildEffect] = {
    (False, True): ChildEffect.COUNT_DOWN,
    (False, False): ChildEffect.CANCEL,
    (True, True): ChildEffect.CANCEL,
    (True, False): ChildEffect.RELEASE,
}


def on_parent_end(pipe: int, *, parent_succeeded: bool) -> ChildEffect:
    """The effect on a waiting child (by its ``pipe``) of one parent's end."""
    return CHILD_EFFECT[(pipe == PIPE_FAILURE, parent_succeeded)]


_DEPENDENCY = "dependency "
_NOT_NEEDED = " succeeded: failure handler not needed"


def cancelled_reason(parent: str, why: str) -> str:
    """``reason`` of a child cancelled because ``parent`` failed (``why``: e.g. "ended dead").

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


def ready_state(run_at: float, now: float) -> JobState:
    """A job that may run: ``scheduled`` while its ``run_at`` is ahead, else ``queued``."""
    return JobState.SCHEDULED if run_at > now else JobState.QUEUED


# -- limits: may a claimed job start under its limit key? ----------------------------------

#: How long a job over its concurrency limit waits before it is looked at again (s), up
#: to twice that with jitter: a freed slot is reused quickly, and deferred jobs of one
#: key do not come back as a herd.
LIMIT_RECHECK = 0.2
#: Jitter added past the moment a rate window frees (s).
RATE_JITTER = 0.01


def limit_deferral(
    *,
    concurrency: int | None,
    running: int,
    rate_count: int | None,
    period: float | None,
    starts: Sequence[float],
    now: float,
    jitter: float,
) -> float | None:
    """``None`` when a claimed job may start under its limit key; else the ``run_at`` it
    is deferred to (back to ``scheduled``, the attempt given back, no error). ``running``:
    jobs of the key running before this one; ``starts``: the key's starts inside the
    rate window, oldest first; ``jitter`` in [0, 1). The claim applies this atomically
    (SQLite: claim_limits.py; Redis: _limits.lua with RULE_LIMIT_RECHECK/RATE_JITTER).

    >>> limit_deferral(concurrency=2, running=2, rate_count=None, period=None, starts=(),
    ...                now=100.0, jitter=0.5)
    100.3
    >>> limit_deferral(concurrency=None, running=0, rate_count=2, period=10.0,
    ...                starts=(95.0, 97.0), now=100.0, jitter=0.0)
    105.0
    """
    if concurrency is not None and running >= concurrency:
        return now + LIMIT_RECHECK * (1 + jitter)
    if rate_count is not None and period is not None and len(starts) >= rate_count:
        # The earliest moment a start leaves the window.
        return starts[len(starts) - rate_count] + period + jitter * RATE_JITTER
    return None


# -- for the Redis scripts -----------------------------------------------------------------


def _lua(value: object) -> str:
    if value is None:
        return "false"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(str(value))


@functools.cache  # the rules are constants; a Redis backend asks once per script
def _lua_definitions() -> tuple[tuple[str, str], ...]:
    """(name, Lua definition) of every rule, constants before the functions using them."""
    finish = ",\n  ".join(
        f"{r.code} = {{state = {_lua(r.state)}, outcome = {_lua(r.attempt_outcome)}, "
        f"give_back = {_lua(r.gives_back_attempt)}, parent_failed = {_lua(r.parent_failed)}, "
        f"ends = {_lua(r.ends_job)}}}"
        for r in FINISH.values()
    )

    def effect(handler: bool, ok: bool) -> str:
        return _lua(CHILD_EFFECT[(handler, ok)].value)

    constants = {
        "RULE_FINISH": f"{{\n  {finish}\n}}",
        "RULE_ENDED_AT_INSERT": "{"
        + ", ".join(f"{s.value} = {_lua(why)}" for s, why in ENDED_AT_INSERT.items())
        + "}",
        "RULE_FAILED_AT_INSERT": _lua(FAILED_AT_INSERT),
        "RULE_PIPE_FAILURE": _lua(PIPE_FAILURE),
        "RULE_WORKER_LOST_REASON": _lua(WORKER_LOST_REASON),
        "RULE_LOST": _lua(LOST),
        "RULE_LOST_PARENT_FAILED": _lua(LOST_PARENT_FAILED),
        "RULE_RELEASED": _lua(RELEASED),
        "RULE_WAS_CANCELLED": _lua(WAS_CANCELLED),
        "RULE_WAS_DELETED": _lua(WAS_DELETED),
        "RULE_LIMIT_RECHECK": repr(LIMIT_RECHECK),
        "RULE_RATE_JITTER": repr(RATE_JITTER),
        "RULE_CANCEL_AT_ONCE": "{" + ", ".join(f"{s.value} = true" for s in CANCEL_AT_ONCE) + "}",
        "RULE_RETRY_BY_HAND": "{" + ", ".join(f"{s.value} = true" for s in RETRY_BY_HAND) + "}",
        "RULE_FINISHED": "{"
        + ", ".join(f"{s.value} = true" for s in sorted(FINISHED_STATES))
        + "}",
        "RULE_WAS_EXPIRED": _lua(WAS_EXPIRED),
        "RULE_EXPIRED_REASON": _lua(EXPIRED_REASON),
        "RULE_EXPIRE_UNCLAIMED": "{"
        + ", ".join(f"{s.value} = true" for s in EXPIRE_UNCLAIMED)
        + "}",
    }
    definitions = [(name, f"local {name} = {value}") for name, value in constants.items()]
    functions = {
        # CHILD_EFFECT as branches: no table to build on every script call
        "rule_child_effect": f"""local function rule_child_effect(pipe, parent_succeeded)
  if pipe == RULE_PIPE_FAILURE then
    if parent_succeeded then return {effect(True, True)} end
    return {effect(True, False)}
  end
  if parent_succeeded then return {effect(False, True)} end
  return {effect(False, False)}
end""",
        "rule_cancelled_reason": f"""local function rule_cancelled_reason(parent, why)
  return {_lua(_DEPENDENCY)} .. parent .. ' ' .. why
end""",
        "rule_not_needed_reason": f"""local function rule_not_needed_reason(parent)
  return {_lua(_DEPENDENCY)} .. parent .. {_lua(_NOT_NEEDED)}
end""",
        # failed_dependency: the id after "dependency ", unless the handler was not needed
        "rule_failed_dependency": f"""local function rule_failed_dependency(reason)
  if not reason or string.sub(reason, -{len(_NOT_NEEDED)}) == {_lua(_NOT_NEEDED)} then
    return nil
  end
  return string.match(reason, {_lua("^" + _DEPENDENCY + "(%S+) ")})
end""",
    }
    return (*definitions, *functions.items())


def lua_prelude(uses: str | None = None) -> str:
    """These rules as Lua constants and functions, prepended to the Redis scripts (after
    ``_lib.lua``), so the scripts look rules up instead of restating them. With ``uses``
    (the script's text), only what it names is defined: every definition runs on every
    call of a script, and the claim script needs almost none of them.

    >>> "RULE_FINISH" in lua_prelude()
    True
    >>> lua_prelude("return RULE_LOST").splitlines()[1:]
    ['local RULE_LOST = "lost"']
    """
    definitions = _lua_definitions()
    if uses is None:
        chosen = list(definitions)
    else:
        needed = {name for name, _ in definitions if name in uses}
        for name, text in reversed(definitions):  # functions name the constants before them
            if name in needed:
                needed |= {other for other, _ in definitions if other != name and other in text}
        chosen = [(name, text) for name, text in definitions if name in needed]
    return "\n".join(
        ["-- generated from conveyor/rules.py (lua_prelude): the rules, as data"]
        + [text for _, text in chosen]
    )
