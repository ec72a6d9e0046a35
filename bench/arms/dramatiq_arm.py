"""Dramatiq 2 on Redis: -p 1 -t 1 and -p 2 -t 8 (its default on 2 cores).

The Results middleware is added only for W2 (``BENCH_RESULTS=1``), as for Celery.
"""

from __future__ import annotations

from collections.abc import Sequence

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.results import Results
from dramatiq.results.backends.redis import RedisBackend

from bench.arms.base import Arm, Item, Variant, bin_path, env
from bench.jobs import run_job

_url = env("BENCH_REDIS_URL", "redis://127.0.0.1:6399")
broker = RedisBroker(url=f"{_url}/0")
_results = env("BENCH_RESULTS") == "1"
if _results:
    broker.add_middleware(Results(backend=RedisBackend(url=f"{_url}/1")))
dramatiq.set_broker(broker)


@dramatiq.actor(max_retries=0, **({"store_results": True} if _results else {}))
def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class DramatiqArm(Arm):
    ready_marker = "Worker process is ready"

    def open(self) -> None:
        broker.client.ping()

    def enqueue_one(self, item: Item) -> object:
        return job.send(*item)

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        # Dramatiq has no bulk enqueue; group().run() is its documented multi-send.
        dramatiq.group(job.message(*item) for item in items).run()

    def round_trip(self, item: Item, timeout: float) -> None:
        job.send(*item).get_result(block=True, timeout=int(timeout * 1000))

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        threads = 8 if self.variant.name.endswith("t8") else 1
        return [
            bin_path("dramatiq"),
            "bench.arms.dramatiq_arm",
            "-p",
            str(concurrency),
            "-t",
            str(threads),
        ]


ARM = DramatiqArm
VARIANTS = [
    Variant(
        "dramatiq-p1t1", "dramatiq_arm", "redis", "processes", 1, "dramatiq -p 1 -t 1", w4=True
    ),
    Variant(
        "dramatiq-p2t8",
        "dramatiq_arm",
        "redis",
        "processes",
        2,
        "dramatiq -p 2 -t 8 (its default on 2 cores)",
    ),
]
