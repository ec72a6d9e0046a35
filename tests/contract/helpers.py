"""Small helpers shared by contract tests (no mocks: they drive the real backend)."""

from __future__ import annotations

import time

from conveyor.backends.base import (
    Backend,
    ClaimedJob,
    JobClaimParams,
    JobInsertParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.ids import new_id


def insert(backend: Backend, n: int = 1, **kw: object) -> list[str]:
    ids = [new_id() for _ in range(n)]
    backend.job_insert_many(
        [
            JobInsertParams(
                id=i,
                task=str(kw.get("task", "t")),
                queue=str(kw.get("queue", "q")),
                payload='{"args":[],"kwargs":{}}',
                priority=int(kw.get("priority", 0)),  # type: ignore[call-overload]
                run_at=kw.get("run_at"),  # type: ignore[arg-type]
                max_attempts=int(kw.get("max_attempts", 5)),
            )  # type: ignore[call-overload]
            for i in ids
        ]
    )
    return ids


def register(
    backend: Backend, worker_id: str = "w1", *, pid: int = 999_999, host: str = "h"
) -> WorkerInfo:
    info = WorkerInfo(
        id=worker_id,
        host=host,
        pid=pid,
        pid_started=None,
        started_at=time.time(),
        queues=("q",),
        concurrency=4,
        pool="thread",
    )
    backend.worker_heartbeat(WorkerHeartbeatParams(info))
    return info


def claim(
    backend: Backend, n: int = 10, worker_id: str = "w1", queues: tuple[str, ...] = ("q",)
) -> list[ClaimedJob]:
    return backend.job_claim(JobClaimParams(worker_id, [(q, n) for q in queues], n))
