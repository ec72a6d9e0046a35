"""``JobFilter`` -> SQL ``WHERE``, and the ``job_list`` page query, for every SQL store.

The column tests (queue, task, states, time bounds) and the paging are the same SQL on
every store; what differs is a :class:`~conveyor.backends.sql.dialect.Dialect`'s:
the placeholder (written ``?`` here, turned into the driver's by ``Dialect.sql``), the
``WHERE`` of an empty filter (``always``), byte order of ids (``id_order``) and the
typed JSON comparison of a ``--where`` condition (``where_json``: SQLite's
``json_type``/``json_extract``, PostgreSQL's ``jsonb_path_query_first``). Every value is
a bound parameter; column names come from this module only.

Example:
    >>> from conveyor.states import FINISHED_STATES, JobState
    >>> d = Dialect("demo", "%s", "", True, None, ("INSERT", ""), lambda ex: 0.0, {})
    >>> filter_sql(d, JobFilter(queue="mail", states=(JobState.DEAD,)))
    ('queue = %s AND state IN (%s)', ['mail', 'dead'])
    >>> filter_sql(d, JobFilter())
    ('1', [])
"""

from __future__ import annotations

from conveyor.backends.base import JobFilter, JobListParams, WhereCondition
from conveyor.backends.sql.dialect import Dialect
from conveyor.states import FINISHED_STATES, JobState


def _marks(n: int) -> str:
    return ", ".join("?" * n)


#: A state with at most this many jobs is listed through its own index (few_sql).
FEW = 5_000


def few_sql(state: JobState) -> str:
    """The ids of ``state``'s jobs from its own (partial) index: jobs_ready, _scheduled,
    _running, _waiting, or jobs_finished (which holds only rows with a finish time). The
    state is an enum's value, never input: a literal, so a partial index is used."""
    done = " AND finished_at IS NOT NULL" if state in FINISHED_STATES else ""
    return f"SELECT id FROM jobs WHERE state = '{state.value}'{done}"


def few_probe_sql(state: JobState) -> str:
    """How many of ``state``'s jobs, up to FEW + 1 (reads at most that many entries)."""
    return f"SELECT COUNT(*) FROM ({few_sql(state)} LIMIT {FEW + 1}) AS t"


def filter_sql(
    d: Dialect, f: JobFilter, *, few: JobState | None = None
) -> tuple[str, list[object]]:
    """The conditions of ``f`` joined with AND (``d.always`` when there are none), in the
    driver's placeholder style; ``few``: that one state of ``f``'s has at most FEW jobs
    (the caller probed it), so its jobs are read from its own index."""
    where: list[str] = []
    args: list[object] = []
    for column, value in (("queue", f.queue), ("task", f.task)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if tuple(f.states) == (JobState.RUNNING,):
        # Running jobs are few (the workers' slots) and have their own partial index; a
        # plain state test let SQLite walk every job in id order to find 20 of them
        # (2.4 s at a million jobs: `conveyor status`). The literal picks the index.
        where.append("id IN (SELECT id FROM jobs WHERE state = 'running')")
    elif few is not None and tuple(f.states) == (few,):
        # The same for any state its probe found few of: a state no job has, or a few
        # hundred cancelled among a million, was a walk of every job (0.5-1.5 s).
        where.append(f"id IN ({few_sql(few)})")
    elif f.states:
        where.append(f"state IN ({_marks(len(f.states))})")
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
        sql, more = where_bound_sql(d, cond)
        where.append(sql)
        args.extend(more)
    return d.sql(" AND ".join(where) or d.always), args


def where_bound_sql(d: Dialect, cond: WhereCondition) -> tuple[str, list[object]]:
    """One ``--where`` condition (``?`` placeholders): the path as written, OR'd with its
    bound slots (each only for the tasks whose signature put the argument there).

    Example:
        >>> from conveyor.backends.base import ArgSlot
        >>> from conveyor.backends.sql.dialect import Dialect
        >>> plain = Dialect("demo", "?", "", False, None, ("INSERT", ""), lambda ex: 0.0,
        ...                 {}, where_json=lambda c: (f"{c.root}", []))
        >>> bound = (ArgSlot(tasks=("t.a", "t.b"), root="args", key=0),)
        >>> where_bound_sql(plain, WhereCondition("kwargs", ("user_id",), 42, bound))
        ('(kwargs OR (task IN (?, ?) AND args))', ['t.a', 't.b'])
    """
    if d.where_json is None:
        raise ValueError(f"the {d.name} store cannot filter by --where")
    sql, args = d.where_json(cond)
    if not cond.bound:
        return sql, args
    parts = [sql]
    for tasks, slot in cond.slot_conditions():
        slot_sql, slot_args = d.where_json(slot)
        parts.append(f"(task IN ({_marks(len(tasks))}) AND {slot_sql})")
        args.extend([*tasks, *slot_args])
    return f"({' OR '.join(parts)})", args


def job_list_sql(
    d: Dialect, params: JobListParams, columns: str, *, few: JobState | None = None
) -> tuple[str, list[object]]:
    """The ``SELECT`` of one ``job_list`` page: the legacy queue/task/state fields and
    ``params.filter`` both narrow; ``after_id`` is the cursor (ids strictly after it in
    the listing's order, which is creation order: ``d.id_order``); ``few``: the legacy
    state has at most FEW jobs (filter_sql)."""
    legacy = JobFilter(
        queue=params.queue, task=params.task, states=(params.state,) if params.state else ()
    )
    sql_a, args_a = filter_sql(d, legacy, few=few)
    sql_b, args_b = filter_sql(d, params.filter or JobFilter())
    where, args = f"({sql_a}) AND ({sql_b})", [*args_a, *args_b]
    if params.after_id is not None:
        where += f" AND {d.id_order} {'<' if params.descending else '>'} {d.param}"
        args.append(params.after_id)
    order = f"{d.id_order} DESC" if params.descending else d.id_order
    sql = f"SELECT {columns} FROM jobs WHERE {where} ORDER BY {order} LIMIT {d.param}"
    return sql, [*args, params.limit]
