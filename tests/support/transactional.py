"""The caller's own connection to an app's store, per backend, for the transactional
enqueue contract (``tests/contract/test_transactional_enqueue.py``).

A web app holds its own database connection (not conveyor's): these open one the way
the app would, to the same file or database, with the driver's defaults (no
``search_path`` for conveyor's schema on PostgreSQL: conveyor must not rely on it).
The caller's own rows go to ``CREATE TEMP TABLE orders`` (private to the connection,
gone with it, in its transactions like any table, on both engines).
One entry per backend that declares ``transactional_enqueue``, keyed like
``tests/support/backends.BACKEND_URLS``.

Example::

    with CALLERS[app.backend.name].connect(app.url) as conn:
        with conveyor.transaction(conn):
            task.enqueue(1)
        conn.rollback()
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from conveyor.records import record


def _sqlite_path(url: str) -> str:
    return url.removeprefix("sqlite:///").split("?", 1)[0]


@contextlib.contextmanager
def _sqlite_connect(url: str) -> Iterator[Any]:
    conn = sqlite3.connect(_sqlite_path(url))
    try:
        yield conn
    finally:
        conn.close()


def _postgres_conninfo(url: str) -> str:
    from conveyor.backends.postgres.url import parse_postgres_url

    return parse_postgres_url(url).conninfo


@contextlib.contextmanager
def _postgres_connect(url: str) -> Iterator[Any]:
    import psycopg

    with psycopg.connect(_postgres_conninfo(url)) as conn:
        yield conn


@contextlib.asynccontextmanager
async def _postgres_connect_async(url: str) -> AsyncIterator[Any]:
    import psycopg

    async with await psycopg.AsyncConnection.connect(_postgres_conninfo(url)) as conn:
        yield conn


@record
class Caller:
    #: opens the app's own kind of connection to the store at ``url`` (a context manager)
    connect: Callable[[str], contextlib.AbstractContextManager[Any]]
    #: SQLAlchemy's URL for the same store
    sqlalchemy_url: Callable[[str], str]
    #: opens an asyncio driver connection (None: the engine has none to join)
    connect_async: Callable[[str], contextlib.AbstractAsyncContextManager[Any]] | None = None


CALLERS: dict[str, Caller] = {
    "sqlite": Caller(
        _sqlite_connect,
        lambda url: f"sqlite:///{_sqlite_path(url)}",
    ),
    "postgres": Caller(
        _postgres_connect,
        lambda url: "postgresql+psycopg://" + _postgres_conninfo(url).split("://", 1)[1],
        _postgres_connect_async,
    ),
}
