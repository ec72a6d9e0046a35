"""Claims: priority order, weighted limits with top-up, promotion, tokens and attempts."""

from __future__ import annotations

import time

from conveyor.backends.base import Backend, JobClaimParams
from conveyor.states import JobState
from tests.contract.helpers import claim, insert, register


def test_claim_marks_running_with_a_new_token_and_counts_the_attempt(backend: Backend) -> None:
    register(backend)
    (job_id,) = insert(backend)
    (job,) = claim(backend)
    record = backend.job_get_many([job_id])[0]
    assert job.id == job_id and job.attempt == 1 and job.token >= 1
    assert record.state is JobState.RUNNING and record.worker_id == "w1"
    assert record.token == job.token and record.lease_until is not None
    assert record.lease_until > time.time() + 20  # default lease is 30 s
    assert claim(backend) == []


def test_higher_priority_first_then_oldest(backend: Backend) -> None:
    register(backend)
    low = insert(backend, 2, priority=0)
    high = insert(backend, 1, priority=9)
    got = [j.id for j in claim(backend, 3)]
    assert got == [high[0], *low]


def test_each_queue_gets_its_share_and_empty_queues_are_topped_up(backend: Backend) -> None:
    register(backend)
    insert(backend, 10, queue="a")
    insert(backend, 10, queue="b")
    got = backend.job_claim(JobClaimParams("w1", [("a", 3), ("b", 1)], 4))
    assert sorted(j.queue for j in got) == ["a", "a", "a", "b"]
    insert(backend, 2, queue="c")
    got = backend.job_claim(JobClaimParams("w1", [("c", 5), ("a", 1)], 6))
    assert sorted(j.queue for j in got) == ["a", "a", "a", "a", "c", "c"]


def test_due_scheduled_jobs_are_promoted_by_the_claim(backend: Backend) -> None:
    register(backend)
    (later,) = insert(backend, run_at=time.time() + 3600)
    (soon,) = insert(backend, run_at=time.time() + 0.2)
    assert backend.job_get_many([soon])[0].state is JobState.SCHEDULED
    assert claim(backend) == []
    time.sleep(0.3)
    assert [j.id for j in claim(backend)] == [soon]
    assert backend.job_get_many([later])[0].state is JobState.SCHEDULED


def test_a_job_is_claimed_by_exactly_one_worker(backend: Backend) -> None:
    register(backend, "w1")
    register(backend, "w2")
    insert(backend, 50)
    a = claim(backend, 30, "w1")
    b = claim(backend, 30, "w2")
    assert len(a) == 30 and len(b) == 20
    assert not {j.id for j in a} & {j.id for j in b}
