"""Workflows and unique jobs on SQLite: the shared engine (:mod:`conveyor.backends.sql.flow`)
bound to :data:`~conveyor.backends.sqlite.dialect.SQLITE`.

Every function runs inside the caller's ``BEGIN IMMEDIATE`` transaction, so a child
becomes ready (or cancelled) in the same commit as its parent's finish, and a unique
key is settled atomically with the insert (the ``jobs_unique`` index is the backstop).

Example::

    with backend._write() as conn:
        results = insert_flow(conn, params, time.time())
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence

from conveyor.backends.base import Dependency, JobInsertParams
from conveyor.backends.sql import flow
from conveyor.backends.sqlite.dialect import SQLITE


def insert_flow(
    conn: sqlite3.Connection, params: Sequence[JobInsertParams], now: float
) -> list[str]:
    """See :func:`conveyor.backends.sql.flow.insert_flow`."""
    return flow.insert_flow(SQLITE, conn, params, now)


def settle(
    conn: sqlite3.Connection, succeeded: Sequence[str], failed: Mapping[str, str], now: float
) -> int:
    """See :func:`conveyor.backends.sql.flow.settle` (how many became ready)."""
    return flow.settle(SQLITE, conn, succeeded, failed, now)


def dependencies(conn: sqlite3.Connection, ids: Sequence[str]) -> list[Dependency]:
    """See :func:`conveyor.backends.sql.flow.dependencies`."""
    return flow.dependencies(SQLITE, conn, ids)
