"""How many jobs a bulk action's confirmation names, without reading their ids.

The confirmation used to collect every matching id to count them (18 s for "cancel all
queued" at a million jobs). A query of queue and state only is answered from
``queue_stats`` with the operator's cap (Redis, memory and SQLite with ``queue-counts
on`` keep exact counts; other SQL stores stop counting a (queue, state) at
:data:`OPERATOR_COUNT_CAP`: the answer is then "at least", and the page says so), any
other query without search words by one ``job_count`` in the store, exact on a store of
at most :data:`OPERATOR_EXACT_UP_TO` jobs, else stopped past :data:`OPERATOR_COUNT_CAP`
matches (then "1000+", as above). The action's own
recount (``bulk_action``) must equal an exact number the user confirmed, or be at least
a capped one. A query with search words is counted by its match (``matching_ids``).

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.web.query import JobQuery
    >>> matching_count(SQLiteBackend("sqlite:///:memory:"), JobQuery(), "cancel")
    (0, False)
"""

from __future__ import annotations

from conveyor.backends.base import (
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    Backend,
    JobCountParams,
    JobFilter,
    QueueStatsParams,
)
from conveyor.web.query import JobQuery, action_states, matching_ids


def matching_count(backend: Backend, query: JobQuery, action: str) -> tuple[int, bool]:
    """The number of jobs ``action`` on ``query`` would act on now, and True when that
    number is a lower bound (a capped count: "at least")."""
    states = action_states(action, query)
    if not states:
        return 0, False
    if query.search:
        return len(matching_ids(backend, query, action)), False
    if query.task is None and not query.where:
        wanted = {s.value for s in states}
        stats = [
            q
            for q in backend.queue_stats(
                QueueStatsParams(cap=OPERATOR_COUNT_CAP, exact_up_to=OPERATOR_EXACT_UP_TO)
            )
            if query.queue is None or q.queue == query.queue
        ]
        total = sum(n for q in stats for state, n in q.counts.items() if state in wanted)
        return total, any(wanted & q.capped for q in stats)
    found = JobFilter(queue=query.queue, task=query.task, states=states, where=query.conditions())
    # capped as queue_stats' are: exact on a store of at most OPERATOR_EXACT_UP_TO jobs
    # (one probe reads at most that many + 1), else counted up to OPERATOR_COUNT_CAP and
    # "1000+" past it (counting every match was a scan: 0.8-0.9 s at a million jobs)
    small = backend.job_count(JobCountParams(JobFilter(), limit=OPERATOR_EXACT_UP_TO + 1))
    if small <= OPERATOR_EXACT_UP_TO:
        return backend.job_count(JobCountParams(found)), False
    n = backend.job_count(JobCountParams(found, limit=OPERATOR_COUNT_CAP + 1))
    return min(n, OPERATOR_COUNT_CAP), n > OPERATOR_COUNT_CAP


def count_confirmed(expected: str | None, count: int) -> bool:
    """True when ``count`` (the action's recount) is what the user confirmed: the same
    number, or at least a capped one (``"1000+"``).

    >>> count_confirmed("3", 3), count_confirmed("3", 4), count_confirmed("1000+", 5000)
    (True, False, True)
    >>> count_confirmed("1000+", 999), count_confirmed(None, 0), count_confirmed("x+", 1)
    (False, False, False)
    """
    if expected is None:
        return False
    if expected.endswith("+"):
        floor = expected[:-1]
        return floor.isdigit() and count >= int(floor)
    return expected == str(count)
