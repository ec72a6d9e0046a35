"""What ``conveyor.transaction(conn)`` accepts: adapters from a connection-like object
to the driver connection the backend writes through.

One small registry keyed by the *qualified name* of a type (``"module.Class"``), so no
driver or ORM is imported until an object of its type is handed in; an entry's adapter
may be given as ``"module:function"`` and is imported on first use. Lookup walks the
object's MRO, so a subclass (a custom ``Session``) finds its base's adapter.

Built in: ``sqlite3.Connection``, psycopg 3 ``Connection``/``AsyncConnection`` (as they
are), SQLAlchemy ``Connection``/``Session``/``scoped_session`` (sync) and
``AsyncConnection``/``AsyncSession`` (asyncio: unwrapped with ``await``, so they need
``async with conveyor.transaction(...)``), Django's ``django.db.connection`` and
``connections[alias]`` (:mod:`conveyor.contrib.django.db`). Another integration
registers its own with :func:`register_adapter`.

Example:
    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> joined = join(conn)
    >>> joined.connection is conn, joined.is_async
    (True, False)
    >>> join(object())
    Traceback (most recent call last):
    TypeError: conveyor.transaction() takes a sqlite3 or psycopg 3 connection, a SQLAlchemy Connection/Session or a Django connection, got object
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from conveyor.records import record

__all__ = ["Adapter", "Joined", "join", "register_adapter"]


@record  # frozen like a dataclass, without creating one at import (issue 16)
class Joined:
    """The driver connection a transactional enqueue writes through."""

    #: ``sqlite3.Connection``, ``psycopg.Connection`` or ``psycopg.AsyncConnection``
    connection: object
    #: an asyncio connection: only the ``aenqueue*`` methods can write through it
    is_async: bool = False
    #: asked again before every write (then ``connection`` is only the first answer):
    #: an ORM session emits a ``begin_nested()`` SAVEPOINT only when its connection is
    #: next asked for, so the jobs must ask too to land inside it
    current: Callable[[], object] | None = None
    #: the same for an asyncio session (awaited)
    acurrent: Callable[[], Awaitable[object]] | None = None

    def now(self) -> object:
        """The connection to write through now (sync)."""
        return self.current() if self.current is not None else self.connection

    async def anow(self) -> object:
        """The connection to write through now (asyncio)."""
        if self.acurrent is not None:
            return await self.acurrent()
        return self.now()


#: Given the object handed to ``conveyor.transaction``, the connection to write
#: through (or an awaitable of it, for an asyncio ORM object).
Adapter = Callable[[Any], "Joined | Awaitable[Joined]"]

_ADAPTERS: dict[str, Adapter | str] = {
    "sqlite3.Connection": "conveyor.transaction_adapters:as_is",
    "psycopg.Connection": "conveyor.transaction_adapters:as_is",
    "psycopg.AsyncConnection": "conveyor.transaction_adapters:as_is_async",
    "sqlalchemy.engine.base.Connection": "conveyor.transaction_adapters:sqlalchemy_connection",
    "sqlalchemy.orm.session.Session": "conveyor.transaction_adapters:sqlalchemy_session",
    "sqlalchemy.orm.scoping.scoped_session": "conveyor.transaction_adapters:sqlalchemy_session",
    "sqlalchemy.ext.asyncio.engine.AsyncConnection": (
        "conveyor.transaction_adapters:sqlalchemy_async_connection"
    ),
    "sqlalchemy.ext.asyncio.session.AsyncSession": (
        "conveyor.transaction_adapters:sqlalchemy_async_session"
    ),
    # django.db.connection (a proxy) and connections[alias] (the backend's wrapper)
    "django.utils.connection.ConnectionProxy": "conveyor.contrib.django.db:join_proxy",
    "django.db.backends.base.base.BaseDatabaseWrapper": "conveyor.contrib.django.db:join_wrapper",
}


def register_adapter(type_name: str, adapter: Adapter | str) -> None:
    """Accept objects of the type named ``type_name`` (``"package.module.Class"``, as
    ``f"{cls.__module__}.{cls.__qualname__}"`` spells it) in ``conveyor.transaction``.
    ``adapter`` (a callable, or ``"module:function"`` imported on first use) returns a
    :class:`Joined`, or an awaitable of one when unwrapping needs the event loop."""
    _ADAPTERS[type_name] = adapter


def join(given: object) -> Joined | Awaitable[Joined]:
    """The :class:`Joined` connection for ``given`` (awaitable for an asyncio ORM)."""
    for cls in type(given).__mro__:
        found = _ADAPTERS.get(f"{cls.__module__}.{cls.__qualname__}")
        if found is None:
            continue
        if isinstance(found, str):
            module, _, name = found.partition(":")
            found = _ADAPTERS[f"{cls.__module__}.{cls.__qualname__}"] = getattr(
                importlib.import_module(module), name
            )
        return found(given)
    raise TypeError(
        "conveyor.transaction() takes a sqlite3 or psycopg 3 connection, a SQLAlchemy "
        f"Connection/Session or a Django connection, got {type(given).__name__}"
    )


# -- the built-in adapters (imported only when used) ---------------------------------------


def as_is(conn: object) -> Joined:
    return Joined(conn)


def as_is_async(conn: object) -> Joined:
    return Joined(conn, is_async=True)


def sqlalchemy_connection(conn: Any) -> Joined:
    """The DBAPI connection under a SQLAlchemy ``Connection`` (checked out from its pool;
    the one its transaction runs on)."""
    return Joined(conn.connection.driver_connection)


def sqlalchemy_session(session: Any) -> Joined:
    """The connection the session's transaction uses (``session.connection()`` begins
    the session's transaction if it had not touched the database yet; asked again at
    every write, which emits a pending ``begin_nested()`` SAVEPOINT first)."""

    def current() -> object:
        return session.connection().connection.driver_connection

    return Joined(current(), current=current)


async def sqlalchemy_async_connection(conn: Any) -> Joined:
    """The asyncio driver connection (psycopg ``AsyncConnection``) under a SQLAlchemy
    ``AsyncConnection``."""
    raw = await conn.get_raw_connection()
    return Joined(raw.driver_connection, is_async=True)


async def sqlalchemy_async_session(session: Any) -> Joined:
    """As :func:`sqlalchemy_session`, awaited."""

    async def current() -> object:
        raw = await (await session.connection()).get_raw_connection()
        return raw.driver_connection

    return Joined(await current(), is_async=True, acurrent=current)
