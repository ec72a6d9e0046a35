"""Flow control on the Redis backend: what is specific to Redis (script details, key
TTLs, lazily freed limit slots). The shared semantics are in tests/contract."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from conveyor.backends.base import (
    JobCancelParams,
    JobClaimParams,
    JobFinishParams,
    JobInsertParams,
    JobRescueParams,
    LimitSpec,
    PeriodicFireParams,
)
from conveyor.backends.redis.backend import RedisBackend
from conveyor.errors import JobNotFound
from conveyor.states import FinishKind, JobState
from tests.support.redis_server import delete_prefix, unique_prefix, with_prefix

pytestmark = pytest.mark.redis
PAYLOAD = '{"args":[],"kwargs":{}}'


@pytest.fixture
def rb(redis_url: str) -> Iterator[RedisBackend]:
    prefix = unique_prefix()
    backend = RedisBackend(with_prefix(redis_url, prefix) + "&result_ttl=100")
    yield backend
    backend.close()
    delete_prefix(redis_url, prefix)


def job(job_id: str, **kw: object) -> JobInsertParams:
    return JobInsertParams(id=job_id, task="t", queue="q", payload=PAYLOAD, **kw)  # type: ignore[arg-type]


def claim(rb: RedisBackend, total: int = 10) -> list[str]:
    return [j.id for j in rb.job_claim(JobClaimParams("w1", [("q", total)], total))]


def test_snooze_with_a_pending_cancel_ends_cancelled(rb: RedisBackend) -> None:
    rb.job_insert_many([job("a")])
    (claimed,) = rb.job_claim(JobClaimParams("w1", [("q", 1)], 1))
    rb.job_cancel_many(JobCancelParams(["a"], reason="stop it"))
    snooze = JobFinishParams("a", claimed.token, FinishKind.SNOOZE, run_at=time.time() + 60)
    assert rb.job_finish_many([snooze]) == []
    (record,) = rb.job_get_many(["a"])
    assert record.state is JobState.CANCELLED and record.reason == "stop it"


def test_piped_payload_keeps_json_exact(rb: RedisBackend) -> None:
    # No cjson round trip: an empty list stays a list, a big float keeps its digits.
    rb.job_insert_many([job("p"), job("c", depends_on=("p",), pipe=1)])
    (claimed,) = rb.job_claim(JobClaimParams("w1", [("q", 1)], 1))
    result = '{"x":[],"f":0.30000000000000004}'
    rb.job_finish_many([JobFinishParams("p", claimed.token, FinishKind.SUCCEEDED, result=result)])
    (child,) = rb.job_get_many(["c"])
    assert child.state is JobState.QUEUED
    assert child.payload == '{"args":[' + result + '],"kwargs":{}}'


def test_workflow_keys_expire_with_the_job(rb: RedisBackend) -> None:
    rb.job_insert_many([job("p"), job("c", depends_on=("p",))])
    base = rb.keys.base
    assert rb.client.ttl(base + "children:p") == -1  # live parent: kept
    rb.job_cancel_many(JobCancelParams(["p"]))
    assert rb.job_get_many(["c"])[0].state is JobState.CANCELLED
    assert 0 < rb.client.ttl(base + "children:p") <= 100
    assert 0 < rb.client.ttl(base + "deps:c") <= 100


def test_missing_parent_raises_and_writes_nothing(rb: RedisBackend) -> None:
    with pytest.raises(JobNotFound):
        rb.job_insert_many([job("x"), job("y", depends_on=("nope",))])
    assert rb.job_get_many(["x", "y"]) == []


def test_rescued_limit_holder_frees_its_slot(rb: RedisBackend) -> None:
    limit = LimitSpec("k", concurrency=1)
    rb.job_insert_many([job("a", limit=limit), job("b", limit=limit)])
    assert claim(rb) == ["a"]  # b deferred: over the limit, no attempt spent
    (b,) = rb.job_get_many(["b"])
    assert b.state is JobState.SCHEDULED and b.attempt == 0
    rescued = rb.job_rescue(JobRescueParams(["w1"], stale_before=time.time() - 60))
    assert [r.job_id for r in rescued] == ["a"]
    rb.job_cancel_many(JobCancelParams(["a"]))  # so only b competes for the slot
    time.sleep(0.45)  # past b's re-check time (0.2-0.4 s)
    assert claim(rb) == ["b"]  # a's slot was freed without any bookkeeping by rescue
    assert rb.job_get_many(["b"])[0].attempt == 1


def test_periodic_slot_fires_once_across_calls(rb: RedisBackend) -> None:
    params = [(float(s), job(f"j{s}")) for s in (10, 20)]
    assert rb.periodic_fire(PeriodicFireParams("s", "every 10s", params, 30.0)) == [10.0, 20.0]
    again = [(20.0, job("k20")), (30.0, job("k30"))]
    assert rb.periodic_fire(PeriodicFireParams("s", "every 10s", again, 40.0)) == [30.0]
    assert rb.job_get_many(["k20"]) == []  # the slot was taken: its job was not made
    (record,) = rb.periodic_list()
    assert (record.last_slot, record.last_job_id, record.next_slot) == (30.0, "k30", 40.0)
