"""Rows written straight into a store, around the API, as a migration or a shell would:
an unknown state, a BLOB payload, invalid UTF-8, JSON nested 100,000 deep, a 50 MB
payload. Every listing must render them and a worker must refuse them (``dead`` with the
reason) while it keeps serving good jobs.

Example::

    job_id = sqlite_row(url, payload=b"\\x00\\xff")      # a BLOB payload, queued
    job_id = redis_row(url, state="bogus")               # a hash with an unknown state
    job_id = postgres_row(url, state="bogus")            # typed columns: only what fits
    job_id = row(url, state="bogus")                     # on whichever store url names
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from typing import Any

#: The reproduced cases of issue 12 item 8, as column values.
DEEP = "[" * 100_000 + "]" * 100_000
LONE_SURROGATE_ERROR = '{"type": "ValueError", "message": "bad \\ud800 here", "traceback": ""}'
FIFTY_MB = '{"args": ["' + "x" * (50 * 1024 * 1024) + '"], "kwargs": {}}'

_serial = itertools.count()


def _defaults(job_id: str) -> dict[str, Any]:
    now = time.time()
    return {
        "id": job_id, "task": "odd.task", "queue": "default", "state": "queued",
        "priority": 0, "payload": '{"args": [], "kwargs": {}}', "attempt": 0,
        "max_attempts": 1, "rescues": 0, "token": 0, "run_at": now - 1, "created_at": now - 1,
        "timeout": None, "lease": 30.0, "worker_id": None, "lease_until": None,
        "cancel_requested": 0, "result": None, "error": None, "reason": None,
        "started_at": None, "finished_at": None,
    }  # fmt: skip


def new_id(prefix: str = "odd") -> str:
    """An id that sorts after every ULID the API makes (so listings show it last)."""
    return f"~{prefix}{next(_serial):06d}"


def sqlite_row(url: str, job_id: str | None = None, **columns: Any) -> str:
    """Insert one jobs row with raw SQL; ``columns`` override a queued, runnable-looking
    row. A ``str`` value starting ``sql:`` is an SQL expression (``sql:CAST(x'ff' AS
    TEXT)`` stores bytes that are not UTF-8 in a TEXT column)."""
    job_id = job_id or new_id()
    values = _defaults(job_id) | columns
    names = list(values)
    exprs = [v[4:] if isinstance(v, str) and v.startswith("sql:") else "?" for v in values.values()]
    params = [v for v in values.values() if not (isinstance(v, str) and v.startswith("sql:"))]
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        db.execute(f"INSERT INTO jobs ({', '.join(names)}) VALUES ({', '.join(exprs)})", params)
    db.close()
    return job_id


def redis_row(url: str, job_id: str | None = None, **fields: Any) -> str:
    """Write one job hash with a raw HSET (``bytes`` stored as they are, None = absent),
    listed in the jobs index, counted, and in its queue's ready set when ``queued``."""
    from conveyor.backends.redis.backend import RedisBackend

    job_id = job_id or new_id()
    values = {k: v for k, v in (_defaults(job_id) | fields).items() if v is not None}
    backend = RedisBackend(url)
    try:
        client, keys = backend.client, backend.keys
        client.hset(keys.job(job_id), mapping=values)
        client.zadd(keys.jobs, {job_id: 0})
        state, queue = values.get("state"), values.get("queue", "default")
        if isinstance(state, str) and isinstance(queue, str):
            client.hincrby(keys.counts, f"{state}:{queue}", 1)
        if state == "queued" and isinstance(queue, str):
            client.zadd(keys.ready(queue), {job_id: 0})
    finally:
        backend.close()
    return job_id


def postgres_row(url: str, job_id: str | None = None, **columns: Any) -> str:
    """Insert one jobs row with raw SQL on the URL's schema. PostgreSQL's typed columns
    refuse what does not fit them (text in an integer, bytes or NUL in text): that
    raises psycopg's error, and nothing is written."""
    import psycopg

    from conveyor.backends.postgres.url import parse_postgres_url

    target = parse_postgres_url(url)
    job_id = job_id or new_id()
    values = _defaults(job_id) | columns
    names = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    with psycopg.connect(target.conninfo, options=f"-c search_path={target.schema}") as db:
        db.execute(f"INSERT INTO jobs ({names}) VALUES ({marks})", list(values.values()))
    return job_id


def _mariadb_sql(url: str, statements: list[tuple[str, list[Any]]]) -> None:
    """Run ``statements`` in one transaction on the database of a conveyor MariaDB URL."""
    from conveyor.backends.mariadb.connection import Executor, connect
    from conveyor.backends.mariadb.url import parse_mariadb_url

    conn = connect(parse_mariadb_url(url))
    try:
        for sql, args in statements:
            Executor(conn).execute(sql, args)
        conn.commit()
    finally:
        conn.close()


def _mariadb_insert(table: str, values: dict[str, Any]) -> tuple[str, list[Any]]:
    marks = ", ".join(["%s"] * len(values))
    return f"INSERT INTO {table} ({', '.join(values)}) VALUES ({marks})", list(values.values())


def mariadb_row(url: str, job_id: str | None = None, **columns: Any) -> str:
    """Insert one jobs row with raw SQL. Typed columns in strict mode, as on PostgreSQL,
    refuse what does not fit them; DOUBLE holds no NaN nor infinity either."""
    job_id = job_id or new_id()
    _mariadb_sql(url, [_mariadb_insert("jobs", _defaults(job_id) | columns)])
    return job_id


