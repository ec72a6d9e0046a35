"""The jobs table in another order than creation: an indexed walk where the column has
an index, a bounded sort (labelled) where it has not.

* **task, state** (:data:`KEYED`): the page walks the column's distinct values in order
  (``job_keys`` on a store with feature ``list_keys``: one step of ``jobs_task`` a
  value; the states are a fixed list), and reads each value's jobs newest first with
  ``job_list`` (``task=``: a range of ``jobs_task``; ``state=``: the state's own index
  when few jobs have it, else the newest jobs), until the page is full.
  The cursor is the last job's id (``after=``): the next page starts at its value,
  after it. Cost: one step a value visited plus the page's rows, whatever the store's
  size; a page that visits :data:`MAX_KEYS` values without filling stops and says so.
* a sort with another filter than its own column's (``sort=task&state=dead``: the
  first task may have none, and its jobs would be read through), **queue, finished,
  attempt** (no index: a queue index cost the enqueue 16-20%, more than a sort by
  queue is worth; the queue filter narrows any sort), a search's words, and a store
  without ``list_keys`` (Redis: its ``job_list`` by task or state is a scan): the
  newest :data:`SORT_LIMIT` matches are read and sorted in Python, and the page says
  so ("sorted only the newest 2,000 jobs").

Example:
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> from conveyor.web.query import JobQuery, Sort
    >>> keyed(SQLiteBackend("sqlite:///:memory:"), JobQuery(), Sort("task", False))
    True
    >>> keyed(SQLiteBackend("sqlite:///:memory:"), JobQuery(), Sort("attempt", True))
    False
"""

from __future__ import annotations

from collections.abc import Iterator

from conveyor import records
from conveyor.backends.base import Backend, JobKeysParams, JobRecord
from conveyor.states import JobState
from conveyor.web.query import SORT_LIMIT, JobQuery, Page, Sort, job_page, scan

#: The columns sorted by an index walk (the rest: a bounded sort).
KEYED = ("task", "state")
#: A page stops after visiting this many values without filling (a filter that few of
#: them match); it says so, and the filters narrow it.
MAX_KEYS = 200
#: Values asked of ``job_keys`` at a time.
KEY_BATCH = 20


def keyed(backend: Backend, query: JobQuery, sort: Sort) -> bool:
    """True when ``sort`` is served by the index walk on ``backend``."""
    if sort.column not in KEYED or set(query.to_params()) - {sort.column}:
        # another filter too: a value's jobs that few of match (the first task has no
        # dead job) would be read through, 1.9 s at a million where the bounded sort
        # reads 2,000 (measured: BENCHMARKS.md, "An indexed sort")
        return False
    # Redis (no list_keys) lists by task or state with a scan of its id index
    return "list_keys" in backend.features


def _value(job: JobRecord, column: str) -> str:
    return job.state.value if column == "state" else str(getattr(job, column))


def _values(backend: Backend, query: JobQuery, sort: Sort, start: str | None) -> Iterator[str]:
    """The column's values in the sort's order, from ``start`` (inclusive) on."""
    column, desc = sort.column, sort.descending
    if column == "state":
        fixed = query.state.value if query.state else None
    else:
        fixed = getattr(query, column)
    if fixed is not None:  # the filter names one value: the walk is that value
        if start is None or start == fixed:
            yield fixed
        return
    if column == "state":
        states = sorted((s.value for s in JobState), reverse=desc)
        yield from (s for s in states if start is None or (s <= start if desc else s >= start))
        return
    if start is not None:
        yield start
    after = start
    while True:
        batch = backend.job_keys(JobKeysParams(column, after, desc, KEY_BATCH))
        yield from batch
        if len(batch) < KEY_BATCH:
            return
        after = batch[-1]


def page_in_order(
    backend: Backend,
    query: JobQuery,
    sort: Sort,
    *,
    after_id: str | None = None,
    offset: int = 0,
    limit: int = 50,
) -> Page:
    """One page of the jobs table in ``sort``'s order: creation order by the store's own
    paging (``query.job_page``), an indexed column by its walk, the rest bounded."""
    if sort.by_id:
        return job_page(backend, query, sort, after_id=after_id, limit=limit)
    if keyed(backend, query, sort):
        return keyed_page(backend, query, sort, after_id=after_id, limit=limit)
    return bounded_page(backend, query, sort, offset=offset, limit=limit)


def keyed_page(
    backend: Backend, query: JobQuery, sort: Sort, *, after_id: str | None, limit: int
) -> Page:
    """One page of ``query`` by ``sort.column`` (ties newest first) after the job
    ``after_id`` (None: the first page; a job gone since: the first page too)."""
    column = sort.column
    start: str | None = None
    if after_id is not None:
        last = backend.job_get_many([after_id])
        start = _value(last[0], column) if last else None
    jobs: list[JobRecord] = []
    visited = 0
    for value in _values(backend, query, sort, start):
        if visited == MAX_KEYS:  # no cursor: the next page would walk the same values
            why = f" · looked through {visited} {column} values and stopped; narrow the filters"
            return Page(jobs, None, None, visited, True, stopped=why)
        visited += 1
        params = query.list_params(
            after_id=after_id if value == start else None,
            limit=limit + 1 - len(jobs),
            descending=True,
        )
        if column == "state":
            params = records.replace(params, state=JobState(value))
        else:
            params = records.replace(params, **{column: value})
        jobs += backend.job_list(params)
        if len(jobs) > limit:
            return Page(jobs[:limit], jobs[limit - 1].id, None, visited, False)
    return Page(jobs, None, None, visited, False)


def bounded_page(backend: Backend, query: JobQuery, sort: Sort, *, offset: int, limit: int) -> Page:
    """The newest :data:`SORT_LIMIT` matches sorted in Python; ``offset`` pages them."""
    found: list[JobRecord] = []
    scanned = 0
    truncated = False
    for job in scan(backend, query, None, descending=True):
        scanned += 1
        if query.matches(job):
            found.append(job)
        if scanned >= SORT_LIMIT:
            truncated = True
            break
    ordered = sort.apply(found)
    end = offset + limit
    return Page(ordered[offset:end], None, end if len(ordered) > end else None, scanned, truncated)
