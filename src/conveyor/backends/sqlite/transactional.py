"""Transactional enqueue on SQLite: jobs written through the caller's ``sqlite3``
connection to the store's file, inside the caller's transaction.

What the caller's connection is doing decides what "its transaction" is, exactly as it
would for the caller's own next ``INSERT``:

- a transaction is open (``conn.in_transaction``; always so in Python 3.12's
  ``autocommit=False``): the jobs join it;
- none is open and the connection begins one implicitly before a write (the default,
  ``isolation_level=""``/``"DEFERRED"``/...): one is begun here the same way, so the
  caller's later statements and ``conn.commit()`` are in it too;
- autocommit (``isolation_level=None`` or 3.12's ``autocommit=True``) with no ``BEGIN``:
  the jobs commit at once, as the caller's own statements would.

The write is wrapped in a ``SAVEPOINT``: all of a plan or none of it, and a failure
(a unique key's backstop, a missing parent) leaves the caller's transaction as it was.
No ``BEGIN``/``COMMIT`` of its own otherwise.

Wake-ups: a worker in another process notices the commit through ``PRAGMA
data_version`` (it moves only when another connection *commits*), polled every
``notify.MAX_POLL`` at most while idle. Nothing is bumped in this process at insert
time (there is no commit hook in Python's ``sqlite3``): a rollback wakes nobody, and a
commit costs an in-process worker at most that poll interval.

Example:
    >>> import sqlite3, tempfile, os
    >>> from conveyor.backends.base import JobInsertParams, JobInsertThroughParams
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> path = os.path.join(tempfile.mkdtemp(), "jobs.db")
    >>> store = SQLiteBackend(f"sqlite:///{path}")
    >>> conn = sqlite3.connect(path)
    >>> job = JobInsertParams(id="j1", task="t", queue="q", payload="{}")
    >>> store.job_insert_many_through(JobInsertThroughParams(conn, [job]))
    ['j1']
    >>> conn.rollback()
    >>> store.job_get_many(["j1"])
    []
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from conveyor.backends.base import JobInsertThroughParams
from conveyor.backends.sqlite.connection import SCHEMA_VERSION, SQLiteTarget, apply_migrations
from conveyor.backends.sqlite.inserts import insert_in
from conveyor.errors import ConfigurationError

_SAVEPOINT = "conveyor_enqueue"
ASYNC_REFUSED = (
    "transactional enqueue on SQLite joins a sqlite3.Connection; "
    "use the sync enqueue methods inside conveyor.transaction(conn)"
)


def insert_through(params: JobInsertThroughParams, store_path: str) -> Sequence[str]:
    """Write ``params.jobs`` through ``params.connection`` (a ``sqlite3.Connection`` to
    ``store_path``) in its transaction; the ids standing for the jobs."""
    conn = joined_connection(params.connection, store_path)
    begin_as_the_driver_would(conn)
    conn.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        # The schema exists once the app opened its store; this is one PRAGMA read then.
        # Otherwise it is created here, in the caller's transaction (DDL is
        # transactional in SQLite: rolled back with it).
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            apply_migrations(conn)
        ids = insert_in(conn, params.jobs, time.time())
    except BaseException:
        # SQLite may have rolled the whole transaction back itself (disk full): then
        # the savepoint is gone, and the cause is what the caller must see.
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
                conn.execute(f"RELEASE {_SAVEPOINT}")
        raise
    conn.execute(f"RELEASE {_SAVEPOINT}")
    return ids


def begin_as_the_driver_would(conn: sqlite3.Connection) -> None:
    """Open the transaction the connection would open before the caller's next write.

    ``sqlite3`` begins implicitly before ``INSERT``/``UPDATE``/``DELETE`` only, not
    before ``SAVEPOINT``; a savepoint outside a transaction would begin one that its
    ``RELEASE`` commits, so jobs enqueued before the caller's first write would commit
    early. In autocommit mode nothing is begun: the jobs commit at once, like the
    caller's own statements."""
    if conn.in_transaction:
        return
    autocommit = getattr(conn, "autocommit", -1)  # Python 3.12+; -1: legacy control
    if autocommit is True or (autocommit == -1 and conn.isolation_level is None):
        return
    conn.execute(f"BEGIN {conn.isolation_level or ''}".strip())


def check_same_file(conn: sqlite3.Connection, store_path: str) -> None:
    """Refuse a connection to another database than the app's store: the jobs would
    land where no worker of this app looks."""
    main = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "")
    if not main or store_path == ":memory:":
        raise ConfigurationError(
            "transactional enqueue on SQLite needs a connection to the app's store file; "
            "an in-memory database cannot be shared between connections"
        )
    try:
        same = os.path.samefile(main, store_path)
    except OSError:
        same = False
    if not same:
        raise ConfigurationError(
            f"the connection is to {main}, but the app's store is {store_path}: "
            "a transactional enqueue must go to the store's own file"
        )


@contextmanager
def task_connection(target: SQLiteTarget) -> Iterator[sqlite3.Connection]:
    """A connection for a task's own writes (``current_job().transaction()``): sqlite3's
    default implicit transactions (the first write begins one), the store's busy
    timeout, closed (and so rolled back if not committed) when the block ends."""
    conn = sqlite3.connect(target.path, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(target.busy_timeout_ms)}")
        yield conn
    finally:
        conn.close()


def joined_connection(connection: object, store_path: str) -> sqlite3.Connection:
    """``connection`` as a sqlite3 connection to the store's file, or a refusal."""
    if not isinstance(connection, sqlite3.Connection):
        raise ConfigurationError(
            f"the sqlite backend joins a sqlite3.Connection, got {type(connection).__name__}"
        )
    check_same_file(connection, store_path)
    return connection
