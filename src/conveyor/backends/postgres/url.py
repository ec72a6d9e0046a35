"""Parse a conveyor PostgreSQL URL: libpq's URL plus conveyor's own query options.

``postgresql://user:pass@host:5432/db?schema=conveyor`` (``postgres://`` too). Options
removed before the URL reaches libpq (every other option, e.g. ``sslmode``, is libpq's):

- ``schema`` (default ``conveyor``): the schema holding conveyor's tables; created on
  first use. Several apps (or test runs) share one database with a schema each.
- ``pool_max``: the most connections this process's pool opens. Default: 10, raised to
  a worker's concurrency + 3 when it registers (its tasks may each hold one while the
  fetcher, completer and heartbeat hold theirs); given, it is used as is.

Imports no driver: ``conveyor.App`` validates URLs with it before psycopg is needed.

Example:
    >>> t = parse_postgres_url("postgresql://app:s3cret@db:5432/main?schema=jobs&sslmode=require")
    >>> t.schema, t.pool_max, t.safe_url
    ('jobs', 10, 'postgresql://app:***@db:5432/main?schema=jobs&sslmode=require')
    >>> t.conninfo
    'postgresql://app:s3cret@db:5432/main?sslmode=require'
"""

from __future__ import annotations

import dataclasses
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

DEFAULT_SCHEMA = "conveyor"
DEFAULT_POOL_MAX = 10
SCHEMES = ("postgresql", "postgres")
#: A plain lower-case identifier: used unquoted in search_path and DDL, never needs
#: quoting, and fits PostgreSQL's 63-byte name limit.
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclasses.dataclass(frozen=True, slots=True)
class PostgresTarget:
    conninfo: str  # what libpq gets (password kept, conveyor options removed)
    safe_url: str  # what conveyor shows (password masked)
    schema: str
    pool_max: int
    #: True when the URL set ``pool_max`` (then a worker's concurrency does not raise it)
    pool_max_given: bool = False


def parse_postgres_url(url: str) -> PostgresTarget:
    """Split ``url`` into libpq's URL and conveyor's options; validate them."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise ConfigurationError(f"not a PostgreSQL URL: {redacted(url)!r}")
    try:
        parts.port  # noqa: B018 - the property raises on a port that is not a number
    except ValueError:
        raise ConfigurationError(f"the port in {redacted(url)!r} is not a number") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in ("schema", "pool_max")}
    rest = [(k, v) for k, v in query if k not in ours]
    schema = ours.get("schema", DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.fullmatch(schema):
        raise ConfigurationError(
            f"schema must be a lower-case identifier (letters, digits, _), not {schema!r}"
        )
    try:
        pool_max = int(ours.get("pool_max", DEFAULT_POOL_MAX))
    except ValueError:
        raise ConfigurationError(f"pool_max must be a whole number in {redacted(url)!r}") from None
    if pool_max < 2:
        raise ConfigurationError(
            "pool_max must be at least 2 (a worker claims and finishes at once)"
        )
    conninfo = urlunsplit(parts._replace(query=urlencode(rest)))
    return PostgresTarget(conninfo, redacted(url), schema, pool_max, "pool_max" in ours)
