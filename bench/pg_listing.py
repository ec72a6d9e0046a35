"""Listing jobs on PostgreSQL with and without byte-order ids: plans, then timings.

``python -m bench.pg_listing [--jobs 100000] [--rounds 0]`` starts its own cluster
(bench/postgres_cluster.py), makes two schemas holding the same ``--jobs`` jobs:
``before``, the schema with every ``COLLATE "C"`` taken out (how it was until issue 14:
ids in the database's default collation) and ``after``, the schema as shipped. For each
it prints ``EXPLAIN (ANALYZE, BUFFERS)`` of the pages ``conveyor jobs`` reads (the first
page, a page ``--after`` an id in the middle, newest first, one state): the plan's shape
and its buffer counts do not depend on the load of the machine, its times do. With
``--rounds N`` it then times ``backend.job_list`` N times per query, the two schemas
alternated call by call (A B A B ...), and prints the medians: only meaningful on a
quiet machine.

Example::

    .venv-bench/bin/python -m bench.pg_listing --jobs 100000 --rounds 200
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.postgres_cluster import PostgresCluster
from conveyor.backends.base import JobFilter, JobInsertParams, JobListParams
from conveyor.backends.postgres.backend import PostgresBackend
from conveyor.backends.postgres.connection import schema_sql
from conveyor.backends.postgres.dialect import POSTGRES
from conveyor.backends.postgres.sql import JOB_COLUMNS
from conveyor.backends.sql.filters import job_list_sql
from conveyor.ids import new_ids
from conveyor.states import JobState

SCHEMAS = ("before", "after")
BATCH = 10_000


def create(url: str, schema: str) -> PostgresBackend:
    """The backend on ``schema``; ``before`` is created first from the DDL without
    ``COLLATE "C"`` (the backend then finds it current and applies nothing)."""
    import psycopg

    if schema == "before":
        ddl = schema_sql(schema).replace(' COLLATE "C"', "")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(ddl.encode())
    return PostgresBackend(f"{url}?schema={schema}")


def fill(backend: PostgresBackend, ids: list[str]) -> None:
    for start in range(0, len(ids), BATCH):
        backend.job_insert_many(
            [
                JobInsertParams(id=i, task="t", queue=f"q{n % 4}", payload="{}")
                for n, i in enumerate(ids[start : start + BATCH], start)
            ]
        )
    with backend._tx() as cur:
        # A tenth dead, so a state filter has something to find; then fresh statistics.
        cur.execute("UPDATE jobs SET state = 'dead', finished_at = created_at WHERE id = ANY(%s)",
                    (ids[::10],))  # fmt: skip
    with backend._pool.connection() as conn:
        conn.autocommit = True
        conn.execute("ANALYZE jobs")


def queries(ids: list[str]) -> dict[str, JobListParams]:
    return {
        "first page": JobListParams(limit=50),
        "--after middle": JobListParams(after_id=ids[len(ids) // 2], limit=50),
        "newest first": JobListParams(descending=True, limit=50),
        "--state dead": JobListParams(limit=50, filter=JobFilter(states=(JobState.DEAD,))),
    }


def explain(backend: PostgresBackend, params: JobListParams) -> str:
    sql, args = job_list_sql(POSTGRES, params, JOB_COLUMNS)
    with backend._tx() as cur:
        rows = cur.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", args).fetchall()
    return "\n".join(f"    {r[0]}" for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=0)
    args = parser.parse_args()
    cluster = PostgresCluster().init().start()
    try:
        ids = new_ids(args.jobs)
        backends = {s: create(cluster.url, s) for s in SCHEMAS}
        for backend in backends.values():
            fill(backend, ids)
        print(f"{args.jobs:,} jobs per schema; server {cluster.settings()['server_version']}")
        for name, params in queries(ids).items():
            for schema, backend in backends.items():
                print(f"-- {name} [{schema}]\n{explain(backend, params)}")
        if args.rounds:
            for name, params in queries(ids).items():
                took: dict[str, list[float]] = {s: [] for s in SCHEMAS}
                for _ in range(args.rounds):
                    for schema, backend in backends.items():  # alternated, call by call
                        t0 = time.perf_counter()
                        backend.job_list(params)
                        took[schema].append(time.perf_counter() - t0)
                medians = ", ".join(
                    f"{s} {statistics.median(t) * 1000:.2f} ms" for s, t in took.items()
                )
                print(f"{name}: median of {args.rounds} alternated calls: {medians}")
        for backend in backends.values():
            backend.close()
    finally:
        cluster.stop("immediate")
        cluster.remove()


if __name__ == "__main__":
    main()
