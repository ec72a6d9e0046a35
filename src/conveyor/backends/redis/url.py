"""Parse a conveyor Redis URL: redis-py's URL plus conveyor's own query options.

Options (query string, removed before the URL reaches redis-py):

- ``prefix`` (default ``conveyor``): every key lives under ``{<prefix>}:``.
- ``result_ttl`` (seconds, default 7 days): how long finished jobs are kept.
- ``cluster`` (``1``/``true``): connect with ``redis.cluster.RedisCluster``.

Example:
    >>> o = parse_redis_url("redis://:secret@localhost:6379/0?prefix=app&result_ttl=60")
    >>> o.prefix, o.result_ttl, o.cluster, o.safe_url
    ('app', 60, False, 'redis://:***@localhost:6379/0?prefix=app&result_ttl=60')
    >>> o.client_url
    'redis://:secret@localhost:6379/0'
"""

from __future__ import annotations

import dataclasses
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from conveyor.errors import ConfigurationError
from conveyor.redaction import redacted

DEFAULT_PREFIX = "conveyor"
DEFAULT_RESULT_TTL = 7 * 24 * 3600
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclasses.dataclass(frozen=True, slots=True)
class RedisOptions:
    client_url: str  # what redis-py gets (password kept, conveyor options removed)
    safe_url: str  # what conveyor shows (secrets masked by redacted(), options kept)
    prefix: str
    result_ttl: int
    cluster: bool


def parse_redis_url(url: str) -> RedisOptions:
    """Split ``url`` into redis-py's URL and conveyor's options; validate them."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise ConfigurationError(f"not a Redis URL: {parts.scheme}://...")
    query = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in query if k in ("prefix", "result_ttl", "cluster")}
    rest = [(k, v) for k, v in query if k not in ours]
    prefix = ours.get("prefix", DEFAULT_PREFIX)
    try:
        result_ttl = int(ours.get("result_ttl", DEFAULT_RESULT_TTL))
    except ValueError:
        raise ConfigurationError(f"result_ttl must be whole seconds in {redacted(url)!r}") from None
    if result_ttl <= 0:
        raise ConfigurationError("result_ttl must be positive")
    flag = ours.get("cluster", "0").lower()
    if flag not in _TRUE | _FALSE:
        raise ConfigurationError(f"cluster must be 1 or 0, not {flag!r}")
    client_url = urlunsplit(parts._replace(query=urlencode(rest)))
    return RedisOptions(client_url, redacted(url), prefix, result_ttl, flag in _TRUE)
