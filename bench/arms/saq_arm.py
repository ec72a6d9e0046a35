"""SAQ 0.26 (Simple Async Queue) on the suite's redis-server, run by its own CLI as its
README does: ``saq bench.arms.saq_arm.settings`` (one worker process, its default).

Its documented defaults, kept: ``concurrency=10`` (jobs at once on the worker's event
loop), ``dequeue_timeout=0`` (a blocking ``BLMOVE`` with no time limit), one process.
Jobs are ``async def`` functions taking SAQ's ``ctx`` first. SAQ keeps every job as a
Redis key (finished ones for ``ttl``, 600 s by default), with its status and result.
Logging: without ``-v`` the CLI logs at ERROR, so no per-job lines; W5 adds ``-v`` for
the ready line (``Worker starting``).

Durability: Redis without persistence (the suite's redis-server runs with no RDB and no
AOF, for every Redis arm), so nothing is fsynced; a job survives a worker crash (SAQ
sweeps jobs whose worker stopped heartbeating) but not a Redis restart.

Batch enqueue: SAQ has no bulk enqueue (``Queue.batch`` only groups aborts), so a loop of
``enqueue`` is its batch. W2: ``Job.refresh(until_complete=...)``, SAQ's documented way
to wait for a job (a pub/sub notification on the job's update), then ``job.result``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from saq import Queue

from bench.arms.aio import AsyncArm
from bench.arms.base import Item, Variant, bin_path, env
from bench.jobs import run_job

queue = Queue.from_url(env("BENCH_REDIS_URL", "redis://127.0.0.1:6399") + "/0")
#: SAQ's default concurrency (jobs at once per worker process)
CONCURRENCY = 10


async def job(ctx: dict[str, Any], *, i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


#: what ``saq`` loads: Worker keyword arguments (its documented settings object)
settings = {"queue": queue, "functions": [job], "concurrency": CONCURRENCY}


class SaqArm(AsyncArm):
    ready_marker = "Worker starting"

    def open(self) -> None:
        self.start_loop()
        self.run(queue.connect())

    def enqueue_one(self, item: Item) -> object:
        i, t0, kind = item
        return self.run(queue.enqueue("job", i=i, t0=t0, kind=kind))

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        async def all_of() -> None:
            for i, t0, kind in items:
                await queue.enqueue("job", i=i, t0=t0, kind=kind)

        self.run(all_of())

    def round_trip(self, item: Item, timeout: float) -> None:
        async def one() -> None:
            i, t0, kind = item
            job = await queue.enqueue("job", i=i, t0=t0, kind=kind)
            assert job is not None
            await job.refresh(until_complete=timeout)
            if job.result != i:
                raise RuntimeError(f"SAQ job {i}: status {job.status}, result {job.result!r}")

        self.run(one())

    def close(self) -> None:
        self.run(queue.disconnect())
        self.stop_loop()

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        # Concurrency is in the settings object (SAQ's CLI has no flag for it).
        return [bin_path("saq"), "bench.arms.saq_arm.settings", *(["-v"] if verbose else [])]


ARM = SaqArm
VARIANTS = [
    Variant(
        "saq",
        "saq_arm",
        "redis",
        "asyncio",
        CONCURRENCY,
        f"saq settings (1 process, concurrency={CONCURRENCY}: its defaults); async job, "
        "BLMOVE dequeue, jobs kept 600 s",
    ),
]
