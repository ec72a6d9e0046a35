"""What the indexed sort's indexes (``jobs_task``, ``jobs_queue``: SQLite schema 12,
PostgreSQL 8) cost the enqueue: E1-shaped single enqueues and E2-shaped ``enqueue_many``
on a fresh store with the indexes and with them dropped, interleaved over ``--rounds``
so a busy box's drift falls on both; W1-shaped claims and finishes too (neither column
changes there, so they should cost it nothing). SQLite: this process's CPU time (SQLite
runs in it), medians. ``--store postgres``: a throwaway cluster (bench.postgres_cluster),
wall time. Not part of ``make test``.

``python -m bench.sort_index_cost [--rounds 6] [--n 2000] [--store sqlite|postgres]
[--keep jobs_task,jobs_queue]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams
from conveyor.states import FinishKind

INDEXES = ("jobs_task", "jobs_queue")


def one_round(
    url: str, n: int, indexed: bool, clock: Callable[[], float], keep: tuple[str, ...] = INDEXES
) -> dict[str, float]:
    """Seconds of n single enqueues (E1), 10 n in one enqueue_many (E2), and claiming and
    finishing those 11 n jobs 50 at a time (W1)."""
    app = conveyor.App(url)

    @app.task(name="noop")
    def noop(i: int) -> None: ...

    backend = app.backend
    backend.queue_stats()  # opened: the schema is made
    with _raw(backend) as run:
        for name in INDEXES:
            if not indexed or name not in keep:
                run(f"DROP INDEX IF EXISTS {name}")
    out = {}
    start = clock()
    for i in range(n):
        noop.enqueue(i)
    out["E1"] = clock() - start
    start = clock()
    noop.enqueue_many({"i": i} for i in range(10 * n))
    out["E2"] = clock() - start
    start = clock()
    while claimed := backend.job_claim(JobClaimParams("w", [("default", 50)], 50)):
        backend.job_finish_many(
            [JobFinishParams(c.id, c.token, FinishKind.SUCCEEDED, result="null") for c in claimed]
        )
    out["W1"] = clock() - start
    app.close()
    return out


class _raw:
    """A context giving ``run(sql)`` on the store's own connection (SQLite or psycopg)."""

    def __init__(self, backend: object) -> None:
        self.backend = backend

    def __enter__(self) -> Callable[[str], None]:
        conn = getattr(self.backend, "connection", None)
        if conn is not None:  # SQLite
            return lambda sql: conn.execute(sql) and None

        pool = self.backend._pool  # type: ignore[attr-defined]  # PostgreSQL

        def run(sql: str) -> None:
            with pool.connection() as c:
                c.execute(sql)

        return run

    def __exit__(self, *exc: object) -> None:
        return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--keep", default=",".join(INDEXES), help="the indexes of the 'with' arm")
    args = ap.parse_args()
    keep = tuple(args.keep.split(","))
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    cluster = None
    if args.store == "postgres":
        from bench.postgres_cluster import PostgresCluster

        cluster = PostgresCluster().init().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for indexed in (False, True) if r % 2 else (True, False):
                    if cluster is None:
                        url, clock = (
                            f"sqlite:///{Path(tmp) / f'{r}-{indexed}.db'}",
                            time.process_time,
                        )
                    else:
                        url, clock = f"{cluster.url}?schema=s{r}{int(indexed)}", time.perf_counter
                    runs[indexed].append(one_round(url, args.n, indexed, clock, keep))
    finally:
        if cluster is not None:
            cluster.stop("immediate")
            cluster.remove()
    kind = "CPU" if cluster is None else "wall"
    print(f"{args.store}: load average {os.getloadavg()[0]:.2f} (2 cores); n = {args.n:,}, "
          f"{args.rounds} rounds, medians of {kind} time; with: {', '.join(keep)}")  # fmt: skip
    for key in ("E1", "E2", "W1"):
        jobs = args.n * (1 if key == "E1" else 10 if key == "E2" else 11)
        without = statistics.median(r[key] for r in runs[False])
        with_ = statistics.median(r[key] for r in runs[True])
        print(
            f"{key}: without {jobs / without:9,.0f} jobs/{kind}-s  with {jobs / with_:9,.0f}"
            f" jobs/{kind}-s  cost {(with_ / without - 1) * 100:+5.1f}%"
        )


if __name__ == "__main__":
    main()
