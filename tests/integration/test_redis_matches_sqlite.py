"""Differential test: random operation sequences give the same answers on Redis and on
SQLite (the reference). Times are compared by presence only; everything else exactly.

The contract suite states the rules one by one; this catches the combinations nobody
thought of (a retry of a rescued job, a cancel racing a release, ...).
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from conveyor import records
from conveyor.backends.base import (
    Backend,
    JobCancelParams,
    JobClaimParams,
    JobExtendLeasesParams,
    JobFinishParams,
    JobInsertParams,
    JobListParams,
    JobReleaseParams,
    JobRescueParams,
    JobRetryParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.backends.redis.backend import RedisBackend
from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.states import FinishKind, JobState
from tests.support.redis_server import delete_prefix, unique_prefix, with_prefix

pytestmark = pytest.mark.redis

# Snooze is a flow feature the Redis backend does not implement yet.
CORE_KINDS = [k for k in FinishKind if k is not FinishKind.SNOOZE]

_TIMES = {"run_at", "created_at", "lease_until", "started_at", "finished_at", "heartbeat_at",
          "claimed_at", "oldest_ready_age", "last_fetch_at"}  # fmt: skip


def norm(value: Any) -> Any:
    """Comparable form: records as dicts with times reduced to 'set or not'."""
    if isinstance(value, list | tuple):
        return [norm(v) for v in value]
    if hasattr(type(value), "__record_fields__"):
        d = records.asdict(value)
        return {k: (v is not None) if k in _TIMES else norm(v) for k, v in d.items()}
    return value


class Scenario:
    """Draws random operations and remembers what each worker holds."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.base = time.time()
        self.step = 0
        self.ids: list[str] = []
        self.held: dict[str, dict[str, int]] = {"w1": {}, "w2": {}}

    def past(self) -> float:
        # Distinct, 10 ms apart: both backends then order ready jobs the same way.
        self.step += 1
        return self.base - 1000 + self.step * 0.01

    def operations(self, n: int) -> list[tuple[str, Any]]:
        ops: list[tuple[str, Any]] = []
        rng = self.rng
        for _ in range(n):
            kind = rng.choice(["insert", "insert", "claim", "claim", "finish", "finish",
                               "extend", "release", "cancel", "retry", "delete", "rescue",
                               "list", "stats"])  # fmt: skip
            ops.append((kind, self.draw(kind)))
        return ops

    def draw(self, kind: str) -> Any:
        rng = self.rng
        if kind == "insert":
            params = []
            for _ in range(rng.randint(1, 4)):
                job_id = f"j{len(self.ids):04}"
                self.ids.append(job_id)
                run_at = self.past() if rng.random() < 0.85 else self.base + 1000
                params.append(JobInsertParams(
                    id=job_id, task=rng.choice(["t1", "t2"]), queue=rng.choice(["a", "b"]),
                    payload="{}", priority=rng.randint(-1, 2), run_at=run_at,
                    max_attempts=rng.randint(1, 3), timeout=rng.choice([None, 2.5]),
                ))  # fmt: skip
            return params
        if kind == "claim":
            limits = (("a", rng.randint(0, 3)), ("b", rng.randint(0, 3)))
            return JobClaimParams(rng.choice(["w1", "w2"]), limits, rng.randint(0, 5))
        if kind in ("cancel", "retry", "delete"):
            return rng.sample(self.ids, min(len(self.ids), rng.randint(1, 3))) if self.ids else []
        if kind == "rescue":
            return rng.choice([[], ["w1"], ["w2"]]), rng.randint(1, 3)
        if kind == "list":
            return JobListParams(
                queue=rng.choice([None, "a"]), state=rng.choice([None, *JobState]),
                task=rng.choice([None, "t1"]), after_id=rng.choice([None, "j0005"]),
                limit=rng.randint(1, 20),
            )  # fmt: skip
        return rng.random()  # finish / extend / release / stats pick at run time


