"""DBOS Transact's arm of the durable-steps benchmark (issue 23): ``--jobs`` workflows of
``--steps`` no-op ``@DBOS.step()`` steps enqueued on a DBOS queue, drained by this
process (DBOS launched here, ``worker_concurrency`` 4: the same four slots as
conveyor's worker), timed from the first enqueue's return to the last result; store
statements and commits per step counted as for conveyor (:mod:`bench.sql_counter`).

It runs in DBOS's own venv (``make bench-venv-dbos``: DBOS pins SQLAlchemy and psycopg
versions of its own) and prints one JSON line; :mod:`bench.durable_peer` starts it and
alternates it with conveyor's arm. DBOS's settings are DBOS's defaults but the queue's
polling interval (``--poll``, default 0.05 s instead of DBOS's 1 s: a drain of a few
seconds would otherwise mostly wait for polls); they are printed with its figures.

Example (from the repo root)::

    .venv-bench-dbos/bin/python -m bench.durable_dbos --url sqlite:////tmp/d.sqlite --jobs 50
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sqlite3
import time
from typing import Any

from bench.sql_counter import count_sqlite, pg_delta, pg_snapshot


def run(url: str, jobs: int, steps: int, poll: float) -> dict[str, Any]:
    counter = count_sqlite() if url.startswith("sqlite") else None
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
        queue = DBOS.register_queue("bench", worker_concurrency=4, polling_interval_sec=poll)
        settings = _settings(url)
        if counter is not None:
            counter.reset()
        before = None if counter is not None else pg_snapshot(url)
        started = time.perf_counter()
        handles = [queue.enqueue(flow, steps) for _ in range(jobs)]
        for handle in handles:
            assert handle.get_result() == sum(range(steps))
        seconds = time.perf_counter() - started
        total = jobs * steps
        figures: dict[str, Any] = {
            "arm": "dbos", "seconds": seconds, "jobs_per_s": jobs / seconds,
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
        # journal mode and synchronous are SQLite's defaults, read here from a connection
        # of the same library.
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
    args = p.parse_args()
    print(json.dumps(run(args.url, args.jobs, args.steps, args.poll)))


if __name__ == "__main__":
    main()
