"""Concurrency and rate limits on SQLite: the shared engine (:mod:`conveyor.backends.sql.limits`)
bound to :data:`~conveyor.backends.sqlite.dialect.SQLITE`.

The claim statement stays the same one-statement ``UPDATE ... RETURNING`` (so unlimited
queues pay nothing but one ``SELECT 1 FROM limits LIMIT 1`` per claim batch); it does
not return the jobs' limit keys, so they are read here, only when limits exist.

Example::

    claimed = apply_limits(conn, claimed, now)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from conveyor.backends.base import ClaimedJob
from conveyor.backends.sql import limits
from conveyor.backends.sqlite.dialect import SQLITE


def limits_exist(conn: sqlite3.Connection) -> bool:
    """One indexed probe per claim: no limit ever declared -> nothing else to do."""
    return limits.limits_exist(SQLITE, conn)


def apply_limits(
    conn: sqlite3.Connection, claimed: Sequence[ClaimedJob], now: float
) -> list[ClaimedJob]:
    """The claimed jobs that may run; the others are deferred (see
    :func:`conveyor.backends.sql.limits.apply_limits`)."""
    keyed = limits.limit_keys(SQLITE, conn, [j.id for j in claimed])
    return limits.apply_limits(SQLITE, conn, claimed, keyed, now)
