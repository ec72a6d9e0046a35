"""PostgreSQL's :class:`~conveyor.backends.sql.dialect.Dialect`: ``%s`` placeholders,
lists as one array parameter, ``FOR UPDATE`` row locks (concurrent writers), inserts
that skip with ``ON CONFLICT DO NOTHING``, the server's clock.

Example:
    >>> POSTGRES.sql("SELECT 1 FROM jobs WHERE id = ?")
    'SELECT 1 FROM jobs WHERE id = %s'
"""

from __future__ import annotations

from conveyor.backends.postgres.connection import read_packaged
from conveyor.backends.postgres.sql import NOW
from conveyor.backends.sql.dialect import Dialect, Executor


def server_now(cur: Executor) -> float:
    """The server's clock (epoch seconds), once per transaction that needs a value."""
    return float(cur.execute(f"SELECT {NOW}").fetchone()[0])


def _query(name: str) -> str:
    return read_packaged(f"queries/{name}.sql")


POSTGRES = Dialect(
    name="postgres",
    param="%s",
    lock=" FOR UPDATE",
    array=True,
    chunk=None,
    ignore=("INSERT", " ON CONFLICT DO NOTHING"),
    clock=server_now,
    queries={"job_insert_flow": _query("job_insert_flow")},
)
