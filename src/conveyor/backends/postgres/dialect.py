"""PostgreSQL's :class:`~conveyor.backends.sql.dialect.Dialect`: ``%s`` placeholders,
lists as one array parameter, ``FOR UPDATE`` row locks (concurrent writers) and ``SKIP
LOCKED`` claims, inserts that skip with ``ON CONFLICT DO NOTHING``, the server's clock,
finishes as arrays (``finish.py``), :class:`Cursors` (the executor of the hot path), ids
in byte order (``COLLATE "C"``), logs in ``seq`` order, and ``--where`` conditions as
``jsonb`` comparisons (:func:`where_json`).

Example:
    >>> POSTGRES.sql("SELECT 1 FROM jobs WHERE id = ?")
    'SELECT 1 FROM jobs WHERE id = %s'
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from conveyor import records
from conveyor.backends import decoding
from conveyor.backends.base import ClaimedJob, WhereCondition
from conveyor.backends.postgres.connection import read_packaged
from conveyor.backends.postgres.finish import FINISH_QUERIES
from conveyor.backends.postgres.sql import BIGINT_MAX, INT_MAX, NOW, count_at_limit
from conveyor.backends.sql.dialect import Dialect, Executor, role_queries
from conveyor.backends.sql.integrity import integrity_sql
from conveyor.query import json_path


def server_now(cur: Executor) -> float:
    """The server's clock (epoch seconds), once per transaction that needs a value."""
    return float(cur.execute(f"SELECT {NOW}").fetchone()[0])


def _query(name: str) -> str:
    return read_packaged(f"queries/{name}.sql")


class Cursors:
    """A psycopg connection as the engine's executor: every ``execute`` on a new cursor,
    so that in pipeline mode a statement's result can be read after later ones were
    sent. ``tuples``: rows as tuples whatever the connection's row factory (a task's
    own connection); the pool's connections already make tuples."""

    __slots__ = ("_cursor",)

    def __init__(self, conn: Any, tuples: bool = False) -> None:
        if tuples:
            from psycopg.rows import tuple_row

            self._cursor = functools.partial(conn.cursor, row_factory=tuple_row)
        else:
            self._cursor = conn.cursor

    def execute(self, query: Any, params: Any = None) -> Any:
        cur = self._cursor()
        cur.execute(query, params)
        return cur

    def executemany(self, query: Any, params: Any) -> None:
        self._cursor().executemany(query, params)


#: ClaimedJob's fields a claim row holds (CLAIM_NAMES, then limit_key, left out).
_FIELDS = len(decoding.CLAIM_NAMES)


def claimed(row: Sequence[Any]) -> ClaimedJob:
    """A claim's row as a ClaimedJob; counts at their column's limit (a row written
    around the API) make it a problem job, which the worker ends dead with the reason.

    The typed columns make every value what ClaimedJob says (text NOT NULL as str,
    integers as int, doubles as float) unless the database's encoding is SQL_ASCII,
    where psycopg hands text back as bytes: only then the checking decoder runs."""
    if (
        type(row[0]) is str
        and type(row[3]) is str
        and -INT_MAX < row[4] < INT_MAX  # attempt
        and -BIGINT_MAX < row[6] < BIGINT_MAX  # token
        and -INT_MAX < row[11] < INT_MAX  # rescues
    ):
        return ClaimedJob(*row[:_FIELDS])
    job = decoding.claimed_job(row[:_FIELDS])
    if job.problem is None:
        at_limit = count_at_limit(attempt=job.attempt, token=job.token, rescues=job.rescues)
        if at_limit is not None:
            job = records.replace(job, problem=at_limit)
    return job


def _count_problem(attempt: int, token: int, rescues: int) -> str | None:
    return count_at_limit(attempt=attempt, token=token, rescues=rescues)


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

_COLUMN = {
    "args": ("payload", ("args",)),
    "kwargs": ("payload", ("kwargs",)),
    "result": ("result", ()),
}


def jsonpath(path: tuple[str | int, ...]) -> str:
    """A strict SQL/JSON path with every key quoted (``strict $."a"[0]``), so a key named
    like a jsonpath keyword (``last``, ``true``) is still a key.

    >>> jsonpath(("args", 0, "last"))
    'strict $."args"[0]."last"'
    """
    json_path(tuple(p for p in path if isinstance(p, str)))  # validates every key
    return "strict $" + "".join(f"[{p}]" if isinstance(p, int) else f'."{p}"' for p in path)


def where_json(cond: WhereCondition) -> tuple[str, list[object]]:
    """One typed JSON comparison: the JSON text column read as ``jsonb`` with a *strict*
    path, errors silenced, so a missing key or an index past the end is SQL ``NULL``
    and matches nothing, not even ``null``. ``jsonb = jsonb`` is typed: ``42`` never
    equals ``"42"`` nor ``true`` ``1``, ``1`` equals ``1.0``, objects and lists compare
    by content -- the meaning SQLite's ``json_type`` tests and the Redis matcher give it.

    >>> from conveyor.query import parse_where
    >>> sql, args = where_json(parse_where("kwargs.n=3"))
    >>> print(sql)
    jsonb_path_query_first(payload::jsonb, ?::jsonpath, '{}', true) = ?::jsonb
    >>> args
    ['strict $."kwargs"."n"', '3']
    """
    if cond.root not in _COLUMN:
        raise ValueError(f"unknown --where root {cond.root!r}")
    column, base = _COLUMN[cond.root]
    value = json.dumps(cond.value, separators=(",", ":"))
    return (
        f"jsonb_path_query_first({column}::jsonb, ?::jsonpath, '{{}}', true) = ?::jsonb",
        [jsonpath((*base, *cond.path)), value],
    )


#: The statements of the operations that differ by more than spelling (as on SQLite).
OPS_QUERIES = ("queue_pause", "job_finished_histogram", "queue_stats")

POSTGRES = Dialect(
    name="postgres",
    param="%s",
    lock=" FOR UPDATE",
    array=True,
    chunk=None,
    ignore=("INSERT", " ON CONFLICT DO NOTHING"),
    clock=server_now,
    queries={
        "integrity_check": integrity_sql(INTEGRITY),
        **role_queries(
            _query,
            ("job_insert_flow", *OPS_QUERIES),
            ("claim", "counts", "leases", "rescue", "workers"),
        ),
        **FINISH_QUERIES,
    },
    returning=True,
    always="TRUE",
    id_order='id COLLATE "C"',
    log_order="seq",
    where_json=where_json,
    promote_answers=True,
    claimed=claimed,
    finish_batch="arrays",
    server_clock=True,
    count_problem=_count_problem,
)
