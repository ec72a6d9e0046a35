"""Transactional enqueue on PostgreSQL: jobs written through the caller's psycopg 3
connection, inside the caller's transaction, with the wake-up in it too.

The same statements as the backend's own insert (``inserts.insert_in``) plus its
``pg_notify``, run on the caller's connection:

- inside a ``SAVEPOINT``: all of a plan or none, and a failure (a missing parent, a
  unique race) leaves the caller's transaction usable rather than aborted;
- with ``search_path`` set to conveyor's schema for the savepoint only
  (``set_config(..., true)``, restored before it is released; a rollback to it restores
  it too), so the caller's own statements keep their own;
- on a connection with autocommit off and no transaction yet, the first statement here
  opens it as psycopg does for any statement, so the caller's ``commit()`` /
  ``rollback()`` decides; with autocommit on and no transaction block, there is none to
  join: the jobs commit at once, as the caller's own statements would;
- ``pg_notify`` in the same transaction: PostgreSQL delivers it at the caller's commit
  and drops it on rollback, so a worker wakes exactly when the jobs become visible.

Asyncio (``psycopg.AsyncConnection``): the same code runs in a thread against a cursor
face whose every call is awaited on the connection's own event loop (``LoopCursor``),
so the SQL (workflows and unique keys included) is written once.

Example (needs a server; tests/contract/test_transactional_enqueue.py runs it)::

    with psycopg.connect(dsn) as conn:
        conn.execute("INSERT INTO orders ...")
        with conveyor.transaction(conn):
            ship.enqueue(order_id)
    # the with-block of psycopg committed: the order and its job, together
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from conveyor.backends.base import (
    JobFinishThroughParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobInsertThroughParams,
)
from conveyor.backends.postgres.dialect import POSTGRES, Cursors
from conveyor.backends.postgres.inserts import insert_in
from conveyor.backends.postgres.listener import CHANNEL, notify_done
from conveyor.backends.sql.finish import Finish
from conveyor.errors import ConfigurationError

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")
Cursor = Any  # a psycopg Cursor, or a LoopCursor over an AsyncCursor
Jobs = Sequence[JobInsertParams] | JobInsertBatchParams

_SAVEPOINT = "conveyor_enqueue"


def insert_through(schema: str, params: JobInsertThroughParams) -> Sequence[str]:
    """Write ``params.jobs`` through ``params.connection`` (a ``psycopg.Connection``)."""
    import psycopg
    from psycopg.rows import tuple_row

    conn = params.connection
    if not isinstance(conn, psycopg.Connection):
        raise ConfigurationError(
            "the postgres backend joins a psycopg 3 connection "
            f"(or a SQLAlchemy one on psycopg), got {type(conn).__name__}"
        )
    autocommit_now = _outside_any_transaction(conn)
    with conn.cursor(row_factory=tuple_row) as cur:
        return write(
            cur, schema, params.jobs, autocommit_now=autocommit_now, split=_in_pipeline(conn)
        )


async def insert_through_async(schema: str, params: JobInsertThroughParams) -> Sequence[str]:
    """The same through a ``psycopg.AsyncConnection``, from its event loop."""
    import psycopg
    from psycopg.rows import tuple_row

    conn = params.connection
    if not isinstance(conn, psycopg.AsyncConnection):
        raise ConfigurationError(
            "the postgres backend's asyncio enqueue joins a psycopg 3 AsyncConnection, "
            f"got {type(conn).__name__}"
        )
    autocommit_now = _outside_any_transaction(conn)
    loop = asyncio.get_running_loop()
    async with conn.cursor(row_factory=tuple_row) as acur:
        cursor = LoopCursor(acur, loop)
        return await asyncio.to_thread(
            write,
            cursor,
            schema,
            params.jobs,
            autocommit_now=autocommit_now,
            split=_in_pipeline(conn),
        )


def _outside_any_transaction(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Autocommit on and no transaction block open: nothing to join."""
    from psycopg.pq import TransactionStatus

    return bool(conn.autocommit) and conn.info.transaction_status == TransactionStatus.IDLE


