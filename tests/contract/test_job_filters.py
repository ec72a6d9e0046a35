"""Contract: listing, counting, purging and deleting jobs by filter (every backend)."""

from __future__ import annotations

import time

import pytest

import conveyor
from conveyor.backends.base import (
    Backend,
    JobClaimParams,
    JobCountParams,
    JobFilter,
    JobFinishParams,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
    JobPurgeParams,
)
from conveyor.query import parse_where
from conveyor.states import FinishKind, JobState
from tests.support.features import needs


@pytest.fixture(autouse=True)
def _needs_filters(backend: Backend) -> None:
    needs(backend, "filters")


def _enqueue(app: conveyor.App) -> conveyor.Task:  # type: ignore[type-arg]
    @app.task(name="t.work")
    def work(x: object, user_id: object = None, tags: object = None) -> object:
        return x

    work.enqueue(7, user_id=42)
    work.enqueue(8, user_id="42")
    work.enqueue(9, user_id=True)
    work.enqueue([1, 2], user_id=None, tags={"a": 1})
    work.with_options(queue="other").enqueue(7, user_id=43)
    return work


def count(backend: Backend, *where: str, **kw: object) -> int:
    f = JobFilter(where=tuple(parse_where(w) for w in where), **kw)  # type: ignore[arg-type]
    n = backend.job_count(JobCountParams(f))
    assert len(backend.job_list(JobListParams(filter=f, limit=1000))) == n
    return n


def test_where_is_typed_json(app: conveyor.App, backend: Backend) -> None:
    _enqueue(app)
    assert count(backend, "kwargs.user_id=42") == 1  # the number, not the string "42"
    assert count(backend, 'kwargs.user_id="42"') == 1
    assert count(backend, "kwargs.user_id=true") == 1  # true is not 1
    assert count(backend, "kwargs.user_id=null") == 1
    assert count(backend, "args.0=7") == 2
    assert count(backend, "args.0=7", queue="other") == 1
    assert count(backend, "args.0.1=2") == 1
    assert count(backend, 'kwargs.tags={"a": 1}') == 1
    assert count(backend, "kwargs.tags.a=1") == 1
    assert count(backend, "kwargs.missing=1") == 0
    assert count(backend, "kwargs.user_id=42", "args.0=8") == 0


def test_where_keys_named_like_json_path_keywords_are_keys(
    app: conveyor.App, backend: Backend
) -> None:
    # SQL/JSON paths have keywords (last, strict, lax, true...): a key so named is a key.
    @app.task(name="t.kw")
    def kw(last: object = None, strict: object = None, true: object = None) -> None: ...

    kw.enqueue(last=1, strict="lax", true=[1, 2])
    kw.enqueue(last=2)
    assert count(backend, "kwargs.last=1") == 1
    assert count(backend, 'kwargs.strict="lax"') == 1
    assert count(backend, "kwargs.true.1=2") == 1
    assert count(backend, "kwargs.true.2=2") == 0  # past the end: no match, no error


def test_result_state_task_and_time_filters(app: conveyor.App, backend: Backend) -> None:
    _enqueue(app)
    claimed = backend.job_claim(JobClaimParams("w", [("default", 10)], 10))
    for c in claimed:
        result = '{"ok": true}' if c.payload.startswith('{"args":[7]') else '{"ok": false}'
        backend.job_finish_many(
            [JobFinishParams(c.id, c.token, FinishKind.SUCCEEDED, result=result)]
        )
    assert count(backend, "result.ok=true") == 1
    assert count(backend, "result.ok=false") == 3
    assert count(backend, states=(JobState.SUCCEEDED,)) == 4
    assert count(backend, states=(JobState.QUEUED, JobState.SUCCEEDED)) == 5
    assert count(backend, task="t.work") == 5
    assert count(backend, task="nope") == 0
    now = time.time()
    assert count(backend, created_after=now - 60, created_before=now + 1) == 5
    assert count(backend, created_after=now + 60) == 0
    assert count(backend, finished_after=now - 60) == 4
    assert count(backend, finished_before=now - 60) == 0


def test_paging_by_id(app: conveyor.App, backend: Backend) -> None:
    _enqueue(app)
    seen, after = [], None
    while True:
        page = backend.job_list(JobListParams(after_id=after, limit=2, filter=JobFilter()))
        if not page:
            break
        seen += [j.id for j in page]
        after = page[-1].id
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == 5


def test_purge_only_old_finished_and_takes_attempts_and_logs(
    app: conveyor.App, backend: Backend
) -> None:
    _enqueue(app)
    claimed = backend.job_claim(JobClaimParams("w", [("default", 2)], 2))
    old = time.time() - 3600
    for c in claimed:
        backend.job_finish_many(
            [JobFinishParams(c.id, c.token, FinishKind.SUCCEEDED, result="1", finished_at=old)]
        )
    backend.job_log_insert_many(
        JobLogInsertParams([JobLogRecord(claimed[0].id, 1, old, "INFO", "t", "hi")])
    )
    assert backend.job_purge(JobPurgeParams(finished_before=time.time() - 7200)) == 0
    assert (
        backend.job_purge(JobPurgeParams(finished_before=time.time() - 60, states=(JobState.DEAD,)))
        == 0
    )
    assert backend.job_purge(JobPurgeParams(finished_before=time.time() - 60)) == 2
    assert backend.job_get_many([c.id for c in claimed]) == []
    assert backend.job_attempts(claimed[0].id) == []
    assert backend.job_log_list(JobLogListParams(claimed[0].id)) == []
    assert backend.job_count(JobCountParams(JobFilter())) == 3
