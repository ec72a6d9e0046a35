"""Celery's spellings on a real SQLite store: ``task.delay`` and ``task.apply_async``
write the job ``enqueue`` / ``enqueue_after`` / ``schedule_at`` / ``with_options`` would,
Celery options conveyor does not take are refused with what to use instead (and nothing
is written), and the job handle they return is conveyor's own."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from typing import Any

import pytest

import conveyor
from conveyor.backends.base import JobListParams, JobRecord
from conveyor.states import JobState
from tests.support.flow import drain


@pytest.fixture
def app(sqlite_url: str) -> Iterator[conveyor.App]:
    app = conveyor.App(sqlite_url)
    yield app
    app.close()


def _add(app: conveyor.App) -> conveyor.Task[Any, int]:
    @app.task(name="add")
    def add(a: int, b: int = 0) -> int:
        return a + b

    return add


def _stored(app: conveyor.App) -> list[JobRecord]:
    return app.backend.job_list(JobListParams(limit=1000))


def _same_job(left: JobRecord, right: JobRecord) -> None:
    for field in ("task", "queue", "priority", "payload", "max_attempts", "state", "timeout"):
        assert getattr(left, field) == getattr(right, field), field


def test_delay_writes_what_enqueue_writes_and_runs(app: conveyor.App) -> None:
    add = _add(app)
    delayed, enqueued = add.delay(1, b=2), add.enqueue(1, b=2)
    assert isinstance(delayed, conveyor.Job) and delayed.status is JobState.QUEUED
    _same_job(delayed.refresh(), enqueued.refresh())
    drain(app)
    assert delayed.result(timeout=5) == 3


def test_delay_checks_arguments_like_enqueue(app: conveyor.App) -> None:
    add = _add(app)
    with pytest.raises(TypeError, match="add"):
        add.delay(1, 2, 3)
    with pytest.raises(TypeError, match="'a' must be int"):
        add.delay("one")
    assert _stored(app) == []


def test_apply_async_args_kwargs_queue_priority(app: conveyor.App) -> None:
    add = _add(app)
    celery = add.apply_async((1,), {"b": 2}, queue="math", priority=7)
    native = add.with_options(queue="math", priority=7).enqueue(1, b=2)
    _same_job(celery.refresh(), native.refresh())
    assert celery.refresh().queue == "math" and celery.refresh().priority == 7
    assert add.apply_async([4]).refresh().payload == add.enqueue(4).refresh().payload
    with pytest.raises(TypeError, match="'a'"):  # the signature check applies as ever
        add.apply_async((), {"b": 1})


def test_apply_async_countdown_is_enqueue_after(app: conveyor.App) -> None:
    add = _add(app)
    before = time.time()
    job = add.apply_async((1,), countdown=120)
    record = job.refresh()
    assert record.state is JobState.SCHEDULED
    assert before + 120 <= record.run_at <= time.time() + 120
    job2 = add.apply_async((1,), countdown=datetime.timedelta(minutes=2))
    assert abs(job2.refresh().run_at - record.run_at) < 5


def test_apply_async_eta_is_schedule_at(app: conveyor.App) -> None:
    add = _add(app)
    eta = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    record = add.apply_async((1,), eta=eta).refresh()
    assert record.state is JobState.SCHEDULED
    assert record.run_at == pytest.approx(eta.timestamp(), abs=0.01)
    assert add.apply_async((1,), eta=eta.timestamp()).refresh().run_at == pytest.approx(
        eta.timestamp(), abs=0.01
    )


def test_apply_async_expires_is_with_options_expires(app: conveyor.App) -> None:
    add = _add(app)
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=1)
    job = add.apply_async((1,), expires=past)
    later = add.apply_async((2,), expires=3600)
    drain(app)
    assert job.wait(timeout=5).state is JobState.EXPIRED
    assert later.result(timeout=5) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"retry_policy": {"max_retries": 3}},
            "apply_async() does not take retry_policy: an enqueue is one write to the "
            "store, and raises conveyor.BackendUnavailable when the store is "
            "unreachable (catch it to try again); a job's retries are the task's options, "
            "@app.task(max_attempts=5, retry=conveyor.Backoff(...))",
        ),
        ({"max_retries": 3}, "does not take max_retries: a job's retries are the task's"),
        ({"link": None}, "does not take link: chain steps with a.s(...) | b.s(...)"),
        ({"task_id": "x"}, "conveyor makes the job id (job.id)"),
        ({"time_limit": 5}, "@app.task(timeout=seconds)"),
        (
            {"routing_key": "x", "exchange": "y"},
            "does not take exchange (nor routing_key): jobs are routed by queue=",
        ),
        (
            {"shadow": "other"},
            "does not take shadow: it takes args, kwargs, countdown, eta, expires, queue "
            "and priority; other options are task.with_options(...)'s",
        ),
    ],
)
def test_apply_async_refuses_other_celery_options(
    app: conveyor.App, options: dict[str, Any], message: str
) -> None:
    add = _add(app)
    with pytest.raises(TypeError) as caught:
        add.apply_async((1,), **options)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert _stored(app) == []


def test_apply_async_refuses_what_celery_would_misread(app: conveyor.App) -> None:
    add = _add(app)
    with pytest.raises(ValueError, match="countdown must be finite seconds >= 0, got -5"):
        add.apply_async((1,), countdown=-5)
    with pytest.raises(ValueError, match="countdown or eta, not both"):
        add.apply_async((1,), countdown=1, eta=time.time())
    with pytest.raises(ValueError, match=r"eta=\.\.\.\) needs an aware datetime"):
        add.apply_async((1,), eta=datetime.datetime(2030, 1, 1))
    with pytest.raises(TypeError, match="takes a tuple or list of positional arguments, got str"):
        add.apply_async("1")
    with pytest.raises(TypeError, match="takes a dict of keyword arguments, got list"):
        add.apply_async((1,), [("b", 2)])
    assert _stored(app) == []


def test_aliases_on_with_options_and_in_testing_modes(app: conveyor.App) -> None:
    add = _add(app)
    job = add.with_options(queue="low").apply_async((5,), priority=2)
    assert (job.refresh().queue, job.refresh().priority) == ("low", 2)
    with app.testing("inline"):
        assert add.delay(2, 3).result() == 5
        assert add.apply_async((2,), {"b": 4}).result() == 6
    with app.testing("capture") as captured:
        add.delay(9)
        captured.assert_enqueued(add, 9)


def test_class_based_tasks_have_the_aliases(app: conveyor.App) -> None:
    class Double(app.Task, name="double"):
        def execute(self, x: int) -> int:
            return 2 * x

    now = Double.delay(4)
    later = Double.apply_async((5,), countdown=60, queue="low")
    assert now.refresh().payload == Double.enqueue(4).refresh().payload
    assert (later.refresh().state, later.refresh().queue) == (JobState.SCHEDULED, "low")
    with pytest.raises(TypeError, match="does not take task_id"):
        Double.apply_async((1,), task_id="x")
    drain(app)
    assert now.result(timeout=5) == 8
