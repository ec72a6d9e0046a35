"""Enqueue against a minimal hand-written job table, in one process (issue 26): conveyor's
``enqueue`` / ``enqueue_many`` on SQLite beside what a developer would write by hand
for the same jobs, alternated round by round, with the ratio (the issue asks single
>= 0.7x and batch >= 0.6x of the hand-written table).

The hand-written queue: one table with an integer primary key and ONE index (the
claim's ``(queue, state, run_at)``), the same PRAGMAs as conveyor's connection (WAL,
``synchronous=NORMAL``, ``temp_store=MEMORY``, a busy timeout); a job is its queue,
its JSON-encoded arguments and a time. Single: one autocommit ``INSERT`` per job (a
statement is its own transaction: the cheapest durable way, no ``BEGIN``/``COMMIT``
round). Batch: one transaction with one ``executemany``. Both arms encode their
arguments and read the clock inside the timed window; the argument lists are built
before it. Each round uses fresh files for both arms (created untimed), gc off in the
timed window for both, arm order alternated every round.

``--indexes`` also counts what each of conveyor's indexes on ``jobs`` costs an insert:
a scratch copy of a fresh conveyor store with that one index dropped, raw ``sqlite3``
inserting conveyor's own rows (its ``job_insert_batch`` statement), counted with
callgrind (``(I(2N) - I(N)) / N``, deterministic) against the copy that keeps every
index. It reports; the schema is not changed.

Example::

    python -m bench.enqueue_table --rounds 7 --n 2000 --batch 20000
    python -m bench.enqueue_table --indexes
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

MINIMAL_SCHEMA = (
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, queue TEXT NOT NULL, "
    "state TEXT NOT NULL DEFAULT 'queued', payload TEXT NOT NULL, run_at REAL NOT NULL, "
    "attempts INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX jobs_claim ON jobs (queue, state, run_at)",
)
MINIMAL_INSERT = "INSERT INTO jobs (queue, payload, run_at) VALUES (?, ?, ?)"


def minimal_open(path: str) -> sqlite3.Connection:
    """The hand-written queue's connection and table (conveyor's PRAGMAs).

    >>> import tempfile, os
    >>> conn = minimal_open(os.path.join(tempfile.mkdtemp(), "q.db"))
    >>> conn.execute(MINIMAL_INSERT, ("default", "[1]", 0.0)).rowcount
    1
    """
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA temp_store = MEMORY")
    for statement in MINIMAL_SCHEMA:
        conn.execute(statement)
    return conn


def _timed(fn: Callable[[], object]) -> float:
    gc.collect()
    gc.disable()
    try:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    finally:
        gc.enable()


def conveyor_rate(path: str, n: int, batch: bool) -> float:
    """Jobs/s of conveyor's ``enqueue`` (or one ``enqueue_many``) on a fresh store."""
    import conveyor

    app = conveyor.App(f"sqlite:///{path}")

    @app.task(name="bench.noop")
    def noop(i: int) -> None:
        return None

    noop.enqueue(-1)  # the store opened, statements prepared: as the other arm's schema
    items = [(i,) for i in range(n)]
    if batch:
        elapsed = _timed(lambda: noop.enqueue_many(items))
    else:

        def loop() -> None:
            for (i,) in items:
                noop.enqueue(i)

        elapsed = _timed(loop)
    app.close()
    return n / elapsed


def minimal_rate(path: str, n: int, batch: bool) -> float:
    """Jobs/s of the hand-written table: the same jobs, encoded and timed alike."""
    conn = minimal_open(path)
    dumps, now = json.dumps, time.time
    conn.execute(MINIMAL_INSERT, ("default", dumps([-1]), now()))
    items = list(range(n))
    if batch:

        def many() -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(MINIMAL_INSERT, [("default", dumps([i]), now()) for i in items])
            conn.execute("COMMIT")

        elapsed = _timed(many)
    else:

        def loop() -> None:
            for i in items:
                conn.execute(MINIMAL_INSERT, ("default", dumps([i]), now()))

        elapsed = _timed(loop)
    conn.close()
    return n / elapsed


def compare(rounds: int, n: int, batch_n: int) -> dict[str, dict[str, list[float]]]:
    """Per figure (single, batch) and arm: the jobs/s of every round."""
    out: dict[str, dict[str, list[float]]] = {
        "single": {"conveyor": [], "minimal": []},
        "batch": {"conveyor": [], "minimal": []},
    }
    arms = {"conveyor": conveyor_rate, "minimal": minimal_rate}
    workdir = tempfile.mkdtemp(prefix="bench-enqtable-")
    try:
        for r in range(rounds + 1):  # round 0 warms imports and the page cache
            order = ["conveyor", "minimal"] if r % 2 == 0 else ["minimal", "conveyor"]
            for figure, size, batch in (("single", n, False), ("batch", batch_n, True)):
                for arm in order:
                    path = os.path.join(workdir, f"{arm}-{figure}-{r}.db")
                    rate = arms[arm](path, size, batch)
                    for suffix in ("", "-wal", "-shm"):
                        if os.path.exists(path + suffix):
                            os.remove(path + suffix)
                    if r:
                        out[figure][arm].append(rate)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return out


# --- what each index costs an insert (callgrind) -----------------------------------

#: conveyor's secondary indexes on ``jobs`` (the primary key is the table itself).
JOB_INDEXES = (
    "jobs_ready",
    "jobs_scheduled",
    "jobs_running",
    "jobs_finished",
    "jobs_unique",
    "jobs_limit_running",
    "jobs_expiring",
)

