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

from typing import Any, TypeVar

import psycopg

from conveyor.backends.translating import translating_methods
from conveyor.errors import BackendUnavailable, StoreReplaced

_T = TypeVar("_T")


def translate_faults(cls: _T) -> _T:
    """Wrap each public method of ``cls`` (and of its mixins) so that a lost server
    leaves it as :class:`BackendUnavailable`, its cause chained."""
    return translating_methods(cls, _translate)


def _translate(backend: Any, exc: Exception) -> BaseException | None:
    if isinstance(exc, psycopg.OperationalError):  # PoolTimeout is one too
        return BackendUnavailable(f"PostgreSQL at {backend.url} is unavailable: {exc}")
    if isinstance(exc, (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName)):
        # The backend migrated the schema when it opened: its tables missing now means
        # the schema was dropped under it. Serving on would fail every call (or, after
        # a re-create, serve an empty store the others do not see): stop, say so.
        return StoreReplaced(
            f"PostgreSQL schema {backend.schema!r} at {backend.url} lost conveyor's tables "
            f"while in use (dropped?): {str(exc).splitlines()[0]}; a new worker or "
            "enqueue creates the schema again"
        )
    return None
