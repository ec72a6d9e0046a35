"""conveyor, through its public API only: ``App(url)``, ``@app.task``, ``enqueue``,
``enqueue_many``, ``Job.result(timeout)`` and ``conveyor worker MODULE:APP``.

The URL comes from ``BENCH_CONVEYOR_URL``; for SQLite the harness passes
``?synchronous=NORMAL`` explicitly so the PRAGMA set matches the Huey arm's (see
:mod:`bench.fairness`); for PostgreSQL it is the measurement's fresh database on the
suite's own cluster. The ``-async`` variants enqueue ``ajob`` (an ``async def`` task, what
the async pool is for); every other variant enqueues ``job``.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping, Sequence

import conveyor
from bench.arms.base import Arm, Item, Variant, bin_path, env, same_enqueue_as
from bench.jobs import run_job

#: Issue 24's cost figures (bench/flow_cost.py): "" (plain), "fair" (fair_key over
#: FAIR_KEYS keys), "limit" (a declared queue concurrency no worker reaches) or "batch"
#: (a Batch(size=BATCH_SIZE) handler): the producer and the worker both read it.
FLOW = env("BENCH_FLOW")
FAIR_KEYS, QUEUE_LIMIT, BATCH_SIZE = 100, 1_000, 100

app = conveyor.App(
    env("BENCH_CONVEYOR_URL", "sqlite:///:memory:"),
    **({"queue_concurrency": {"default": QUEUE_LIMIT}} if FLOW == "limit" else {}),
)


@app.task
def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


@app.task
async def ajob(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


@app.task(fair_key=lambda i, t0, kind: f"k{i % FAIR_KEYS}")
def fjob(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


@app.task(batch=conveyor.Batch(size=BATCH_SIZE, wait=0.1))
def bjob(items: list[conveyor.BatchItem[[int, float, str]]]) -> None:
    for item in items:
        run_job(*item.args)


#: the task this process's variant enqueues
task: conveyor.Task[[int, float, str], object] = (
    ajob
    if env("BENCH_VARIANT").endswith("-async")
    else {"fair": fjob, "batch": bjob}.get(FLOW, job)
)


class ConveyorArm(Arm):
    ready_marker = "ready: queues="

    @classmethod
    def unavailable(cls, variant: Variant) -> str | None:
        module = f"conveyor.backends.{variant.storage}.backend"
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} not importable ({exc})"
        return None

    @classmethod
    def gaps(cls, variant: Variant) -> dict[str, str]:
        try:
            importlib.import_module("conveyor.cli.main")
        except ImportError as exc:
            reason = f"`conveyor worker` CLI not on this branch yet ({exc})"
            return {s: reason for s in ("W1", "W2", "W3", "W4", "W5")}
        return {}

    def open(self) -> None:
        # Opening the backend creates/migrates the SQLite file; redis-py connects on the
        # first command, so one read of a job that does not exist connects (and makes
        # the handshake) here: connection set-up stays outside timed windows, as for
        # every arm (the floor arm's PING, Dramatiq's and RQ's own first commands).
        app.backend.job_get_many(["warm-up"])

    def enqueue_one(self, item: Item) -> object:
        return task.enqueue(*item)

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        task.enqueue_many(items)

    def enqueue_spread(self, items: Sequence[Item], queues: Sequence[str]) -> None:
        # One enqueue_many per queue that gets jobs (the tenants' batches).
        for k, queue in enumerate(queues):
            share = items[k :: len(queues)]
            if share:
                task.with_options(queue=queue).enqueue_many(share)

    def round_trip(self, item: Item, timeout: float) -> None:
        task.enqueue(*item).result(timeout=timeout)

    def close(self) -> None:
        app.close()

    def in_process_cmd(self, store: Mapping[str, str]) -> list[str] | None:
        # One row per backend: the -c 8 and process variants would time the same thing.
        if self.variant.name not in (
            "conveyor-sqlite",
            "conveyor-redis",
            "conveyor-postgres-thread",
        ):
            return None
        script = os.path.join(os.path.dirname(os.path.dirname(__file__)), "cold_start.py")
        return [sys.executable, script, store["BENCH_CONVEYOR_URL"]]

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        cmd = [
            bin_path("conveyor"),
            "worker",
            "bench.arms.conveyor_arm:app",
            "-c",
            str(concurrency),
            "--pool",
            self.variant.pool,
        ]
        if self.variant.name.endswith("-prefetch"):
            cmd += ["--prefetch", str(PREFETCH)]
        elif self.variant.name.endswith("-strict"):
            cmd += ["--prefetch", "0"]  # claims sized to the free slots (the old default)
        return [*cmd, "--burst"] if burst else cmd


#: Jobs a prefetch variant claims beyond its free slots (``conveyor worker --prefetch``).
PREFETCH = 16

ARM = ConveyorArm
VARIANTS = [
    Variant(
        "conveyor-sqlite-default",
        "conveyor_arm",
        "sqlite",
        "thread",
        10,
        "conveyor worker with its defaults (-c 10 --pool thread --prefetch auto); "
        "sqlite WAL synchronous=NORMAL",
    ),
    Variant(
        "conveyor-sqlite-durable",
        "conveyor_arm",
        "sqlite",
        "thread",
        10,
        "conveyor worker with its defaults; sqlite WAL synchronous=FULL (durable mode: "
        "every commit fsynced)",
        unsupported=same_enqueue_as("conveyor-sqlite-default")[:1],
    ),
    Variant(
        "conveyor-sqlite-default-strict",
        "conveyor_arm",
        "sqlite",
        "thread",
        10,
        "conveyor worker -c 10 --pool thread --prefetch 0; sqlite WAL synchronous=NORMAL",
        unsupported=same_enqueue_as("conveyor-sqlite-default"),
    ),
    Variant(
        "conveyor-redis-default",
        "conveyor_arm",
        "redis",
        "thread",
        10,
        "conveyor worker with its defaults (-c 10 --pool thread --prefetch auto); "
        "redis on loopback",
    ),
    Variant(
        "conveyor-redis-default-strict",
        "conveyor_arm",
        "redis",
        "thread",
        10,
        "conveyor worker -c 10 --pool thread --prefetch 0; redis on loopback",
        unsupported=same_enqueue_as("conveyor-redis-default"),
    ),
    Variant(
        "conveyor-sqlite",
        "conveyor_arm",
        "sqlite",
        "thread",
        1,
        "conveyor worker -c 1 --pool thread; sqlite WAL synchronous=NORMAL",
        w4=True,
    ),
    Variant(
        "conveyor-sqlite-c8",
        "conveyor_arm",
        "sqlite",
        "thread",
        8,
        "conveyor worker -c 8 --pool thread; sqlite WAL synchronous=NORMAL",
        unsupported=same_enqueue_as("conveyor-sqlite-default"),
    ),
    Variant(
        "conveyor-redis",
        "conveyor_arm",
        "redis",
        "thread",
        1,
        "conveyor worker -c 1 --pool thread; redis on loopback",
        w4=True,
    ),
    Variant(
        "conveyor-sqlite-process",
        "conveyor_arm",
        "sqlite",
        "process",
        2,
        "conveyor worker -c 2 --pool process (spawned children); sqlite WAL synchronous=NORMAL",
        w4=True,
        unsupported=same_enqueue_as("conveyor-sqlite-default"),
    ),
    Variant(
        "conveyor-redis-c8",
        "conveyor_arm",
        "redis",
        "thread",
        8,
        "conveyor worker -c 8 --pool thread; redis on loopback",
        unsupported=same_enqueue_as("conveyor-redis-default"),
    ),
    Variant(
        "conveyor-sqlite-prefetch",
        "conveyor_arm",
        "sqlite",
        "thread",
        1,
        f"conveyor worker -c 1 --pool thread --prefetch {PREFETCH}; sqlite WAL synchronous=NORMAL",
        unsupported=same_enqueue_as("conveyor-sqlite-default"),
    ),
    Variant(
        "conveyor-sqlite-c8-prefetch",
        "conveyor_arm",
        "sqlite",
        "thread",
        8,
        f"conveyor worker -c 8 --pool thread --prefetch {PREFETCH}; sqlite WAL synchronous=NORMAL",
        unsupported=same_enqueue_as("conveyor-sqlite-default"),
    ),
    Variant(
        "conveyor-redis-prefetch",
        "conveyor_arm",
        "redis",
        "thread",
        1,
        f"conveyor worker -c 1 --pool thread --prefetch {PREFETCH}; redis on loopback",
        unsupported=same_enqueue_as("conveyor-redis-default"),
    ),
    Variant(
        "conveyor-redis-c8-prefetch",
        "conveyor_arm",
        "redis",
        "thread",
        8,
        f"conveyor worker -c 8 --pool thread --prefetch {PREFETCH}; redis on loopback",
        unsupported=same_enqueue_as("conveyor-redis-default"),
    ),
    # The worker's defaults (-c 10): what a user gets from `conveyor worker --pool ...`.
    Variant(
        "conveyor-postgres-thread",
        "conveyor_arm",
        "postgres",
        "thread",
        10,
        "conveyor worker -c 10 --pool thread (defaults); postgres, LISTEN/NOTIFY",
    ),
    Variant(
        "conveyor-postgres-async",
        "conveyor_arm",
        "postgres",
        "async",
        10,
        "conveyor worker -c 10 --pool async (defaults); async def task; postgres, LISTEN/NOTIFY",
    ),
]
