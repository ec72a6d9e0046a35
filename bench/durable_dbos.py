"""DBOS Transact's arm of the durable-steps benchmark (issue 23): ``--jobs`` workflows of
``--steps`` no-op ``@DBOS.step()`` steps run by this process (DBOS launched here), timed
from the first start to the last result; store statements and commits per step counted
as for conveyor (:mod:`bench.sql_counter`). Two paths: ``--direct``, 4 threads call the
workflow (DBOS's fastest path; the same 4 slots as conveyor's worker; ``--concurrency``
for another number, both arms alike), or through a DBOS queue (``worker_concurrency`` 4, polled every ``--poll`` s: 0.05 instead of DBOS's 1 s
default, which would mostly wait on a drain of seconds), a job queue's path.

It runs in DBOS's own venv (``make bench-venv-dbos``: DBOS pins its own SQLAlchemy and
psycopg) and prints one JSON line; :mod:`bench.durable_peer` starts it and alternates
it with conveyor's arm. ``--wal`` runs DBOS on SQLite with conveyor's PRAGMAs (WAL,
synchronous=NORMAL) instead of SQLite's defaults; every other setting is DBOS's default.
The PRAGMAs read back are printed with its figures.

Example (from the repo root)::

    .venv-bench-dbos/bin/python -m bench.durable_dbos --url sqlite:////tmp/d.sqlite --direct
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.sql_counter import count_sqlite, pg_delta, pg_snapshot

#: ``--wal``: conveyor's SQLite PRAGMAs on every DBOS connection (arm ``dbos-wal``).
CONVEYOR_PRAGMAS = ("journal_mode = WAL", "synchronous = NORMAL")


def run(
    url: str,
    jobs: int,
    steps: int,
    poll: float,
    wal: bool = False,
    direct: bool = False,
    slots: int = 4,
) -> dict[str, Any]:
    sqlite = url.startswith("sqlite")
    counter = count_sqlite(CONVEYOR_PRAGMAS if wal else ()) if sqlite else None
    from dbos import DBOS, DBOSConfig

    config: DBOSConfig = {"name": "durbench", "system_database_url": url, "log_level": "WARNING"}
    DBOS(config=config)

    @DBOS.step()
    def noop(i: int) -> int:
        return i

    @DBOS.workflow()
    def flow(n: int) -> int:
        return sum(noop(i) for i in range(n))

    DBOS.launch()
    try:
        queue = DBOS.register_queue("bench", worker_concurrency=slots,
                                     polling_interval_sec=poll)  # fmt: skip
        settings = _settings(url)
        settings["concurrency"] = (
            f"{slots} threads" if direct else f"queue worker_concurrency {slots}"
        )
        if counter is not None:
            counter.reset()
        before = None if counter is not None else pg_snapshot(url)
        started = time.perf_counter()
        if direct:  # DBOS's fastest path: workflows called, 4 at a time, no queue
            with ThreadPoolExecutor(slots) as pool:
                results = list(pool.map(flow, [steps] * jobs))
        else:
            handles = [queue.enqueue(flow, steps) for _ in range(jobs)]
            results = [handle.get_result() for handle in handles]
        assert results == [sum(range(steps))] * jobs
        seconds = time.perf_counter() - started
        total = jobs * steps
        figures: dict[str, Any] = {
            "arm": "dbos" + "-wal" * wal + "-queue" * (not direct), "seconds": seconds, "jobs_per_s": jobs / seconds,
            "steps_per_s": total / seconds, "settings": settings,
        }  # fmt: skip
        if counter is not None:
            figures["statements_per_step"] = counter.statements / total
            figures["commits_per_step"] = counter.commits / total
        else:
            assert before is not None
            figures["pg"] = pg_delta(before, pg_snapshot(url))
        return figures
    finally:
        DBOS.destroy()


def _settings(url: str) -> dict[str, Any]:
    """What durability DBOS runs with, read back from the store."""
    out: dict[str, Any] = {"dbos": importlib.metadata.version("dbos")}
    if url.startswith("sqlite"):
        # DBOS's own connection sets only busy_timeout and foreign_keys: the file's
        # journal mode and synchronous are SQLite's defaults (or, with --wal, conveyor's),
        # read here from a connection opened as DBOS's are.
        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        for name in ("journal_mode", "synchronous"):
            out[name] = conn.execute(f"PRAGMA {name}").fetchone()[0]
        conn.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.durable_dbos")
    p.add_argument("--url", required=True)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--poll", type=float, default=0.05, help="the queue's polling interval, s")
    p.add_argument("--wal", action="store_true", help="SQLite: conveyor's PRAGMAs (WAL, NORMAL)")
    p.add_argument("--direct", action="store_true", help="no queue: 4 threads call the workflow")
    p.add_argument("--concurrency", type=int, default=4, help="threads / worker_concurrency")
    args = p.parse_args()
    figures = run(args.url, args.jobs, args.steps, args.poll, args.wal, args.direct,
                  args.concurrency)  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
