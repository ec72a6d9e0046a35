"""Transactional completion: inside a task, ``current_job().transaction()`` gives a
connection whose transaction also records the job's success (feature
``transactional_completion``), fenced by the attempt's claim token.

The task's own table lives in the store's database (the default schema on PostgreSQL,
the store's file on SQLite), created through the caller's kind of connection
(tests/support/transactional.py). Values are written as literals: the SQL runs on
sqlite3 and psycopg alike.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

import conveyor
from conveyor.backends.base import JobReleaseParams
from conveyor.states import JobState
from tests.support.flow import drain
from tests.support.transactional import CALLERS

FEATURE = "transactional_completion"
AT_ONCE = conveyor.Backoff(base=0, factor=1, max=0, jitter=0)


@pytest.fixture
def table(app: conveyor.App) -> Iterator[str]:
    """A table of the application's own in the store's database, dropped after."""
    backend = app.backend
    if FEATURE not in backend.features:
        pytest.skip(
            f"backend {backend.name!r} does not declare {FEATURE!r} (its refusal is tested)"
        )
    name = f"orders_{uuid.uuid4().hex[:12]}"
    caller = CALLERS[backend.name]
    with caller.connect(app.url) as conn:
        conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, note TEXT)")
        conn.execute(
            f"CREATE TABLE {name}_lines (id INTEGER PRIMARY KEY, order_id INTEGER "
            f"REFERENCES {name} (id) DEFERRABLE INITIALLY DEFERRED)"
        )
        conn.commit()
    yield name
    with caller.connect(app.url) as conn:
        conn.execute(f"DROP TABLE {name}_lines")
        conn.execute(f"DROP TABLE {name}")
        conn.commit()


def _rows(app: conveyor.App, table: str) -> list[tuple[int, str]]:
    with CALLERS[app.backend.name].connect(app.url) as conn:
        found = conn.execute(f"SELECT id, note FROM {table} ORDER BY id").fetchall()
    return [(int(r[0]), str(r[1])) for r in found]


def _result(app: conveyor.App, job: conveyor.Job[object]) -> object:
    (record,) = app.backend.job_get_many([job.id])
    assert record.state is JobState.SUCCEEDED, (record.state, record.error)
    return json.loads(record.result or "null")


def _attempts(app: conveyor.App, job: conveyor.Job[object]) -> int:
    """Attempts the job took (read with job_get_many, the one read every backend has)."""
    (record,) = app.backend.job_get_many([job.id])
    return record.attempt


@pytest.mark.parametrize(("pool", "concurrency"), [("thread", 1), ("thread", 4), ("async", 2)])
def test_the_writes_and_the_success_commit_together(
    app: conveyor.App, table: str, pool: str, concurrency: int
) -> None:
    @app.task
    def place(order_id: int) -> None:
        with conveyor.current_job().transaction() as conn:
            conn.execute(f"INSERT INTO {table} VALUES ({order_id}, 'placed')")

    @app.task
    async def place_async(order_id: int) -> None:  # the block is sync: it blocks briefly
        with conveyor.current_job().transaction() as conn:
            conn.execute(f"INSERT INTO {table} VALUES ({order_id}, 'placed async')")

    jobs = [place.enqueue(1), place.enqueue(2), place_async.enqueue(3)]
    drain(app, pool=pool, concurrency=concurrency)
    assert [j.status for j in jobs] == [JobState.SUCCEEDED] * 3
    assert _rows(app, table) == [(1, "placed"), (2, "placed"), (3, "placed async")]
    assert [_attempts(app, j) for j in jobs] == [1, 1, 1]


def test_an_error_in_the_block_rolls_back_and_the_attempt_is_retried(
    app: conveyor.App, table: str
) -> None:
    follow_ups: list[conveyor.Job[str]] = []

    @app.task
    def receipt(order_id: int, attempt: int) -> str:
        return f"receipt for {order_id} (attempt {attempt})"

    @app.task(max_attempts=2, retry=AT_ONCE)
    def place(order_id: int) -> None:
        attempt = conveyor.current_job().attempt
        with conveyor.current_job().transaction() as conn:
            conn.execute(f"INSERT INTO {table} VALUES ({order_id}, 'attempt {attempt}')")
            # enqueued through the same transaction: exists only if it commits
            follow_ups.append(receipt.enqueue(order_id, attempt))
            if attempt == 1:
                raise RuntimeError("payment gateway said no")

    job = place.enqueue(1)
    drain(app)
    assert job.status is JobState.SUCCEEDED
    assert _rows(app, table) == [(1, "attempt 2")]  # the first attempt's row never landed
    assert _attempts(app, job) == 2
    first, second = follow_ups
    assert app.backend.job_get_many([first.id]) == []  # rolled back with attempt 1
    assert _result(app, second) == "receipt for 1 (attempt 2)"


def test_a_failed_commit_fails_the_attempt_and_it_is_retried(app: conveyor.App, table: str) -> None:
    raised: list[BaseException] = []

    @app.task(max_attempts=2, retry=AT_ONCE)
    def place(order_id: int) -> None:
        attempt = conveyor.current_job().attempt
        try:
            with conveyor.current_job().transaction() as conn:
                if app.backend.name == "sqlite":
                    conn.execute("PRAGMA foreign_keys = ON")  # per connection on SQLite
                conn.execute(f"INSERT INTO {table} VALUES ({order_id}, 'attempt {attempt}')")
                if attempt == 1:  # a line of an order that does not exist: refused at COMMIT
                    conn.execute(f"INSERT INTO {table}_lines VALUES (1, 999)")
        except Exception as exc:
            raised.append(exc)
            raise

    job = place.enqueue(1)
    drain(app)
    assert job.status is JobState.SUCCEEDED
    assert _rows(app, table) == [(1, "attempt 2")]
    assert _attempts(app, job) == 2
    assert len(raised) == 1 and "foreign key" in str(raised[0]).lower()


def test_a_stale_attempt_lands_nothing(app: conveyor.App, table: str) -> None:
    runs: list[int] = []

    @app.task(max_attempts=3, retry=AT_ONCE)
    def place(order_id: int) -> None:
        ctx = conveyor.current_job()
        runs.append(len(runs) + 1)
        if len(runs) == 1:
            # Someone takes the job from under this run (as a rescue would): the claim
            # is given back before the block writes anything.
            (record,) = app.backend.job_get_many([ctx.id])
            assert record.token is not None and record.worker_id is not None
            app.backend.job_release_many(
                JobReleaseParams(record.worker_id, [(ctx.id, record.token)])
            )
        with ctx.transaction() as conn:
            conn.execute(f"INSERT INTO {table} VALUES ({runs[-1]}, 'run {runs[-1]}')")

    job = place.enqueue(1)
    drain(app)
    assert job.status is JobState.SUCCEEDED
    assert runs == [1, 2]
    assert _rows(app, table) == [(2, "run 2")]  # the stale run's row was rolled back


def test_a_store_without_the_feature_says_so(app: conveyor.App) -> None:
    if FEATURE in app.backend.features:
        pytest.skip(f"backend {app.backend.name!r} declares {FEATURE!r} (tested above)")
    raised: list[BaseException] = []

    @app.task(max_attempts=1)
    def place() -> None:
        try:
            with conveyor.current_job().transaction():
                pass
        except Exception as exc:
            raised.append(exc)
            raise

    job = place.enqueue()
    drain(app)
    assert job.status is JobState.DEAD
    assert "cannot commit your writes with the job's success" in str(raised[0])


def test_outside_a_worker_it_says_where_it_works(app: conveyor.App) -> None:
    @app.task
    def place() -> None:
        with conveyor.current_job().transaction():
            pass

    with pytest.raises(conveyor.ConfigurationError, match="thread or asyncio pool"):
        place.execute()
