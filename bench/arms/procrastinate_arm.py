"""procrastinate 3.10 on the suite's PostgreSQL, in its documented best configuration for
short jobs: an ``async def`` task (procrastinate runs sync tasks in a thread and its docs
say not to combine them with concurrency), ``PsycopgConnector``, the worker with
``--concurrency 10`` (the same number of slots as conveyor's default and the oban arm's
queue limit) and LISTEN/NOTIFY on (its default). Completed jobs are kept (its default,
``--delete-jobs never``), as conveyor and oban keep theirs.

Store: ``procrastinate schema --apply`` (its documented first step), run by the harness
once per fresh database, untimed. Batch enqueue: ``Task.batch_defer`` (one statement).
W2 needs a result through the system's API, which procrastinate does not have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from procrastinate import App, PsycopgConnector

from bench.arms.base import Arm, Item, Variant, bin_path, env
from bench.jobs import run_job

app = App(connector=PsycopgConnector(conninfo=env("BENCH_POSTGRES_URL", "postgresql:///bench")))

#: Slots of the worker (procrastinate's default is 1; 10 is what the other arms run).
CONCURRENCY = 10


@app.task(name="job")
async def job(i: int, t0: float, kind: str) -> int:
    return run_job(i, t0, kind)


class ProcrastinateArm(Arm):
    ready_marker = "Starting worker"

    def open(self) -> None:
        app.open()

    def enqueue_one(self, item: Item) -> object:
        i, t0, kind = item
        return job.defer(i=i, t0=t0, kind=kind)

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        job.batch_defer(*({"i": i, "t0": t0, "kind": kind} for i, t0, kind in items))

    def close(self) -> None:
        app.close()

    def store_init_cmd(self, env: Mapping[str, str]) -> list[str] | None:
        return [
            bin_path("procrastinate"),
            "--app=bench.arms.procrastinate_arm.app",
            "schema",
            "--apply",
        ]

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        cmd = [
            bin_path("procrastinate"),
            "--app=bench.arms.procrastinate_arm.app",
            *(["--verbose"] if verbose else []),
            "worker",
            "--concurrency",
            str(concurrency),
        ]
        return [*cmd, "--one-shot"] if burst else cmd


ARM = ProcrastinateArm
VARIANTS = [
    Variant(
        "procrastinate",
        "procrastinate_arm",
        "postgres",
        "asyncio",
        CONCURRENCY,
        f"procrastinate worker --concurrency {CONCURRENCY}; async task, PsycopgConnector, "
        "LISTEN/NOTIFY on, jobs kept",
        unsupported=(("W2", "no API returns a job's result"),),
    ),
]
