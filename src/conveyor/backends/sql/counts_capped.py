"""Capped counts: ``queue_stats`` rows for the operator's reads on a SQL store of more
jobs than the cap (``QueueStatsParams(cap=1_000, exact_up_to=50_000)``: ``conveyor status``, ``conveyor
queues``, the dashboard), in the manner of Oban Web's and River UI's capped counts.

Counting every job is one scan of the jobs table: 0.9 s on SQLite, 0.8-3 s on
PostgreSQL and about 4 s on MariaDB at a million jobs (BENCHMARKS.md). Here each
(queue, state) is counted from a partial index (on MariaDB, one led by the state) up to
``cap`` + 1 entries: ready jobs per queue (a loose scan of
``jobs_ready`` finds the queue names, one index step each), the other states each from
their own index (``jobs_scheduled``, ``jobs_running``, ``jobs_waiting``,
``jobs_finished``, the newest first). A count that reaches the cap is a lower bound,
named in :attr:`QueueStats.capped` and shown as "10,000+"; smaller counts and the
oldest ready age are exact. The statements are each store's ``queries/counts.sql``;
MariaDB's walk the loose scans here one step a statement (``queue_counts_next_ready``,
``queue_counts_next_priority``: its correlated subqueries read no index range); a
store without them (or a store of at most ``cap`` jobs, or of ``exact_up_to``) counts
every job, as before.

Example (three jobs, capped at two, then at three: exact)::

    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.backends.base import JobInsertParams, QueueStatsParams
    >>> b = SQLiteBackend("sqlite:///:memory:")
    >>> _ = b.job_insert_many([JobInsertParams(str(i), "t", "q", "{}") for i in range(3)])
    >>> [(s.queue, s.counts, s.capped) for s in b.queue_stats(QueueStatsParams(cap=2))]
    [('q', {'queued': 2}, frozenset({'queued'}))]
    >>> [(s.queue, s.counts, s.capped) for s in b.queue_stats(QueueStatsParams(cap=3))]
    [('q', {'queued': 3}, frozenset())]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from conveyor.states import FINISHED_STATES, JobState

#: Rows of one statement with named arguments: the store's ``_ops_rows``.
Rows = Callable[[str, Mapping[str, object]], list[tuple[object, ...]]]
#: (queue, state, count, oldest run_at) rows, and the (queue, state) pairs capped.
Counted = tuple[list[tuple[object, ...]], set[tuple[str, str]]]


def has_capped_counts(queries: Mapping[str, str]) -> bool:
    """True when the store has the capped statements (SQLite, PostgreSQL, MariaDB)."""
    return "queue_counts_active" in queries


def over_cap(rows: Rows, queries: Mapping[str, str], cap: int) -> bool:
    """More than ``cap`` jobs in the store (reads at most ``cap`` + 1 rows)."""
    return int(str(rows(queries["queue_counts_probe"], {"limit": cap + 1})[0][0])) > cap


def capped_rows(rows: Rows, queries: Mapping[str, str], cap: int) -> Counted:
    """``queue_stats``' rows with each (queue, state) counted up to ``cap`` + 1."""
    found: list[tuple[object, ...]] = []
    capped: set[tuple[str, str]] = set()
    queued = JobState.QUEUED.value
    for queue, n, oldest in _ready(rows, queries, cap + 1):
        name, count = str(queue), int(str(n))
        if count > cap:
            # past the cap the first cap entries need not hold the oldest: one index
            # step per priority of this queue finds it
            oldest = _oldest(rows, queries, name)
            capped.add((name, queued))
        found.append((name, queued, min(count, cap), oldest))
    for state in sorted(set(JobState) - {JobState.QUEUED}, key=lambda s: s.value):
        kind = "finished" if state in FINISHED_STATES else "active"
        # the state is an enum's value, never input: a literal, so its partial index is used
        sql = queries[f"queue_counts_{kind}"].replace("{state}", state.value)
        per_queue = [(str(q), int(str(n))) for q, n in rows(sql, {"limit": cap + 1})]
        if sum(n for _, n in per_queue) > cap:
            capped.update((q, state.value) for q, _ in per_queue)
        found += [(q, state.value, min(n, cap), None) for q, n in per_queue]
    return found, capped


def _ready(rows: Rows, queries: Mapping[str, str], limit: int) -> list[tuple[object, ...]]:
    """(queue, ready jobs up to ``limit``, oldest run_at among them) per queue with ready
    jobs: one statement, or (MariaDB) the loose scan walked a queue name at a time."""
    if "queue_counts_queued" in queries:
        return rows(queries["queue_counts_queued"], {"limit": limit})
    found: list[tuple[object, ...]] = []
    after: object = ""  # no queue is named "" (the audit's queue_unusable)
    step = queries["queue_counts_next_ready"]
    while (row := rows(step, {"after": after, "limit": limit})[0])[0] is not None:
        found.append(row)
        after = row[0]
    return found


def _oldest(rows: Rows, queries: Mapping[str, str], queue: str) -> object:
    """The oldest ready run_at of ``queue``: one statement, or (MariaDB) the first entry
    of each priority walked from the highest down."""
    if "queue_counts_oldest" in queries:
        return rows(queries["queue_counts_oldest"], {"queue": queue})[0][0]
    found: list[float] = []
    below = 2**31  # above every INT priority
    while step := rows(queries["queue_counts_next_priority"], {"queue": queue, "below": below}):
        priority, run_at = step[0]
        found.append(float(str(run_at)))
        below = int(str(priority))
    return min(found, default=None)
