"""Django's task-framework contract, ported from Django 6.1's own tests (``tests/tasks/``)
and django-tasks' database-backend tests, asserted against ``ConveyorBackend``.

Enqueue and read-back cases run in this process; what a worker does runs in one real
``manage.py conveyor_worker --burst`` over every case's job (:func:`ran`), whose stderr
carries Django's task log lines (its console log shows every logger's INFO lines)."""

from __future__ import annotations

import dataclasses
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.with_django.conftest import PROJECT, manage
from tests.with_django.requires import require_django

require_django()

import django  # noqa: E402
from django.db import connections, transaction  # noqa: E402
from django.tasks import TaskResultStatus, task, task_backends  # noqa: E402
from django.tasks.exceptions import (  # noqa: E402
    InvalidTask,
    TaskResultDoesNotExist,
    TaskResultMismatch,
)
from django.tasks.signals import task_enqueued  # noqa: E402
from django.test import SimpleTestCase  # noqa: E402

from conveyor.contrib.django import ConveyorBackend, conveyor_app  # noqa: E402

pytestmark = pytest.mark.slow

#: Django 6.1 passes @task's extra keywords to the backend's task class (6.0 refuses
#: them), and pickles tasks
TASK_OPTIONS = django.VERSION >= (6, 1)


# -- enqueue and get_result, in this process ------------------------------------------------


def test_enqueue_returns_what_get_result_and_refresh_read_back(
    django_project: dict[str, str],
) -> None:
    from shop.contract import noop_task, noop_task_async

    for one in (noop_task, noop_task_async):
        received: list[tuple[Any, Any]] = []

        def capture(sender: Any, task_result: Any, **kwargs: Any) -> None:
            received.append((sender, task_result))  # noqa: B023 - read in this iteration

        task_enqueued.connect(capture, dispatch_uid="contract", weak=False)
        try:
            result = one.enqueue(1, two=3)
        finally:
            task_enqueued.disconnect(dispatch_uid="contract")
        assert (result.status, result.is_finished, result.attempts) == (
            TaskResultStatus.READY,
            False,
            0,
        )
        assert (result.started_at, result.last_attempted_at, result.finished_at) == (None,) * 3
        assert (result.args, result.kwargs, result.task) == ([1], {"two": 3}, one)
        with pytest.raises(ValueError, match="Task has not finished yet"):
            result.return_value  # noqa: B018 - Django's property raises
        assert received == [(ConveyorBackend, result)]
        assert one.get_result(result.id) == result  # enqueued_at included
        before = dataclasses.asdict(result)
        result.refresh()
        assert dataclasses.asdict(result) == before


def test_a_result_enqueued_inside_atomic_equals_the_one_read_after_the_commit(
    django_project: dict[str, str],
) -> None:
    from shop.contract import calculate_meaning_of_life

    with transaction.atomic():
        result = calculate_meaning_of_life.enqueue()
        time.sleep(0.01)  # the write comes later than the enqueue
    assert calculate_meaning_of_life.get_result(result.id) == result


def test_aenqueue_and_aget_result_agree(django_project: dict[str, str]) -> None:
    import asyncio

    from shop.contract import noop_task

    async def both() -> tuple[Any, Any]:
        result = await noop_task.aenqueue()
        return result, await noop_task.aget_result(result.id)

    enqueued, read = asyncio.run(both())
    assert enqueued == read


def test_an_argument_that_is_not_json_raises_and_enqueues_nothing(
    django_project: dict[str, str],
) -> None:
    from shop.contract import noop_task

    with (
        conveyor_app().testing("capture") as captured,
        pytest.raises(TypeError, match="Unsupported type"),
    ):
        noop_task.enqueue(datetime.now())
    assert captured.jobs == []


def test_missing_results_and_results_of_another_task(django_project: dict[str, str]) -> None:
    from shop.contract import noop_task, noop_task_async

    for missing in ("123", "06H4XTKJYNPE5CDRNS025A49J4"):
        with pytest.raises(TaskResultDoesNotExist):
            noop_task.get_result(missing)
    other = noop_task_async.enqueue()
    with pytest.raises(TaskResultMismatch, match="Task does not match"):
        noop_task.get_result(other.id)


