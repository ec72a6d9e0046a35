"""The transition rules as tables: input state + event -> output state + effects.

Both backends apply exactly these (SQLite imports ``conveyor.rules``; the Redis scripts
get them as generated Lua constants), so a row here is a row of the contract suite too.
"""

from __future__ import annotations

import doctest

import pytest

import conveyor.rules as rules
from conveyor.rules import (
    FINISH,
    PIPE_ALL,
    PIPE_FAILURE,
    PIPE_NONE,
    PIPE_ONE,
    ChildEffect,
    InsertDecision,
    JobStory,
    cancelled_reason,
    failed_dependency,
    failure_error,
    held_alone,
    insert_decision,
    lua_prelude,
    on_parent_end,
    ready_state,
    rescue_gives_back_attempt,
    rescue_state,
)
from conveyor.states import FinishKind, JobState

# running + finish(kind) -> (state, attempt outcome, attempt given back, dependants see)
FINISH_TABLE = [
    (FinishKind.SUCCEEDED, JobState.SUCCEEDED, "succeeded", False, None),
    (FinishKind.RETRY, JobState.SCHEDULED, "failed", False, None),
    (FinishKind.DEAD, JobState.DEAD, "dead", False, "ended dead"),
    (FinishKind.CANCELLED, JobState.CANCELLED, "cancelled", False, "was cancelled"),
    (FinishKind.DROP, None, None, False, "was dropped"),
    (FinishKind.SNOOZE, JobState.SCHEDULED, "snoozed", True, None),
]


@pytest.mark.parametrize(("kind", "state", "outcome", "give_back", "parent_sees"), FINISH_TABLE)
def test_finish_rule(
    kind: FinishKind,
    state: JobState | None,
    outcome: str | None,
    give_back: bool,
    parent_sees: str | None,
) -> None:
    rule = FINISH[kind]
    assert (rule.state, rule.attempt_outcome, rule.gives_back_attempt, rule.parent_failed) == (
        state,
        outcome,
        give_back,
        parent_sees,
    )
    assert rule.ends_job == (kind not in (FinishKind.RETRY, FinishKind.SNOOZE))


def test_every_finish_kind_has_one_rule_and_one_wire_code() -> None:
    assert set(FINISH) == set(FinishKind)
    assert len({r.code for r in FINISH.values()}) == len(FINISH)


# running job of a lost worker: (attempt, max_attempts, rescues, max_rescues) -> state
RESCUE_TABLE = [
    (1, 5, 0, 3, JobState.QUEUED),
    (1, 5, 2, 3, JobState.QUEUED),  # third rescue is still allowed
    (1, 5, 3, 3, JobState.DEAD),  # the poison-pill cap
    (4, 5, 0, 3, JobState.QUEUED),
    (5, 5, 0, 3, JobState.DEAD),  # out of attempts
    (1, 5, 0, 0, JobState.DEAD),  # max_rescues=0: never requeued
]


@pytest.mark.parametrize(
    ("attempt", "max_attempts", "rescues", "max_rescues", "state"), RESCUE_TABLE
)
def test_rescue_rule(
    attempt: int, max_attempts: int, rescues: int, max_rescues: int, state: JobState
) -> None:
    got = rescue_state(
        attempt=attempt, max_attempts=max_attempts, rescues=rescues, max_rescues=max_rescues
    )
    assert got is state


# poison isolation: a job its dead worker held with others is never charged
# (attempt, max_attempts, rescues, max_rescues, alone) -> state, attempt given back
ISOLATION_TABLE = [
    (1, 5, 0, 3, False, JobState.QUEUED, True),
    (1, 5, 3, 3, False, JobState.QUEUED, True),  # past the cap, but with batch-mates
    (5, 5, 0, 3, False, JobState.QUEUED, True),  # out of attempts: given back
    (1, 1, 9, 3, False, JobState.QUEUED, True),
    (1, 5, 0, 0, False, JobState.DEAD, True),  # max_rescues=0: never requeued, even so
    (1, 5, 3, 3, True, JobState.DEAD, False),  # alone: the cap applies
    (5, 5, 0, 3, True, JobState.DEAD, False),
    (1, 5, 0, 3, True, JobState.QUEUED, False),
]


