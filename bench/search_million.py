"""Search at scale on SQLite (or PostgreSQL with ``--store postgres``, on a throwaway
cluster; MariaDB with ``--store mariadb``, on the test suite's throwaway server): makes a store of ``--jobs`` jobs (default 1,000,000: a mix
of tasks, queues, states, errors and headers, written with ``enqueue_many`` and finished
in batches), then measures search pages with the index off (the bounded scan), the time
``conveyor search-index on`` takes to index them all, and search pages with it: p50 and
p95 of ``--repeat`` runs of each query. Not part of ``make test``.

``python -m bench.search_million [--jobs 1000000] [--repeat 20] [--keep PATH]
[--store sqlite|postgres|mariadb] [--index-only]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams
from conveyor.backends.mariadb.search import MariaDBSearch
from conveyor.backends.postgres.search import PostgresSearch
from conveyor.backends.sqlite.search import SQLiteSearch
from conveyor.states import FinishKind

#: (label, query): selective ones first, then a broad word and a filter-only query.
QUERIES = (
    ("selective word", "customer_4242"),
    ("field + state", "error:timeouterror state:dead customer_81"),
    ("argument by name", "args.user_id:123457"),
    ("header", "header.tenant:acme_17 order"),
    ("broad word", "order"),
)


def make_store(url: str, jobs: int) -> conveyor.App:
    app = conveyor.App(url)

    @app.task(name="shop.charge")
    def charge(user_id: int, note: str) -> None: ...

    @app.task(name="mail.send_welcome", queue="mail")
    def send_welcome(user_id: int, note: str) -> None: ...

    start = time.perf_counter()
    for base in range(0, jobs, 5000):
        for task in (charge, send_welcome):
            tenant = f"acme_{base // 5000 % 50}"
            task.with_options(headers={"tenant": tenant}).enqueue_many(
                {"user_id": i, "note": f"order {i} for customer_{i % 10_000}"}
                for i in range(base + (task is charge), base + 5000, 2)
            )
    backend = app.backend
    error = '{"type":"TimeoutError","message":"bank gave up","traceback":""}'
    while True:  # finish the default queue's jobs: every 4th dead with an error
        claimed = backend.job_claim(JobClaimParams("bench", [("default", 1000)], 1000))
        if not claimed:
            break
        backend.job_finish_many(
            [
                JobFinishParams(c.id, c.token, FinishKind.DEAD, error=error, started_at=0.0)
                if n % 4 == 0
                else JobFinishParams(
                    c.id, c.token, FinishKind.SUCCEEDED, result="null", started_at=0.0
                )
                for n, c in enumerate(claimed)
            ]
        )
    print(f"store of {jobs:,} jobs made in {time.perf_counter() - start:.0f} s")
    return app


def measure(app: conveyor.App, repeat: int, label: str) -> None:
    for name, query in QUERIES:
        times, page = [], None
        for _ in range(repeat):
            start = time.perf_counter()
            page = app.search(query, limit=20)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        assert page is not None
        how = "index" if page.scanned is None else f"scan {page.scanned:,} rows"
        more = "" if page.complete else ", stopped at the bound"
        print(
            f"{label:9} {name:17} p50 {statistics.median(times):8.1f} ms  p95 {p95:8.1f} ms"
            f"  {len(page.jobs)} hits ({how}{more})"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--index-only", action="store_true", help="skip the scans (minutes)")
    ap.add_argument("--store", choices=("sqlite", "postgres", "mariadb"), default="sqlite")
    args = ap.parse_args()
    if args.store == "postgres":
        from bench.postgres_cluster import PostgresCluster

        cluster = PostgresCluster().init().start()
        try:
            _run(f"{cluster.url}?schema=million", args)
        finally:
            cluster.stop("immediate")
            cluster.remove()
        return
    if args.store == "mariadb":
        from tests.support.mariadb_server import run_database

        _run(run_database("million"), args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        _run(f"sqlite:///{args.keep or Path(tmp) / 'jobs.db'}", args)


def _run(url: str, args: argparse.Namespace) -> None:
    app = make_store(url, args.jobs)
    backend = app.backend
    assert isinstance(backend, SQLiteSearch | PostgresSearch | MariaDBSearch)
    backend.search_index_set(False)  # SQLite's is on by default: first, the scans
    if not args.index_only:
        measure(app, max(3, args.repeat // 4), "no index")
    start = time.perf_counter()
    backend.search_index_set(True)  # every job pending, for the indexer
    print(f"search-index on: {time.perf_counter() - start:.1f} s for {args.jobs:,} jobs")
    start = time.perf_counter()
    while backend.search_index_catch_up():  # what the workers' indexer does
        pass
    print(f"indexer: {args.jobs:,} jobs indexed in {time.perf_counter() - start:.1f} s")
    measure(app, args.repeat, "index")
    app.close()


if __name__ == "__main__":
    main()
