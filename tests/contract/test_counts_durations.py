"""Contract: ``queue_stats`` counts what the jobs are, through every kind of transition
(on SQLite with its kept counts turned on part-way, and after they are turned off), and
``job_durations`` gives each recently finished job's wait and run times, newest first."""

from __future__ import annotations

import time

from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobDurationsParams,
    JobFinishParams,
    JobListParams,
    JobPurgeParams,
    JobRetryParams,
)
from conveyor.backends.sqlite.counts import SQLiteCounts
from conveyor.states import FinishKind
from tests.contract.helpers import claim, insert, register


def _truth(backend: Backend) -> dict[str, dict[str, int]]:
    """Counts per queue and state from the jobs themselves."""
    out: dict[str, dict[str, int]] = {}
    for j in backend.job_list(JobListParams(limit=1000)):
        by_state = out.setdefault(j.queue, {})
        by_state[j.state.value] = by_state.get(j.state.value, 0) + 1
    return out


def _stats(backend: Backend) -> dict[str, dict[str, int]]:
    return {q.queue: q.counts for q in backend.queue_stats()}


def _finish(backend: Backend, kinds: list[FinishKind], queue: str = "q") -> None:
    jobs = claim(backend, n=len(kinds), queues=(queue,))
    assert len(jobs) == len(kinds)
    backend.job_finish_many(
        [
            JobFinishParams(id=j.id, token=j.token, kind=k, worker_id="w1", attempt=1,
                            started_at=j.claimed_at)
            for j, k in zip(jobs, kinds, strict=True)
        ]
    )  # fmt: skip


def test_queue_stats_follow_every_transition(backend: Backend) -> None:
    register(backend)
    insert(backend, 4)
    insert(backend, 2, queue="mail")
    kept = isinstance(backend, SQLiteCounts)
    if kept:
        assert isinstance(backend, SQLiteCounts)
        backend.queue_counts_set(True)  # counts the jobs already there
        assert backend.queue_counts_enabled()
    assert _stats(backend) == _truth(backend) == {"q": {"queued": 4}, "mail": {"queued": 2}}
    before = _stats(backend)["mail"]
    _finish(backend, [FinishKind.SUCCEEDED, FinishKind.DEAD])
    claim(backend, n=1)  # one running
    later = insert(backend, 1, run_at=time.time() + 3600)  # scheduled
    insert(backend, 3, queue="mail")
    assert _stats(backend) == _truth(backend)
    dead = [j.id for j in backend.job_list(JobListParams(limit=100)) if j.state.value == "dead"]
    backend.job_retry_many(JobRetryParams(ids=dead))  # dead -> queued
    backend.job_cancel_many(JobCancelParams(later))  # scheduled -> cancelled
    mail = [j.id for j in backend.job_list(JobListParams(queue="mail", limit=100))]
    assert backend.job_delete_many(mail[:2]) == 2
    backend.job_purge(JobPurgeParams(finished_before=time.time() + 1))
    assert _stats(backend) == _truth(backend)
    assert _stats(backend)["mail"] == {"queued": before["queued"] + 1}
    oldest = {q.queue: q.oldest_ready_age for q in backend.queue_stats()}
    assert oldest["mail"] is not None and oldest["mail"] >= 0
    if kept:
        assert isinstance(backend, SQLiteCounts)
        backend.queue_counts_set(False)
        assert not backend.queue_counts_enabled()
        insert(backend, 1, queue="mail")
        assert _stats(backend) == _truth(backend)
        backend.queue_counts_set(True)  # counted afresh: right again
        assert _stats(backend) == _truth(backend)


def test_job_durations_of_recent_jobs_newest_first(backend: Backend) -> None:
    register(backend)
    insert(backend, 1, task="old")
    _finish(backend, [FinishKind.SUCCEEDED])
    time.sleep(0.05)
    since = time.time()
    time.sleep(0.05)
    insert(backend, 3, task="a")
    _finish(backend, [FinishKind.SUCCEEDED, FinishKind.DEAD, FinishKind.SUCCEEDED])
    (queued,) = insert(backend, 1, task="never")
    backend.job_cancel_many(JobCancelParams([queued]))  # cancelled before it started
    insert(backend, 1, task="waiting")  # still queued

    found = backend.job_durations(JobDurationsParams(since=since))
    assert [s.task for s in found] == ["a", "a", "a"]
    assert [s.finished_at for s in found] == sorted((s.finished_at for s in found), reverse=True)
    now = time.time()
    for s in found:
        assert 0 <= s.run < 10 and -1 < s.wait < 10
        assert since <= s.finished_at <= now + 1
    assert len(backend.job_durations(JobDurationsParams(since=since, limit=2))) == 2
    assert len(backend.job_durations(JobDurationsParams(since=since - 10))) == 4
    assert backend.job_durations(JobDurationsParams(since=now + 5)) == []
