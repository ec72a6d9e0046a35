"""What a store's search index (SQLite's FTS5, ``search_index.sql``; with ``--store
postgres``, PostgreSQL's pg_trgm index on a throwaway cluster; with ``--store mariadb``,
MariaDB's FULLTEXT table on the test suite's throwaway server) costs the writes it follows:
E1 (single enqueues), E2 (``enqueue_many`` in batches of 1,000) and W1 (noop jobs
drained by a worker), each on a fresh file with the index turned on, and off,
interleaved, median of ``--repeat`` runs. The indexes are filled after the fact, so
the writes only note what they wrote: E2 also times the indexer catching up after it
(jobs/s), and W1 lets the indexer catch up on its inserts before the drain is timed
(their indexing is E2's). Also the search itself: a selective query's latency over the
W1 store, with the index (and without: a scan).

``python -m bench.search_index [--e1 5000] [--e2 50000] [--w1 10000] [--repeat 3]
[--store sqlite|postgres|mariadb] [--only E1 --only W1 ...]``

In-process (the worker is ``conveyor.Worker``, thread pool, burst): it compares the two
arms under the same conditions; the suite's W1 (``python -m bench run``) measures a
``conveyor worker`` process and its completion marker, so its absolute jobs/s differ.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import conveyor
from conveyor.backends.mariadb.search import MariaDBSearch
from conveyor.backends.postgres.search import PostgresSearch
from conveyor.backends.sqlite.search import SQLiteSearch

Arm = Callable[[conveyor.App, int], float]
#: The PostgreSQL server's URL (``--store postgres``); None: SQLite files.
_PG_URL: list[str] = []
#: Set by ``--store mariadb``: a fresh database per run on one throwaway server.
_MARIADB: list[bool] = []
Indexed = SQLiteSearch | PostgresSearch | MariaDBSearch


def _app(path: Path, indexed: bool) -> tuple[conveyor.App, conveyor.Task]:  # type: ignore[type-arg]
    if _PG_URL:  # a fresh schema per run, as SQLite's fresh file
        app = conveyor.App(f"{_PG_URL[0]}?schema=bench_{uuid.uuid4().hex[:12]}")
    elif _MARIADB:  # a fresh database per run
        from tests.support.mariadb_server import run_database

        app = conveyor.App(run_database(f"bench_{uuid.uuid4().hex[:12]}"))
    else:
        app = conveyor.App(f"sqlite:///{path}")

    @app.task(name="bench.noop")
    def noop(user_id: int, note: str) -> None: ...

    backend = app.backend
    assert isinstance(backend, Indexed)
    backend.search_index_set(indexed)  # off is the default: on builds it (empty)
    return app, noop


def e1(task: conveyor.Task, n: int) -> float:  # type: ignore[type-arg]
    start = time.perf_counter()
    for i in range(n):
        task.enqueue(i, note=f"order {i} for customer_{i % 97}")
    return n / (time.perf_counter() - start)


def e2(task: conveyor.Task, n: int) -> float:  # type: ignore[type-arg]
    start = time.perf_counter()
    for base in range(0, n, 1000):
        task.enqueue_many(
            [
                {"user_id": i, "note": f"order {i} for customer_{i % 97}"}
                for i in range(base, base + 1000)
            ]
        )
    return n / (time.perf_counter() - start)


def w1(app: conveyor.App, task: conveyor.Task, n: int) -> float:  # type: ignore[type-arg]
    e2(task, n)
    backend = app.backend
    assert isinstance(backend, Indexed)
    while backend.search_index_catch_up():  # the inserts' indexing is E2's, not W1's
        pass
    start = time.perf_counter()
    conveyor.Worker(app, burst=True).run(install_signals=False)
    return n / (time.perf_counter() - start)


def _run(kind: str, n: int, indexed: bool) -> tuple[float, float | None]:
    with tempfile.TemporaryDirectory() as tmp:
        app, task = _app(Path(tmp) / "jobs.db", indexed)
        try:
            if kind == "E1":
                return e1(task, n), None
            if kind == "E2":
                rate = e2(task, n)
                if not indexed:
                    return rate, None
                # what the writes no longer pay: the indexer's catching up, after them
                start = time.perf_counter()
                backend = app.backend
                assert isinstance(backend, Indexed)
                while backend.search_index_catch_up():
                    pass
                return rate, n / (time.perf_counter() - start)
            rate = w1(app, task, n)
            backend = app.backend
            assert isinstance(backend, Indexed)
            while backend.search_index_catch_up():  # as the workers' indexer would have
                pass
            start = time.perf_counter()
            for _ in range(20):
                app.search(f"customer_{n % 97} order", limit=20)
            return rate, (time.perf_counter() - start) / 20 * 1000
        finally:
            app.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--e1", type=int, default=5000)
    ap.add_argument("--e2", type=int, default=50_000)
    ap.add_argument("--w1", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--store", choices=("sqlite", "postgres", "mariadb"), default="sqlite")
    ap.add_argument("--only", choices=("E1", "E2", "W1"), action="append")
    args = ap.parse_args()
    if args.store == "postgres":
        from bench.postgres_cluster import PostgresCluster

        cluster = PostgresCluster().init().start()
        _PG_URL.append(cluster.url)
        try:
            _compare(args)
        finally:
            cluster.stop("immediate")
            cluster.remove()
        return
    _MARIADB.extend([True] if args.store == "mariadb" else [])
    _compare(args)


def _compare(args: argparse.Namespace) -> None:
    for kind, n in (("E1", args.e1), ("E2", args.e2), ("W1", args.w1)):
        if args.only and kind not in args.only:
            continue
        rates: dict[bool, list[float]] = {True: [], False: []}
        search_ms: list[float] = []
        scan_ms: list[float] = []
        catch_up: list[float] = []
        for _ in range(args.repeat):
            for indexed in (True, False):
                rate, ms = _run(kind, n, indexed)
                rates[indexed].append(rate)
                if ms is not None and kind == "E2":
                    catch_up.append(ms)
                elif ms is not None:
                    search_ms.append(ms) if indexed else scan_ms.append(ms)
        on, off = statistics.median(rates[True]), statistics.median(rates[False])
        extra = (
            f"  search page {statistics.median(search_ms):.2f} ms indexed, "
            f"{statistics.median(scan_ms):.1f} ms scanning"
            if search_ms
            else f"  indexer catching up {statistics.median(catch_up):,.0f} jobs/s"
            if catch_up
            else ""
        )
        print(
            f"{kind} n={n:>6}: index on {on:>9,.0f} jobs/s, off {off:>9,.0f} jobs/s, "
            f"overhead {(off / on - 1) * 100:+.1f}% time per job{extra}"
        )


if __name__ == "__main__":
    main()
