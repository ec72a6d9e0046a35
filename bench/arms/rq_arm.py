"""RQ 3: SimpleWorker (runs jobs in the worker process) and the default Worker (forks a
work horse per job). Both ``--burst``.
"""

from __future__ import annotations

from collections.abc import Sequence

from redis import Redis
from rq import Queue

from bench.arms.base import Arm, Item, Variant, bin_path, env
from bench.jobs import run_job

_url = env("BENCH_REDIS_URL", "redis://127.0.0.1:6399")


def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class RQArm(Arm):
    ready_marker = "Listening on"

    def open(self) -> None:
        self.conn = Redis.from_url(f"{_url}/0")
        self.conn.ping()
        self.queue = Queue("default", connection=self.conn)

    def enqueue_one(self, item: Item) -> object:
        return self.queue.enqueue(job, *item)

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        # enqueue_many pipelines the whole batch: RQ's documented bulk path.
        self.queue.enqueue_many([Queue.prepare_data(job, args=item) for item in items])

    def round_trip(self, item: Item, timeout: float) -> None:
        handle = self.queue.enqueue(job, *item)
        result = handle.latest_result(timeout=max(1, int(timeout)))
        if result is None:
            raise TimeoutError(handle.id)

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        cmd = [bin_path("rq"), "worker", "--url", f"{_url}/0"]
        if not verbose:
            cmd.append("-q")  # RQ logs every job at INFO
        if self.variant.pool == "simple":
            cmd += ["-w", "rq.worker.SimpleWorker"]
        return [*cmd, "--burst"] if burst else cmd


_NO_W4 = (("W4", "one job at a time per worker process; RQ's multi-worker pool is beta"),)
ARM = RQArm
VARIANTS = [
    Variant(
        "rq-simple", "rq_arm", "redis", "simple", 1, "rq worker -w SimpleWorker", unsupported=_NO_W4
    ),
    Variant(
        "rq-fork",
        "rq_arm",
        "redis",
        "fork",
        1,
        "rq worker (default: fork per job)",
        unsupported=_NO_W4,
    ),
]
