"""Raw-store helpers for the tests that must reach under the seam: age finished jobs
(purge), corrupt a store on purpose (``conveyor check``). One entry per backend, keyed
like ``tests/support/backends.BACKEND_URLS``; a new backend adds its own here.

Example::

    ids = fill(url)
    STORES[name].age_finished(url, 8 * 86400)
    expected = STORES[name].corrupt(url, ids)   # the (kind, job_id) the audit must report
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.records import record


def fill(url: str) -> dict[str, str]:
    """The ops CLI's store: 3 succeeded, 2 dead (with logs and a traceback), 1 queued job
    in queue "later"; ids by name (``x0 x1 x2 x-1 x-2 later``)."""
    from conveyor.worker.worker import Worker

    app = conveyor.App(url, max_attempts=1)

    @app.task(name="t.work")
    def work(x: int, user_id: int = 0) -> dict[str, bool]:
        logging.getLogger("t.work").info("working on %d for %d", x, user_id)
        if x < 0:
            raise ValueError(f"bad x {x}")
        return {"ok": x % 2 == 0}

    ids = {f"x{x}": work.enqueue(x, user_id=x * 10).id for x in (0, 1, 2, -1, -2)}
    Worker(app, burst=True).run(install_signals=False)
    ids["later"] = work.with_options(queue="later").enqueue(5, user_id=50).id
    app.close()
    return ids


def _sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:///")


def _sqlite_age(url: str, seconds: float) -> None:
    with sqlite3.connect(_sqlite_path(url)) as db:
        db.execute("UPDATE jobs SET finished_at = finished_at - ?", (seconds,))


def _sqlite_corrupt(url: str, ids: Mapping[str, str]) -> set[tuple[str, str]]:
    with sqlite3.connect(_sqlite_path(url)) as db:
        db.execute("UPDATE jobs SET state = 'running', worker_id = NULL WHERE id = ?", (ids["x0"],))
        db.execute(
            "UPDATE jobs SET state = 'running', worker_id = 'ghost', token = 1 WHERE id = ?",
            (ids["x1"],),
        )
        db.execute("UPDATE jobs SET finished_at = 1.0 WHERE id = ?", (ids["later"],))
        db.execute(
            "INSERT INTO attempts (job_id, token, attempt, outcome) "
            "VALUES ('gone', 1, 1, 'succeeded')"
        )
    return {
        ("running_without_claim", ids["x0"]),
        ("claim_without_live_worker", ids["x1"]),
        ("active_with_finished_at", ids["later"]),
        ("orphan_attempt", "gone"),
    }


def _redis_age(url: str, seconds: float) -> None:
    from conveyor.backends.redis.backend import RedisBackend

    backend = RedisBackend(url)
    try:
        for job in backend.job_list(JobListParams(limit=100)):
            if job.finished_at is not None:
                backend.client.hset(
                    backend.keys.job(job.id), "finished_at", job.finished_at - seconds
                )
    finally:
        backend.close()


def _redis_corrupt(url: str, ids: Mapping[str, str]) -> set[tuple[str, str]]:
    from conveyor.backends.redis.backend import RedisBackend

    b = RedisBackend(url)
    try:
        c, k = b.client, b.keys
        c.hset(k.job(ids["x0"]), "state", "running")  # no worker, no token
        c.hset(k.job(ids["x1"]), mapping={"state": "running", "worker_id": "ghost", "token": "1"})
        c.sadd(k.inflight("ghost"), ids["x1"])
        c.sadd(k.holders, "ghost")
        c.zrem(k.ready("later"), ids["later"])  # a queued job no worker can see
        c.rpush(k.attempts("gone"), "{}")
        c.zadd(k.scheduled, {ids["x2"]: 1.0})
    finally:
        b.close()
    return {
        ("running_without_claim", ids["x0"]),
        ("claim_without_live_worker", ids["x1"]),
        ("queued_not_ready", ids["later"]),
        ("orphan_attempt", "gone"),
        ("orphan_scheduled_entry", ids["x2"]),
    }


def _postgres_sql(url: str, statements: list[tuple[str, tuple[object, ...]]]) -> None:
    """Run ``statements`` in one transaction on the schema of a conveyor Postgres URL."""
    import psycopg

    from conveyor.backends.postgres.url import parse_postgres_url

    target = parse_postgres_url(url)
    with psycopg.connect(target.conninfo, options=f"-c search_path={target.schema}") as db:
        for sql, args in statements:
            db.execute(sql, args)


def _postgres_age(url: str, seconds: float) -> None:
    _postgres_sql(url, [("UPDATE jobs SET finished_at = finished_at - %s", (seconds,))])


def _typed_damage(ids: Mapping[str, str]) -> list[tuple[str, tuple[object, ...]]]:
    """What the typed SQL stores (PostgreSQL, MariaDB) can be broken with."""
    return [
        ("UPDATE jobs SET state = 'running', worker_id = NULL WHERE id = %s", (ids["x0"],)),
        (
            "UPDATE jobs SET state = 'running', worker_id = 'ghost', token = 1 WHERE id = %s",
            (ids["x1"],),
        ),
        ("UPDATE jobs SET finished_at = 1.0 WHERE id = %s", (ids["later"],)),
        ("UPDATE jobs SET state = 'lost' WHERE id = %s", (ids["x2"],)),
        (
            "INSERT INTO attempts (job_id, token, attempt, outcome) "
            "VALUES ('gone', 1, 1, 'succeeded')",
            (),
        ),
    ]


def _pg_found(ids: Mapping[str, str]) -> set[tuple[str, str]]:
    return {
        ("running_without_claim", ids["x0"]),
        ("claim_without_live_worker", ids["x1"]),
        ("active_with_finished_at", ids["later"]),
        ("unknown_state", ids["x2"]),
        ("orphan_attempt", "gone"),
    }


def _postgres_corrupt(url: str, ids: Mapping[str, str]) -> set[tuple[str, str]]:
    _postgres_sql(url, _typed_damage(ids))
    return _pg_found(ids)


def _mariadb_sql(url: str, statements: list[tuple[str, tuple[object, ...]]]) -> None:
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


def _mariadb_age(url: str, seconds: float) -> None:
    _mariadb_sql(url, [("UPDATE jobs SET finished_at = finished_at - %s", (seconds,))])


def _mariadb_corrupt(url: str, ids: Mapping[str, str]) -> set[tuple[str, str]]:
    # The same damage as PostgreSQL's: typed columns take nothing odder.
    _mariadb_sql(url, _typed_damage(ids))
    return _pg_found(ids)


@record
class RawStore:
    #: make every finished job look ``seconds`` older
    age_finished: Callable[[str, float], None]
    #: break the store the fill of test_cli_ops made; returns what the audit must find
    corrupt: Callable[[str, Mapping[str, str]], set[tuple[str, str]]]


STORES: dict[str, RawStore] = {
    "mariadb": RawStore(_mariadb_age, _mariadb_corrupt),
    "postgres": RawStore(_postgres_age, _postgres_corrupt),
    "redis": RawStore(_redis_age, _redis_corrupt),
    "sqlite": RawStore(_sqlite_age, _sqlite_corrupt),
}
