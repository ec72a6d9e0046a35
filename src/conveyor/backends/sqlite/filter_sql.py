"""``JobFilter`` -> SQL ``WHERE`` for the SQLite backend.

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

from conveyor.backends.base import JobFilter, WhereCondition
from conveyor.query import json_path

_COLUMN = {
    "args": ("payload", "$.args"),
    "kwargs": ("payload", "$.kwargs"),
    "result": ("result", "$"),
}


def filter_sql(f: JobFilter) -> tuple[str, list[object]]:
    """The conditions of ``f`` joined with AND (``"1"`` when there are none)."""
    where: list[str] = []
    args: list[object] = []
    for column, value in (("queue", f.queue), ("task", f.task)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if f.states:
        where.append(f"state IN ({', '.join('?' * len(f.states))})")
        args.extend(str(s) for s in f.states)
    for column, op, bound in (
        ("created_at", ">=", f.created_after),
        ("created_at", "<", f.created_before),
        ("finished_at", ">=", f.finished_after),
        ("finished_at", "<", f.finished_before),
    ):
        if bound is not None:
            where.append(f"{column} {op} ?")
            args.append(bound)
    for cond in f.where:
        sql, more = where_sql(cond)
        where.append(sql)
        args.extend(more)
    return (" AND ".join(where) or "1"), args


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
