"""The Operations half of the PostgreSQL backend (listing, filters, bulk actions, import,
backup, logs, integrity, stats, queues, workers): mixed into ``PostgresBackend``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool


class PostgresOperations:
    """Operations methods of :class:`~conveyor.backends.postgres.backend.PostgresBackend`
    (the ``Operations`` protocol); they share its pool and ``_tx()``."""

    _pool: ConnectionPool
