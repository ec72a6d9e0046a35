"""PostgreSQL's :class:`~conveyor.backends.sql.dialect.Dialect`: ``%s`` placeholders,
lists as one array parameter, ``FOR UPDATE`` row locks (concurrent writers), inserts
that skip with ``ON CONFLICT DO NOTHING``, the server's clock, ids in byte order
(``COLLATE "C"``), logs in ``seq`` order, and ``--where`` conditions as ``jsonb``
comparisons (:func:`where_json`).

Example:
    >>> POSTGRES.sql("SELECT 1 FROM jobs WHERE id = ?")
    'SELECT 1 FROM jobs WHERE id = %s'
"""

from __future__ import annotations

import json

from conveyor.backends.base import WhereCondition
from conveyor.backends.postgres.connection import read_packaged
from conveyor.backends.postgres.sql import NOW
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.integrity import integrity_sql
from conveyor.query import json_path


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
OPS_QUERIES = ("queue_pause", "job_finished_histogram")

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
        **{name: _query(name) for name in OPS_QUERIES},
    },
    returning=True,
    skip_locked=" FOR UPDATE SKIP LOCKED",
    always="TRUE",
    id_order='id COLLATE "C"',
    log_order="seq",
    where_json=where_json,
)
