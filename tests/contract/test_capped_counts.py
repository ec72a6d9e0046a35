"""Contract: ``queue_stats(QueueStatsParams(cap=N))`` (what ``conveyor status``, ``conveyor
queues`` and the dashboard read) never overstates: every count is exact or, where the
store stopped counting (``capped``), a lower bound of at most N; every queue with ready
jobs is listed with its exact oldest ready age; a store of at most N jobs and a store
that keeps its counts answer exactly. SQLite (kept counts off), PostgreSQL and MariaDB
cap (sql/counts_capped.py); Redis and memory (counts kept by every write) are exact."""

from __future__ import annotations

import time

from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobFinishParams,
    QueueStats,
    QueueStatsParams,
)
from conveyor.backends.sqlite.counts import SQLiteCounts
from conveyor.states import FinishKind
from tests.contract.helpers import claim, insert, register

CAP = 3


def _by_queue(stats: list[QueueStats]) -> dict[str, QueueStats]:
    return {s.queue: s for s in stats}


def _fill(backend: Backend) -> None:
    """Over the cap in queued (two queues), succeeded and dead; under it elsewhere. In
    ``q`` the oldest ready job has the lowest priority, behind more than CAP others."""
    register(backend)
    old = time.time() - 600
    insert(backend, 1, queue="q", priority=0, run_at=old)
    insert(backend, 5, queue="q", priority=9)
    insert(backend, 4, queue="mail")
    insert(backend, 1, queue="solo")
    insert(backend, 2, queue="later", run_at=time.time() + 3600)  # scheduled
    jobs = claim(backend, n=6, queues=("mail", "q"))
    kinds = [FinishKind.SUCCEEDED] * 4 + [FinishKind.DEAD] * 2
    backend.job_finish_many(
        [
            JobFinishParams(id=j.id, token=j.token, kind=k, worker_id="w1", attempt=1,
                            started_at=j.claimed_at)
            for j, k in zip(jobs, kinds, strict=True)
        ]
    )  # fmt: skip
    insert(backend, 4, queue="q", priority=9)
    claim(backend, n=1, queues=("solo",))  # one running
    backend.job_cancel_many(JobCancelParams(insert(backend, 1, queue="gone")))


def test_capped_counts_never_overstate_and_list_every_ready_queue(backend: Backend) -> None:
    _fill(backend)
    exact = _by_queue(backend.queue_stats())
    assert not any(s.capped for s in exact.values())
    capped = _by_queue(backend.queue_stats(QueueStatsParams(cap=CAP)))
    ready = {q for q, s in exact.items() if s.counts.get("queued")}
    assert ready <= set(capped)  # every queue with ready jobs, whatever the cap
    for name, stats in capped.items():
        truth = exact[name].counts
        for state, n in stats.counts.items():
            if state in stats.capped:
                assert 0 < n <= truth[state] and n <= CAP
            else:
                assert n == truth[state], (name, state)
        assert stats.capped <= set(stats.counts)
    # the oldest ready job is exact even past the cap (q: behind 9 jobs of priority 9)
    for name in ready:
        assert capped[name].oldest_ready_age is not None
        assert abs(capped[name].oldest_ready_age - exact[name].oldest_ready_age) < 5  # type: ignore[operator]
    assert capped["q"].oldest_ready_age > 500  # type: ignore[operator]
    if backend.name in ("sqlite", "postgres", "mariadb"):  # the stores with capped statements
        assert "queued" in capped["q"].capped and capped["q"].counts["queued"] == CAP
        assert "solo" in capped and not capped["solo"].capped  # 1 ready, 1 running: exact
    else:  # counts kept by every write (or no capped statements): exact at any cap
        assert {q: s.counts for q, s in capped.items()} == {q: s.counts for q, s in exact.items()}
    # a cap the store does not exceed: exact, nothing capped
    big = _by_queue(backend.queue_stats(QueueStatsParams(cap=1000)))
    assert {q: s.counts for q, s in big.items()} == {q: s.counts for q, s in exact.items()}
    assert not any(s.capped for s in big.values())
    listed = {q.queue: q for q in backend.queue_list(QueueStatsParams(cap=CAP))}
    assert {q: s.capped for q, s in capped.items()} == {q: listed[q].capped for q in capped}


def test_kept_counts_are_exact_whatever_the_cap(backend: Backend) -> None:
    if not isinstance(backend, SQLiteCounts):
        return  # only SQLite has the switch; other stores are covered above
    _fill(backend)
    backend.queue_counts_set(True)
    capped = backend.queue_stats(QueueStatsParams(cap=CAP))
    assert not any(s.capped for s in capped)
    assert [s.counts for s in capped] == [s.counts for s in backend.queue_stats()]


def test_a_store_within_exact_up_to_is_counted_exactly_past_the_cap(backend: Backend) -> None:
    """What the operator's reads pass (``exact_up_to=OPERATOR_EXACT_UP_TO``): a store of
    a few thousand jobs never reads "1,000+"; only one past ``exact_up_to`` is capped."""
    _fill(backend)
    exact = [s.counts for s in backend.queue_stats()]
    within = backend.queue_stats(QueueStatsParams(cap=CAP, exact_up_to=10_000))
    assert not any(s.capped for s in within)
    assert [s.counts for s in within] == exact
    past = backend.queue_stats(QueueStatsParams(cap=CAP, exact_up_to=CAP))
    assert any(s.capped for s in past) == (backend.name in ("sqlite", "postgres", "mariadb"))