@pytest.mark.parametrize(
    ("attempt", "max_attempts", "rescues", "max_rescues", "alone", "state", "gives_back"),
    ISOLATION_TABLE,
)
def test_poison_isolation_rule(
    attempt: int,
    max_attempts: int,
    rescues: int,
    max_rescues: int,
    alone: bool,
    state: JobState,
    gives_back: bool,
) -> None:
    got = rescue_state(
        attempt=attempt,
        max_attempts=max_attempts,
        rescues=rescues,
        max_rescues=max_rescues,
        alone=alone,
    )
    assert got is state
    assert rescue_gives_back_attempt(alone=alone) is gives_back


def test_alone_means_the_only_job_of_its_worker() -> None:
    assert held_alone([]) == []
    assert held_alone(["w1"]) == [True]
    assert held_alone(["w1", "w2", "w1", None]) == [False, True, False, True]


# waiting child (pipe) + parent ended (succeeded?) -> effect
CHILD_TABLE = [
    (PIPE_NONE, True, ChildEffect.COUNT_DOWN),
    (PIPE_ONE, True, ChildEffect.COUNT_DOWN),
    (PIPE_ALL, True, ChildEffect.COUNT_DOWN),
    (PIPE_NONE, False, ChildEffect.CANCEL),
    (PIPE_ALL, False, ChildEffect.CANCEL),
    (PIPE_FAILURE, True, ChildEffect.CANCEL),  # on_failure handler not needed
    (PIPE_FAILURE, False, ChildEffect.RELEASE),  # what it waited for
]


@pytest.mark.parametrize(("pipe", "succeeded", "effect"), CHILD_TABLE)
def test_child_effect(pipe: int, succeeded: bool, effect: ChildEffect) -> None:
    assert on_parent_end(pipe, parent_succeeded=succeeded) is effect


# child inserted behind parents in these states -> where it starts
INSERT_TABLE = [
    (PIPE_NONE, ["queued"], InsertDecision("waiting", 1)),
    (PIPE_ALL, ["succeeded", "running"], InsertDecision("waiting", 1)),
    (PIPE_ALL, ["succeeded", "succeeded"], InsertDecision("ready", piped=True)),
    (PIPE_NONE, ["succeeded"], InsertDecision("ready")),
    (
        PIPE_NONE,
        ["running", "dead"],
        InsertDecision("cancelled", reason="dependency p1 ended dead"),
    ),
    (PIPE_ONE, ["cancelled"], InsertDecision("cancelled", reason="dependency p0 ended cancelled")),
    (PIPE_FAILURE, ["running"], InsertDecision("waiting", 1)),
    (PIPE_FAILURE, ["dead"], InsertDecision("ready", failure_of="p0")),
    (
        PIPE_FAILURE,
        ["succeeded"],
        InsertDecision("cancelled", reason="dependency p0 succeeded: failure handler not needed"),
    ),
]


@pytest.mark.parametrize(("pipe", "states", "decision"), INSERT_TABLE)
def test_insert_decision(pipe: int, states: list[str], decision: InsertDecision) -> None:
    parents = [f"p{i}" for i in range(len(states))]
    assert insert_decision(pipe, parents, states) == decision


def test_ready_state_by_run_at() -> None:
    assert ready_state(10.0, now=5.0) is JobState.SCHEDULED
    assert ready_state(5.0, now=5.0) is JobState.QUEUED


def test_lua_prelude_carries_every_rule() -> None:
    lua = lua_prelude()
    for rule in FINISH.values():
        assert f"{rule.code} = {{state = " in lua
    for effect in ChildEffect:
        assert f'"{effect.value}"' in lua
    assert "RULE_WORKER_LOST_REASON" in lua


def test_each_script_gets_only_the_rules_it_names() -> None:
    # A function brings the constants it uses; nothing unnamed is defined.
    lua = lua_prelude(uses="rule_child_effect(pipe, true)")
    assert "local RULE_PIPE_FAILURE" in lua and "local function rule_child_effect" in lua
    assert "RULE_FINISH" not in lua


def test_doctests() -> None:
    assert doctest.testmod(rules).failed == 0


# claimed job under a limit: (concurrency, running, rate_count, period, starts) -> run_at
LIMIT_TABLE = [
    (None, 5, None, None, (), None),  # no limit configured: starts
    (2, 1, None, None, (), None),  # a slot is free
    (2, 2, None, None, (), 100.2),  # full: back in 0.2 s (jitter 0)
    (None, 0, 3, 10.0, (91.0, 95.0), None),  # room in the rate window
    (None, 0, 2, 10.0, (91.0, 95.0), 101.0),  # window full: when the oldest leaves it
    (1, 1, 2, 10.0, (91.0, 95.0), 100.2),  # concurrency is checked first
]


