"""PostgreSQL faults -> conveyor's errors: a server that cannot be reached (down,
restarting, network cut, pool exhausted for too long) is :class:`BackendUnavailable`,
which the worker backs off on and retries; conveyor's tables gone from under a backend
that had them (the schema dropped while a worker runs) is :class:`StoreReplaced`, which
stops a worker with one line naming the schema (as a SQLite file deleted under it does);
everything else stays what psycopg raised.

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

from conveyor.errors import BackendUnavailable, StoreReplaced

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
        except (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName) as exc:
            # The backend migrated the schema when it opened: its tables missing now means
            # the schema was dropped under it. Serving on would fail every call (or, after
            # a re-create, serve an empty store the others do not see): stop, say so.
            raise StoreReplaced(
                f"PostgreSQL schema {self.schema!r} at {self.url} lost conveyor's tables "
                f"while in use (dropped?): {str(exc).splitlines()[0]}; a new worker or "
                "enqueue creates the schema again"
            ) from exc

    return call