INDEX_PROBE = r"""
import json, sqlite3, sys, os
path, sql, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
conn = sqlite3.connect(path, isolation_level=None)
for p in ("busy_timeout = 5000", "synchronous = NORMAL", "journal_mode = WAL", "temp_store = MEMORY"):
    conn.execute("PRAGMA " + p)
prefix = "0123abcd"
def row(i):
    payload = json.dumps({"args": [i], "kwargs": {}}, separators=(",", ":"))
    if sql.startswith("minimal:"):  # the hand-written table's row: queue, payload, time
        return ("default", payload, 1.7e9 + i)
    return (f"{prefix}{i:012d}", payload, None, "bench.noop", "default", "queued", 0, 3,
            1.7e9 + i, 1.7e9 + i, None, 300.0, None)
rows = [row(i) for i in range(n)]
sql = sql.removeprefix("minimal:")
if mode == "batch":
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(sql, rows)
    conn.execute("COMMIT")
else:
    for r in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(sql, r)
        conn.execute("COMMIT")
os._exit(0)
"""


def _count(cmd: list[str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONHASHSEED": "0"},
        timeout=600,
    )
    return int(done.stderr.rsplit("Collected : ", 1)[1].split()[0])


#: The hand-written table's variant in :func:`index_costs` (absolute, for comparison).
MINIMAL = "minimal one-index table"


def index_costs(n_single: int = 300, n_batch: int = 3000) -> dict[str, dict[str, float]]:
    """Instructions an insert saves with each index dropped (and with all of them):
    variant -> {"single": ..., "batch": ...}; ``all indexes`` and the minimal table's
    variant hold absolute counts."""
    import conveyor
    from conveyor.backends.sqlite.connection import load_query

    sql = load_query("job_insert_batch")
    workdir = tempfile.mkdtemp(prefix="bench-indexes-")
    try:
        fresh = os.path.join(workdir, "fresh.db")
        conveyor.App(f"sqlite:///{fresh}").backend.close()
        probe = os.path.join(workdir, "probe.py")
        with open(probe, "w") as f:
            f.write(INDEX_PROBE)
        variants: dict[str, tuple[str, ...]] = {
            "all indexes": (),
            **{f"-{i}": (i,) for i in JOB_INDEXES},
        }
        variants["primary key only"] = JOB_INDEXES
        variants[MINIMAL] = ()
        minimal = os.path.join(workdir, "minimal.db")
        minimal_open(minimal).close()
        jobs: dict[tuple[str, str, int], Callable[[], int]] = {}
        for name, drop in variants.items():
            for mode, n in (("single", n_single), ("batch", n_batch)):
                for k in (1, 2):
                    copy = os.path.join(workdir, f"{len(jobs)}.db")
                    shutil.copy(minimal if name == MINIMAL else fresh, copy)
                    conn = sqlite3.connect(copy)
                    for index in drop:
                        conn.execute(f"DROP INDEX {index}")
                    conn.close()
                    statement = f"minimal:{MINIMAL_INSERT}" if name == MINIMAL else sql
                    cmd = [sys.executable, probe, copy, statement, mode, str(n * k)]
                    jobs[(name, mode, k)] = lambda cmd=cmd: _count(cmd)
        with ThreadPoolExecutor(min(4, os.cpu_count() or 1)) as pool:
            futures = {key: pool.submit(fn) for key, fn in jobs.items()}
            counts = {key: fut.result() for key, fut in futures.items()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    sizes = {"single": n_single, "batch": n_batch}
    per = {
        name: {
            mode: (counts[(name, mode, 2)] - counts[(name, mode, 1)]) / sizes[mode]
            for mode in sizes
        }
        for name in variants
    }
    base = per["all indexes"]
    return {
        name: (v if name in ("all indexes", MINIMAL) else {m: base[m] - v[m] for m in sizes})
        for name, v in per.items()
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.enqueue_table")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=2000, help="single enqueues a round")
    p.add_argument("--batch", type=int, default=20000, help="jobs in the one batch")
    p.add_argument("--indexes", action="store_true", help="count each index's insert cost")
    args = p.parse_args(argv)
    if args.indexes:
        costs = index_costs()
        print("instructions an insert of a queued job saves without each index (callgrind):")
        for name, v in costs.items():
            label = "absolute" if name in ("all indexes", MINIMAL) else "saved"
            print(
                f"  {name:<22} {label:<8} single {v['single']:>9,.0f}   batch {v['batch']:>9,.0f}"
            )
        return 0
    res = compare(args.rounds, args.n, args.batch)
    print(f"enqueue vs a minimal one-index table, SQLite, {args.rounds} alternated rounds")
    for figure, target in (("single", 0.7), ("batch", 0.6)):
        conv, mini = res[figure]["conveyor"], res[figure]["minimal"]
        ratios = [c / m for c, m in zip(conv, mini, strict=True)]
        ratio = statistics.median(conv) / statistics.median(mini)
        print(
            f"  {figure:<6} conveyor {statistics.median(conv):>9,.0f}/s "
            f"[{min(conv):,.0f}, {max(conv):,.0f}]  minimal {statistics.median(mini):>9,.0f}/s "
            f"[{min(mini):,.0f}, {max(mini):,.0f}]  ratio {ratio:.2f}x (target >= {target}x; "
            f"per round {', '.join(f'{x:.2f}' for x in ratios)})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
