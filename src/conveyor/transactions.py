"""``conveyor.transaction(conn)``: enqueue inside the caller's own database transaction.

Inside the block every enqueue of every task (``enqueue``, ``enqueue_many``,
``with_options(...).enqueue``, ``aenqueue*``, workflows, ``job.then``) writes its jobs
through ``conn`` in the transaction ``conn`` has open: the caller's commit makes them
visible and wakes a worker, the caller's rollback leaves no job and no wake-up. The
block itself neither begins, commits nor rolls back anything. See docs/transactions.md.

The active transaction is a ``ContextVar`` (right per thread and per asyncio task),
consulted at the one place every plan is written (``Enqueuer._write`` and
``compose._insert``); an app on a store put in place of its own (``App.on_store``: a
testing mode's) writes there instead.
The store must declare ``transactional_enqueue`` (SQLite, PostgreSQL); on Redis it is a
``ConfigurationError``.

Example:
    >>> import sqlite3, tempfile, os
    >>> import conveyor
    >>> path = os.path.join(tempfile.mkdtemp(), "app.db")
    >>> app = conveyor.App(f"sqlite:///{path}")
    >>> @app.task
    ... def welcome(user_id: int) -> None: ...
    >>> conn = sqlite3.connect(path)
    >>> with conveyor.transaction(conn):
    ...     job = welcome.enqueue(7)
    >>> conn.rollback()
    >>> app.backend.job_get_many([job.id])
    []
"""

from __future__ import annotations

import contextvars
import inspect
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from conveyor.backends.base import (
    JobInsertBatchParams,
    JobInsertParams,
    JobInsertThroughParams,
    require_transactional,
)
from conveyor.errors import ConfigurationError, StoreError
from conveyor.stores import backend_class
from conveyor.transaction_adapters import Joined, join

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.backends.base import Backend

__all__ = ["Transaction", "active", "insert", "insert_async", "store_of", "transaction"]

Plan = Sequence[JobInsertParams] | JobInsertBatchParams

_active: contextvars.ContextVar[Joined | None] = contextvars.ContextVar(
    "conveyor_transaction", default=None
)

_SYNC_ON_ASYNC = (
    "this connection is asyncio's: inside conveyor.transaction() use the aenqueue* "
    "methods (workflows and job.then enqueue synchronously and cannot use it)"
)


class Transaction:
    """The context manager :func:`transaction` returns; ``with`` for a sync connection
    (or a sync ORM object), ``async with`` for any (required for SQLAlchemy's
    ``AsyncSession``/``AsyncConnection``, which are unwrapped with ``await``)."""

    __slots__ = ("_given", "_tokens")

    def __init__(self, conn: object) -> None:
        self._given = conn
        self._tokens: list[contextvars.Token[Joined | None]] = []

    def __enter__(self) -> Transaction:
        joined = join(self._given)
        if inspect.isawaitable(joined):
            if inspect.iscoroutine(joined):
                joined.close()  # never awaited: say so without a RuntimeWarning
            raise TypeError(
                f"a {type(self._given).__name__} is unwrapped with await: "
                "use `async with conveyor.transaction(...)`"
            )
        self._tokens.append(_active.set(joined))
        return self

    async def __aenter__(self) -> Transaction:
        joined = join(self._given)
        if inspect.isawaitable(joined):
            joined = await joined
        self._tokens.append(_active.set(joined))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _active.reset(self._tokens.pop())

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _active.reset(self._tokens.pop())


def transaction(conn: object) -> Transaction:
    """Enqueue through ``conn`` inside its open transaction, for the ``with`` block.

    ``conn``: a ``sqlite3.Connection`` to the app's store file, a psycopg 3
    ``Connection``/``AsyncConnection`` to the app's PostgreSQL database, or a SQLAlchemy
    ``Connection``/``Session`` (``AsyncConnection``/``AsyncSession`` with ``async
    with``) on one of those; more with
    :func:`conveyor.transaction_adapters.register_adapter`. Nested blocks: the inner
    connection wins until its block ends."""
    return Transaction(conn)


def active() -> Joined | None:
    """The connection enqueues write through now, or ``None`` (the store's own)."""
    return _active.get()


def store_of(app: App) -> Backend:
    """The app's store, refused at once when its kind cannot join a transaction (known
    from the backend class: Redis is not even contacted), opened now if it was not yet.

    Opening a new SQLite store creates its schema under the file's one write lock, which
    the caller's own open write transaction on that file may hold: that first open
    fails, and says so rather than "locked by another process"."""
    if app.backend_is_open:
        return app.backend
    require_transactional(backend_class(app.url))
    try:
        return app.backend
    except StoreError as exc:
        raise ConfigurationError(
            f"{exc} -- the app's store was opened for the first time inside "
            "conveyor.transaction(), while your open transaction holds the write lock: "
            "open it before the transaction (a worker, an enqueue, or `app.backend`)"
        ) from exc


def insert(app: App, joined: Joined, plan: Plan) -> Sequence[str]:
    """Write ``plan`` through the joined connection (sync)."""
    backend = store_of(app)
    require_transactional(backend)
    if joined.is_async:
        raise ConfigurationError(_SYNC_ON_ASYNC)
    return backend.job_insert_many_through(JobInsertThroughParams(joined.now(), plan))


async def insert_async(app: App, joined: Joined, plan: Plan) -> Sequence[str]:
    """Write ``plan`` through the joined connection: awaited for an asyncio driver, in
    the caller's thread for a sync one (a sqlite3 connection belongs to its thread)."""
    backend = store_of(app)
    require_transactional(backend)
    params = JobInsertThroughParams(await joined.anow(), plan)
    if joined.is_async:
        return await backend.job_insert_many_through_async(params)
    return backend.job_insert_many_through(params)
