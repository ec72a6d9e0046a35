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
    >>> from conveyor.states import FinishKind
    >>> FINISH[FinishKind.RETRY].state
    <JobState.SCHEDULED: 'scheduled'>
    >>> rescue_state(attempt=1, max_attempts=5, rescues=3, max_rescues=3)
    <JobState.DEAD: 'dead'>
    >>> on_parent_end(PIPE_FAILURE, parent_succeeded=True)
    <ChildEffect.CANCEL: 'cancel'>
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

from conveyor.finish_rules import (
    CANCEL_AT_ONCE,
    EXPIRED_REASON,
    FINISH,
    REFUSED_REASON,
    RELEASED,
    RETRY_BY_HAND,
    WAS_CANCELLED,
    WAS_DELETED,
    WAS_EXPIRED,
    FinishRule,
    is_expired,
    sql_states,
)
from conveyor.states import FINISHED_STATES, JobState
from conveyor.workflow_rules import (
    _BLOCKED,
    _DEPENDENCY,
    _NOT_NEEDED,
    CHILD_EFFECT,
    ENDED_AT_INSERT,
    EXPIRE_UNCLAIMED,
    FAILED_AT_INSERT,
    PIPE_ALL,
    PIPE_FAILURE,
    PIPE_NONE,
    PIPE_ONE,
    PIPE_SEQUENCE,
    PIPE_SEQUENCE_SKIP,
    SEQUENCE_EFFECT,
    SEQUENCE_PIPES,
    ChildEffect,
    InsertDecision,
    JobStory,
    cancelled_reason,
    failed_dependency,
    failure_error,
    insert_decision,
    is_sequence_blocked,
    not_needed_reason,
    on_parent_end,
    ready_state,
    sequence_blocked_reason,
)

#: the rules of every part (finish_rules.py, workflow_rules.py) and this module's own
__all__ = [
    "CANCEL_AT_ONCE",
    "CHILD_EFFECT",
    "ENDED_AT_INSERT",
    "EXPIRED_REASON",
    "EXPIRE_UNCLAIMED",
    "FAILED_AT_INSERT",
    "FAIR_STEP",
    "FINISH",
    "LIMIT_RECHECK",
    "LOST",
    "LOST_PARENT_FAILED",
    "PIPE_ALL",
    "PIPE_FAILURE",
    "PIPE_NONE",
    "PIPE_ONE",
    "PIPE_SEQUENCE",
    "PIPE_SEQUENCE_SKIP",
    "RATE_JITTER",
    "REFUSED_REASON",
    "RELEASED",
    "RETRY_BY_HAND",
    "SEQUENCE_EFFECT",
    "SEQUENCE_PIPES",
    "WAS_CANCELLED",
    "WAS_DELETED",
    "WAS_EXPIRED",
    "WORKER_LOST_ERROR",
    "WORKER_LOST_REASON",
    "ChildEffect",
    "FinishRule",
    "InsertDecision",
    "JobStory",
    "cancelled_reason",
    "debounced_run_at",
    "failed_dependency",
    "failure_error",
    "fair_place",
    "held_alone",
    "insert_decision",
    "is_expired",
    "is_sequence_blocked",
    "limit_deferral",
    "lua_prelude",
    "not_needed_reason",
    "on_parent_end",
    "ready_state",
    "rescue_charge",
    "rescue_gives_back_attempt",
    "rescue_state",
    "sequence_blocked_reason",
    "sql_states",
]


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
    progressed: bool = False,
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

    ``progressed``: a durable job that saved a step during the lost attempt (after its
    start). A poison pill kills its worker before it gets anywhere; a job that got
    somewhere did not cause the death it is rescued from (the worker was killed between
    its steps, or a deploy), so it goes back to ``queued`` uncharged: no rescue counted
    (:func:`rescue_charge`), its attempt given back. A job whose worker dies again and
    again inside one step saves nothing: that rescue counts, and the cap ends it.

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
    if (not alone or progressed) and max_rescues > 0:
        return JobState.QUEUED
    if rescues + 1 > max_rescues or attempt >= max_attempts:
        return JobState.DEAD
    return JobState.QUEUED


def rescue_charge(*, progressed: bool) -> int:
    """How many rescues a requeue counts: 0 for a durable job that saved a step during
    the lost attempt (see :func:`rescue_state`), else 1.

    >>> rescue_charge(progressed=True), rescue_charge(progressed=False)
    (0, 1)
    """
    return 0 if progressed else 1


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


# -- limits: may a claimed job start under its limit key? ----------------------------------

