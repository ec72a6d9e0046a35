"""``JobFilter`` -> SQL ``WHERE``, and the ``job_list`` query, for every SQL backend.

The column tests (queue, task, states, time bounds) and the paging are the same SQL on
SQLite and PostgreSQL; only the bound-parameter mark and the typed JSON comparison of a
``--where`` condition differ. A :class:`Dialect` names those two, and each backend's
``filter_sql`` module supplies its own (``sqlite/filter_sql.py``: ``json_type`` /
``json_extract``; ``postgres/filter_sql.py``: ``jsonb_path_query_first``). Every value is
a bound parameter; column names come from this module only.

Example:
    >>> from conveyor.backends.base import JobFilter
    >>> from conveyor.states import JobState
    >>> plain = Dialect(mark="%s", always="TRUE", where_sql=lambda c: ("FALSE", []))
    >>> filter_sql(JobFilter(queue="mail", states=(JobState.DEAD,)), plain)
    ('queue = %s AND state IN (%s)', ['mail', 'dead'])
    >>> filter_sql(JobFilter(), plain)
    ('TRUE', [])
"""

from __future__ import annotations

from collections.abc import Callable

from conveyor.backends.base import JobFilter, JobListParams, WhereCondition
from conveyor.records import record


@record
class Dialect:
    """What differs between two SQL engines in a filter."""

    #: one bound parameter ("?" for sqlite3, "%s" for psycopg)
    mark: str
    #: a condition every row meets (the WHERE of an empty filter)
    always: str
    #: one typed JSON comparison -> (SQL, its arguments)
    where_sql: Callable[[WhereCondition], tuple[str, list[object]]]


def filter_sql(f: JobFilter, dialect: Dialect) -> tuple[str, list[object]]:
    """The conditions of ``f`` joined with AND (``dialect.always`` when there are none)."""
    mark = dialect.mark
    where: list[str] = []
    args: list[object] = []
    for column, value in (("queue", f.queue), ("task", f.task)):
        if value is not None:
            where.append(f"{column} = {mark}")
            args.append(value)
    if f.states:
        where.append(f"state IN ({', '.join([mark] * len(f.states))})")
        args.extend(str(s) for s in f.states)
    for column, op, bound in (
        ("created_at", ">=", f.created_after),
        ("created_at", "<", f.created_before),
        ("finished_at", ">=", f.finished_after),
        ("finished_at", "<", f.finished_before),
    ):
        if bound is not None:
            where.append(f"{column} {op} {mark}")
            args.append(bound)
    for cond in f.where:
        sql, more = where_bound_sql(cond, dialect)
        where.append(sql)
        args.extend(more)
    return (" AND ".join(where) or dialect.always), args


def where_bound_sql(cond: WhereCondition, dialect: Dialect) -> tuple[str, list[object]]:
    """One ``--where`` condition: the path as written, OR'd with its bound slots (each
    only for the tasks whose signature put the argument there).

    Example:
        >>> from conveyor.backends.base import ArgSlot
        >>> plain = Dialect(mark="?", always="1", where_sql=lambda c: (f"{c.root}", []))
        >>> bound = (ArgSlot(tasks=("t.a", "t.b"), root="args", key=0),)
        >>> where_bound_sql(WhereCondition("kwargs", ("user_id",), 42, bound), plain)
        ('(kwargs OR (task IN (?, ?) AND args))', ['t.a', 't.b'])
    """
    sql, args = dialect.where_sql(cond)
    if not cond.bound:
        return sql, args
    parts = [sql]
    for tasks, slot in cond.slot_conditions():
        slot_sql, slot_args = dialect.where_sql(slot)
        parts.append(f"(task IN ({', '.join([dialect.mark] * len(tasks))}) AND {slot_sql})")
        args.extend([*tasks, *slot_args])
    return f"({' OR '.join(parts)})", args


def job_list_sql(
    params: JobListParams, dialect: Dialect, columns: str, id_order: str = "id"
) -> tuple[str, list[object]]:
    """The ``SELECT`` of one ``job_list`` page: the legacy queue/task/state fields and
    ``params.filter`` both narrow; ``after_id`` is the cursor (ids strictly after it in
    the listing's order, which is creation order). ``id_order`` is how the engine must
    compare ids to get byte order (PostgreSQL: ``id COLLATE "C"``, whatever the
    database's collation)."""
    legacy = JobFilter(
        queue=params.queue, task=params.task, states=(params.state,) if params.state else ()
    )
    sql_a, args_a = filter_sql(legacy, dialect)
    sql_b, args_b = filter_sql(params.filter or JobFilter(), dialect)
    where, args = f"({sql_a}) AND ({sql_b})", [*args_a, *args_b]
    if params.after_id is not None:
        where += f" AND {id_order} {'<' if params.descending else '>'} {dialect.mark}"
        args.append(params.after_id)
    order = f"{id_order} DESC" if params.descending else id_order
    sql = f"SELECT {columns} FROM jobs WHERE {where} ORDER BY {order} LIMIT {dialect.mark}"
    return sql, [*args, params.limit]