def test_django_s_own_checks_of_priority_queue_and_run_after(
    django_project: dict[str, str],
) -> None:
    from shop.contract import noop_task

    for priority in (-101, 101, 3.1):
        with pytest.raises(InvalidTask, match="priority must be a whole number between -100"):
            noop_task.using(priority=priority)
    assert [noop_task.using(priority=p).priority for p in (-100, 0, 100)] == [-100, 0, 100]
    with pytest.raises(InvalidTask, match="Queue 'queue-2' is not valid for backend"):
        noop_task.using(queue_name="queue-2")
    with pytest.raises(InvalidTask, match="run_after must be an aware datetime"):
        noop_task.using(run_after=datetime.now())


@pytest.mark.skipif(not TASK_OPTIONS, reason="Django 6.0's Task does not pickle (6.1 added it)")
def test_tasks_and_results_pickle(django_project: dict[str, str]) -> None:
    from shop.contract import noop_task

    assert pickle.loads(pickle.dumps(noop_task)) == noop_task
    result = noop_task.enqueue()
    assert pickle.loads(pickle.dumps(result)) == result


def test_enqueue_outside_atomic_opens_no_database_connection(
    django_project: dict[str, str],
) -> None:
    """The default "on_commit" mode has nothing to wait for outside atomic(): it writes at
    once, without the connection transaction.on_commit would open to ask."""
    from shop.contract import noop_task

    connections["default"].close()
    result = noop_task.enqueue()
    assert connections["default"].connection is None
    assert noop_task.get_result(result.id).status == TaskResultStatus.READY


@pytest.mark.usefixtures("django_project")
class EnqueueInASimpleTestCase(SimpleTestCase):  # type: ignore[misc]  # Django is untyped
    """Django refuses any database query in a SimpleTestCase: an enqueue to a job store
    that is not Django's database works there."""

    def test_enqueue_and_read_back(self) -> None:
        from shop.contract import noop_task

        result = noop_task.enqueue(5)
        self.assertEqual(noop_task.get_result(result.id), result)


# -- conveyor's options in @task(...) (Django >= 6.1) ----------------------------------------


@pytest.mark.skipif(TASK_OPTIONS, reason="Django >= 6.1 takes the options (tested below)")
def test_django_6_0_s_task_decorator_refuses_conveyor_options(
    django_project: dict[str, str],
) -> None:
    from shop.contract import noop_task

    with pytest.raises(TypeError, match="max_attempts"):
        task(max_attempts=3)(noop_task.func)


@pytest.mark.skipif(not TASK_OPTIONS, reason="Django 6.0's @task passes no extra keywords")
def test_conveyor_options_in_task_are_checked_when_the_task_is_defined(
    django_project: dict[str, str],
) -> None:
    from shop.contract import echo, noop_task

    from conveyor.contrib.django.task import ConveyorDjangoTask

    defined = task(max_attempts=4, timeout=9, priority=5)(echo.func)
    assert isinstance(defined, ConveyorDjangoTask)
    assert (defined.max_attempts, defined.timeout, defined.priority) == (4, 9, 5)
    with pytest.raises(InvalidTask, match="max_attempts must be"):
        task(max_attempts=0)(noop_task.func)
    with pytest.raises(InvalidTask, match="timeout must be"):
        task(timeout=-1)(noop_task.func)
    with pytest.raises(TypeError):
        task(no_such_option=1)(noop_task.func)
    with pytest.raises(InvalidTask, match="priority must be a whole number"):
        task(priority=500)(noop_task.func)  # conveyor's range is wider; Django's holds


@pytest.mark.skipif(not TASK_OPTIONS, reason="Django 6.0's @task passes no extra keywords")
def test_a_unique_key_in_task_keeps_one_job(django_project: dict[str, str]) -> None:
    from shop.optioned import sync_account

    first, second = sync_account.enqueue(7), sync_account.enqueue(7)
    assert second.id == first.id
    assert sync_account.get_result(second.id) == first
    assert sync_account.enqueue(8).id != first.id


# -- what the worker does: one real manage.py conveyor_worker over every case ----------------


@dataclasses.dataclass
class Ran:
    results: dict[str, Any]
    stderr: str

    def read(self, name: str) -> Any:
        result = self.results[name]
        result.refresh()
        return result


