"""Unique jobs: one job per (task, key) while active / within unique_for; keep or replace."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import Backend
from conveyor.errors import ConfigurationError
from conveyor.states import JobState
from tests.support.flow import drain, needs


def test_keep_returns_the_existing_job(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task(unique_key=lambda user_id, note="": user_id)
    def sync(user_id: int, note: str = "") -> str:
        return note

    first = sync.enqueue(1, "a")
    assert sync.enqueue(1, "b") == first
    other = sync.enqueue(2, "c")
    assert other != first
    drain(app)
    assert first.result(timeout=5) == "a"
    # Finished and no unique_for: the key is free again.
    again = sync.enqueue(1, "d")
    assert again != first


def test_unique_for_holds_after_finish(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    # 1 s, not less: a burst drain on Redis may idle 0.25 s before it sees the finish.
    @app.task(unique_key="daily", unique_for=1.0)
    def report() -> None: ...

    enqueued = time.time()
    first = report.enqueue()
    drain(app)
    assert first.status is JobState.SUCCEEDED
    assert report.enqueue() == first  # still inside the window
    time.sleep(max(0.0, enqueued + 1.05 - time.time()))
    assert report.enqueue() != first


def test_replace_debounces_until_it_runs(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task(unique_key=lambda doc, text: doc, on_conflict="replace")
    def index(doc: str, text: str) -> str:
        return text

    first = index.with_options(delay=60).enqueue("d1", "v1")
    second = index.with_options(delay=0).enqueue("d1", "v2")
    assert second == first
    record = first.refresh()
    assert record.state is JobState.QUEUED  # run time replaced too
    drain(app)
    assert first.result(timeout=5) == "v2"


def test_with_options_unique_and_bad_policy(app: conveyor.App, backend: Backend) -> None:
    needs(backend, "unique")

    @app.task
    def t(x: int) -> None: ...

    a = t.with_options(unique_key="k").enqueue(1)
    assert t.with_options(unique_key="k").enqueue(2) == a
    assert t.enqueue(3) != a  # no key: not unique
    with pytest.raises(ConfigurationError):
        t.with_options(on_conflict="merge")


def _enqueue_at(url: str, start: Any, keys: int, out: Any) -> None:
    app = conveyor.App(url)

    @app.task(name="uniq", unique_key=lambda k: k)
    def uniq(k: int) -> None: ...

    _ = app.backend  # the store opened before the start line, not in the race
    start.wait(30)  # a barrier: every process enqueues at the same instant
    out.put(sorted(uniq.enqueue(k).id for k in range(keys)))
    app.close()


@pytest.mark.slow
def test_two_processes_same_key_same_instant_make_one_job(
    app: conveyor.App, backend: Backend, backend_url: str
) -> None:
    needs(backend, "unique")
    needs(backend, "shared")  # other processes enqueue to the same store
    # spawn, not fork: a fork of this process copies locks other threads hold (the
    # store's connection pool, pytest-xdist's channel), and a child that needs one
    # hangs; a fresh interpreter has none. Its start-up is outside the race: the
    # barrier releases the four only when each has its store open.
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start = ctx.Barrier(4)
    procs = [ctx.Process(target=_enqueue_at, args=(backend_url, start, 20, out)) for _ in range(4)]
    for p in procs:
        p.start()
    answers = [out.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(10)
    assert all(a == answers[0] for a in answers)  # every process got the same 20 jobs
    from conveyor.backends.base import JobListParams

    assert len(backend.job_list(JobListParams(task="uniq", limit=1000))) == 20
