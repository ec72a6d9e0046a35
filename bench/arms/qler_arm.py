"""qler 0.5.1, the seed-000 system: SQLite through sqler/aiosqlite, async-first.

Public API only: ``Queue``, ``@task(queue, sync=True)``, ``TaskWrapper.enqueue`` /
``enqueue_many``, ``Job.wait`` / ``Job.result`` and the ``qler worker --app`` CLI.

qler requires Python >= 3.12, so the published run puts every arm on Python 3.12
(``make bench-venv``). On an older interpreter this module still imports (qler is
imported lazily, through importlib) and the arm reports itself unavailable.

Choices, each printed with the results:

- **PRAGMAs**: the suite's common set, given to sqler's ``AsyncSQLiteAdapter`` (qler takes
  a caller-owned ``AsyncSQLerDB``): WAL, synchronous=NORMAL, temp_store=MEMORY,
  cache_size=-2000, busy_timeout=5000, plus the rest of sqler's own on-disk list
  (foreign_keys=ON, wal_autocheckpoint=1000) with mmap_size left at SQLite's 0. qler's
  defaults (sqler's ``on_disk``: cache 64 MB, mmap 256 MB) run as ``qler-default``.
- **Job body**: the common ``run_job`` is synchronous (a blocking ``os.write``), so the
  task is ``@task(queue, sync=True)``, qler's documented way for sync functions
  (``asyncio.to_thread``); an ``async def`` calling it would block qler's event loop.
- **Worker**: ``qler worker --app bench.arms.qler_arm:queue -c 4 --poll-interval 0.01``.
  ``-c 4`` is the README's example; the worker claims up to its free slots per claim.
  ``--poll-interval`` (default 1 s) is how long an idle worker sleeps between claims:
  10 ms, the same reaction bound the Huey SQLite consumer gets (``-m 0.01``).
- **Result wait**: ``Job.wait`` polls the file from another process (its in-process
  event cannot fire across processes); default first poll 0.5 s growing x1.5 to 5 s.
  Here ``poll_interval=0.001, max_interval=0.01``: Huey's consumer numbers again.
- **No burst mode**: the qler worker runs until SIGTERM (graceful drain), which the
  harness sends once the marker file holds N records, as for every arm without one.
- **Store**: ``qler init --db FILE`` (the README's first step) creates each fresh file
  before the producer or the worker opens it, untimed (see ``store_init_cmd``).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import platform
import sys
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from bench.arms.base import Arm, Item, Variant, bin_path, env
from bench.jobs import run_job

#: the qler worker's idle sleep between claims (CLI ``--poll-interval``, default 1.0 s)
POLL_INTERVAL_S = 0.01
#: ``Job.wait`` across processes: first poll after 1 ms, x1.5 (qler's backoff), <= 10 ms
WAIT_POLL_S = 0.001
WAIT_MAX_S = 0.01
#: sqler's on-disk PRAGMA list with cache_size and mmap_size set to the suite's values
COMMON_PRAGMAS = [
    "PRAGMA foreign_keys = ON",
    "PRAGMA busy_timeout = 5000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = NORMAL",
    "PRAGMA cache_size = -2000",
    "PRAGMA wal_autocheckpoint = 1000",
    "PRAGMA mmap_size = 0",
    "PRAGMA temp_store = MEMORY",
]
#: sqler's ``AsyncSQLiteAdapter.on_disk`` pool size, which ``Queue(path)`` uses
POOL_SIZE = 4


def missing() -> str | None:
    """Why qler cannot run on this interpreter, or ``None``."""
    if sys.version_info < (3, 12):
        return (
            f"qler not installed: qler 0.5.0/0.5.1 require Python >= 3.12 (this is Python "
            f"{platform.python_version()}); run the suite from .venv-bench (make bench-venv)"
        )
    if importlib.util.find_spec("qler") is None:
        return "qler not installed: pip install -e '.[bench]' on Python >= 3.12"
    return None


def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


def _make_queue() -> Any:
    qler = importlib.import_module("qler")
    path = env("BENCH_SQLITE_PATH", "/tmp/bench-qler.db")
    if env("BENCH_VARIANT", "qler").endswith("-default"):
        return qler.Queue(path)  # qler owns the file: sqler's on-disk PRAGMAs
    sqler = importlib.import_module("sqler")
    adapter = sqler.AsyncSQLiteAdapter(path, pragmas=COMMON_PRAGMAS, pool_size=POOL_SIZE)
    return qler.Queue(sqler.AsyncSQLerDB(adapter))


#: the Queue the worker loads with ``--app bench.arms.qler_arm:queue`` (None without qler)
queue: Any = None
job_task: Any = None
if missing() is None:
    queue = _make_queue()
    # task path "bench.arms.qler_arm.job", the same in producer and worker
    job_task = importlib.import_module("qler").task(queue, sync=True)(job)


class QlerArm(Arm):
    ready_marker = "starting (queues="  # qler prints it before opening the database
    # qler 0.5.1's worker prints "Worker stopped" after SIGTERM, then waits on its database
    # threads forever: after the measurement, do not spend 10 s per run waiting for it.
    stop_grace = 1.0

    def __init__(self, variant: Variant) -> None:
        super().__init__(variant)
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def unavailable(cls, variant: Variant) -> str | None:
        return missing()

    def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """qler's API is async; the arm protocol is not: one loop per producer process,
        created in ``open`` (outside timed windows), each call runs to completion on it."""
        assert self._loop is not None, "open() first"
        return self._loop.run_until_complete(coro)

    def open(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._run(queue.init_db())  # connections, PRAGMAs and schema, untimed

    def enqueue_one(self, item: Item) -> object:
        return self._run(job_task.enqueue(*item))

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        # TaskWrapper.enqueue_many: one multi-row INSERT (Job.asave_many), all-or-nothing
        self._run(job_task.enqueue_many(list(items)))

    async def _round_trip(self, item: Item, timeout: float) -> object:
        j = await job_task.enqueue(*item)
        await j.wait(timeout=timeout, poll_interval=WAIT_POLL_S, max_interval=WAIT_MAX_S)
        return j.result

    def round_trip(self, item: Item, timeout: float) -> None:
        self._run(self._round_trip(item, timeout))

    def read_pragmas(self, names: Sequence[str]) -> dict[str, Any]:
        """sqler's own ``pragma_report`` on one of the pool's connections (every pool
        connection runs the same PRAGMA list when it opens)."""
        report: dict[str, Any] = self._run(queue.db.adapter.pragma_report())
        return {n: report.get(n) for n in names}

    def close(self) -> None:
        if self._loop is None:
            return
        self._run(queue.db.close())
        self._loop.close()
        self._loop = None

    def store_init_cmd(self, env: Mapping[str, str]) -> list[str] | None:
        # qler's README starts with `qler init --db FILE`. Without it, a worker and a
        # producer opening a new file at once (W2, W3) race in qler's schema set-up
        # (sqler checks a column, then ALTERs: "duplicate column name: _version").
        return [bin_path("qler"), "init", "--db", env["BENCH_SQLITE_PATH"]]

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        # No burst mode and no per-job log lines (qler configures no log handler).
        return [
            bin_path("qler"),
            "worker",
            "--app",
            "bench.arms.qler_arm:queue",
            "--concurrency",
            str(concurrency),
            "--poll-interval",
            str(POLL_INTERVAL_S),
        ]


ARM = QlerArm
_WORKER = "qler worker -c 4 --poll-interval 0.01; @task(sync=True); Job.wait poll 1-10 ms"
VARIANTS = [
    Variant(
        "qler",
        "qler_arm",
        "sqlite",
        "worker",
        4,
        f"{_WORKER}; common PRAGMAs",
        w4=True,
    ),
    Variant(
        "qler-default",
        "qler_arm",
        "sqlite",
        "worker",
        4,
        f"{_WORKER}; Queue(path) default PRAGMAs (cache 64 MB, mmap 256 MB)",
    ),
]
