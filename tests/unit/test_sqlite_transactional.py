"""Transactional enqueue on SQLite: every way a ``sqlite3`` connection handles its
transactions (real files; the contract suite covers the behaviour shared with Postgres).
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import JobInsertParams, JobInsertThroughParams
from conveyor.backends.sqlite.transactional import insert_through
from conveyor.errors import ConfigurationError


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[conveyor.App, Path]]:
    path = tmp_path / "app.db"
    app = conveyor.App(f"sqlite:///{path}")
    app.backend  # noqa: B018 - the store exists before the caller's transactions
    yield app, path
    app.close()


def _task(app: conveyor.App) -> conveyor.Task:  # type: ignore[type-arg]
    @app.task
    def note(n: int) -> int:
        return n

    return note


def _stored(app: conveyor.App, *jobs: conveyor.Job[Any]) -> list[str]:
    return [r.id for r in app.backend.job_get_many([j.id for j in jobs])]


def _orders(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY)")
    if conn.in_transaction:
        conn.commit()


@pytest.mark.parametrize("isolation_level", ["", "DEFERRED", "IMMEDIATE", "EXCLUSIVE"])
def test_implicit_transactions_join_and_roll_back(
    store: tuple[conveyor.App, Path], isolation_level: str
) -> None:
    app, path = store
    note = _task(app)
    conn = sqlite3.connect(path, isolation_level=isolation_level)
    _orders(conn)
    # The job first, the caller's own write after: both are in one transaction.
    with conveyor.transaction(conn):
        dropped = note.enqueue(1)
    conn.execute("INSERT INTO orders VALUES (1)")
    assert conn.in_transaction
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM orders").fetchone()[0] == 0
    with conveyor.transaction(conn):
        kept = note.enqueue(2)
    conn.execute("INSERT INTO orders VALUES (2)")
    conn.commit()
    conn.close()
    assert _stored(app, dropped, kept) == [kept.id]


def test_autocommit_connection_with_begin_joins_it(store: tuple[conveyor.App, Path]) -> None:
    app, path = store
    note = _task(app)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    with conveyor.transaction(conn):
        dropped = note.enqueue(1)
    conn.execute("ROLLBACK")
    conn.execute("BEGIN IMMEDIATE")
    with conveyor.transaction(conn):
        kept = note.enqueue(2)
    conn.execute("COMMIT")
    conn.close()
    assert _stored(app, dropped, kept) == [kept.id]


def test_autocommit_connection_outside_a_transaction_commits_at_once(
    store: tuple[conveyor.App, Path],
) -> None:
    # Like the caller's own statements on that connection (documented): no transaction
    # is open, so there is none to join; the plan is still all or nothing.
    app, path = store
    note = _task(app)
    conn = sqlite3.connect(path, isolation_level=None)
    with conveyor.transaction(conn):
        jobs = note.enqueue_many([(1,), (2,)])
    assert not conn.in_transaction
    conn.close()
    assert _stored(app, *jobs) == [j.id for j in jobs]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="Connection.autocommit is Python 3.12+")
@pytest.mark.parametrize("autocommit", [False, True])
def test_python_312_autocommit_attribute(
    store: tuple[conveyor.App, Path], autocommit: bool
) -> None:
    app, path = store
    note = _task(app)
    conn = sqlite3.connect(path, autocommit=autocommit)  # type: ignore[call-arg,unused-ignore]
    with conveyor.transaction(conn):
        job = note.enqueue(1)
    conn.rollback()
    conn.close()
    # autocommit=False: a transaction is always open, the rollback takes the job;
    # autocommit=True: none is, the job committed at once.
    assert _stored(app, job) == ([job.id] if autocommit else [])


def test_a_connection_to_another_file_is_refused(
    store: tuple[conveyor.App, Path], tmp_path: Path
) -> None:
    app, _ = store
    note = _task(app)
    other = sqlite3.connect(tmp_path / "other.db")
    with conveyor.transaction(other), pytest.raises(ConfigurationError, match="store's own file"):
        note.enqueue(1)
    memory = sqlite3.connect(":memory:")
    with conveyor.transaction(memory), pytest.raises(ConfigurationError, match="in-memory"):
        note.enqueue(1)
    assert other.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0


def test_the_schema_is_created_in_the_callers_transaction(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    conn = sqlite3.connect(path)
    job = JobInsertParams(id="j1", task="t", queue="q", payload='{"args":[],"kwargs":{}}')
    assert insert_through(JobInsertThroughParams(conn, [job]), str(path)) == ["j1"]
    conn.rollback()  # DDL is transactional in SQLite: the schema goes with the job
    assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    insert_through(JobInsertThroughParams(conn, [job]), str(path))
    conn.commit()
    assert conn.execute("SELECT id FROM jobs").fetchall() == [("j1",)]


def test_a_store_first_opened_inside_the_callers_write_says_why(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    app = conveyor.App(f"sqlite:///{path}")
    note = _task(app)
    conn = sqlite3.connect(path)
    _orders(conn)
    conn.execute("INSERT INTO orders VALUES (1)")  # the caller holds the write lock
    with (
        conveyor.transaction(conn),
        pytest.raises(ConfigurationError, match="opened for the first time inside"),
    ):
        note.enqueue(1)
    conn.commit()
    with conveyor.transaction(conn):  # with the lock free the store opens, and joins
        job = note.enqueue(2)
    conn.commit()
    assert _stored(app, job) == [job.id]
    app.close()


def test_an_object_of_no_known_kind_is_refused() -> None:
    with pytest.raises(TypeError, match="takes a sqlite3 or psycopg 3 connection"):
        conveyor.transaction(object()).__enter__()
