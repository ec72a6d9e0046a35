"""Which store a URL names: one :class:`Store` record per store (its schemes, backend
class, URL check, existence check, pip extra, DDL), all imported by name only when a URL
of that scheme is used.

Below the app (``App``), the transactions (``transaction(app)``) and the config files
(``url = ...``), which all check or open URLs; it imports no backend up front. A new
store is one more record in :data:`STORES` (and its package under ``backends/``).

Example:
    >>> backend_class("memory://").__name__
    'MemoryBackend'
    >>> store_for("postgres://db/main").extra
    'postgres'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

if TYPE_CHECKING:
    from conveyor.backends.base import Backend


@dataclass(frozen=True)
class Store:
    """What conveyor knows of one store before importing it. Every target is a
    ``"module:attr"`` string, imported only when a URL of the store is used."""

    #: The store's name, as its backend's ``name`` says it (``conveyor[<extra>]`` aside).
    name: str
    #: For messages: "PostgreSQL", "MariaDB/MySQL", ...
    display: str
    #: The URL schemes that name it, the first the canonical one.
    schemes: tuple[str, ...]
    #: The backend class.
    backend: str
    #: Functions validating a URL without connecting or touching a file (each raises
    #: ConfigurationError), run in order; their modules import no driver.
    url_checks: tuple[str, ...]
    #: A URL of it, for the message naming the URLs conveyor opens (None: not named).
    example: str | None
    #: The pip extra its driver comes with (None: the standard library is enough).
    extra: str | None = None
    #: A function raising StoreNotFound unless the store at a URL exists (a SQLite file,
    #: a PostgreSQL schema); None: the store always exists (Redis: keys under a prefix).
    store_check: str | None = None
    #: A function (url) -> its whole DDL as one script, without connecting (``conveyor
    #: migrate-schema --sql``); None: the store has no schema.
    ddl: str | None = None


#: Every store conveyor opens, in the order messages list them.
STORES: tuple[Store, ...] = (
    Store(
        name="sqlite",
        display="SQLite",
        schemes=("sqlite",),
        backend="conveyor.backends.sqlite.backend:SQLiteBackend",
        url_checks=("conveyor.backends.sqlite.connection:parse_sqlite_url",),
        example="sqlite:///path.db",
        store_check="conveyor.backends.sqlite.connection:require_existing_store",
        ddl="conveyor.stores:sqlite_ddl",
    ),
    Store(
        name="redis",
        display="Redis",
        schemes=("redis", "rediss"),
        backend="conveyor.backends.redis.backend:RedisBackend",
        # The address first: redis-py's parser itself trips over a bad port.
        url_checks=(
            "conveyor.stores:check_redis_address",
            "conveyor.backends.redis.url:parse_redis_url",
        ),
        example="redis://host:port/db",
        extra="redis",
    ),
    Store(
        name="postgres",
        display="PostgreSQL",
        schemes=("postgresql", "postgres"),
        backend="conveyor.backends.postgres.backend:PostgresBackend",
        url_checks=("conveyor.backends.postgres.url:parse_postgres_url",),
        example="postgresql://user@host/db",
        extra="postgres",
        store_check="conveyor.backends.postgres.connection:require_existing_store",
        ddl="conveyor.stores:postgres_ddl",
    ),
    Store(
        name="mariadb",
        display="MariaDB/MySQL",
        schemes=("mariadb", "mysql"),
        backend="conveyor.backends.mariadb.backend:MariaDBBackend",
        url_checks=("conveyor.backends.mariadb.url:parse_mariadb_url",),
        example="mariadb://user:pass@host:port/db",
        extra="mariadb",
        store_check="conveyor.backends.mariadb.connection:require_existing_store",
        ddl="conveyor.backends.mariadb.connection:schema_ddl",
    ),
    Store(
        name="memory",
        display="memory",
        schemes=("memory",),
        backend="conveyor.backends.memory.backend:MemoryBackend",
        url_checks=("conveyor.backends.memory.url:parse_memory_url",),
        example=None,  # for tests and demos: not offered where a URL was mistyped
    ),
)

#: URL scheme -> its store.
BY_SCHEME: dict[str, Store] = {scheme: s for s in STORES for scheme in s.schemes}

# The per-scheme tables of before the records, derived (app.py re-exports them).
#: URL scheme -> "module:Class".
BACKENDS = {scheme: s.backend for scheme, s in BY_SCHEME.items()}
#: URL scheme -> "module:function" that parses a URL of it (the last of its checks).
URL_CHECKS = {scheme: s.url_checks[-1] for scheme, s in BY_SCHEME.items()}
#: URL scheme -> "module:function" raising StoreNotFound unless the store exists.
STORE_CHECKS = {
    scheme: s.store_check for scheme, s in BY_SCHEME.items() if s.store_check is not None
}


def store_for(url: str) -> Store:
    """The store ``url`` names (ConfigurationError for a scheme conveyor does not open)."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    found = BY_SCHEME.get(scheme)
    if found is None:
        *others, last = [s.example for s in STORES if s.example is not None]
        raise ConfigurationError(
            f"unsupported store URL {redacted(url)!r}; use {', '.join(others)} or {last}"
        )
    return found


