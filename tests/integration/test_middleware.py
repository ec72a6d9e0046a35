"""Middleware (docs/hooks.md) on real workers: headers set at enqueue reach the task,
``around_execute`` wraps the body where it runs -- thread, asyncio task, child process,
subinterpreter -- with the class instantiated there by name, the worker-side hooks see
every attempt, and a middleware that raises never loses a job."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import JobListParams
from conveyor.errors import ConfigurationError
from conveyor.headers import MAX_HEADERS, MAX_HEADERS_BYTES
from conveyor.middleware import NewJob
from conveyor.states import JobState
from tests.integration import hook_tasks as t

SPEC = "tests.integration.hook_tasks:app"


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """Points the shared app at this test's own store; middlewares removed afterwards."""
    store = f"sqlite:///{tmp_path / 'jobs.db'}"
    t.app.close()
    t.app.url = store
    yield store
    for instance in list(t.app.middleware):
        t.app.middleware.remove(instance)
    t.app.close()


@pytest.fixture(params=["thread", "async", "process", "interpreter"])
def pool(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "interpreter" and sys.version_info < (3, 13):
        pytest.skip(f"interpreter pool needs Python >= 3.13 (this is {sys.version.split()[0]})")
    return name


def burst(pool: str = "thread") -> None:
    conveyor.Worker(t.app, pool=pool, concurrency=2, burst=True, app_spec=SPEC).run(
        install_signals=False
    )


def test_around_execute_wraps_the_body_where_it_runs(pool: str, url: str) -> None:
    t.app.add_middleware(t.Stamp)  # after the app was imported: children rebuild it by name
    sync = t.stamped.with_options(headers={"tenant": "acme"}).enqueue()
    coro = t.astamped.enqueue()
    burst(pool)
    got = sync.result(timeout=1)
    assert got["stamp"] == f"{sync.id}|1|acme"
    assert got["headers"] == {"tenant": "acme"}
    assert coro.result(timeout=1)["stamp"] == f"{coro.id}|1|"
    in_child = got["pid"] != os.getpid()
    assert in_child == (pool == "process")


def test_worker_hooks_see_every_attempt_with_the_error(pool: str, url: str) -> None:
    recorder = t.app.add_middleware(t.Recorder())
    job = t.fails.enqueue()
    burst(pool)
    assert job.refresh().state is JobState.DEAD
    mine = [e for e in recorder.events if e[1] == job.id]
    assert mine == [
        ("start", job.id, 1),
        ("finish", job.id, 1, "retry"),
        ("retry", job.id, 1, "KeyError"),
        ("start", job.id, 2),
        ("finish", job.id, 2, "retry"),
        ("retry", job.id, 2, "KeyError"),
        ("start", job.id, 3),
        ("finish", job.id, 3, "dead"),
        ("dead", job.id, 3, "KeyError"),
    ]


def test_an_error_entering_around_execute_fails_the_attempt(pool: str, url: str) -> None:
    t.app.add_middleware(t.BrokenEnter)
    job = t.noop.enqueue()
    burst(pool)
    record = job.refresh()
    assert record.state is JobState.DEAD  # every attempt failed with the middleware's error
    assert record.attempt == 3
    assert '"RuntimeError"' in (record.error or "") and "tracer unavailable" in (record.error or "")


def test_a_swallowed_body_error_still_fails_the_attempt(url: str) -> None:
    t.app.add_middleware(t.Swallow)
    job = t.fails.enqueue()
    burst()
    assert job.refresh().state is JobState.DEAD
    assert "KeyError" in (job.refresh().error or "")


def test_on_enqueue_headers_order_and_visibility(url: str) -> None:
    t.app.add_middleware(t.TenantHeader)
    given = t.stamped.with_options(headers={"tenant": "acme"}).enqueue()
    default = t.stamped.enqueue()
    many = t.stamped.enqueue_many([(), ()])  # the batch path stamps each job
    assert dict(given.headers) == {"tenant": "acme", "seen_tenant": "acme"}
    assert dict(default.headers) == {"tenant": "from-middleware", "seen_tenant": ""}
    assert [dict(j.headers) for j in many] == [dict(default.headers)] * 2
    burst()
    assert given.result(timeout=1)["headers"] == {"tenant": "acme", "seen_tenant": "acme"}


def test_a_raising_on_enqueue_is_logged_once_and_the_job_is_written(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    t.app.add_middleware(t.BrokenEnqueue)
    with caplog.at_level(logging.DEBUG, logger="conveyor.middleware"):
        jobs = [t.noop.enqueue(), t.noop.enqueue()]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "BrokenEnqueue.on_enqueue raised" in errors[0].getMessage()
    assert errors[0].exc_info is not None  # with its traceback
    burst()
    assert [j.result(timeout=1) for j in jobs] == ["ran", "ran"]


def test_headers_are_refused_at_enqueue_naming_the_limit(url: str) -> None:
    too_many = {f"k{i}": "v" for i in range(MAX_HEADERS + 1)}
    with pytest.raises(ValueError, match=f"more than the limit of {MAX_HEADERS}$"):
        t.noop.with_options(headers=too_many)
    with pytest.raises(ValueError, match=f"limit of {MAX_HEADERS_BYTES} bytes"):
        t.noop.with_options(headers={"big": "x" * MAX_HEADERS_BYTES})
    with pytest.raises(TypeError, match="headers must map str to str, got int for 'n'"):
        t.noop.with_options(headers={"n": 1})  # type: ignore[dict-item]

    class Huge:
        def on_enqueue(self, job: NewJob) -> None:
            job.headers["blob"] = "x" * MAX_HEADERS_BYTES

    t.app.add_middleware(Huge())
    with pytest.raises(ValueError, match=f"limit of {MAX_HEADERS_BYTES} bytes"):
        t.noop.enqueue()  # what middlewares add is bounded too: nothing is written
    assert t.app.backend.job_list(JobListParams(limit=5)) == []


def test_registration_rules(url: str) -> None:
    class NeedsArgs:
        def __init__(self, level: int) -> None: ...

    with pytest.raises(ConfigurationError, match="takes no constructor arguments"):
        t.app.add_middleware(NeedsArgs)
    with pytest.raises(ConfigurationError, match="add the middleware class Stamp"):
        t.app.add_middleware(t.Stamp())
    app = conveyor.App("sqlite:///:memory:", middleware=[t.TenantHeader])
    assert app.middleware.classes == ["tests.integration.hook_tasks:TenantHeader"]


def test_inline_testing_mode_runs_on_enqueue_and_around_execute(url: str) -> None:
    t.app.add_middleware(t.TenantHeader)
    t.app.add_middleware(t.Stamp)
    with t.app.testing("inline"):
        job = t.stamped.enqueue()
        got = job.result()
    assert got["headers"] == {"tenant": "from-middleware", "seen_tenant": ""}
    assert got["stamp"] == f"{job.id}|1|from-middleware"
