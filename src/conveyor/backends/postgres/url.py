"""Parse a conveyor PostgreSQL URL: libpq's URL plus conveyor's own query options.

``postgresql://user:pass@host:5432/db?schema=conveyor`` (``postgres://`` too). Options
removed before the URL reaches libpq (every other option, e.g. ``sslmode``, is libpq's):

- ``schema`` (default ``conveyor``): the schema holding conveyor's tables; created on
  first use. Several apps (or test runs) share one database with a schema each.
- ``pool_max``: the most connections this process's pool opens. Default: 10, raised to
  a worker's concurrency + 3 when it registers (its tasks may each hold one while the
  fetcher, completer and heartbeat hold theirs); given, it is used as is.

Query values mean what libpq makes of them: percent-escapes are decoded and ``+`` is a
plus, not a space (libpq is not an HTML form). Each value libpq gets is decoded once and
percent-encoded again, so one with spaces, ``+``, ``%`` or ``=`` reaches the server
exactly, e.g. ``?options=-c%20statement_timeout%3D5000`` (or written with a bare space
and ``=``, which libpq itself would refuse).

Imports no driver: ``conveyor.App`` validates URLs with it before psycopg is needed.

Example:
    >>> t = parse_postgres_url("postgresql://app:s3cret@db:5432/main?schema=jobs&sslmode=require")
    >>> t.schema, t.pool_max, t.safe_url
    ('jobs', 10, 'postgresql://app:***@db:5432/main?schema=jobs&sslmode=require')
    >>> t.conninfo
    'postgresql://app:s3cret@db:5432/main?sslmode=require'
    >>> parse_postgres_url("postgresql://db/main?options=-c statement_timeout=5000").conninfo
    'postgresql://db/main?options=-c%20statement_timeout%3D5000'
"""

from __future__ import annotations

import dataclasses
import re
from urllib.parse import quote, unquote, urlsplit, urlunsplit

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
    query = query_pairs(parts.query)
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
    conninfo = urlunsplit(parts._replace(query=query_string(rest)))
    return PostgresTarget(conninfo, redacted(url), schema, pool_max, "pool_max" in ours)


def query_pairs(query: str) -> list[tuple[str, str]]:
    """``key=value`` pairs of a URL's query, decoded as libpq decodes them: ``%XX``
    escapes only (``+`` stays a plus); the first ``=`` ends the key, so a value may hold
    more.

    >>> query_pairs("options=-c+a%3Db&sslmode=")
    [('options', '-c+a=b'), ('sslmode', '')]
    """
    pairs = []
    for item in query.split("&"):
        if item:
            key, _, value = item.partition("=")
            pairs.append((unquote(key), unquote(value)))
    return pairs


def query_string(pairs: list[tuple[str, str]]) -> str:
    """The query libpq decodes back to exactly ``pairs``: every byte but letters, digits
    and ``-._~`` percent-encoded (a space is ``%20``, never ``+``).

    >>> query_string([("options", "-c a=b+c%")])
    'options=-c%20a%3Db%2Bc%25'
    """
    return "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in pairs)
