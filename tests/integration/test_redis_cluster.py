"""The Redis backend on a 3-node Redis Cluster started on loopback ports.

Connect with ``?cluster=1``: conveyor then uses ``redis.cluster.RedisCluster``. All keys
of one prefix share the hash tag ``{prefix}``, so every script runs on one node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from conveyor.backends.base import (
    JobClaimParams,
    JobFinishParams,
    JobInsertParams,
    JobListParams,
    JobRescueParams,
    JobWaitParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.backends.redis.backend import RedisBackend
from conveyor.states import FinishKind, JobState
from tests.support.redis_server import RedisServer, redis_cluster

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sequence[RedisServer]]:
    directory: Path = tmp_path_factory.mktemp("cluster")
    with redis_cluster(directory) as servers:
        yield servers


@pytest.mark.parametrize("prefix", ["alpha", "beta", "gamma"])  # land on different slots
def test_insert_claim_finish_wait_on_cluster(cluster: Sequence[RedisServer], prefix: str) -> None:
    rb = RedisBackend(f"redis://127.0.0.1:{cluster[0].port}/0?cluster=1&prefix={prefix}")
    me = WorkerInfo(
        id="w1", host="h", pid=1, pid_started=None, started_at=time.time(), queues=("q",),
        concurrency=4, pool="thread",
    )  # fmt: skip
    rb.worker_heartbeat(WorkerHeartbeatParams(worker=me))
    rb.job_insert_many(
        [JobInsertParams(id=f"j{i}", task="t", queue="q", payload="{}") for i in range(4)]
        + [JobInsertParams(id="later", task="t", queue="q", payload="{}", run_at=time.time() + 0.1)]
    )
    jobs = rb.job_claim(JobClaimParams(worker_id="w1", queues=(("q", 3),), total=3))
    assert len(jobs) == 3
    timer = threading.Timer(
        0.2,
        rb.job_finish_many,
        ([JobFinishParams(id=j.id, token=j.token, kind=FinishKind.SUCCEEDED, result="1")
          for j in jobs],),
    )  # fmt: skip
    timer.start()
    done = rb.job_wait(JobWaitParams(jobs[0].id, timeout=10))
    timer.join()
    assert done is not None and done.state is JobState.SUCCEEDED and done.result == "1"
    assert rb.job_finish_many(
        [JobFinishParams(id=jobs[0].id, token=jobs[0].token, kind=FinishKind.SUCCEEDED)]
    ) == [jobs[0].id]  # fenced on the cluster too
    time.sleep(0.15)
    rest = rb.job_claim(JobClaimParams(worker_id="w1", queues=(("q", 5),), total=5))
    assert sorted(j.id for j in rest) == sorted(
        {"j0", "j1", "j2", "j3", "later"} - {j.id for j in jobs}
    )
    rescued = rb.job_rescue(JobRescueParams(["w1"], stale_before=time.time() - 60))
    assert {r.job_id for r in rescued} == {j.id for j in rest}
    stats = {s.queue: s.counts for s in rb.queue_stats()}
    assert stats == {"q": {"succeeded": 3, "queued": 2}}
    assert len(rb.job_list(JobListParams())) == 5
    rb.work_wait(0.05)  # BLPOP on the wake list: routed to the prefix's node too
    rb.close()