@pytest.mark.parametrize(
    ("concurrency", "running", "rate_count", "period", "starts", "run_at"), LIMIT_TABLE
)
def test_limit_deferral(
    concurrency: int | None,
    running: int,
    rate_count: int | None,
    period: float | None,
    starts: tuple[float, ...],
    run_at: float | None,
) -> None:
    got = rules.limit_deferral(
        concurrency=concurrency,
        running=running,
        rate_count=rate_count,
        period=period,
        starts=starts,
        now=100.0,
        jitter=0.0,
    )
    assert got == (None if run_at is None else pytest.approx(run_at))


def test_cancel_and_manual_retry_states() -> None:
    # A user's cancel ends every not-yet-running state at once; running only asks.
    assert set(rules.CANCEL_AT_ONCE) == {JobState.QUEUED, JobState.SCHEDULED, JobState.WAITING}
    # A manual retry takes finished jobs only (never one that is still active).
    assert set(rules.RETRY_BY_HAND) == {JobState.DEAD, JobState.CANCELLED, JobState.SUCCEEDED}
    assert rules.sql_states(rules.RETRY_BY_HAND) == "'dead', 'cancelled', 'succeeded'"


@pytest.mark.parametrize(
    ("reason", "parent"),
    [
        ("dependency j1 ended dead", "j1"),
        ("dependency j2 was cancelled", "j2"),
        ("dependency j3 succeeded: failure handler not needed", None),
        ("cancelled while running", None),
        ("dependency ", None),
        ("dependency j4", None),  # no "why" after the id: not a reason conveyor wrote
        (None, None),
        (42, None),  # a row written around the API
    ],
)
def test_failed_dependency_reads_back_only_cancelled_reasons(
    reason: object, parent: str | None
) -> None:
    assert failed_dependency(reason) == parent  # type: ignore[arg-type]


def test_failure_error_follows_cancelled_parents_back_to_the_failure() -> None:
    dead = ("dead", "attempts exhausted (1/1)", '{"type": "KeyError"}')
    rows: dict[str, JobStory] = {
        "a": dead,
        "b": ("cancelled", cancelled_reason("a", "ended dead"), None),
        "c": ("cancelled", cancelled_reason("b", "was cancelled"), None),
        "loop": ("cancelled", cancelled_reason("loop", "was cancelled"), None),
        "gone": ("cancelled", cancelled_reason("deleted-one", "was deleted"), None),
        "user": ("cancelled", "cancelled by user", None),
        "expired": ("expired", "expired before it started", None),
    }
    assert failure_error("c", rows.get) == '{"type": "KeyError"}'
    assert failure_error("a", rows.get) == '{"type": "KeyError"}'
    for no_error in ("loop", "gone", "user", "expired", "missing"):
        assert failure_error(no_error, rows.get) is None


def test_sequence_and_fairness_rules() -> None:
    from conveyor import fair, sequences, unique, workflow_rules
    from conveyor.backends import records

    for module in (workflow_rules, sequences, fair, unique, records):
        assert doctest.testmod(module).failed == 0
    block, skip = rules.PIPE_SEQUENCE, rules.PIPE_SEQUENCE_SKIP
    table = {
        (pipe, ok): rules.on_parent_end(pipe, parent_succeeded=ok)
        for pipe in (block, skip)
        for ok in (True, False)
    }
    assert table == {
        (block, True): rules.ChildEffect.COUNT_DOWN,
        (block, False): rules.ChildEffect.HOLD,
        (skip, True): rules.ChildEffect.COUNT_DOWN,
        (skip, False): rules.ChildEffect.COUNT_DOWN,
    }
    # At insert, the same effects on the job before it, already ended.
    assert rules.insert_decision(block, ["p"], ["dead"]).reason == "sequence blocked: p ended dead"
    assert rules.insert_decision(skip, ["p"], ["dead"]).state == "ready"
    assert rules.insert_decision(block, ["p"], ["queued"]).waiting_on == 1
    assert rules.insert_decision(block, [], []).state == "ready"
    # A key behind the head starts at it; one ahead steps on; weight 2 steps half as far.
    assert rules.fair_place(5.0, 10.0, 99.0) == 10.0
    assert rules.fair_place(20.0, 10.0, 99.0, weight=2.0) == 20.0 + rules.FAIR_STEP / 2
    assert rules.fair_place(None, None, 99.0) == 99.0