@pytest.fixture(scope="module")
def ran(django_project: dict[str, str]) -> Ran:
    """Every case enqueued, then one burst worker (the project's "default" backend: two
    attempts, the retry due at once)."""
    from shop import contract

    calls: dict[str, Any] = {
        "noop": contract.noop_task.enqueue(1, two=3),
        "noop_async": contract.noop_task_async.enqueue(),
        "meaning": contract.calculate_meaning_of_life.enqueue(),
        "value_error": contract.failing_task_value_error.enqueue(),
        "system_exit": contract.failing_task_system_exit.enqueue(),
        "keyboard_interrupt": contract.failing_task_keyboard_interrupt.enqueue(),
        "complex_exception": contract.complex_exception.enqueue(),
        "lambda": contract.complex_return_value.enqueue(),
        "set": contract.set_return_value.enqueue(),
        "nan": contract.nan_return_value.enqueue(),
        "normalized": contract.normalized_return_value.enqueue(),
        "exit": contract.exit_task.enqueue(),
        "task_id": contract.get_task_id.enqueue(),
        "context": contract.test_context.enqueue(1),
    }
    if TASK_OPTIONS:
        from shop import optioned

        calls |= {
            "flaky": optioned.flaky.enqueue(),
            "once": optioned.once.enqueue(),
            "slow": optioned.slow.enqueue(),
            "short_lived": optioned.short_lived.enqueue(),
        }
        time.sleep(0.3)  # short_lived's expires (0.2 s) passes before any worker starts
    proc = manage(django_project, "conveyor_worker", "--burst", "--concurrency", "4")
    assert proc.returncode == 0, proc.stderr  # KeyboardInterrupt, SystemExit: jobs' own
    return Ran(calls, proc.stderr)


@pytest.mark.parametrize("name", ["noop", "noop_async"])
def test_a_task_runs_and_its_times_are_in_order(ran: Ran, name: str) -> None:
    done = ran.read(name)
    assert (done.status, done.is_finished, done.attempts) == (TaskResultStatus.SUCCESSFUL, True, 1)
    assert done.return_value is None
    assert done.enqueued_at <= done.started_at <= done.last_attempted_at <= done.finished_at


def test_the_return_value_is_read_back(ran: Ran) -> None:
    assert ran.read("meaning").return_value == 42
    assert ran.read("normalized").return_value == [1, "two", {"three": [3]}]  # Django's rules


@pytest.mark.parametrize(
    ("name", "exception", "message"),
    [
        ("value_error", ValueError, "This Task failed due to ValueError"),
        ("system_exit", SystemExit, "This Task failed due to SystemExit"),
        ("keyboard_interrupt", KeyboardInterrupt, "This Task failed due to KeyboardInterrupt"),
    ],
)
def test_a_failing_task_fails_with_each_attempt_s_error(
    ran: Ran, name: str, exception: type[BaseException], message: str
) -> None:
    failed = ran.read(name)
    assert (failed.status, failed.is_finished) == (TaskResultStatus.FAILED, True)
    with pytest.raises(ValueError, match="Task failed"):
        failed.return_value  # noqa: B018
    assert [e.exception_class for e in failed.errors] == [exception, exception]  # 2 attempts
    assert failed.errors[-1].traceback.endswith(f"{exception.__name__}: {message}\n")
    assert failed.enqueued_at <= failed.started_at <= failed.finished_at


def test_a_complex_exception_and_exit(ran: Ran) -> None:
    failed = ran.read("complex_exception")
    assert failed.errors[0].exception_class is ValueError
    assert 'ValueError(ValueError("This task failed"))' in failed.errors[0].traceback
    assert ran.read("exit").errors[0].exception_class is SystemExit


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("lambda", "Unsupported type"),
        ("set", "Unsupported type"),
        ("nan", "nan is not a JSON number"),
    ],
)
def test_a_return_value_that_is_not_json_fails_at_once_with_type_error(
    ran: Ran, name: str, why: str
) -> None:
    failed = ran.read(name)
    assert failed.status == TaskResultStatus.FAILED
    assert failed.attempts == 1  # not retried: the backend allows two
    assert [e.exception_class for e in failed.errors] == [TypeError]
    assert "return value is not JSON" in failed.errors[0].traceback
    assert why in failed.errors[0].traceback
    assert failed._return_value is None
    assert conveyor_app().job(failed.id).refresh().state.value == "dead"


def test_takes_context_gets_its_own_task_result(ran: Ran) -> None:
    assert ran.read("task_id").return_value == ran.results["task_id"].id
    assert ran.read("context").status == TaskResultStatus.SUCCESSFUL  # context.attempt == 1


