"""pgqueuer 1.6 on the suite's PostgreSQL, run by its own CLI as its README does:
``pgq install`` once per fresh database (the harness runs it, untimed), then
``pgq run bench.arms.pgqueuer_arm:main`` (a factory, an async context manager, that
yields the ``PgQueuer`` with its entrypoint registered). pgqueuer 1.6's CLI is built on
typer and the ``bench`` extra pins typer 0.28.0: with typer 0.29, ``pgq run
--log-level`` hands pgqueuer a string where it expects its enum, and ``pgq run`` fails
at start (``'str' object has no attribute 'name'``).

Its documented defaults, kept: ``--batch-size 10`` (jobs dequeued per round trip; spelled
out because the harness passes the arm's slots there), ``--dequeue-timeout 30``, no
``--max-concurrent-tasks`` (unbounded) and an entrypoint with ``concurrency_limit=0``
(unlimited), LISTEN/NOTIFY wake-ups (its only mode), heartbeat 30 s. The job is an
``async def`` entrypoint (pgqueuer runs jobs on its event loop). A finished job's row is
deleted from the queue table and a row written to its log table (its only behaviour).

Durability: ``pgq install``'s default ``--durability durable`` (logged tables), so every
commit is as durable as the server's ``fsync``/``synchronous_commit`` make it, like
conveyor's PostgreSQL arms and procrastinate's on the same cluster.

Driver: asyncpg (``AsyncpgDriver`` over one connection: the ``asyncpg`` extra), as its
README's consumer and producer are written (its psycopg driver ran W1 at about the same
rate in a trial on this box). The README's factory returns the ``PgQueuer``; 1.6's
``pgq run`` refuses that and asks for an async context manager, which ``main`` is.

Batch enqueue: ``Queries.enqueue`` with lists (one statement). W2 needs a result
through the system's API, which pgqueuer does not have (a completion watcher reports a
job's status, not its return value).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import asyncpg
from pgqueuer import AsyncpgDriver, PgQueuer, Queries
from pgqueuer.models import Job

from bench.arms.aio import AsyncArm
from bench.arms.base import Item, Variant, bin_path, env
from bench.jobs import run_job

DSN = env("BENCH_POSTGRES_URL", "postgresql:///bench")
#: jobs dequeued per round trip: pgqueuer's default
BATCH = 10
ENTRYPOINT = "job"


@asynccontextmanager
async def main() -> AsyncIterator[PgQueuer]:
    """The factory ``pgq run`` calls: pgqueuer 1.6 wants an async context manager that
    yields the ``PgQueuer`` (and closes its connection after)."""
    conn = await asyncpg.connect(DSN)
    try:
        pgq = PgQueuer(AsyncpgDriver(conn))

        @pgq.entrypoint(ENTRYPOINT)
        async def job(job: Job) -> None:
            assert job.payload is not None
            i, t0, kind = json.loads(job.payload)
            run_job(i, t0, kind)

        yield pgq
    finally:
        await conn.close()


def _payload(item: Item) -> bytes:
    return json.dumps(item).encode()


class PgqueuerArm(AsyncArm):
    ready_marker = ""  # pgqueuer logs no "ready" line at INFO; W5 reports first job only

    def open(self) -> None:
        self.start_loop()
        self.conn = self.run(asyncpg.connect(DSN))
        self.queries = Queries(AsyncpgDriver(self.conn))

    def enqueue_one(self, item: Item) -> object:
        return self.run(self.queries.enqueue(ENTRYPOINT, _payload(item)))

    def enqueue_batch(self, items: Sequence[Item]) -> None:
        self.run(
            self.queries.enqueue(
                [ENTRYPOINT] * len(items), [_payload(it) for it in items], [0] * len(items)
            )
        )

    def close(self) -> None:
        self.run(self.conn.close())
        self.stop_loop()

    def store_init_cmd(self, env: Mapping[str, str]) -> list[str] | None:
        return [bin_path("pgq"), "--pg-dsn", env["BENCH_POSTGRES_URL"], "install"]

    def worker_cmd(self, concurrency: int, burst: bool, verbose: bool = False) -> list[str]:
        # No burst: the harness stops it once the marker shows every job done.
        return [
            bin_path("pgq"),
            "--pg-dsn",
            env("BENCH_POSTGRES_URL", DSN),  # this measurement's cluster
            "run",
            "bench.arms.pgqueuer_arm:main",
            "--batch-size",
            str(concurrency),
            "--log-level",
            "INFO" if verbose else "WARNING",
        ]


ARM = PgqueuerArm
VARIANTS = [
    Variant(
        "pgqueuer",
        "pgqueuer_arm",
        "postgres",
        "asyncio",
        BATCH,
        f"pgq run --batch-size {BATCH} (its default); async entrypoint, unbounded "
        "concurrency, LISTEN/NOTIFY, asyncpg driver, durable (logged) tables; finished "
        "jobs moved to its log table",
        unsupported=(("W2", "no API returns a job's result"),),
    ),
]
