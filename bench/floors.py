"""Enqueue floors: what the raw client does for the same rows, measured beside E1/E2 in
the same sitting, so an enqueue figure is read as a ratio to its floor (this box's speed
moves from day to day; the ratio much less).

* SQLite single: ``BEGIN IMMEDIATE`` + one ``INSERT`` of a job row + ``COMMIT``, raw
  :mod:`sqlite3`, per job (E1's floor);
* SQLite many: one transaction, one ``executemany`` of every row (E2's floor);
* Redis single: one bare redis-py round trip (``PING``) per job (E1's floor);
* Redis many: one pipeline of ``HSET`` (the job's fields) + ``ZADD`` (its queue) per job,
  sent at once (E2's floor).

Rows are conveyor's own: the jobs table of a store conveyor created (same schema,
indexes and PRAGMAs: WAL, ``synchronous=NORMAL``), the same ``INSERT`` statement as
``enqueue_many``, a payload of the same size as the suite's ``(i, t0, kind)`` arguments.

Example::

    rate = sqlite_single(path, 2_000)   # jobs/s
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from typing import Any

#: The column values of a plain job, after (id, payload, headers): as ``_insert_batch``
#: writes them.
_SHARED = ("bench.job", "default", "queued", 0, 3)


def row(job_id: str, payload: str, now: float) -> tuple[Any, ...]:
    """One plain job's values for ``job_insert_batch``, in its column order: id, payload,
    headers, the shared fields, run_at, created_at, timeout, lease, expires_at.

    >>> len(row("j1", "{}", 0.0))
    13
    """
    return (job_id, payload, None, *_SHARED, now, now, None, 300.0, None)


def _payload(i: int) -> str:
    return json.dumps({"args": [i, time.time(), "noop"], "kwargs": {}}, separators=(",", ":"))


def _rows(n: int) -> list[tuple[Any, ...]]:
    now = time.time()
    prefix = os.urandom(4).hex()
    return [row(f"{prefix}{i:012d}", _payload(i), now) for i in range(n)]


def _insert_sql() -> str:
    from conveyor.backends.sqlite.connection import load_query

    return load_query("job_insert_batch")


def _open(path: str) -> sqlite3.Connection:
    import conveyor

    conveyor.App(f"sqlite:///{path}?synchronous=NORMAL").backend.close()  # the schema
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA temp_store = MEMORY")  # as conveyor's own connection
    return conn


def sqlite_single(path: str, n: int) -> float:
    """Jobs/s: one raw transaction per row."""
    conn, sql, rows = _open(path), _insert_sql(), _rows(n)
    t = time.perf_counter()
    for row in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(sql, row)
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - t
    conn.close()
    return n / elapsed


def sqlite_many(path: str, n: int) -> float:
    """Jobs/s: every row in one raw transaction, one ``executemany``."""
    conn, sql, rows = _open(path), _insert_sql(), _rows(n)
    t = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(sql, rows)
    conn.execute("COMMIT")
    elapsed = time.perf_counter() - t
    conn.close()
    return n / elapsed


def _redis(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, decode_responses=True)


def redis_single(url: str, n: int) -> float:
    """Round trips/s: a bare redis-py ``PING``, one after the other."""
    client = _redis(url)
    client.ping()  # connected before the clock starts
    t = time.perf_counter()
    for _ in range(n):
        client.ping()
    elapsed = time.perf_counter() - t
    client.close()
    return n / elapsed


def queue_job(pipe: Any, prefix: str, values: tuple[Any, ...]) -> None:
    """Add one job's ``HSET`` (its fields) + ``ZADD`` (its queue) to a pipeline: the Redis
    E2 floor's work per job, for :func:`redis_many` and the ``floor-redis`` arm alike."""
    job_id, payload, _headers, task, queue, state, priority, attempts, run_at, *_ = values
    pipe.hset(
        f"{prefix}:job:{job_id}",
        mapping={
            "task": task,
            "queue": queue,
            "state": state,
            "priority": priority,
            "payload": payload,
            "max_attempts": attempts,
            "run_at": run_at,
        },
    )
    pipe.zadd(f"{prefix}:ready:{queue}", {job_id: run_at})


def redis_many(url: str, n: int, prefix: str = "floor") -> float:
    """Jobs/s: one pipeline of ``HSET`` + ``ZADD`` per job, executed at once."""
    client = _redis(url)
    client.ping()
    rows = _rows(n)
    t = time.perf_counter()
    pipe = client.pipeline(transaction=False)
    for row_ in rows:
        queue_job(pipe, prefix, row_)
    pipe.execute()
    elapsed = time.perf_counter() - t
    client.close()
    return n / elapsed
