"""Workflows and unique jobs on PostgreSQL: the shared engine
(:mod:`conveyor.backends.sql.flow`) bound to
:data:`~conveyor.backends.postgres.dialect.POSTGRES`.

Every function runs inside the caller's transaction, so a child becomes ready (or
cancelled) in the same commit as its parent's finish. Unique keys: the holder is read
``FOR UPDATE`` and the insert is ``ON CONFLICT DO NOTHING`` on the ``jobs_unique`` index,
so two inserts of one key at once settle on one job (the loser waits for the winner's
commit, then reads it as the holder).

Example::

    with backend._tx() as cur:
        ids = insert_flow(cur, params, server_now(cur))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.base import Dependency, JobInsertParams
from conveyor.backends.postgres.dialect import POSTGRES, server_now
from conveyor.backends.sql import flow

Cursor = Any  # psycopg.Cursor[tuple[Any, ...]]; Any keeps psycopg out of import time

__all__ = ["Cursor", "dependencies", "insert_flow", "server_now", "settle"]


def insert_flow(cur: Cursor, params: Sequence[JobInsertParams], now: float) -> list[str]:
    """See :func:`conveyor.backends.sql.flow.insert_flow`."""
    return flow.insert_flow(POSTGRES, cur, params, now)


def settle(cur: Cursor, succeeded: Sequence[str], failed: Mapping[str, str], now: float) -> int:
    """See :func:`conveyor.backends.sql.flow.settle` (how many became ready, so the
    caller knows whether to wake workers)."""
    return flow.settle(POSTGRES, cur, succeeded, failed, now)


def dependencies(cur: Cursor, ids: Sequence[str]) -> list[Dependency]:
    """See :func:`conveyor.backends.sql.flow.dependencies`."""
    return flow.dependencies(POSTGRES, cur, ids)
