"""Which store a URL names: its scheme's backend class, the check of its URL and of
its existence, all imported by name only when a URL of that scheme is used.

Below the app (``App``), the transactions (``transaction(app)``) and the config files
(``url = ...``), which all check or open URLs; it imports no backend up front.

Example:
    >>> backend_class("memory://").__name__
    'MemoryBackend'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

if TYPE_CHECKING:
    from conveyor.backends.base import Backend

#: URL scheme -> "module:Class"; imported only when an app uses that scheme.
BACKENDS = {
    "sqlite": "conveyor.backends.sqlite.backend:SQLiteBackend",
    "redis": "conveyor.backends.redis.backend:RedisBackend",
    "rediss": "conveyor.backends.redis.backend:RedisBackend",
    "postgresql": "conveyor.backends.postgres.backend:PostgresBackend",
    "postgres": "conveyor.backends.postgres.backend:PostgresBackend",
    "memory": "conveyor.backends.memory.backend:MemoryBackend",
}

#: URL scheme -> the pip extra its driver comes with (when it is not the scheme itself).
_EXTRAS = {"rediss": "redis", "postgresql": "postgres"}


#: URL scheme -> "module:function" that validates a URL of it without connecting or
#: touching a file (raises ConfigurationError); the modules import no driver.
URL_CHECKS = {
    "sqlite": "conveyor.backends.sqlite.connection:parse_sqlite_url",
    "redis": "conveyor.backends.redis.url:parse_redis_url",
    "rediss": "conveyor.backends.redis.url:parse_redis_url",
    "postgresql": "conveyor.backends.postgres.url:parse_postgres_url",
    "postgres": "conveyor.backends.postgres.url:parse_postgres_url",
    "memory": "conveyor.backends.memory.url:parse_memory_url",
}
#: URL scheme -> "module:function" raising StoreNotFound unless the store exists (a
#: SQLite file, a PostgreSQL schema); a scheme without one (Redis: keys under a prefix,
#: nothing to create) always exists.
STORE_CHECKS = {
    "sqlite": "conveyor.backends.sqlite.connection:require_existing_store",
    "postgresql": "conveyor.backends.postgres.connection:require_existing_store",
    "postgres": "conveyor.backends.postgres.connection:require_existing_store",
}


def _scheme(url: str) -> str:
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in BACKENDS:
        raise ConfigurationError(
            f"unsupported store URL {redacted(url)!r}; use sqlite:///path.db, "
            "redis://host:port/db or postgresql://user@host/db"
        )
    return scheme


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
    scheme = _scheme(url)
    if scheme.startswith("redis"):
        _check_redis_address(url)  # first: the parser itself trips over a bad port
    _imported(URL_CHECKS[scheme])(url)


def _check_redis_address(url: str) -> None:
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
    check = STORE_CHECKS.get(_scheme(url))
    if check is not None:
        _imported(check)(url)


def backend_class(url: str) -> type[Backend]:
    """The backend class for ``url``, imported but not opened (its ``name`` and
    ``features`` are class attributes: what a store can do, known without connecting)."""
    scheme = _scheme(url)
    try:
        cls: type[Backend] = _imported(BACKENDS[scheme])
    except ImportError as exc:
        raise ConfigurationError(
            f"the {scheme} backend needs an extra: pip install 'conveyor[{_EXTRAS.get(scheme, scheme)}]' ({exc})"
        ) from None
    return cls


def open_backend(url: str) -> Backend:
    """Open the backend for ``url`` (importing its module only now)."""
    scheme = _scheme(url)
    target = BACKENDS[scheme]
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(
            f"the {scheme} backend needs an extra: pip install 'conveyor[{_EXTRAS.get(scheme, scheme)}]' ({exc})"
        ) from None
    backend: Backend = getattr(module, attr)(url)
    return backend
