"""Celery 5 on Redis: solo, prefork -c 2, threads -c 8, all with ``-O fair
--prefetch-multiplier=1`` (the seed-004 configuration), plus prefork -c 2 with Celery's
defaults. Results are ignored except in W2, which needs them (``BENCH_RESULTS=1``).
"""

from __future__ import annotations

from collections.abc import Sequence

from celery import Celery, group

from bench.arms.base import Arm, Item, Variant, bin_path, env, same_enqueue_as
from bench.jobs import run_job

_url = env("BENCH_REDIS_URL", "redis://127.0.0.1:6399")
_results = env("BENCH_RESULTS") == "1"
app = Celery("bench", broker=f"{_url}/0", backend=f"{_url}/1" if _results else None)
app.conf.update(
    task_ignore_result=not _results,
    worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True,
    worker_send_task_events=False,
    task_serializer="json",
)


@app.task(name="bench.job")
def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class CeleryArm(Arm):
    ready_marker = " ready."

    def open(self) -> None:
        with app.producer_or_acquire() as producer:
            producer.connection.ensure_connection()

    def enqueue_one(self, item: Item) -> object:
        return job.apply_async(item)

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        # Celery's documented batch: a group, published through one producer.
        group(job.s(*item) for item in items).apply_async()

    def round_trip(self, item: Item, timeout: float) -> None:
        job.apply_async(item).get(timeout=timeout)

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        cmd = [
            bin_path("celery"),
            "-A",
            "bench.arms.celery_arm",
            "worker",
            "-l",
            "INFO" if verbose else "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-P",
            self.variant.pool,
            "-c",
            str(concurrency),
        ]
        if not self.variant.name.endswith("-default"):
            cmd += ["-O", "fair", "--prefetch-multiplier=1"]
        return cmd


ARM = CeleryArm
VARIANTS = [
    Variant(
        "celery-solo",
        "celery_arm",
        "redis",
        "solo",
        1,
        "celery worker -P solo -O fair --prefetch-multiplier=1",
    ),
    Variant(
        "celery-prefork2",
        "celery_arm",
        "redis",
        "prefork",
        2,
        "celery worker -P prefork -c 2 -O fair --prefetch-multiplier=1",
        w4=True,
    ),
    Variant(
        "celery-threads8",
        "celery_arm",
        "redis",
        "threads",
        8,
        "celery worker -P threads -c 8 -O fair --prefetch-multiplier=1",
        unsupported=same_enqueue_as("celery-prefork2"),
    ),
    Variant(
        "celery-prefork2-default",
        "celery_arm",
        "redis",
        "prefork",
        2,
        "celery worker -P prefork -c 2 (default prefetch 4, default -O)",
    ),
]
