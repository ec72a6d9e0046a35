"""MariaDB's :class:`~conveyor.backends.sql.dialect.Dialect`: ``%s`` placeholders, lists
as ``IN (...)`` in chunks, ``FOR UPDATE`` row locks and ``SKIP LOCKED`` takes (InnoDB),
``INSERT IGNORE``, the server's clock, no ``UPDATE ... RETURNING`` (the engine selects
the rows locked, then updates them), logs in ``seq`` order, ``--where`` conditions as
``JSON_TYPE``/``JSON_EXTRACT`` over the JSON text columns (:func:`where_json`).

Example:
    >>> MARIADB.sql("SELECT 1 FROM jobs WHERE id = ?")
    'SELECT 1 FROM jobs WHERE id = %s'
    >>> MARIADB.insert_ignore("job_deps (parent_id, child_id) VALUES (?, ?)")
    'INSERT IGNORE INTO job_deps (parent_id, child_id) VALUES (?, ?)'
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from conveyor.backends.base import WhereCondition
from conveyor.backends.mariadb.connection import read_packaged
from conveyor.backends.sql.dialect import Dialect, Executor, role_queries
from conveyor.backends.sql.integrity import integrity_sql
from conveyor.query import json_path

#: The server's clock, epoch seconds to the microsecond: every worker's leases and
#: heartbeats agree, whatever the hosts' clocks say.
NOW = "UNIX_TIMESTAMP(NOW(6))"


def server_now(ex: Executor) -> float:
    """The server's clock (epoch seconds), once per transaction that needs a value."""
    return float(ex.execute(f"SELECT {NOW}").fetchone()[0])


#: The audit's spellings (``sql/integrity_check.sql``; ``||`` concatenates: the session
#: sets PIPES_AS_CONCAT). DOUBLE holds no NaN nor infinity, so no due time or lease is
#: "never" but a NULL lease.
INTEGRITY = {
    "quote": "QUOTE",
    "stale_before": "%(stale_before)s",
    "queue_unusable": "queue = ''",
    "waiting_on_text": "waiting_on",
    "run_at_text": "run_at",
    "run_at_never": "1 = 0",
    "lease_text": "COALESCE(lease_until, 'NULL')",
    "lease_never": "lease_until IS NULL",
}


def on_duplicate_key(key: str, columns: Sequence[str]) -> str:
    """MariaDB's upsert suffix (any unique key's conflict; ``key`` is the primary one).

    >>> on_duplicate_key("name", ["spec"])
    ' ON DUPLICATE KEY UPDATE spec = VALUES(spec)'
    """
    return " ON DUPLICATE KEY UPDATE " + ", ".join(f"{c} = VALUES({c})" for c in columns)


_COLUMN = {
    "args": ("payload", "$.args"),
    "kwargs": ("payload", "$.kwargs"),
    "result": ("result", "$"),
}


def where_json(cond: WhereCondition) -> tuple[str, list[object]]:
    """One typed JSON comparison over the JSON text columns, typed by ``JSON_TYPE`` so
    that ``42`` never matches the string ``"42"`` nor ``true`` ``1``; strings compare
    as bytes (``BINARY``), as on the other stores.

    >>> from conveyor.query import parse_where
    >>> where_json(parse_where("kwargs.n=3"))[0]
    "JSON_TYPE(JSON_EXTRACT(payload, ?)) IN ('INTEGER', 'DOUBLE') AND CAST(JSON_EXTRACT(payload, ?) AS DOUBLE) = ?"
    """
    if cond.root not in _COLUMN:
        raise ValueError(f"unknown --where root {cond.root!r}")
    column, base = _COLUMN[cond.root]
    path = base + json_path(cond.path)[1:]
    found, value = f"JSON_EXTRACT({column}, ?)", cond.value
    kind = f"JSON_TYPE({found})"
    if isinstance(value, bool):
        return f"{kind} = 'BOOLEAN' AND {found} = ?", [path, path, json.dumps(value)]
    if value is None:
        return f"{kind} = 'NULL'", [path]
    if isinstance(value, (int, float)):
        return (
            f"{kind} IN ('INTEGER', 'DOUBLE') AND CAST({found} AS DOUBLE) = ?",
            [path, path, value],
        )
    if isinstance(value, str):
        return (
            f"{kind} = 'STRING' AND BINARY JSON_UNQUOTE({found}) = BINARY ?",
            [path, path, value],
        )
    # Compared as JSON (key order and spacing aside). "= 1" and the type first: as a bare
    # WHERE, MariaDB 10.11 let rows without the path through (measured: 5 of 5 rows).
    return (
        f"{kind} IN ('OBJECT', 'ARRAY') AND JSON_EQUALS({found}, ?) = 1",
        [path, path, json.dumps(value, separators=(",", ":"))],
    )


MARIADB = Dialect(
    name="mariadb",
    param="%s",
    lock=" FOR UPDATE",
    array=False,
    # Well under max_allowed_packet, and one statement per 1000 ids is few round trips.
    chunk=1000,
    ignore=("INSERT IGNORE", ""),
    clock=server_now,
    queries={
        **role_queries(
            lambda role: read_packaged(f"queries/{role}.sql"),
            (),
            ("counts", "ops", "rescue", "workers"),
        ),
        "integrity_check": integrity_sql(INTEGRITY),
    },
    returning=False,
    skip_locked=" FOR UPDATE SKIP LOCKED",
    log_order="seq",
    upsert=on_duplicate_key,
    where_json=where_json,
    server_clock=True,
    one_list=json.dumps,
)
