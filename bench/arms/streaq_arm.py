"""streaq 7.2 on the suite's redis-server (Redis streams and consumer groups, through
coredis), run by its own CLI as its docs do: ``streaq run bench.arms.streaq_arm:worker``
(one worker process, its default).

Its documented defaults, kept: ``concurrency=16`` (tasks at once on the worker's event
loop), prefetch equal to concurrency, pickle serialisation, results kept (``ttl`` default
5 minutes). The task is ``async def`` and registered with ``silent=True``, streaq's
documented switch for per-task log lines (its CLI logs at INFO and has no quiet flag);
the ready line (``starting worker``) still prints.

Durability: Redis without persistence (the suite's redis-server runs with no RDB and no
AOF, for every Redis arm), so nothing is fsynced; a task whose worker dies is redelivered
from the stream's pending list (consumer groups), not after a Redis restart.

Batch enqueue: ``Worker.enqueue_many`` (one pipeline). W2: ``Task.result(timeout=...)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from streaq import Worker

from bench.arms.aio import AsyncArm
from bench.arms.base import Item, Variant, bin_path, env
from bench.jobs import run_job

#: streaq's default concurrency
CONCURRENCY = 16
worker = Worker(
    redis_url=env("BENCH_REDIS_URL", "redis://127.0.0.1:6399") + "/0", concurrency=CONCURRENCY
)


@worker.task(silent=True)
async def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class StreaqArm(AsyncArm):
    ready_marker = "starting worker"

    def open(self) -> None:
        # streaq's client is the Worker itself, entered once (``async with worker``)
        self.start_loop(session=worker)

    def enqueue_one(self, item: Item) -> object:
        async def one() -> object:
            return await job.enqueue(*item)

        return self.run(one())

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        self.run(worker.enqueue_many([job.enqueue(*item) for item in items]))

    def round_trip(self, item: Item, timeout: float) -> None:
        async def one() -> None:
            task = await job.enqueue(*item)
            result = await task.result(timeout=int(timeout))
            if result.result != item[0]:
                raise RuntimeError(f"streaq task {item[0]}: {result!r}")

        self.run(one())

    def close(self) -> None:
        self.stop_loop()

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        # Concurrency is the Worker object's (streaq's CLI has no flag for it).
        return [bin_path("streaq"), "run", "bench.arms.streaq_arm:worker"]


ARM = StreaqArm
VARIANTS = [
    Variant(
        "streaq",
        "streaq_arm",
        "redis",
        "asyncio",
        CONCURRENCY,
        f"streaq run (1 process, concurrency={CONCURRENCY}: its defaults); async task, "
        "silent=True, Redis streams",
    ),
]