def test_the_worker_sends_django_s_started_and_finished_signals(ran: Ran) -> None:
    """Django's own receivers log them (as its backends do), and the worker's log shows
    them; state=READY is an attempt that failed and runs again."""
    lines = [line for line in ran.stderr.splitlines() if " django.tasks: " in line]

    def logged(name: str, path: str) -> list[str]:
        job = ran.results[name].id
        return [line.split(" state=")[-1] for line in lines if f"Task id={job} path={path}" in line]

    assert logged("noop", "shop.contract.noop_task") == ["RUNNING", "SUCCESSFUL"]
    assert logged("value_error", "shop.contract.failing_task_value_error") == [
        "RUNNING",
        "READY",
        "RUNNING",
        "FAILED",
    ]
    assert logged("set", "shop.contract.set_return_value") == ["RUNNING", "FAILED"]
    assert "ValueError: This Task failed due to ValueError" in ran.stderr  # exc_info logged


@pytest.mark.skipif(not TASK_OPTIONS, reason="Django 6.0's @task passes no extra keywords")
def test_max_attempts_retry_timeout_and_expires_from_task(ran: Ran) -> None:
    flaky = ran.read("flaky")  # max_attempts=3 over the backend's 2, retried at once
    assert (flaky.status, flaky.return_value, flaky.attempts) == (TaskResultStatus.SUCCESSFUL, 3, 3)
    assert [e.exception_class for e in flaky.errors] == [ConnectionError, ConnectionError]
    once = ran.read("once")  # max_attempts=1 under the backend's 2
    assert (once.status, once.attempts) == (TaskResultStatus.FAILED, 1)
    slow = ran.read("slow")  # timeout=0.5
    assert (slow.status, slow.attempts) == (TaskResultStatus.FAILED, 1)
    assert "timed out after 0.5 s" in slow.errors[0].traceback
    expired = ran.read("short_lived")  # expires=0.2 s: never run
    assert (expired.status, expired.attempts) == (TaskResultStatus.FAILED, 0)
    assert conveyor_app().job(expired.id).refresh().state.value == "expired"


# -- periodic tasks declared in settings ---------------------------------------------------


@pytest.fixture
def timed_worker(django_project: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    import os

    proc = subprocess.Popen(
        [sys.executable, "manage.py", "conveyor_worker", "--backend", "timed"],
        cwd=PROJECT,
        env={**os.environ, **django_project},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_a_schedule_in_options_is_run_by_the_worker(
    timed_worker: subprocess.Popen[str],
) -> None:
    from conveyor.backends.base import JobListParams

    app = task_backends["timed"].app
    deadline = time.monotonic() + 40
    done: list[Any] = []
    while not done and time.monotonic() < deadline and timed_worker.poll() is None:
        time.sleep(0.2)
        jobs = app.backend.job_list(JobListParams(limit=50))
        done = [j for j in jobs if j.state.value == "succeeded"]
    timed_worker.send_signal(signal.SIGTERM)
    _, stderr = timed_worker.communicate(timeout=30)
    assert done, stderr
    assert timed_worker.returncode == 0, stderr
    from shop.timed import beat

    result = beat.get_result(done[0].id)
    assert (result.status, result.return_value) == (
        TaskResultStatus.SUCCESSFUL,
        "beat from settings",
    )
    assert result.enqueued_at <= result.started_at


def test_manage_py_check_reports_a_schedule_that_cannot_work(
    django_project: dict[str, str],
) -> None:
    from django.conf import settings
    from django.core.checks import run_checks
    from django.test import override_settings

    from conveyor.errors import ConfigurationError

    def with_schedule(entry: dict[str, Any]) -> dict[str, Any]:
        timed = settings.TASKS["timed"]
        options = {**timed["OPTIONS"], "periodic": {"bad": entry}}
        return {**settings.TASKS, "timed": {**timed, "OPTIONS": options}}

    for entry, message in [
        ({"task": "shop.timed.nothing", "every": 1}, "cannot import 'shop.timed.nothing'"),
        ({"task": "shop.contract.noop_task", "every": 1}, "not a Django task of backend 'timed'"),
        ({"task": "shop.timed.beat", "cron": "61 * * * *"}, "bad"),
        ({"task": "shop.timed.beat", "every": 1}, "periodic shop.timed.beat: missing a required"),
    ]:
        with override_settings(TASKS=with_schedule(entry)):
            found = [m for m in run_checks() if m.id == "conveyor.E003"]
        assert len(found) == 1 and message in found[0].msg, (entry, found)
    with (
        override_settings(TASKS=with_schedule({"task": "shop.timed.beat", "evry": 1})),
        pytest.raises(ConfigurationError, match="unknown key 'evry'"),
    ):
        task_backends["timed"]
    assert [m for m in run_checks() if m.id == "conveyor.E003"] == []  # the project's own
