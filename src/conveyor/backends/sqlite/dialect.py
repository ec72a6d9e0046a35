"""SQLite's :class:`~conveyor.backends.sql.dialect.Dialect`: ``?`` placeholders, lists
as ``IN (...)`` in chunks under the variable limit, no row locks (every write holds
the database's write lock from ``BEGIN IMMEDIATE``), ``INSERT OR IGNORE``, this
process's clock.

Example:
    >>> SQLITE.insert_ignore("job_deps (parent_id, child_id) VALUES (?, ?)")
    'INSERT OR IGNORE INTO job_deps (parent_id, child_id) VALUES (?, ?)'
"""

from __future__ import annotations

import time

from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sqlite.connection import load_query


def _clock(_: Executor) -> float:
    return time.time()


SQLITE = Dialect(
    name="sqlite",
    param="?",
    lock="",
    array=False,
    chunk=500,  # rows.chunks' size: well under SQLITE_MAX_VARIABLE_NUMBER everywhere
    ignore=("INSERT OR IGNORE", ""),
    clock=_clock,
    queries={"job_insert_flow": load_query("job_insert_flow")},
)