#: URL schemes of the stores whose columns are typed (a row must fit its column types).
TYPED = ("postgres", "mariadb", "mysql")


def row(url: str, job_id: str | None = None, **columns: Any) -> str:
    """One raw jobs row on whichever store ``url`` names (see each writer for what its
    store holds)."""
    if url.startswith("sqlite"):
        return sqlite_row(url, job_id, **columns)
    if url.startswith("postgres"):
        return postgres_row(url, job_id, **columns)
    if url.startswith(("mariadb", "mysql")):
        return mariadb_row(url, job_id, **columns)
    return redis_row(url, job_id, **columns)


# -- worker rows and counters ------------------------------------------------------------


def _worker_defaults(worker_id: str) -> dict[str, Any]:
    now = time.time()
    return {
        "id": worker_id, "host": "odd-host", "pid": 999_999, "pid_started": None,
        "started_at": now, "heartbeat_at": now, "last_fetch_at": None, "queues": '["q"]',
        "concurrency": 1, "pool": "thread", "running": 0,
    }  # fmt: skip


def worker_row(url: str, worker_id: str, **fields: Any) -> None:
    """Write one worker row by hand on whichever store ``url`` names: a new row with
    ``fields`` over sane defaults, or, when ``worker_id`` is registered, ``fields``
    written over its row (``queues="not json"``, ``heartbeat_at="soon"``)."""
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            if db.execute("SELECT 1 FROM workers WHERE id = ?", (worker_id,)).fetchone():
                sets = ", ".join(f"{name} = ?" for name in fields)
                db.execute(f"UPDATE workers SET {sets} WHERE id = ?", [*fields.values(), worker_id])
            else:
                values = _worker_defaults(worker_id) | fields
                marks = ", ".join("?" * len(values))
                db.execute(f"INSERT INTO workers ({', '.join(values)}) VALUES ({marks})", list(values.values()))  # fmt: skip
        db.close()
    elif url.startswith("postgres"):
        _postgres_worker_row(url, worker_id, fields)
    elif url.startswith(("mariadb", "mysql")):
        sets = ", ".join(f"{name} = VALUES({name})" for name in fields)
        sql, args = _mariadb_insert("workers", _worker_defaults(worker_id) | fields)
        _mariadb_sql(url, [(f"{sql} ON DUPLICATE KEY UPDATE {sets}", args)])
    else:
        from conveyor.backends.redis.backend import RedisBackend

        backend = RedisBackend(url)
        try:
            client, keys = backend.client, backend.keys
            if not client.exists(keys.worker(worker_id)):
                fields = _worker_defaults(worker_id) | fields
                client.zadd(keys.workers, {worker_id: time.time()})
            client.hset(
                keys.worker(worker_id), mapping={k: v for k, v in fields.items() if v is not None}
            )
        finally:
            backend.close()


def _postgres_worker_row(url: str, worker_id: str, fields: dict[str, Any]) -> None:
    import psycopg

    from conveyor.backends.postgres.url import parse_postgres_url

    target = parse_postgres_url(url)
    with psycopg.connect(target.conninfo, options=f"-c search_path={target.schema}") as db:
        if db.execute("SELECT 1 FROM workers WHERE id = %s", (worker_id,)).fetchone():
            sets = ", ".join(f"{name} = %s" for name in fields)
            db.execute(f"UPDATE workers SET {sets} WHERE id = %s", [*fields.values(), worker_id])
        else:
            values = _worker_defaults(worker_id) | fields
            marks = ", ".join(["%s"] * len(values))
            db.execute(f"INSERT INTO workers ({', '.join(values)}) VALUES ({marks})", list(values.values()))  # fmt: skip


def redis_count(url: str, field: str, value: str) -> None:
    """Write one field of the Redis ``counts`` hash by hand (``"queued:default"``)."""
    from conveyor.backends.redis.backend import RedisBackend

    backend = RedisBackend(url)
    try:
        backend.client.hset(backend.keys.counts, field, value)
    finally:
        backend.close()


def periodic_row(url: str, name: str, **fields: Any) -> None:
    """Write one periodic schedule row by hand (``last_slot="soon"``; NaN on PostgreSQL)."""
    values = {"name": name, "spec": "* * * * *", "last_slot": None, "last_fired_at": None,
              "last_job_id": None, "next_slot": None} | fields  # fmt: skip
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
            marks = ", ".join("?" * len(values))
            db.execute(f"INSERT INTO periodic_schedules ({', '.join(values)}) VALUES ({marks})", list(values.values()))  # fmt: skip
        db.close()
    elif url.startswith(("mariadb", "mysql")):
        _mariadb_sql(url, [_mariadb_insert("periodic_schedules", values)])
    elif url.startswith("postgres"):
        import psycopg

        from conveyor.backends.postgres.url import parse_postgres_url

        target = parse_postgres_url(url)
        with psycopg.connect(target.conninfo, options=f"-c search_path={target.schema}") as pg:
            marks = ", ".join(["%s"] * len(values))
            pg.execute(f"INSERT INTO periodic_schedules ({', '.join(values)}) VALUES ({marks})", list(values.values()))  # fmt: skip
    else:
        from conveyor.backends.redis.backend import RedisBackend

        backend = RedisBackend(url)
        try:
            base = backend.keys.base
            backend.client.sadd(base + "periodic", name)
            backend.client.hset(
                base + "periodic:" + name,
                mapping={k: str(v) for k, v in values.items() if v is not None and k != "name"},
            )
        finally:
            backend.close()
