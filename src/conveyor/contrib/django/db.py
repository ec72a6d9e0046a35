"""Django's database connection in ``conveyor.transaction(...)``, and the check that it
is the conveyor store's own database.

``conveyor.transaction(django.db.connection)`` (or ``connections["other"]``) writes the
jobs through the driver connection under Django's wrapper: a ``sqlite3`` connection or a
psycopg 3 one, in the transaction ``transaction.atomic()`` has open (Django begins it
with ``BEGIN`` on SQLite and by turning autocommit off on PostgreSQL; both are what
conveyor joins). Outside ``atomic()`` Django is in autocommit: the jobs commit at once,
as Django's own statements do.

The adapters are registered by name in :mod:`conveyor.transaction_adapters`, so this
module (and Django) is imported only when a Django connection is handed in.

Example (in a Django project whose database is the store's SQLite file)::

    with transaction.atomic():
        order = Order.objects.create(item="a lamp")
        with conveyor.transaction(django.db.connection):
            ship.enqueue(order.pk)
    # the order and its job commit together; an exception in atomic() rolls back both
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from conveyor.errors import ConfigurationError
from conveyor.transaction_adapters import Joined, join

__all__ = [
    "driver_connection",
    "identity_of",
    "join_proxy",
    "join_wrapper",
    "postgres_identity",
    "refuse",
    "static_mismatch",
]

#: Django's ``vendor`` -> the store URL schemes that can be the same database
_SCHEMES = {"sqlite": ("sqlite",), "postgresql": ("postgresql", "postgres")}


def join_proxy(proxy: Any) -> Joined | Any:
    """``django.db.connection`` is a proxy to this thread's wrapper of the default
    database: join that wrapper (resolved now, in the caller's thread, as Django's
    connections are per thread)."""
    return join(proxy._connections[proxy._alias])


def join_wrapper(wrapper: Any) -> Joined:
    """The driver connection under a Django ``DatabaseWrapper``, asked again before
    every write: Django may have closed and reopened it (``CONN_MAX_AGE``, a
    ``close_old_connections`` between requests)."""

    def current() -> object:
        # What Django checks before each of its own queries: inside an atomic block that
        # an error already doomed, a job must not be written either.
        wrapper.validate_no_broken_transaction()
        wrapper.ensure_connection()
        return driver_connection(wrapper)

    return Joined(current(), current=current)


def driver_connection(wrapper: Any) -> object:
    """``wrapper.connection`` when conveyor can join it (sqlite3, psycopg 3)."""
    conn = wrapper.connection
    if isinstance(conn, sqlite3.Connection) or type(conn).__module__.partition(".")[0] == "psycopg":
        return conn
    raise TypeError(
        f"conveyor.transaction() joins Django's sqlite3 or PostgreSQL-on-psycopg-3 "
        f"databases; DATABASES[{wrapper.alias!r}] ({wrapper.vendor}) is connected with "
        f"{type(conn).__module__}.{type(conn).__name__}"
    )


def static_mismatch(wrapper: Any, store_url: str) -> str | None:
    """Why ``wrapper``'s database cannot be the store at ``store_url``, from the settings
    alone (no connection); ``None`` when it may be (PostgreSQL: :func:`same_database`
    asks the servers)."""
    scheme = store_url.partition("://")[0].lower()
    schemes = _SCHEMES.get(wrapper.vendor)
    where = f"DATABASES[{wrapper.alias!r}]"
    if schemes is None:
        return f"{where} is {wrapper.vendor}: conveyor joins SQLite and PostgreSQL databases"
    if scheme not in schemes:
        return f"{where} is {wrapper.vendor} and the store is {scheme}://: not one database"
    if wrapper.vendor == "sqlite":
        from conveyor.backends.sqlite.connection import parse_sqlite_url

        store_path = parse_sqlite_url(store_url).path
        name = str(wrapper.settings_dict["NAME"])
        if not _same_file(name, store_path):
            return f"{where} is the file {name} and the store is {store_path}: not one file"
    return None


def _same_file(a: str, b: str) -> bool:
    if ":memory:" in (a, b) or a.startswith("file:"):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet: the same path is the same file
        return os.path.abspath(a) == os.path.abspath(b)


#: The query naming a PostgreSQL database honestly: its name on a server started at
#: that instant (two clusters started in the same microsecond are not a real pairing).
_IDENTITY = "SELECT current_database(), extract(epoch FROM pg_postmaster_start_time())::text"


def identity_of(driver: object) -> tuple[object, ...]:
    """The database the psycopg connection ``driver`` is on, as
    :func:`postgres_identity` names the store's. One read in the caller's transaction
    (opening it as psycopg would, as the enqueue that follows does)."""
    row = driver.execute(_IDENTITY).fetchone()  # type: ignore[attr-defined]
    return _as_tuple(row)


def postgres_identity(conninfo: str) -> tuple[object, ...]:
    """The store's database, asked over a connection of its own."""
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        return _as_tuple(conn.execute(_IDENTITY).fetchone())


def _as_tuple(row: Any) -> tuple[object, ...]:
    """A row in any row factory (Django's psycopg connection may use its own)."""
    if isinstance(row, dict):
        return tuple(row.values())
    return tuple(row)


def refuse(alias: str, database: str, why: str) -> ConfigurationError:
    """The error of a wrong ``"enqueue": "in_transaction"`` pairing."""
    return ConfigurationError(
        f'TASKS[{alias!r}]: "enqueue": "in_transaction" writes the jobs through '
        f"DATABASES[{database!r}], which must be the store's own database: {why} "
        '(use "enqueue": "on_commit" for a separate store)'
    )
