"""How many jobs a bulk action's confirmation names, without reading their ids.

The confirmation used to collect every matching id to count them (18 s for "cancel all
queued" at a million jobs). A query of queue and state only is answered from
``queue_stats`` (SQLite and Redis keep those counts; BENCHMARKS.md), any other query
without search words by one ``job_count`` in the store. Both are exact, so the action's
own recount (``bulk_action``) agrees with the number the user confirmed. A query with
search words is counted by its match (``matching_ids``), as before.

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.web.query import JobQuery
    >>> matching_count(SQLiteBackend("sqlite:///:memory:"), JobQuery(), "cancel")
    0
"""

from __future__ import annotations

from conveyor.backends.base import Backend, JobCountParams, JobFilter
from conveyor.web.query import JobQuery, action_states, matching_ids


def matching_count(backend: Backend, query: JobQuery, action: str) -> int:
    """The number of jobs ``action`` on ``query`` would act on now."""
    states = action_states(action, query)
    if not states:
        return 0
    if query.search:
        return len(matching_ids(backend, query, action))
    if query.task is None and not query.where:
        wanted = {s.value for s in states}
        return sum(
            n
            for q in backend.queue_stats()
            if query.queue is None or q.queue == query.queue
            for state, n in q.counts.items()
            if state in wanted
        )
    found = JobFilter(queue=query.queue, task=query.task, states=states, where=query.conditions())
    return backend.job_count(JobCountParams(found))
