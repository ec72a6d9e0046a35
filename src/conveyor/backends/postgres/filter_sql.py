"""``JobFilter`` -> SQL ``WHERE`` for the PostgreSQL backend: the PostgreSQL
:class:`~conveyor.backends.filter_sql.Dialect` of the shared compiler.

A ``--where`` condition reads the JSON text columns as ``jsonb`` (``payload`` holds
``{"args": [...], "kwargs": {...}}``, ``result`` the return value) with a *strict*
SQL/JSON path, errors silenced, so a missing key or an index past the end is SQL
``NULL`` and matches nothing, not even ``null``. The comparison is ``jsonb = jsonb``,
which is typed: ``42`` never equals ``"42"`` nor ``true`` ``1``, ``1`` equals ``1.0``,
objects and lists compare by content -- the meaning SQLite's ``json_type`` tests and
the Redis matcher give it. Path and value are bound parameters; keys are quoted in the
path, so a key named like a jsonpath keyword (``last``, ``true``) is still a key.

Example:
    >>> from conveyor.backends.base import JobFilter
    >>> from conveyor.query import parse_where
    >>> sql, args = filter_sql(JobFilter(queue="mail", where=(parse_where("kwargs.n=3"),)))
    >>> print(sql)
    queue = %s AND jsonb_path_query_first(payload::jsonb, %s::jsonpath, '{}', true) = %s::jsonb
    >>> args
    ['mail', 'strict $."kwargs"."n"', '3']
"""

from __future__ import annotations

import json

from conveyor.backends import filter_sql as shared
from conveyor.backends.base import JobFilter, WhereCondition
from conveyor.query import json_path

_COLUMN = {
    "args": ("payload", ("args",)),
    "kwargs": ("payload", ("kwargs",)),
    "result": ("result", ()),
}


def filter_sql(f: JobFilter) -> tuple[str, list[object]]:
    """The conditions of ``f`` joined with AND (``TRUE`` when there are none)."""
    return shared.filter_sql(f, POSTGRES)


def jsonpath(path: tuple[str | int, ...]) -> str:
    """A strict SQL/JSON path with every key quoted (``strict $."a"[0]``).

    >>> jsonpath(("args", 0, "last"))
    'strict $."args"[0]."last"'
    """
    json_path(tuple(p for p in path if isinstance(p, str)))  # validates every key
    return "strict $" + "".join(f"[{p}]" if isinstance(p, int) else f'."{p}"' for p in path)


def where_sql(cond: WhereCondition) -> tuple[str, list[object]]:
    """One typed JSON comparison."""
    if cond.root not in _COLUMN:
        raise ValueError(f"unknown --where root {cond.root!r}")
    column, base = _COLUMN[cond.root]
    value = json.dumps(cond.value, separators=(",", ":"))
    return (
        f"jsonb_path_query_first({column}::jsonb, %s::jsonpath, '{{}}', true) = %s::jsonb",
        [jsonpath((*base, *cond.path)), value],
    )


#: psycopg's ``%s`` marks, ``jsonb`` comparisons.
POSTGRES = shared.Dialect(mark="%s", always="TRUE", where_sql=where_sql)