def _imported(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def check_url(url: str) -> None:
    """Raise ConfigurationError when ``url`` is not a store URL conveyor can open.

    Only parses: nothing is connected to, created or imported beyond the parser.

    Example:
        >>> check_url("sqlite:///jobs.db")
        >>> check_url("sqlite://x")
        Traceback (most recent call last):
        ...
        conveyor.errors.ConfigurationError: sqlite URL 'sqlite://x' has a host; use sqlite:///relative.db or sqlite:////abs.db
    """
    for check in store_for(url).url_checks:
        _imported(check)(url)


def check_redis_address(url: str) -> None:
    """What redis-py would only reject with a bare ValueError at the first command."""
    from urllib.parse import urlsplit

    parts, shown = urlsplit(url), redacted(url)
    try:
        parts.port  # noqa: B018 - the property raises on a port that is not a number
    except ValueError:
        raise ConfigurationError(f"the port in {shown!r} is not a number") from None
    if not parts.hostname:
        raise ConfigurationError(f"Redis URL {shown!r} names no host; use redis://host:6379/0")
    db = parts.path.strip("/")
    if db and not db.isdigit():
        raise ConfigurationError(f"the database in {shown!r} must be a number, as in /0")


def require_store(url: str) -> None:
    """Raise :class:`~conveyor.errors.StoreNotFound` unless the store at ``url`` exists.

    Creates and changes nothing: read-only tools (``conveyor status``, the dashboard)
    call it before opening the backend, so a mistyped path is an error, not an empty
    queue.
    """
    check = store_for(url).store_check
    if check is not None:
        _imported(check)(url)


def _needs_extra(store: Store, scheme: str, exc: ImportError) -> ConfigurationError:
    return ConfigurationError(
        f"the {scheme} backend needs an extra: pip install "
        f"'conveyor[{store.extra or scheme}]' ({exc})"
    )


def backend_class(url: str) -> type[Backend]:
    """The backend class for ``url``, imported but not opened (its ``name`` and
    ``features`` are class attributes: what a store can do, known without connecting)."""
    store = store_for(url)
    try:
        cls: type[Backend] = _imported(store.backend)
    except ImportError as exc:
        raise _needs_extra(store, url.split(":", 1)[0].lower(), exc) from None
    return cls


def open_backend(url: str) -> Backend:
    """Open the backend for ``url`` (importing its module only now)."""
    cls = backend_class(url)
    backend: Backend = cls(url)  # type: ignore[call-arg]
    return backend


def schema_ddl(url: str) -> str | None:
    """The whole DDL of the store at ``url`` as one script, without connecting; None
    for a store without a schema (Redis, memory)."""
    check_url(url)
    ddl = store_for(url).ddl
    return None if ddl is None else str(_imported(ddl)(url))


def sqlite_ddl(url: str) -> str:
    """SQLite's migrations, in order, as one script."""
    from conveyor.backends.sqlite.connection import _MIGRATIONS, migration_script

    return "\n".join(migration_script(target) for target in _MIGRATIONS) + "\n"


def postgres_ddl(url: str) -> str:
    """PostgreSQL's DDL for the URL's ``?schema=``."""
    from conveyor.backends.postgres.connection import schema_sql
    from conveyor.backends.postgres.url import parse_postgres_url

    return schema_sql(parse_postgres_url(url).schema)