#: How long a job over its concurrency limit waits before it is looked at again (s), up
#: to twice that with jitter: a freed slot is reused quickly, and deferred jobs of one
#: key do not come back as a herd.
LIMIT_RECHECK = 0.2
#: Jitter added past the moment a rate window frees (s).
RATE_JITTER = 0.01


#: The step between two jobs of one fair key in its queue's round (seconds of ``run_at``;
#: 1 ms, the grain Redis orders ready jobs by). A key of weight 2 steps half as far.
FAIR_STEP = 0.001


def fair_place(last: float | None, head: float | None, now: float, weight: float = 1.0) -> float:
    """The ``run_at`` (its place in the claim's order) of a ready job of a fair key:
    one step after its key's last place, never before the queue's head (``None``: the
    queue is empty, so ``now``). A new key, or one that fell behind, starts at the head:
    its turn is next, whatever another key has queued. The job is ``queued`` even where
    that place is ahead of ``now``: a claim takes queued jobs in ``run_at`` order.

    >>> fair_place(None, 100.0, 500.0), fair_place(100.0, 100.0, 500.0)
    (100.0, 100.001)
    """
    start = now if head is None else head
    if last is None:
        return start
    return max(last + FAIR_STEP / weight, start)


def debounced_run_at(run_at: float, created_at: float, max_wait: float | None) -> float:
    """A replaced job's new ``run_at`` (a debounce): the new one, but never later than
    ``max_wait`` after the job was first enqueued.

    >>> debounced_run_at(130.0, 100.0, 20.0), debounced_run_at(130.0, 100.0, None)
    (120.0, 130.0)
    """
    return run_at if max_wait is None else min(run_at, created_at + max_wait)


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
    """(name, Lua definition) of every rule, constants before the functions using them.
    Over 60 lines: one Lua text per rule, in the order the scripts need them."""
    finish = ",\n  ".join(
        f"{r.code} = {{state = {_lua(r.state)}, outcome = {_lua(r.attempt_outcome)}, "
        f"give_back = {_lua(r.gives_back_attempt)}, parent_failed = {_lua(r.parent_failed)}, "
        f"ends = {_lua(r.ends_job)}}}"
        for r in FINISH.values()
    )

    def effect(handler: bool, ok: bool) -> str:
        return _lua(CHILD_EFFECT[(handler, ok)].value)

    def in_sequence(skip: bool, ok: bool) -> str:
        return _lua(SEQUENCE_EFFECT[(skip, ok)].value)

    constants = {
        "RULE_FINISH": f"{{\n  {finish}\n}}",
        "RULE_ENDED_AT_INSERT": "{"
        + ", ".join(f"{s.value} = {_lua(why)}" for s, why in ENDED_AT_INSERT.items())
        + "}",
        "RULE_FAILED_AT_INSERT": _lua(FAILED_AT_INSERT),
        "RULE_PIPE_FAILURE": _lua(PIPE_FAILURE),
        "RULE_PIPE_SEQUENCE": _lua(PIPE_SEQUENCE),
        "RULE_PIPE_SEQUENCE_SKIP": _lua(PIPE_SEQUENCE_SKIP),
        "RULE_SEQUENCE_BLOCKED": _lua(_BLOCKED),
        "RULE_FAIR_STEP": repr(FAIR_STEP),
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
  if pipe == RULE_PIPE_SEQUENCE then
    if parent_succeeded then return {in_sequence(False, True)} end
    return {in_sequence(False, False)}
  end
  if pipe == RULE_PIPE_SEQUENCE_SKIP then
    if parent_succeeded then return {in_sequence(True, True)} end
    return {in_sequence(True, False)}
  end
  if parent_succeeded then return {effect(False, True)} end
  return {effect(False, False)}
end""",
        "rule_cancelled_reason": f"""local function rule_cancelled_reason(parent, why)
  return {_lua(_DEPENDENCY)} .. parent .. ' ' .. why
end""",
        "rule_sequence_blocked_reason": """local function rule_sequence_blocked_reason(parent, why)
  return RULE_SEQUENCE_BLOCKED .. parent .. ' ' .. why
end""",
        "rule_debounced_run_at": """local function rule_debounced_run_at(run_at, created_at, max_wait)
  if not max_wait then return run_at end
  return math.min(run_at, created_at + max_wait)
end""",
        "rule_fair_place": """local function rule_fair_place(last, head, now, weight)
  local start = head or now
  if not last then return start end
  return math.max(last + RULE_FAIR_STEP / weight, start)
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
