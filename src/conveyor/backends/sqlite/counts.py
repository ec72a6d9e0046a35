"""Kept counts on SQLite (``conveyor queue-counts on``): jobs per (queue, state) in a
table that triggers keep in the transaction of every write to ``jobs``
(``queue_counts.sql``), so ``queue_stats`` (``conveyor status``, ``conveyor queues``,
the dashboard) reads a row per (queue, state) instead of counting every job.

Off by default, as the search index is: SQLite runs a trigger as a sub-program per row,
about 4 us of CPU each, and a job's life fires three (insert, claim, finish). Measured
with ``python -m bench.count_cost`` (BENCHMARKS.md): a cost every write pays, for reads
that only a store of hundreds of thousands of jobs needs. Turning it on counts every job
once (one write transaction); turning it off drops the table and its triggers.

A mixin of :class:`~conveyor.backends.sqlite.backend.SQLiteBackend`.

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> b = SQLiteBackend("sqlite:///:memory:")
    >>> b.queue_counts_enabled(), b.queue_counts_set(True), b.queue_counts_enabled()
    (False, None, True)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from conveyor.backends.sql.counts_capped import Counted
from conveyor.backends.sql.ops_read import SqlReads

#: The kept counts' objects, in the order :meth:`SQLiteCounts.queue_counts_set` drops them.
_OBJECTS = (
    ("TRIGGER", "queue_counts_insert"),
    ("TRIGGER", "queue_counts_update"),
    ("TRIGGER", "queue_counts_delete"),
    ("INDEX", "jobs_queued_since"),
    ("TABLE", "queue_counts"),
)


class SQLiteCounts(SqlReads):
    """``queue_stats``' rows from ``queue_counts`` while it exists, else the engine's
    (one scan, or the capped reads when a cap is asked for)."""

    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _read: Callable[..., list[tuple[object, ...]]]

    def queue_counts_set(self, on: bool) -> None:
        """Turn the kept counts on (every job counted once) or off (table and triggers
        dropped: writes pay nothing more, ``queue_stats`` scans)."""
        from conveyor.backends.sqlite.connection import _split, read_packaged

        with self._write() as conn:
            if on:
                for statement in _split(read_packaged("queue_counts.sql")):
                    conn.execute(statement)
            else:
                for kind, name in _OBJECTS:
                    conn.execute(f"DROP {kind} IF EXISTS {name}")

    def queue_counts_enabled(self) -> bool:
        found = self._read("SELECT 1 FROM sqlite_master WHERE name = 'queue_counts_delete'")
        return bool(found)

    def _queue_stats_rows(self, cap: int | None, exact_up_to: int = 0) -> Counted:
        # The last trigger made (and the first dropped) says the counts are whole; kept
        # counts are exact, so a cap has nothing to stop.
        if self.queue_counts_enabled():
            return self._ops_rows(self._dialect.queries["queue_stats_kept"]), set()
        return super()._queue_stats_rows(cap, exact_up_to)
