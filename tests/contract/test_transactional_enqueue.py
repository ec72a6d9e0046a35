"""Transactional enqueue: ``with conveyor.transaction(conn)`` writes jobs through the
caller's own connection, inside its transaction (feature ``transactional_enqueue``).

Runs on every backend that declares the feature, with the caller's connection opened
the way an application opens its own (tests/support/transactional.py); a backend
without it must refuse in one line.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy.orm import Session

import conveyor
from conveyor.backends.base import JobClaimParams
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.states import JobState
from tests.support.flow import drain
from tests.support.transactional import CALLERS, Caller

FEATURE = "transactional_enqueue"


def _caller(app: conveyor.App) -> Caller:
    backend = app.backend
    if FEATURE not in backend.features:
        pytest.skip(
            f"backend {backend.name!r} does not declare {FEATURE!r} (its refusal is tested)"
        )
    return CALLERS[backend.name]


def _tasks(app: conveyor.App) -> dict[str, conveyor.Task]:  # type: ignore[type-arg]
    @app.task
    def double(n: int) -> int:
        return 2 * n

    @app.task
    def total(values: list[int]) -> int:
        return sum(values)

    return {"double": double, "total": total}


def _stored(app: conveyor.App, jobs: Sequence[conveyor.Job[Any]]) -> list[str]:
    """The ids of ``jobs`` the store's own connection sees (committed ones only)."""
    return [r.id for r in app.backend.job_get_many([j.id for j in jobs])]


def _result(app: conveyor.App, job: conveyor.Job[Any]) -> Any:
    """The result of a job that must have succeeded (read with job_get_many only, the
    one read every backend has)."""
    (record,) = app.backend.job_get_many([job.id])
    assert record.state is JobState.SUCCEEDED, (record.state, record.error)
    return json.loads(record.result or "null")


def _orders(conn: Any) -> None:
    """The caller's own table, private to its connection."""
    conn.execute("CREATE TEMP TABLE orders (id INTEGER PRIMARY KEY)")
    conn.commit()


