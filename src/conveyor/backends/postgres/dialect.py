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
from conveyor.backends.sql.integrity import integrity_sql


def server_now(cur: Executor) -> float:
    """The server's clock (epoch seconds), once per transaction that needs a value."""
    return float(cur.execute(f"SELECT {NOW}").fetchone()[0])


def _query(name: str) -> str:
    return read_packaged(f"queries/{name}.sql")


#: The audit's spellings (``sql/integrity_check.sql``). Typed columns: a value is what
#: its column says, so what never comes is NaN or +Infinity (NaN sorts after every
#: number and equals itself), and a NULL lease never expires. Workers are judged by the
#: server's clock: live while the heartbeat is younger than %(heartbeat_ttl)s seconds.
INTEGRITY = {
    "quote": "quote_literal",
    "stale_before": f"{NOW} - %(heartbeat_ttl)s",
    "queue_unusable": "queue = ''",
    "waiting_on_text": "waiting_on",
    "run_at_text": "run_at",
    "run_at_never": "run_at IN ('NaN'::float8, 'Infinity'::float8)",
    "lease_text": "coalesce(lease_until::text, 'NULL')",
    "lease_never": "(lease_until IS NULL OR lease_until = 'NaN'::float8)",
}

POSTGRES = Dialect(
    name="postgres",
    param="%s",
    lock=" FOR UPDATE",
    array=True,
    chunk=None,
    ignore=("INSERT", " ON CONFLICT DO NOTHING"),
    clock=server_now,
    queries={
        "job_insert_flow": _query("job_insert_flow"),
        "integrity_check": integrity_sql(INTEGRITY),
    },
)