def run(backend: Backend, ops: list[tuple[str, Any]], seed: int) -> list[Any]:
    rng = random.Random(seed + 1)  # same choices on both backends
    held: dict[str, dict[str, int]] = {"w1": {}, "w2": {}}
    out: list[Any] = []
    for w in held:
        info = WorkerInfo(id=w, host="h", pid=1, pid_started=None, started_at=1.0 if w == "w1"
                          else 2.0, queues=("a", "b"), concurrency=4, pool="thread")  # fmt: skip
        backend.worker_heartbeat(WorkerHeartbeatParams(worker=info))
    for kind, arg in ops:
        worker = rng.choice(["w1", "w2"])
        jobs = sorted(held[worker].items())
        if kind == "insert":
            backend.job_insert_many(arg)
            out.append(None)
        elif kind == "claim":
            claimed = backend.job_claim(arg)
            held[arg.worker_id].update({j.id: j.token for j in claimed})
            out.append(norm(claimed))
        elif kind == "finish":
            params = []
            for job_id, token in jobs[: rng.randint(0, 3)]:
                k = rng.choice(CORE_KINDS)
                stale = rng.random() < 0.2
                params.append(JobFinishParams(
                    id=job_id, token=token + (1 if stale else 0), kind=k, worker_id=worker,
                    attempt=1, result='"r"' if k is FinishKind.SUCCEEDED else None,
                    error='{"type": "E"}' if k is not FinishKind.SUCCEEDED else None,
                    reason="why", run_at=time.time() - 500 if k is FinishKind.RETRY else None,
                ))  # fmt: skip
                held[worker].pop(job_id, None)
            out.append(backend.job_finish_many(params))
        elif kind == "extend":
            out.append(norm(backend.job_extend_leases(JobExtendLeasesParams(worker, jobs))))
        elif kind == "release":
            out.append(backend.job_release_many(JobReleaseParams(worker, jobs[:2])))
            for job_id, _ in jobs[:2]:
                held[worker].pop(job_id)
        elif kind == "cancel":
            out.append(norm(backend.job_cancel_many(JobCancelParams(arg))))
        elif kind == "retry":
            out.append(norm(backend.job_retry_many(JobRetryParams(arg))))
        elif kind == "delete":
            out.append(backend.job_delete_many(arg))
        elif kind == "rescue":
            dead, max_rescues = arg
            rescued = backend.job_rescue(JobRescueParams(dead, time.time() - 60, max_rescues))
            out.append(sorted(norm(rescued), key=lambda r: r["job_id"]))
            for w in dead:
                held[w].clear()
                info = WorkerInfo(id=w, host="h", pid=1, pid_started=None,
                                  started_at=1.0 if w == "w1" else 2.0, queues=("a", "b"),
                                  concurrency=4, pool="thread")  # fmt: skip
                backend.worker_heartbeat(WorkerHeartbeatParams(worker=info))
        elif kind == "list":
            out.append(norm(backend.job_list(arg)))
        else:
            out.append(norm(backend.queue_stats()))
    ids = [f"j{i:04}" for i in range(1000)]
    out.append(norm(backend.job_get_many(ids)))
    out.append([norm(backend.job_attempts(i)) for i in ids[:60]])
    out.append(norm(backend.worker_list()))
    return out


@pytest.mark.parametrize("seed", range(10))
def test_random_operations_match_sqlite(seed: int, redis_url: str, tmp_path: Path) -> None:
    ops = Scenario(seed).operations(200)
    sqlite = SQLiteBackend(f"sqlite:///{tmp_path / 'ref.db'}")
    prefix = unique_prefix()
    redis_backend = RedisBackend(with_prefix(redis_url, prefix))
    try:
        expected = run(sqlite, ops, seed)
        actual = run(redis_backend, ops, seed)
        for step, (want, got) in enumerate(zip(expected, actual, strict=True)):
            op = ops[step][0] if step < len(ops) else "final"
            assert got == want, f"step {step} ({op})"
    finally:
        sqlite.close()
        redis_backend.close()
        delete_prefix(redis_url, prefix)
