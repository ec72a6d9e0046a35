"""Contract: what the dashboard's sort by task or state reads (web/sorting.py),
and the capped count of its filtered bulk confirmations.

``job_keys`` (feature ``list_keys``) hands back a column's distinct values in order,
either way, after a value; the walk over them pages the jobs table by task with ties
newest first, the same rows in the same order as sorting every job. ``job_count`` with a
``limit`` stops there. A store without ``list_keys`` (Redis) gets the bounded sort."""

from __future__ import annotations

import pytest

from conveyor.backends.base import Backend, JobCountParams, JobFilter, JobKeysParams
from conveyor.web.query import JobQuery, Sort
from conveyor.web.sorting import page_in_order
from tests.contract.helpers import insert


def _store(backend: Backend) -> list[str]:
    """Nine jobs over three tasks and two queues, interleaved."""
    ids: list[str] = []
    for n in range(3):
        for task, queue in (("b.two", "mail"), ("a.one", "q"), ("c.three", "mail")):
            ids += insert(backend, 1, task=task, queue=queue)
        del n
    return ids


def test_job_keys_walk_distinct_values_both_ways(backend: Backend) -> None:
    if "list_keys" not in backend.features:
        pytest.skip(f"{backend.name}: no list_keys (its sort is bounded: web/sorting.py)")
    _store(backend)

    def keys(column: str, after: str | None = None, desc: bool = False, n: int = 20) -> list[str]:
        return backend.job_keys(JobKeysParams(column, after, desc, n))

    assert keys("task") == ["a.one", "b.two", "c.three"]
    assert keys("task", desc=True) == ["c.three", "b.two", "a.one"]
    assert keys("task", after="a.one", n=1) == ["b.two"]
    assert keys("task", after="b.two", desc=True) == ["a.one"]
    assert keys("task", after="c.three") == []


@pytest.mark.parametrize("descending", [False, True])
def test_sort_by_task_pages_as_a_full_sort_would(backend: Backend, descending: bool) -> None:
    ids = _store(backend)
    every = backend.job_get_many(ids)
    sort = Sort("task", descending)
    expected = [j.id for j in sort.apply(every)]  # ties newest first, both ways
    seen: list[str] = []
    after: str | None = None
    for _ in range(10):
        page = page_in_order(backend, JobQuery(), sort, after_id=after, limit=4)
        seen += [j.id for j in page.jobs]
        if page.next_after is None and page.next_offset is None:
            break
        if page.next_offset is not None:  # a bounded sort pages by offset
            page = page_in_order(backend, JobQuery(), sort, offset=page.next_offset, limit=50)
            seen += [j.id for j in page.jobs]
            break
        after = page.next_after
    assert seen == expected


def test_sort_by_task_and_state_keeps_the_filters(backend: Backend) -> None:
    _store(backend)
    page = page_in_order(backend, JobQuery(queue="mail"), Sort("task", True), limit=50)
    assert [j.task for j in page.jobs] == ["c.three"] * 3 + ["b.two"] * 3
    assert page.next_after is None  # another filter: the bounded sort (its one page)
    one = page_in_order(backend, JobQuery(task="b.two"), Sort("task", False), limit=50)
    assert [(j.task, j.queue) for j in one.jobs] == [("b.two", "mail")] * 3
    by_state = page_in_order(backend, JobQuery(queue="mail"), Sort("state", True), limit=50)
    assert len(by_state.jobs) == 6 and not by_state.truncated


def test_job_count_stops_at_its_limit(backend: Backend) -> None:
    _store(backend)
    mail = JobFilter(queue="mail")
    assert backend.job_count(JobCountParams(mail)) == 6
    assert backend.job_count(JobCountParams(mail, limit=4)) == 4
    assert backend.job_count(JobCountParams(mail, limit=100)) == 6
    assert backend.job_count(JobCountParams(JobFilter(), limit=2)) == 2
