"""Open the redis-py client and turn its connection failures into conveyor's error.

Example:
    >>> guard = Unavailable("redis://localhost:1/0")
    >>> try:
    ...     with guard:
    ...         raise redis.exceptions.ConnectionError("refused")
    ... except BackendUnavailable as exc:
    ...     print(exc)
    Redis at redis://localhost:1/0 is unavailable (ConnectionError: refused); retry once it is back
    >>> try:
    ...     with guard:
    ...         raise redis.exceptions.AuthenticationError("invalid password")
    ... except BackendUnavailable as exc:
    ...     print(str(exc).split(";")[0])
    Redis at redis://localhost:1/0: authentication failed (invalid password)
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import redis
import redis.cluster
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from conveyor.backends.redis.url import RedisOptions
from conveyor.errors import BackendUnavailable

#: A reply slower than this means the server is gone (blocking calls wait less).
SOCKET_TIMEOUT = 15.0
CONNECT_TIMEOUT = 5.0

#: redis-py errors that mean "Redis cannot be reached right now".
UNAVAILABLE = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError (restart in progress)
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ReadOnlyError,  # a replica promoted mid-failover
    redis.exceptions.MasterDownError,
)


class Unavailable:
    """Context manager: re-raise redis-py's connection failures as BackendUnavailable.

    A class rather than ``@contextmanager``: it sits on every call of the hot path, and
    one reusable object costs less than a generator per call.
    """

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if isinstance(exc, redis.exceptions.AuthenticationError):
            # A ConnectionError to redis-py, but not an outage: waiting will not fix it.
            raise BackendUnavailable(
                f"Redis at {self.url}: authentication failed ({exc}); put the password in "
                "the URL as redis://:PASSWORD@host:port/db (or redis://USER:PASSWORD@...)"
            ) from exc
        if exc is not None and isinstance(exc, UNAVAILABLE):
            raise BackendUnavailable(
                f"Redis at {self.url} is unavailable ({type(exc).__name__}: {exc}); "
                "retry once it is back"
            ) from exc


def open_client(options: RedisOptions) -> Any:
    """A redis-py client (or RedisCluster) for ``options``; decodes replies to str.

    No automatic retries: a script whose reply was lost may have run, so repeating it is
    the caller's decision (see ``retrying.py``). Stale pooled connections are replaced by
    redis-py on checkout, so calls work again as soon as Redis is back.
    """
    kwargs: dict[str, Any] = {
        "decode_responses": True,
        # Bytes that are not UTF-8 (a hash written around the API) decode to surrogate
        # escapes instead of failing the whole reply; the records note them.
        "encoding_errors": "surrogateescape",
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
        "retry": Retry(NoBackoff(), 0),
    }
    with Unavailable(options.safe_url):
        if not options.cluster:
            return redis.Redis.from_url(options.client_url, **kwargs)
        # RedisCluster connects now, to learn the slot map (Redis connects lazily).
        try:
            return redis.cluster.RedisCluster.from_url(options.client_url, **kwargs)
        except redis.exceptions.RedisClusterException as exc:
            raise redis.exceptions.ConnectionError(str(exc)) from exc
