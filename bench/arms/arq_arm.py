"""arq 0.28 on the suite's redis-server, in its own environment: arq 0.28 asks for
redis-py < 6 and taskiq-redis 1.2 for >= 8, so arq cannot share ``.venv-bench``. Its
producer and worker run from ``.venv-bench-arq`` (``make bench-venv-arq``: Python 3.12,
arq and its redis-py, nothing else); the harness picks that interpreter for this arm
(:func:`bench.arms.python_for`). This module is also imported by the harness (for the
worker command), where arq is not installed: arq is imported only where it runs.

Run by its own CLI as its README does: ``arq bench.arms.arq_arm.WorkerSettings``, with
its documented defaults kept: ``max_jobs=10`` (jobs at once on the worker's event loop),
``poll_delay=0.5`` s (the worker sleeps that long between reads of the queue), results
kept 3,600 s, one process. Logging: arq's CLI logs every job at INFO, so the worker runs
with ``--custom-log-dict`` (its documented option) at WARNING, as the other arms run
quiet; W5 keeps INFO for the ready line (``Starting worker for``).

Durability: Redis without persistence (the suite's redis-server, as for every Redis arm),
so nothing is fsynced; arq re-runs a job whose worker died once its ``in-progress`` key
expires. Batch enqueue: arq has none, so a loop of ``enqueue_job`` is its batch. W2:
``Job.result(timeout)`` (polls the result key).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar

from bench.arms.aio import AsyncArm
from bench.arms.base import Item, Variant, env
from bench.jobs import run_job

#: the arm's own environment (Makefile: bench-venv-arq), at the repository's root
VENV = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    ".venv-bench-arq",
)
URL = env("BENCH_REDIS_URL", "redis://127.0.0.1:6399") + "/0"
#: arq's default max_jobs (jobs at once per worker)
CONCURRENCY = 10
#: ``--custom-log-dict``: arq's own log config at WARNING (no line per job)
QUIET_LOG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"arq.standard": {"level": "WARNING", "class": "logging.StreamHandler"}},
    "loggers": {"arq": {"handlers": ["arq.standard"], "level": "WARNING"}},
}


async def job(ctx: dict[str, Any], i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


def _settings() -> Any:
    from arq.connections import RedisSettings

    return RedisSettings.from_dsn(URL)


def _settings_here() -> Any:
    """arq's Redis settings where arq is installed; None in the harness's process."""
    try:
        return _settings()
    except ImportError:
        return None


class WorkerSettings:
    """What ``arq`` loads (its documented settings class); defaults otherwise."""

    functions: ClassVar[list[Any]] = [job]
    max_jobs = CONCURRENCY
    redis_settings = _settings_here()


class ArqArm(AsyncArm):
    ready_marker = "Starting worker for"

    @classmethod
    def unavailable(cls, variant: Variant) -> str | None:
        if not os.path.exists(os.path.join(VENV, "bin", "arq")):
            return f"{VENV} missing: make bench-venv-arq"
        return None

    def open(self) -> None:
        from arq import create_pool

        self.start_loop()
        self.pool = self.run(create_pool(_settings()))

    def enqueue_one(self, item: Item) -> object:
        return self.run(self.pool.enqueue_job("job", *item))

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        async def all_of() -> None:
            for item in items:
                await self.pool.enqueue_job("job", *item)

        self.run(all_of())

    def round_trip(self, item: Item, timeout: float) -> None:
        async def one() -> None:
            queued = await self.pool.enqueue_job("job", *item)
            assert queued is not None
            if await queued.result(timeout=timeout) != item[0]:
                raise RuntimeError(f"arq job {item[0]}: wrong result")

        self.run(one())

    def close(self) -> None:
        self.run(self.pool.aclose())
        self.stop_loop()

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        # max_jobs is in the settings class (arq's CLI has no flag for it).
        cmd = [os.path.join(VENV, "bin", "arq"), "bench.arms.arq_arm.WorkerSettings"]
        if not verbose:
            cmd += ["--custom-log-dict", "bench.arms.arq_arm.QUIET_LOG"]
        return [*cmd, "--burst"] if burst else cmd


ARM = ArqArm
VARIANTS = [
    Variant(
        "arq",
        "arq_arm",
        "redis",
        "asyncio",
        CONCURRENCY,
        f"arq WorkerSettings (1 process, max_jobs={CONCURRENCY}, poll_delay 0.5 s: its "
        "defaults), --custom-log-dict at WARNING; own venv (redis-py 5.3: arq 0.28 "
        "wants < 6)",
    ),
]
