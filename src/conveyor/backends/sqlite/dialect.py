"""SQLite's :class:`~conveyor.backends.sql.dialect.Dialect`: ``?`` placeholders, lists
as ``IN (...)`` in chunks under the variable limit, no row locks (every write holds
the database's write lock from ``BEGIN IMMEDIATE``), ``INSERT OR IGNORE``, this
process's clock; claims by ``UPDATE ... RETURNING``, a batch of successes as one JSON
parameter (``queries/finish.sql``), logs in ``rowid`` order, and ``--where`` conditions
as ``json_type``/``json_extract`` over the JSON text columns (:func:`where_json`).

Example:
    >>> SQLITE.insert_ignore("job_deps (parent_id, child_id) VALUES (?, ?)")
    'INSERT OR IGNORE INTO job_deps (parent_id, child_id) VALUES (?, ?)'
"""

from __future__ import annotations

import json
import time

from conveyor.backends.base import WhereCondition
from conveyor.backends.sql.dialect import Dialect, Executor, role_queries
from conveyor.backends.sql.integrity import integrity_sql
from conveyor.backends.sqlite import rows
from conveyor.backends.sqlite.connection import load_query
from conveyor.query import json_path

#: The statements of the operations that differ by more than spelling
#: (:mod:`conveyor.backends.sql.ops_bulk`, ``ops_read``): an upsert, a histogram's
#: integer division; each store has a file of each name in ``queries/``.
OPS_QUERIES = ("queue_pause", "job_finished_histogram", "queue_stats")
#: SQLite only: queue_stats from its kept counts (sqlite/counts.py)
KEPT_QUERIES = ("queue_stats_kept",)


def _clock(_: Executor) -> float:
    return time.time()


#: The audit's spellings (``sql/integrity_check.sql``). SQLite's columns hold any type
#: whatever they are declared as, so a row written around the API may hold text where a
#: number belongs (or a BLOB for text): those are checked by ``typeof`` and shown with
#: ``quote`` (which says what the value is); +inf (9e999) is the never-reached time.
#: Workers are judged by this process's clock (``:stale_before``, computed by the caller).
INTEGRITY = {
    "quote": "quote",
    "stale_before": ":stale_before",
    "queue_unusable": "(typeof(queue) != 'text' OR queue = '')",
    "waiting_on_text": "quote(waiting_on)",
    "run_at_text": "quote(run_at)",
    # text or a BLOB sorts after every number, and +inf is never reached: never promoted.
    "run_at_never": "(typeof(run_at) NOT IN ('integer', 'real') OR run_at >= 9e999)",
    "lease_text": "quote(lease_until)",
    # text or NULL never expires
    "lease_never": "typeof(lease_until) NOT IN ('integer', 'real')",
}

_COLUMN = {
    "args": ("payload", "$.args"),
    "kwargs": ("payload", "$.kwargs"),
    "result": ("result", "$"),
}


def where_json(cond: WhereCondition) -> tuple[str, list[object]]:
    """One typed JSON comparison over the JSON text columns (``payload`` holds ``{"args":
    [...], "kwargs": {...}}``, ``result`` the return value): typed by ``json_type`` so
    that ``42`` never matches the string ``"42"`` nor ``true`` ``1``. The path is a
    bound parameter too.

    >>> from conveyor.query import parse_where
    >>> where_json(parse_where("kwargs.n=3"))
    ("json_type(payload, ?) IN ('integer', 'real') AND json_extract(payload, ?) = ?", \
['$.kwargs.n', '$.kwargs.n', 3])
    """
    if cond.root not in _COLUMN:
        raise ValueError(f"unknown --where root {cond.root!r}")
    column, base = _COLUMN[cond.root]
    path = base + json_path(cond.path)[1:]
    value = cond.value
    if isinstance(value, bool):
        return f"json_type({column}, ?) = ?", [path, "true" if value else "false"]
    if value is None:
        return f"json_type({column}, ?) = 'null'", [path]
    if isinstance(value, (int, float)):
        return (
            f"json_type({column}, ?) IN ('integer', 'real') AND json_extract({column}, ?) = ?",
            [path, path, value],
        )
    if isinstance(value, str):
        return (
            f"json_type({column}, ?) = 'text' AND json_extract({column}, ?) = ?",
            [path, path, value],
        )
    return f"json_extract({column}, ?) = json(?)", [path, json.dumps(value, separators=(",", ":"))]


SQLITE = Dialect(
    name="sqlite",
    param="?",
    lock="",
    array=False,
    chunk=500,  # rows.chunks' size: well under SQLITE_MAX_VARIABLE_NUMBER everywhere
    ignore=("INSERT OR IGNORE", ""),
    clock=_clock,
    queries={
        "integrity_check": integrity_sql(INTEGRITY),
        **role_queries(
            load_query,
            ("job_insert_flow", *OPS_QUERIES, *KEPT_QUERIES),
            ("claim", "counts", "finish", "rescue", "workers"),
        ),
    },
    where_json=where_json,
    one_list=json.dumps,
    claimed=rows.claimed_job,
    claim_rows=rows.claim_rows,
    finish_batch="json",
)
