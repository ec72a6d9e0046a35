"""oban-py 0.7 (``oban`` on PyPI) on the suite's PostgreSQL, as its README runs it:
``oban install --dsn ...`` once per fresh database (the harness runs it, untimed), then
``oban start --dsn ... --queues default:10`` (a queue limit of 10: the same number of
slots as conveyor's default and the procrastinate arm). Jobs are ``async def process``
workers (oban-py is asyncio only); insert triggers notify the queues (its default
notifier). Batch enqueue: ``Oban.enqueue_many`` (one statement). W2 needs a result
through the system's API, which oban-py does not have.

The worker class must be importable by the ``oban`` process: ``--cron-modules`` is the
CLI's documented way to import a module at start.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from oban import Oban, worker

from bench.arms.base import Arm, Item, Variant, bin_path, env
from bench.jobs import run_job

DSN = env("BENCH_POSTGRES_URL", "postgresql:///bench")
#: The queue limit (oban's slots), as the other PostgreSQL arms.
LIMIT = 10


@worker(queue="default")
class Job:
    async def process(self, job: Any) -> None:
        run_job(job.args["i"], job.args["t0"], job.args["kind"])


class ObanArm(Arm):
    ready_marker = "Oban started"

    def open(self) -> None:
        from psycopg_pool import AsyncConnectionPool

        self.loop = asyncio.new_event_loop()

        async def start() -> Oban:
            self.pool = AsyncConnectionPool(DSN, min_size=1, max_size=2, open=False)
            await self.pool.open()
            return Oban(pool=self.pool)  # client mode: no queues, no leadership

        self.oban = self.loop.run_until_complete(start())

    def enqueue_one(self, item: Item) -> object:
        i, t0, kind = item
        return self.loop.run_until_complete(
            self.oban.enqueue(Job.new({"i": i, "t0": t0, "kind": kind}))
        )

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        jobs = [Job.new({"i": i, "t0": t0, "kind": kind}) for i, t0, kind in items]
        self.loop.run_until_complete(self.oban.enqueue_many(jobs))

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        self.loop.close()

    def store_init_cmd(self, env: Mapping[str, str]) -> list[str] | None:
        return [bin_path("oban"), "install", "--dsn", env["BENCH_POSTGRES_URL"]]

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        # No burst mode: the harness stops it once the marker shows every job done.
        return [
            bin_path("oban"),
            "start",
            "--dsn",
            env("BENCH_POSTGRES_URL", DSN),  # this measurement's cluster
            "--queues",
            f"default:{concurrency}",
            "--cron-modules",
            "bench.arms.oban_arm",
            "--log-level",
            "INFO" if verbose else "WARNING",
        ]


ARM = ObanArm
VARIANTS = [
    Variant(
        "oban-py",
        "oban_arm",
        "postgres",
        "asyncio",
        LIMIT,
        f"oban start --queues default:{LIMIT}; async worker, default notifier (insert "
        "trigger + LISTEN), jobs kept (pruner default 1 day)",
        unsupported=(("W2", "no API returns a job's result"),),
    ),
]
