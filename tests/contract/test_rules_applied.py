"""Each backend applies ``conveyor.rules`` exactly: the unit tables of
``tests/unit/test_rules.py`` replayed against a real store.

The finish table and the rescue cap are decided by the rules and applied by the store;
the claim's own rule (order, shares, pauses) stays inside one SQL statement / Lua script
because it must be atomic, is stated once in ``docs/architecture.md`` and is checked by
``test_claim_rule`` below on every backend.
"""

from __future__ import annotations

import time

import pytest

from conveyor import rules
from conveyor.backends.base import (
    Backend,
    JobClaimParams,
    JobFinishParams,
    JobRescueParams,
    QueuePauseParams,
)
from conveyor.rules import FINISH, WORKER_LOST_REASON, rescue_state
from conveyor.states import FinishKind, JobState
from tests.contract.helpers import claim, insert, register
from tests.support.features import needs


@pytest.mark.parametrize("kind", list(FinishKind))
def test_finish_lands_where_the_rule_says(backend: Backend, kind: FinishKind) -> None:
    if kind is FinishKind.SNOOZE:
        needs(backend, "snooze")
    rule = FINISH[kind]
    insert(backend)
    (job,) = claim(backend)
    refused = backend.job_finish_many(
        [
            JobFinishParams(
                job.id,
                job.token,
                kind,
                worker_id="w1",
                attempt=job.attempt,
                error='{"type":"E","message":"m","traceback":""}',
                run_at=time.time() + 60,
            )
        ]
    )
    assert refused == []
    found = backend.job_get_many([job.id])
    if rule.state is None:
        assert found == [] and backend.job_attempts(job.id) == []
        return
    (record,) = found
    assert record.state is rule.state
    assert record.attempt == (job.attempt - 1 if rule.gives_back_attempt else job.attempt)
    assert [a.outcome for a in backend.job_attempts(job.id)] == [rule.attempt_outcome]


@pytest.mark.parametrize(("max_attempts", "max_rescues"), [(5, 2), (2, 5), (1, 3)])
def test_rescue_follows_the_cap(backend: Backend, max_attempts: int, max_rescues: int) -> None:
    (job_id,) = insert(backend, max_attempts=max_attempts)
    for n in range(max_attempts + max_rescues + 1):
        register(backend, f"w{n}")
        (job,) = claim(backend, 1, f"w{n}")
        want = rescue_state(
            attempt=job.attempt,
            max_attempts=max_attempts,
            rescues=n,  # each earlier pass was one rescue
            max_rescues=max_rescues,
        )
        found = backend.job_rescue(JobRescueParams([f"w{n}"], time.time() - 30, max_rescues))
        assert [(r.job_id, r.state) for r in found] == [(job_id, want)]
        if want is JobState.DEAD:
            assert backend.job_get_many([job_id])[0].reason == WORKER_LOST_REASON
            return
    raise AssertionError("the cap never buried the job")


@pytest.mark.parametrize(("max_attempts", "max_rescues"), [(1, 1), (1, 3), (5, 1)])
def test_a_rescue_with_batch_mates_is_not_counted(
    backend: Backend, max_attempts: int, max_rescues: int
) -> None:
    """Poison isolation: jobs their dead worker held together go back to queued, attempt
    given back, one rescue more, whatever their counts; the one then held alone follows
    the cap (rules.rescue_state with alone=True)."""
    ids = insert(backend, 3, max_attempts=max_attempts)
    register(backend, "w-batch")
    batch = claim(backend, 3, "w-batch")
    assert len(batch) == 3
    found = backend.job_rescue(JobRescueParams(["w-batch"], time.time() - 30, max_rescues))
    assert sorted((r.job_id, r.state) for r in found) == sorted((i, JobState.QUEUED) for i in ids)
    records = backend.job_get_many(ids)
    assert [(r.state, r.attempt, r.rescues) for r in records] == [(JobState.QUEUED, 0, 1)] * 3
    assert all(
        [a.outcome for a in backend.job_attempts(i)] == [rules.LOST] for i in ids
    )  # the lost attempt is still on record
    register(backend, "w-alone")
    (alone,) = claim(backend, 1, "w-alone")
    assert alone.attempt == 1
    want = rescue_state(
        attempt=1, max_attempts=max_attempts, rescues=1, max_rescues=max_rescues, alone=True
    )
    found = backend.job_rescue(JobRescueParams(["w-alone"], time.time() - 30, max_rescues))
    assert [(r.job_id, r.state) for r in found] == [(alone.id, want)]
    (record,) = backend.job_get_many([alone.id])
    assert record.attempt == 1  # held alone: the attempt counts


def test_claim_rule(backend: Backend) -> None:
    """The claim (atomic in the store): due scheduled jobs promoted first; paused queues
    skipped; each queue up to its share, then topped up in the given order; the batch
    handed back highest priority first, then oldest run_at, then id."""
    needs(backend, "queues")
    register(backend)
    low = insert(backend, 2, queue="a", priority=0)
    high = insert(backend, 1, queue="b", priority=5)
    due = insert(backend, 1, queue="b", run_at=time.time() + 0.2)
    insert(backend, 3, queue="paused")
    backend.queue_pause(QueuePauseParams("paused"))
    time.sleep(0.3)
    got = backend.job_claim(JobClaimParams("w1", [("a", 1), ("b", 1), ("paused", 3)], 10))
    ids = [j.id for j in got]
    assert set(ids) == {*low, *high, *due}  # the share of a, then topped up; nothing paused
    assert ids[0] == high[0]  # priority first
    assert [j.priority for j in got] == sorted((j.priority for j in got), reverse=True)
