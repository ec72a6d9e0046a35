"""The PostgreSQL store's "pool" where psycopg_pool cannot run: a subinterpreter (the
interpreter pool's, ``--pool interpreter``) forbids daemon threads, and psycopg_pool's
scheduler and workers are daemon threads. There the store keeps one connection, opened
at first use and opened again after it broke, lent to one caller at a time: a
subinterpreter runs one job at a time, whose durable steps and enqueues need no more.

Example::

    pool = OneConnection(target.conninfo, connect_options(target))
    with pool.connection() as conn:   # committed (autocommit: a no-op) or rolled back
        conn.execute("SELECT 1")
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg


class OneConnection:
    """What the store uses of ``psycopg_pool.ConnectionPool``, over one connection."""

    min_size = max_size = 1

    def __init__(self, conninfo: str, kwargs: dict[str, Any]) -> None:
        self._conninfo, self._kwargs = conninfo, kwargs
        self._lock = threading.Lock()  # one caller at a time, as a pool of one would
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None

    @contextlib.contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """The connection, as the pool's ``connection()`` lends one: its transaction
        committed when the block ends, rolled back when it raises."""
        import psycopg

        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self._conninfo, **self._kwargs)
            conn = self._conn
            try:
                yield conn
            except BaseException:
                if not conn.closed:
                    with contextlib.suppress(psycopg.Error):
                        conn.rollback()
                raise
            else:
                if not conn.closed:
                    conn.commit()
            finally:
                if conn.closed or conn.broken:
                    self._conn = None

    def resize(self, min_size: int, max_size: int | None = None) -> None:
        """One connection it stays (one job at a time uses it)."""

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
