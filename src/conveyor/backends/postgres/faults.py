"""PostgreSQL faults -> conveyor's errors: a server that cannot be reached (down,
restarting, network cut, pool exhausted for too long) is :class:`BackendUnavailable`,
which the worker backs off on and retries; everything else stays what psycopg raised.

Example::

    @translate_faults
    class PostgresBackend: ...
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from conveyor.errors import BackendUnavailable

_T = TypeVar("_T")


def translate_faults(cls: _T) -> _T:
    """Wrap each public method of ``cls`` (and of its mixins) so that a lost server
    leaves it as :class:`BackendUnavailable`, its cause chained."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        method = inspect.getattr_static(cls, name)
        if inspect.isfunction(method):
            setattr(cls, name, _translating(method))
    return cls


def _translating(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except psycopg.OperationalError as exc:  # PoolTimeout is one too
            raise BackendUnavailable(f"PostgreSQL at {self.url} is unavailable: {exc}") from exc

    return call
