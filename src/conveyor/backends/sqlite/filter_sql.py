"""``JobFilter`` -> SQL ``WHERE`` for the SQLite backend: the SQLite :class:`Dialect` of
the shared compiler (:mod:`conveyor.backends.filter_sql`).

Every value, and every JSON path, is a bound parameter; column names come from this
module only. ``--where`` conditions become ``json_type``/``json_extract`` over the JSON
text columns (``payload`` holds ``{"args": [...], "kwargs": {...}}``, ``result`` the
return value), typed so that ``42`` never matches the string ``"42"`` nor ``true`` ``1``.
Queue, state and time bounds are ordinary column tests that narrow the scan first.

Example:
    >>> from conveyor.backends.base import JobFilter
    >>> from conveyor.query import parse_where
    >>> sql, args = filter_sql(JobFilter(queue="mail", where=(parse_where("kwargs.n=3"),)))
    >>> sql
    "queue = ? AND json_type(payload, ?) IN ('integer', 'real') AND json_extract(payload, ?) = ?"
    >>> args
    ['mail', '$.kwargs.n', '$.kwargs.n', 3]
"""

from __future__ import annotations

import json

from conveyor.backends import filter_sql as shared
from conveyor.backends.base import JobFilter, WhereCondition
from conveyor.query import json_path

_COLUMN = {
    "args": ("payload", "$.args"),
    "kwargs": ("payload", "$.kwargs"),
    "result": ("result", "$"),
}


def filter_sql(f: JobFilter) -> tuple[str, list[object]]:
    """The conditions of ``f`` joined with AND (``"1"`` when there are none)."""
    return shared.filter_sql(f, SQLITE)


def where_sql(cond: WhereCondition) -> tuple[str, list[object]]:
    """One typed JSON comparison."""
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


#: sqlite3's ``?`` marks, ``json_type``/``json_extract`` comparisons.
SQLITE = shared.Dialect(mark="?", always="1", where_sql=where_sql)
