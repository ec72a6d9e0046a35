"""taskiq 0.13 with taskiq-redis 1.2's ``RedisStreamBroker`` (Redis streams with
acknowledgements: the broker taskiq-redis recommends) on the suite's redis-server, run
by its own CLI as its docs do: ``taskiq worker bench.arms.taskiq_arm:broker``.

Its documented defaults, kept: ``--workers 2`` (child processes), ``--max-async-tasks
100`` per process, ``--ack-type when_saved`` (acknowledged once the result is stored),
``xread_count=100`` messages per read, pydantic parsing of arguments on. The task is
``async def``. Logging: ``--log-level WARNING`` (taskiq logs every task at INFO); W5
runs at INFO, which has no "ready" line in the worker processes (only the parent's
"Starting 2 worker processes", printed before they import anything), so W5 reports the
first job only.

Durability: Redis without persistence (the suite's redis-server runs with no RDB and no
AOF, for every Redis arm), so nothing is fsynced; an unacknowledged message is claimed
again after ``idle_timeout`` (10 min), not after a Redis restart.

The producer calls ``broker.startup()`` (its documented client start), which creates the
consumer group, so jobs enqueued before the worker starts are delivered. Batch enqueue:
taskiq has no bulk ``kiq``, so a loop of ``kiq`` is its batch. W2: a
``RedisAsyncResultBackend`` (only then: ``BENCH_RESULTS=1``) and ``wait_result``, which
polls the result key (every 5 ms here; its default is 200 ms).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskiq import AsyncBroker
from taskiq_redis import RedisAsyncResultBackend, RedisStreamBroker

from bench.arms.aio import AsyncArm
from bench.arms.base import Item, Variant, bin_path, env
from bench.jobs import run_job

_url = env("BENCH_REDIS_URL", "redis://127.0.0.1:6399")
broker: AsyncBroker = RedisStreamBroker(url=f"{_url}/0")
if env("BENCH_RESULTS") == "1":
    broker = broker.with_result_backend(RedisAsyncResultBackend(redis_url=f"{_url}/1"))
#: seconds between result polls in W2 (``wait_result``'s default is 0.2 s; 5 ms so the
#: round trip measures the queue, not the poll)
CHECK_INTERVAL = 0.005
#: taskiq's default worker processes
PROCESSES = 2


@broker.task(task_name="job")
async def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class TaskiqArm(AsyncArm):
    ready_marker = ""  # see the module docstring: no ready line from the workers

    def open(self) -> None:
        self.start_loop()
        self.run(broker.startup())

    def enqueue_one(self, item: Item) -> object:
        return self.run(job.kiq(*item))

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        async def all_of() -> None:
            for item in items:
                await job.kiq(*item)

        self.run(all_of())

    def round_trip(self, item: Item, timeout: float) -> None:
        async def one() -> Any:
            task = await job.kiq(*item)
            result = await task.wait_result(check_interval=CHECK_INTERVAL, timeout=timeout)
            if result.return_value != item[0]:
                raise RuntimeError(f"taskiq task {item[0]}: {result!r}")

        self.run(one())

    def close(self) -> None:
        self.run(broker.shutdown())
        self.stop_loop()

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        return [
            bin_path("taskiq"),
            "worker",
            "bench.arms.taskiq_arm:broker",
            "--workers",
            str(concurrency),
            "--log-level",
            "INFO" if verbose else "WARNING",
        ]


ARM = TaskiqArm
VARIANTS = [
    Variant(
        "taskiq-redis",
        "taskiq_arm",
        "redis",
        "processes",
        PROCESSES,
        f"taskiq worker --workers {PROCESSES} (its default; --max-async-tasks 100, "
        "ack when_saved); RedisStreamBroker, async task",
    ),
]
