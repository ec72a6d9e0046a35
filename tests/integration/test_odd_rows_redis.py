"""Odd values only a Redis store can hold, written by hand (issue 21): a ``counts`` field
that is not an integer, a worker hash with only its id, ready-set scores of +-inf. The
readers (``queue_stats``, ``queue_list``, ``worker_list``) go on and ``conveyor check``
names the odd counts. The rows shared with the other stores are tested once for all in
tests/contract/test_odd_rows.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from conveyor.backends.base import IntegrityCheckParams
from conveyor.backends.redis.backend import RedisBackend
from tests.contract.helpers import insert
from tests.support.odd_rows import redis_count, redis_row
from tests.support.redis_server import isolated_url


@pytest.fixture
def url(request: pytest.FixtureRequest) -> str:
    return isolated_url(request)


@pytest.fixture
def backend(url: str) -> Iterator[RedisBackend]:
    store = RedisBackend(url)
    yield store
    store.close()


def test_a_count_that_is_not_an_integer_counts_nothing(url: str, backend: RedisBackend) -> None:
    insert(backend, 2, queue="q")
    redis_count(url, "queued:odd", "many")
    redis_count(url, "running:q", "1.5")
    assert {s.queue: s.counts for s in backend.queue_stats()} == {"q": {"queued": 2}}
    assert [q.queue for q in backend.queue_list()] == ["q"]
    found = backend.integrity_check(IntegrityCheckParams(30.0))
    assert sorted(p.detail for p in found if p.kind == "counts_not_integer") == [
        "counts field 'queued:odd' holds 'many'",
        "counts field 'running:q' holds '1.5'",
    ]
    assert {p.job_id for p in found if p.kind == "counts_not_integer"} == {None}


def test_a_worker_hash_with_only_an_id_is_listed(backend: RedisBackend) -> None:
    """Only a hash can lack the fields a table's NOT NULL columns require."""
    backend.client.hset(backend.keys.worker("bare"), "id", "bare")
    backend.client.zadd(backend.keys.workers, {"bare": 1.0})
    (w,) = backend.worker_list()
    assert w.id == "bare" and w.host == "" and w.pid == 0 and w.running == 0
    assert "host is NULL" in w.problems


def test_ready_scores_of_infinity_do_not_break_the_oldest_ready_age(
    url: str, backend: RedisBackend
) -> None:
    """The ready order lives apart from the rows, in a sorted set that takes +-inf."""
    insert(backend, 1, queue="q")
    low, high = redis_row(url, queue="q"), redis_row(url, queue="q")
    backend.client.zadd(backend.keys.ready("q"), {low: -math.inf, high: math.inf})
    (stats,) = backend.queue_stats()
    assert stats.counts == {"queued": 3}
    assert stats.oldest_ready_age is not None and 0 <= stats.oldest_ready_age < 60