def _order_count(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM orders").fetchone()[0])


def test_rollback_leaves_no_job(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    with caller.connect(app.url) as conn:
        _orders(conn)
        conn.execute("INSERT INTO orders VALUES (1)")
        with conveyor.transaction(conn):
            jobs = [
                t["double"].enqueue(1),
                *t["double"].enqueue_many([(2,), (3,)]),
                t["double"].with_options(queue="later", delay=60).enqueue(4),
            ]
        assert _stored(app, jobs) == []  # not committed: the store's connection sees none
        conn.rollback()
        assert _order_count(conn) == 0
    assert _stored(app, jobs) == []


def test_commit_makes_jobs_visible_and_a_burst_worker_runs_them(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    with caller.connect(app.url) as conn:
        _orders(conn)
        conn.execute("INSERT INTO orders VALUES (1)")
        with conveyor.transaction(conn):
            one = t["double"].enqueue(21)
            many = t["double"].enqueue_many([(1,), (2,)])
            later = t["double"].with_options(delay=3600).enqueue(5)
        conn.commit()
        assert _order_count(conn) == 1
    assert _stored(app, [one, *many, later]) == [one.id, *(j.id for j in many), later.id]
    assert later.status is JobState.SCHEDULED
    drain(app)
    assert _result(app, one) == 42
    assert [_result(app, j) for j in many] == [2, 4]
    assert later.status is JobState.SCHEDULED  # a delay is kept as given


def test_headers_are_written_through_the_callers_connection(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    given = {"tenant": "café", "request_id": "r-1"}
    headed = t["double"].with_options(headers=given)
    with caller.connect(app.url) as conn:
        with conveyor.transaction(conn):
            jobs = [
                headed.enqueue(1),  # a plain job
                *headed.enqueue_many([(2,), (3,)]),  # the batch path
                headed.with_options(unique_key="once").enqueue(4),  # flow fields
                t["double"].enqueue(5),  # none
            ]
        conn.commit()
    stored = {r.id: r.headers for r in app.backend.job_get_many([j.id for j in jobs])}
    assert [json.loads(stored[j.id]) if stored[j.id] else None for j in jobs] == [given] * 4 + [
        None
    ]


def test_workflows_and_enqueue_many_in_one_transaction(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    with caller.connect(app.url) as conn:
        with conveyor.transaction(conn):
            first = t["double"].enqueue(1)
            after = first.then(t["double"].s())
            last = conveyor.chain(t["double"].s(2), t["double"].s()).enqueue()
            callback = conveyor.group(t["double"].s(1), t["double"].s(2)).then(t["total"].s())
            cb = callback.enqueue()
            many = t["double"].enqueue_many([(10,), (20,)])
        conn.rollback()
        assert _stored(app, [first, after, last, cb, *many]) == []
        with conveyor.transaction(conn):
            last = conveyor.chain(t["double"].s(2), t["double"].s()).enqueue()
            cb = callback.enqueue()
            many = t["double"].enqueue_many([(10,), (20,)])
        conn.commit()
    assert last.status is JobState.WAITING
    drain(app)
    assert _result(app, last) == 8
    assert _result(app, cb) == 6
    assert [_result(app, j) for j in many] == [20, 40]


def test_a_savepoint_rolled_back_takes_its_jobs_with_it(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    with caller.connect(app.url) as conn:
        _orders(conn)
        conn.execute("INSERT INTO orders VALUES (1)")  # opens the caller's transaction
        with conveyor.transaction(conn):
            kept = t["double"].enqueue(1)
            conn.execute("SAVEPOINT inner_work")
            dropped = t["double"].enqueue(2)
            conn.execute("ROLLBACK TO SAVEPOINT inner_work")
        conn.commit()
    assert _stored(app, [kept, dropped]) == [kept.id]


def test_a_failed_enqueue_leaves_the_callers_transaction_as_it_was(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    with caller.connect(app.url) as conn:
        _orders(conn)
        conn.execute("INSERT INTO orders VALUES (1)")
        with conveyor.transaction(conn):
            before = t["double"].enqueue(1)
            with pytest.raises(JobNotFound):  # a parent that does not exist: nothing written
                t["double"].with_options(depends_on=["no-such-job"]).enqueue(2)
            after = t["double"].enqueue(3)
        conn.execute("INSERT INTO orders VALUES (2)")  # the transaction is still usable
        conn.commit()
        assert _order_count(conn) == 2
    assert _stored(app, [before, after]) == [before.id, after.id]


def test_a_commit_wakes_a_waiting_worker(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    waiter = conveyor.App(app.url).backend  # another backend object, as another worker's
    try:
        assert waiter.job_claim(JobClaimParams("w-wait", [("default", 1)], 1)) == []
        woke = threading.Event()

        def wait() -> None:
            waiter.work_wait(60.0)  # returns on a wake-up; 60 s only if none comes
            woke.set()

        thread = threading.Thread(target=wait, daemon=True)
        with caller.connect(app.url) as conn:
            thread.start()
            with conveyor.transaction(conn):
                job = t["double"].enqueue(1)
            conn.commit()
        thread.join(30.0)
        assert woke.is_set(), "the commit did not wake the waiting worker"
        claimed = waiter.job_claim(JobClaimParams("w-wait", [("default", 1)], 1))
        assert [c.id for c in claimed] == [job.id]
    finally:
        waiter.close()


def test_asyncio_twins_write_through_the_callers_sync_connection(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)

    async def enqueue_some() -> list[conveyor.Job[Any]]:
        with conveyor.transaction(conn):
            one = await t["double"].aenqueue(1)
            many = await t["double"].aenqueue_many([(2,), (3,)])
            later = await t["double"].aenqueue_after(3600, 4)
        return [one, *many, later]

    with caller.connect(app.url) as conn:
        dropped = asyncio.run(enqueue_some())
        conn.rollback()
        kept = asyncio.run(enqueue_some())
        conn.commit()
    assert _stored(app, dropped) == []
    assert _stored(app, kept) == [j.id for j in kept]


def test_sqlalchemy_connection_and_session(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    engine = sqlalchemy.create_engine(caller.sqlalchemy_url(app.url))
    try:
        with Session(engine) as session:
            with conveyor.transaction(session):
                dropped = t["double"].enqueue(1)
            session.rollback()
            with conveyor.transaction(session):
                kept = t["double"].enqueue(2)
                chained = kept.then(t["double"].s())
            session.commit()
        with Session(engine) as session, conveyor.transaction(session):
            outer = t["double"].enqueue(5)
            nested = session.begin_nested()  # a SAVEPOINT: rolled back with its jobs
            inner = t["double"].enqueue(6)
            nested.rollback()
            session.commit()
        with pytest.raises(RuntimeError, match="boom"), engine.begin() as connection:
            with conveyor.transaction(connection):
                lost = t["double"].enqueue(3)
            raise RuntimeError("boom")  # engine.begin() rolls back
        with engine.begin() as connection, conveyor.transaction(connection):
            committed = t["double"].enqueue(4)
    finally:
        engine.dispose()
    assert _stored(app, [dropped, kept, chained, outer, inner, lost, committed]) == [
        kept.id,
        chained.id,
        outer.id,
        committed.id,
    ]
    drain(app)
    assert _result(app, chained) == 8 and _result(app, committed) == 8


def test_asyncio_driver_connection(app: conveyor.App) -> None:
    caller, t = _caller(app), _tasks(app)
    if caller.connect_async is None:
        pytest.skip(f"{app.backend.name}: no asyncio driver joins its transactions (documented)")

    async def scenario() -> tuple[list[conveyor.Job[Any]], list[conveyor.Job[Any]]]:
        async with caller.connect_async(app.url) as aconn:
            async with conveyor.transaction(aconn):
                dropped = [await t["double"].aenqueue(1), *await t["double"].aenqueue_many([(2,)])]
            await aconn.rollback()
            async with conveyor.transaction(aconn):
                kept = [await t["double"].aenqueue(3), *await t["double"].aenqueue_many([(4,)])]
                with pytest.raises(ConfigurationError, match="aenqueue"):
                    t["double"].enqueue(5)  # the sync method cannot use an asyncio connection
            await aconn.commit()
        return dropped, kept

    dropped, kept = asyncio.run(scenario())
    assert _stored(app, dropped) == []
    assert _stored(app, kept) == [j.id for j in kept]


def test_a_store_without_the_feature_refuses_in_one_line(app: conveyor.App) -> None:
    if FEATURE in app.backend.features:
        pytest.skip(f"backend {app.backend.name!r} declares {FEATURE!r} (tested above)")
    t = _tasks(app)
    import sqlite3

    conn = sqlite3.connect(":memory:")
    with conveyor.transaction(conn), pytest.raises(ConfigurationError) as refused:
        t["double"].enqueue(1)
    message = str(refused.value)
    assert "cannot join a database transaction" in message and "\n" not in message
