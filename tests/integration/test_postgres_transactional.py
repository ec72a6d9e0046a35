"""Transactional enqueue on PostgreSQL, beyond the contract: the notification travels
with the caller's commit, the caller's session is left as it was, every way psycopg
and SQLAlchemy hold a transaction (a real cluster: tests/support/postgres_server.py).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

import conveyor
from conveyor.backends.postgres.listener import CHANNEL
from conveyor.backends.postgres.url import parse_postgres_url
from conveyor.errors import ConfigurationError
from tests.support import postgres_server

SENTINEL = "conveyor_test_sentinel"


@pytest.fixture
def app(request: pytest.FixtureRequest) -> Iterator[conveyor.App]:
    application = conveyor.App(postgres_server.isolated_url(request))
    application.backend  # noqa: B018 - the schema exists before the caller's transactions
    yield application
    application.close()


def _dsn(app: conveyor.App) -> str:
    return parse_postgres_url(app.url).conninfo


def _task(app: conveyor.App) -> conveyor.Task:  # type: ignore[type-arg]
    @app.task
    def note(n: int) -> int:
        return n

    return note


def _stored(app: conveyor.App, *jobs: conveyor.Job[Any]) -> list[str]:
    return [r.id for r in app.backend.job_get_many([j.id for j in jobs])]


def test_the_notification_is_sent_at_commit_and_never_on_rollback(app: conveyor.App) -> None:
    note = _task(app)
    schema = parse_postgres_url(app.url).schema
    with psycopg.connect(_dsn(app), autocommit=True) as listener:
        listener.execute(f"LISTEN {CHANNEL}")
        listener.execute(f"LISTEN {SENTINEL}")
        with psycopg.connect(_dsn(app)) as conn:
            with conveyor.transaction(conn):
                note.enqueue(1)
            conn.rollback()
            # Notifications are delivered in commit order: everything a commit before
            # the sentinel's sent arrives before it.
            conn.execute(f"NOTIFY {SENTINEL}")
            conn.commit()
            with conveyor.transaction(conn):
                kept = note.enqueue(2)
            conn.commit()
        seen = [(n.channel, n.payload) for n in listener.notifies(timeout=30, stop_after=2)]
    assert seen == [(SENTINEL, ""), (CHANNEL, schema)]
    assert _stored(app, kept) == [kept.id]


def test_the_callers_session_is_left_as_it_was(app: conveyor.App) -> None:
    note = _task(app)
    from psycopg.rows import dict_row

    with psycopg.connect(_dsn(app), row_factory=dict_row) as conn:
        conn.execute("SET search_path TO public")
        conn.commit()
        conn.execute("CREATE TEMP TABLE orders (id integer PRIMARY KEY)")
        conn.execute("INSERT INTO orders VALUES (1)")
        with conveyor.transaction(conn):
            job = note.enqueue(1)
            unique = note.with_options(unique_key="k").enqueue(2)  # the flow path too
            again = note.with_options(unique_key="k").enqueue(3)
            with pytest.raises(conveyor.JobNotFound):  # rolled back to its savepoint
                note.with_options(depends_on=["no-such-job"]).enqueue(4)
        assert again.id == unique.id
        assert conn.execute("SHOW search_path").fetchone() == {"search_path": "public"}
        assert conn.execute("SELECT count(*) AS n FROM orders").fetchone() == {"n": 1}
        conn.commit()
    assert _stored(app, job, unique) == [job.id, unique.id]


def test_psycopg_transaction_blocks_and_autocommit(app: conveyor.App) -> None:
    note = _task(app)
    with psycopg.connect(_dsn(app), autocommit=True) as conn:
        with pytest.raises(RuntimeError), conn.transaction():
            with conveyor.transaction(conn):
                dropped = note.enqueue(1)
            raise RuntimeError("the block rolls back")
        with conn.transaction(), conveyor.transaction(conn):
            kept = note.enqueue(2)
        # No transaction block on an autocommit connection: nothing to join, the jobs
        # commit at once (as the caller's own statements would), still all or nothing.
        with conveyor.transaction(conn):
            at_once = note.enqueue_many([(3,), (4,)])
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert _stored(app, dropped, kept, *at_once) == [kept.id, *(j.id for j in at_once)]


def test_a_connection_in_pipeline_mode(app: conveyor.App) -> None:
    # Pipeline mode refuses several commands in one query: one statement each there.
    note = _task(app)
    with psycopg.connect(_dsn(app)) as conn:
        with conn.pipeline(), conveyor.transaction(conn):
            dropped = note.enqueue(1)
            with pytest.raises(conveyor.JobNotFound):
                note.with_options(depends_on=["no-such-job"]).enqueue(2)
        conn.rollback()
        with conn.pipeline(), conveyor.transaction(conn):
            kept = note.enqueue_many([(3,), (4,)])
        conn.commit()
    assert _stored(app, dropped, *kept) == [j.id for j in kept]


def test_a_connection_to_another_database_is_refused(app: conveyor.App) -> None:
    note = _task(app)
    other = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(_dsn(app), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {other}")
    try:
        other_dsn = psycopg.conninfo.make_conninfo(_dsn(app), dbname=other)
        with psycopg.connect(other_dsn) as conn:
            with (
                conveyor.transaction(conn),
                pytest.raises(ConfigurationError, match="app's own database"),
            ):
                note.enqueue(1)
            conn.rollback()
    finally:
        with psycopg.connect(_dsn(app), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {other}")


def test_sqlalchemy_async_session(app: conveyor.App) -> None:
    note = _task(app)
    url = "postgresql+psycopg://" + _dsn(app).split("://", 1)[1]

    async def scenario() -> tuple[list[conveyor.Job[Any]], list[conveyor.Job[Any]]]:
        engine = create_async_engine(url)
        try:
            async with AsyncSession(engine) as session:
                async with conveyor.transaction(session):
                    dropped = [await note.aenqueue(1)]
                    dropped.append(await note.with_options(unique_key="u").aenqueue(2))
                await session.rollback()
                async with conveyor.transaction(session):
                    kept = [await note.aenqueue(3)]
                    kept.append(await note.with_options(unique_key="u").aenqueue(4))
                    kept += await note.aenqueue_many([(5,), (6,)])
                    nested = await session.begin_nested()  # a SAVEPOINT, rolled back
                    dropped.append(await note.aenqueue(8))
                    await nested.rollback()
                await session.commit()
            async with engine.begin() as connection, conveyor.transaction(connection):
                kept.append(await note.aenqueue(7))
        finally:
            await engine.dispose()
        return dropped, kept

    dropped, kept = asyncio.run(scenario())
    assert _stored(app, *dropped) == []
    assert _stored(app, *kept) == [j.id for j in kept]


def test_an_asyncio_orm_object_needs_async_with(app: conveyor.App) -> None:
    engine = create_async_engine("postgresql+psycopg://" + _dsn(app).split("://", 1)[1])
    session = AsyncSession(engine)
    with pytest.raises(TypeError, match=r"async with conveyor\.transaction"):
        conveyor.transaction(session).__enter__()
    asyncio.run(engine.dispose())
