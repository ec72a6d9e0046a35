"""Huey 3.5: SqliteHuey (thread -w 1, process -w 2) and RedisHuey (thread -w 1).

SQLite PRAGMAs are forced to the suite's common set (WAL, synchronous=NORMAL,
temp_store=MEMORY, cache_size=-2000 i.e. SQLite's default, which is what conveyor uses).
Huey by default sets cache_size=-8000 and leaves synchronous at SQLite's FULL; both are
documented in the fairness printout, and we also run Huey's default PRAGMAs as
``huey-sqlite-default`` so nobody has to trust our choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from huey import RedisHuey, SqliteHuey
from huey.storage import SqliteStorage

from bench.arms.base import Arm, Item, Variant, bin_path, env
from bench.jobs import run_job


class CommonPragmaStorage(SqliteStorage):
    """Huey's SQLite storage with the suite's PRAGMA set (same as conveyor's)."""

    def _create_connection(self) -> Any:
        conn = super()._create_connection()
        conn.execute("pragma synchronous=NORMAL")
        conn.execute("pragma temp_store=MEMORY")
        return conn


def _make() -> Any:
    variant = env("BENCH_VARIANT", "huey-sqlite-thread1")
    if "redis" in variant:
        return RedisHuey(
            "bench",
            url=env("BENCH_REDIS_URL", "redis://127.0.0.1:6399") + "/0",
            results=env("BENCH_RESULTS") == "1",
            notify_result=True,
        )  # documented: BLPOP instead of polling results
    path = env("BENCH_SQLITE_PATH", "/tmp/bench-huey.db")
    if variant.endswith("-default"):
        return SqliteHuey("bench", filename=path, results=env("BENCH_RESULTS") == "1")
    return SqliteHuey(
        "bench",
        filename=path,
        cache_mb=2,
        storage_class=CommonPragmaStorage,
        results=env("BENCH_RESULTS") == "1",
    )


huey = _make()


@huey.task()
def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class HueyArm(Arm):
    ready_marker = "Huey consumer started"

    def enqueue_one(self, item: Item) -> object:
        return job(*item)

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        # Huey has no bulk enqueue API; a loop of enqueues is its natural batch.
        for item in items:
            job(*item)

    def round_trip(self, item: Item, timeout: float) -> None:
        job(*item).get(blocking=True, timeout=timeout)

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        kind = "process" if self.variant.pool == "process" else "thread"
        cmd = [
            bin_path("huey_consumer"),
            "bench.arms.huey_arm.huey",
            "-w",
            str(concurrency),
            "-k",
            kind,
            "-n",
        ]
        if not verbose:
            cmd.append("-q")  # Huey logs every job at INFO
        if self.variant.storage == "sqlite":
            # SqliteHuey polls: Huey's documented knobs (-d initial delay, -m max delay)
            # set so an idle consumer reacts within 10 ms instead of up to 10 s.
            cmd += ["-d", "0.001", "-m", "0.01"]
        return cmd


ARM = HueyArm
VARIANTS = [
    Variant(
        "huey-sqlite-thread1",
        "huey_arm",
        "sqlite",
        "thread",
        1,
        "huey_consumer -k thread -w 1 -n -d 0.001 -m 0.01; SqliteHuey, common PRAGMAs",
        w4=True,
    ),
    Variant(
        "huey-sqlite-process2",
        "huey_arm",
        "sqlite",
        "process",
        2,
        "huey_consumer -k process -w 2 -n -d 0.001 -m 0.01; SqliteHuey, common PRAGMAs",
        w4=True,
    ),
    Variant(
        "huey-sqlite-default",
        "huey_arm",
        "sqlite",
        "thread",
        1,
        "huey_consumer -k thread -w 1 -n -d 0.001 -m 0.01; SqliteHuey default PRAGMAs "
        "(cache 8 MB, synchronous=FULL)",
    ),
    Variant(
        "huey-redis-thread1",
        "huey_arm",
        "redis",
        "thread",
        1,
        "huey_consumer -k thread -w 1 -n; RedisHuey (blocking BRPOP, notify_result=True)",
    ),
]