def write(
    cur: Cursor, schema: str, jobs: Jobs, *, autocommit_now: bool, split: bool = False
) -> Sequence[str]:
    """The statements, on any cursor: see the module docstring for the why of each.

    Three round trips for a plain plan: schema check + ``search_path`` + ``SAVEPOINT``
    in one simple query, the insert, then notify + restore + ``RELEASE`` in one (the
    schema is a validated identifier, inlined; the caller's path goes in as a literal).
    ``split``: one statement per call, for a connection in pipeline mode (which
    refuses several commands in one; it sends them without waiting anyway)."""
    from psycopg import sql

    if autocommit_now:
        cur.execute("BEGIN")
    # The first statement also opens the caller's transaction if autocommit is off and
    # none was open, as psycopg does before any statement.
    check = sql.SQL(
        "SELECT current_setting('search_path'), to_regclass({0}), "
        "set_config('search_path', {1}, true)"
    ).format(sql.Literal(f"{schema}.jobs"), sql.Literal(schema))
    savepoint = sql.SQL("SAVEPOINT {}").format(sql.Identifier(_SAVEPOINT))
    if split:
        cur.execute(check)
        row = cur.fetchone()
        cur.execute(savepoint)
    else:
        cur.execute(sql.SQL("; ").join([check, savepoint]))
        row = cur.fetchone()
    caller_path = sql.Literal(str(row[0]))
    try:
        if row[1] is None:
            raise ConfigurationError(
                f"the connection's database has no conveyor schema {schema!r}: "
                "a transactional enqueue must go to the app's own database"
            )
        ids = insert_in(cur, jobs)
    except BaseException:
        # Best effort: on a broken connection the cause, not the failed rollback, is
        # what the caller must see (its own rollback then ends the transaction).
        with contextlib.suppress(Exception):
            _run(
                cur,
                [
                    sql.SQL("ROLLBACK TO SAVEPOINT {}").format(sql.Identifier(_SAVEPOINT)),
                    sql.SQL("RELEASE SAVEPOINT {}").format(sql.Identifier(_SAVEPOINT)),
                    sql.SQL("SELECT set_config('search_path', {}, true)").format(caller_path),
                ],
                split=split,
            )
            if autocommit_now:
                cur.execute("ROLLBACK")
        raise
    _run(
        cur,
        [
            sql.SQL("SELECT pg_notify({}, {}), set_config('search_path', {}, true)").format(
                sql.Literal(CHANNEL), sql.Literal(schema), caller_path
            ),
            sql.SQL("RELEASE SAVEPOINT {}").format(sql.Identifier(_SAVEPOINT)),
        ],
        split=split,
    )
    if autocommit_now:
        cur.execute("COMMIT")
    return ids


def _run(cur: Cursor, statements: list[Any], *, split: bool) -> None:
    """Statements without results: one simple query, or one call each (``split``)."""
    from psycopg import sql

    if split:
        for statement in statements:
            cur.execute(statement)
    else:
        cur.execute(sql.SQL("; ").join(statements))


def _in_pipeline(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    from psycopg import pq

    return bool(conn.pgconn.pipeline_status != pq.PipelineStatus.OFF)


def finish_through(schema: str, params: JobFinishThroughParams) -> list[str]:
    """Apply finishes through a task's connection (``task_connection``), in its open
    transaction; the refused ids. The notification (dependants became ready) is sent
    with the caller's commit."""
    import psycopg
    from psycopg import sql
    from psycopg.rows import tuple_row

    conn = params.connection
    if not isinstance(conn, psycopg.Connection):
        raise ConfigurationError(f"expected a psycopg 3 connection, got {type(conn).__name__}")
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(
            "SELECT current_setting('search_path'), to_regclass(%s), "
            "set_config('search_path', %s, true)",
            (f"{schema}.jobs", schema),
        )
        row = cur.fetchone()
        if row is None or row[1] is None:
            raise ConfigurationError(f"the task's database has no conveyor schema {schema!r}")
        # The engine opens its own cursors: tuple rows, whatever the caller's connection
        # makes by default.
        ex = Cursors(conn, tuples=True)
        sent = Finish(POSTGRES, ex, params.finishes, None)
        stale, wake = sent.result(ex)
        notify_done(cur, schema, sent.ended)  # delivered at the caller's commit
        notify = (
            sql.SQL("pg_notify({}, {}), ").format(sql.Literal(CHANNEL), sql.Literal(schema))
            if wake
            else sql.SQL("")
        )
        cur.execute(
            sql.SQL("SELECT {}set_config('search_path', {}, true)").format(
                notify, sql.Literal(str(row[0]))
            )
        )
    return stale


@contextlib.contextmanager
def in_schema(schema: str, conn: object) -> Iterator[Cursors]:
    """The engine's executor on a task's connection, conveyor's ``schema`` first on
    its ``search_path`` for the block (set local to the transaction, put back after)."""
    import psycopg
    from psycopg.rows import tuple_row

    if not isinstance(conn, psycopg.Connection):
        raise ConfigurationError(f"expected a psycopg 3 connection, got {type(conn).__name__}")
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(
            "SELECT current_setting('search_path'), set_config('search_path', %s, true)",
            (schema,),
        )
        row = cur.fetchone()
        yield Cursors(conn, tuples=True)
        cur.execute("SELECT set_config('search_path', %s, true)", (str(row[0]) if row else "",))


@contextlib.contextmanager
def task_connection(conninfo: str) -> Iterator[psycopg.Connection[Any]]:
    """A new connection for a task's own writes (``current_job().transaction()``): not a
    pooled one, whose ``search_path`` is conveyor's schema, but the server's default, as
    the application's own connections have. Closed when the block ends (the server rolls
    back what was not committed)."""
    import psycopg

    conn = psycopg.connect(conninfo)
    try:
        yield conn
    finally:
        conn.close()


class LoopCursor:
    """A sync cursor face on a psycopg ``AsyncCursor``, for sync SQL code run in a
    worker thread while the event loop awaits that thread: every call is scheduled on
    the loop (``run_coroutine_threadsafe``) and waited for, so the connection is only
    ever used from its own loop."""

    __slots__ = ("_acur", "_loop")

    def __init__(self, acur: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._acur = acur
        self._loop = loop

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def execute(self, query: Any, params: Any = None) -> LoopCursor:
        self._run(self._acur.execute(query, params))
        return self

    def executemany(self, query: Any, params_seq: Any) -> None:
        self._run(self._acur.executemany(query, params_seq))

    def fetchone(self) -> Any:
        return self._run(self._acur.fetchone())

    def fetchall(self) -> list[Any]:
        return self._run(self._acur.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self._acur.rowcount)
