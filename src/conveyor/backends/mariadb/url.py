"""``mariadb://`` and ``mysql://`` URLs, parsed without importing a driver.

Example:
    >>> t = parse_mariadb_url("mariadb://app:secret@db:3307/jobs")
    >>> (t.host, t.port, t.user, t.database, t.safe_url)
    ('db', 3307, 'app', 'jobs', 'mariadb://app:***@db:3307/jobs')
    >>> parse_mariadb_url("mysql://app@db").port
    Traceback (most recent call last):
    ...
    conveyor.errors.ConfigurationError: MariaDB URL 'mysql://app@db' names no database; use mariadb://user:pass@host:3306/db
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

_FORM = "mariadb://user:pass@host:3306/db"


@dataclass(frozen=True)
class MariaDBTarget:
    """Where a MariaDB/MySQL store lives: the server and the database of its tables."""

    host: str
    port: int
    user: str
    password: str
    database: str
    #: The URL with its password masked, for messages and ``backend.url``.
    safe_url: str


def parse_mariadb_url(url: str) -> MariaDBTarget:
    """The target of ``url`` (ConfigurationError when it is not a usable one)."""
    shown = redacted(url)
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("mariadb", "mysql"):
        raise ConfigurationError(f"not a MariaDB URL: {shown!r}; use {_FORM}")
    try:
        port = parts.port or 3306
    except ValueError:
        raise ConfigurationError(f"the port in {shown!r} is not a number") from None
    database = unquote(parts.path.strip("/"))
    if not database:
        raise ConfigurationError(f"MariaDB URL {shown!r} names no database; use {_FORM}")
    if not database.replace("_", "").replace("$", "").isalnum():
        raise ConfigurationError(
            f"the database in {shown!r} must be letters, digits, '_' or '$' (it is quoted nowhere)"
        )
    return MariaDBTarget(
        host=parts.hostname or "127.0.0.1",
        port=port,
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        database=database,
        safe_url=shown,
    )
