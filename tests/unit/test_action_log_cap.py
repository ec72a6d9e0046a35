"""The stores that bound their operator actions log (Redis, memory) keep about the
newest ``ACTION_LOG_CAP`` entries and drop the oldest; the SQL stores keep all (the
contract suite checks what every store shares)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conveyor.backends.base import ACTION_LOG_CAP, ActionLogListParams, action_log_entry
from conveyor.backends.memory.backend import MemoryBackend
from conveyor.backends.redis.action_log import actions_key
from conveyor.backends.redis.backend import RedisBackend
from tests.support.redis_server import delete_prefix, unique_prefix, with_prefix

OVER = 250


@pytest.fixture
def rb(redis_url: str) -> Iterator[RedisBackend]:
    prefix = unique_prefix()
    backend = RedisBackend(with_prefix(redis_url, prefix))
    yield backend
    backend.close()
    delete_prefix(redis_url, prefix)


def test_memory_keeps_the_newest_cap_entries() -> None:
    b = MemoryBackend("memory://")
    for n in range(ACTION_LOG_CAP + OVER):
        b.action_log_insert(action_log_entry("ops", "cli", "retry", count=n))
    kept = b.action_log_list(ActionLogListParams(limit=ACTION_LOG_CAP + OVER))
    assert len(kept) == ACTION_LOG_CAP
    assert kept[0].count == ACTION_LOG_CAP + OVER - 1 and kept[-1].count == OVER


def test_redis_trims_its_stream_near_the_cap(rb: RedisBackend) -> None:
    for n in range(ACTION_LOG_CAP + OVER):
        rb.action_log_insert(action_log_entry("ops", "cli", "retry", count=n))
    # MAXLEN ~ trims whole stream nodes (100 entries by default): near the cap, never under
    length = rb.client.xlen(actions_key(rb.keys))
    assert ACTION_LOG_CAP <= length < ACTION_LOG_CAP + OVER
    newest = rb.action_log_list(ActionLogListParams(limit=1))
    assert newest[0].count == ACTION_LOG_CAP + OVER - 1
