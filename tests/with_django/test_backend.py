"""conveyor.contrib.django against a real Django project: a view enqueues inside a
transaction, a real ``manage.py conveyor_worker --burst`` runs the jobs, and the
TaskResult is read back through Django's API."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.with_django.conftest import manage
from tests.with_django.requires import require_django

require_django()

from django.db import transaction  # noqa: E402
from django.tasks import TaskResultStatus, task_backends  # noqa: E402
from django.tasks.exceptions import TaskResultDoesNotExist  # noqa: E402
from django.test import Client  # noqa: E402

pytestmark = pytest.mark.slow


def _post(**data: str) -> tuple[int, dict[str, Any]]:
    response = Client().post("/signup/", data)
    return response.status_code, json.loads(response.content)


def _worker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = manage(env, "conveyor_worker", "--burst", *args)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_committed_view_enqueues_and_the_worker_runs_it(django_project: dict[str, str]) -> None:
    from shop.tasks import send_welcome

    status, body = _post(username="ada")
    assert (status, body["committed"]) == (200, True)
    queued = send_welcome.get_result(body["result_id"])
    assert queued.status == TaskResultStatus.READY
    assert (queued.args, queued.task.queue_name) == ([body["user_id"]], "mail")

    _worker(django_project)  # no --queue: the tasks' queues (mail) are consumed

    done = send_welcome.get_result(body["result_id"])
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == "welcome ada"
    assert done.is_finished and done.errors == [] and len(done.worker_ids) == 1
    assert done.enqueued_at <= done.started_at <= done.finished_at


def test_a_rolled_back_view_enqueues_nothing(django_project: dict[str, str]) -> None:
    from shop.tasks import send_welcome

    app = task_backends["default"].app
    before = len(_jobs(app))
    status, body = _post(username="grace", refuse="1")
    assert (status, body["committed"]) == (409, False)
    with pytest.raises(TaskResultDoesNotExist):
        send_welcome.get_result(body["result_id"])
    assert len(_jobs(app)) == before


def _jobs(app: Any) -> list[Any]:
    from conveyor.backends.base import JobListParams

    return list(app.backend.job_list(JobListParams(limit=1000)))


def test_the_job_appears_only_when_the_outer_transaction_commits(
    django_project: dict[str, str],
) -> None:
    from shop.reports import count_users

    with transaction.atomic():
        result = count_users.enqueue()
        with pytest.raises(TaskResultDoesNotExist):  # not written yet: still uncommitted
            count_users.get_result(result.id)
    assert count_users.get_result(result.id).status == TaskResultStatus.READY


def test_a_task_outside_a_tasks_module_is_imported_by_its_module_path(
    django_project: dict[str, str],
) -> None:
    from django.contrib.auth.models import User
    from shop.reports import count_users

    result = count_users.enqueue()  # autocommit: on_commit runs at once
    _worker(django_project)
    done = count_users.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == User.objects.count()


def test_a_failing_task_is_failed_with_every_attempt_s_error(
    django_project: dict[str, str],
) -> None:
    from shop.tasks import MailBounced, send_welcome

    _, body = _post(username="bounce-1")
    _worker(django_project)
    failed = send_welcome.get_result(body["result_id"])
    assert failed.status == TaskResultStatus.FAILED  # OPTIONS max_attempts=2, both failed
    assert [e.exception_class for e in failed.errors] == [MailBounced, MailBounced]
    assert "no mailbox for bounce-1" in failed.errors[-1].traceback
    assert failed.attempts == 2
    with pytest.raises(ValueError, match="Task failed"):
        failed.return_value  # noqa: B018 - Django's property raises for a failed task


def test_a_takes_context_task_gets_django_s_task_context(django_project: dict[str, str]) -> None:
    from shop.tasks import attempt_number

    result = attempt_number.enqueue("first")
    _worker(django_project)
    result.refresh()  # Django's API: reload from the store
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == {"label": "first", "attempt": 1}


def test_enqueue_on_commit_false_writes_at_once_even_in_a_rolled_back_transaction(
    django_project: dict[str, str],
) -> None:
    from shop.tasks import add  # an async def task on the "direct" backend

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        result = add.enqueue(2, 3)
        assert add.get_result(result.id).status == TaskResultStatus.READY
        raise Rollback
    _worker(django_project, "--backend", "direct")
    assert add.get_result(result.id).return_value == 5


def test_using_sets_the_job_s_queue_priority_and_run_time(django_project: dict[str, str]) -> None:
    import datetime

    from shop.tasks import send_welcome

    from conveyor import JobState

    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    result = send_welcome.using(queue_name="default", priority=7, run_after=later).enqueue(1)
    record = task_backends["default"].app.job(result.id).refresh()
    assert (record.queue, record.priority, record.state) == ("default", 7, JobState.SCHEDULED)
    assert record.run_at == pytest.approx(later.timestamp(), abs=0.01)
    stored = send_welcome.get_result(result.id)
    assert (stored.status, stored.task.queue_name, stored.args) == (
        TaskResultStatus.READY,
        "mail",
        [1],
    )
    assert send_welcome.get_result(result.id).started_at is None


def test_aenqueue_and_aget_result(django_project: dict[str, str]) -> None:
    import asyncio

    from shop.tasks import add

    async def enqueue_and_read() -> tuple[str, TaskResultStatus]:
        result = await add.aenqueue(20, 22)
        return result.id, (await add.aget_result(result.id)).status

    job_id, status = asyncio.run(enqueue_and_read())
    assert status == TaskResultStatus.READY
    _worker(django_project, "--backend", "direct")
    assert add.get_result(job_id).return_value == 42


def test_a_bad_argument_raises_in_the_caller_and_nothing_is_enqueued(
    django_project: dict[str, str],
) -> None:
    from shop.reports import count_users

    app = task_backends["default"].app
    before = len(_jobs(app))
    with pytest.raises(TypeError):
        count_users.enqueue(1)  # takes no argument
    assert len(_jobs(app)) == before


def test_every_thread_s_backend_shares_one_app_so_capture_sees_other_threads(
    django_project: dict[str, str],
) -> None:
    import threading

    from shop.reports import count_users

    from conveyor.contrib.django import conveyor_app

    seen: list[Any] = []

    def enqueue_in_a_thread() -> None:  # Django builds this thread its own backend
        seen.append(task_backends["default"])
        count_users.enqueue()

    with conveyor_app().testing("capture") as captured:
        thread = threading.Thread(target=enqueue_in_a_thread)
        thread.start()
        thread.join()
    assert seen[0] is not task_backends["default"]
    assert seen[0].app is task_backends["default"].app
    assert [j.task_name for j in captured.jobs] == ["shop.reports.count_users"]


def test_a_store_that_cannot_be_written_raises_after_the_commit(
    django_project: dict[str, str], tmp_path: Any
) -> None:
    from django.contrib.auth.models import User
    from django.test import override_settings
    from shop.reports import count_users

    (tmp_path / "a-file").write_text("not a directory")
    unusable = f"sqlite:///{tmp_path / 'a-file' / 'jobs.db'}"  # cannot be created
    options = {"url": unusable}
    tasks = {"default": {"BACKEND": "conveyor.contrib.django.ConveyorBackend", "OPTIONS": options}}
    with (
        override_settings(TASKS=tasks),
        pytest.raises(Exception, match="a-file"),  # the store's own error, whichever it is
        transaction.atomic(),
    ):
        User.objects.create(username="committed-anyway")
        count_users.enqueue()
    assert User.objects.filter(username="committed-anyway").exists()


def test_manage_py_check_reports_a_store_url_conveyor_cannot_open(
    django_project: dict[str, str],
) -> None:
    from django.core.checks import run_checks
    from django.test import override_settings

    # The project's URLs (and the task modules they import) load under the project's own
    # TASKS, as in a running site: loaded first under the override below, shop/tasks.py's
    # queue_name="mail" would be refused by the overriding backend, which declares none.
    # (Which test loads them first depends on the order, and on pytest-xdist's split.)
    run_checks()
    backend = {"BACKEND": "conveyor.contrib.django.ConveyorBackend"}
    with override_settings(TASKS={"default": {**backend, "OPTIONS": {"url": "oracle://db/x"}}}):
        found = [m for m in run_checks() if m.id == "conveyor.E001"]
    assert len(found) == 1 and "unsupported store URL 'oracle://db/x'" in found[0].msg
    assert [m for m in run_checks() if m.id == "conveyor.E001"] == []  # the project's own


def test_a_job_cancelled_through_conveyor_is_failed_for_django(
    django_project: dict[str, str],
) -> None:
    from shop.reports import count_users

    from conveyor.contrib.django import conveyor_app

    result = count_users.enqueue()
    conveyor_app().job(result.id).cancel()
    result.refresh()
    assert (result.status, result.is_finished) == (TaskResultStatus.FAILED, True)
    assert result.finished_at is not None and result.worker_ids == []


def test_a_view_that_enqueues_is_tested_with_capture_mode(django_project: dict[str, str]) -> None:
    from shop.tasks import send_welcome

    from conveyor.contrib.django import conveyor_app, conveyor_task

    with conveyor_app().testing("capture") as captured:
        _, committed = _post(username="linus")
        _post(username="ken", refuse="1")
    job = captured.assert_enqueued(conveyor_task(send_welcome), committed["user_id"])
    assert (job.id, job.queue, len(captured.jobs)) == (committed["result_id"], "mail", 1)
    # drain() runs the captured jobs here, as a worker would (the row is committed)
    assert [j.result() for j in captured.drain()] == ["welcome linus"]


def test_the_worker_command_has_conveyor_worker_s_options(django_project: dict[str, str]) -> None:
    proc = manage(django_project, "conveyor_worker", "--help")
    assert proc.returncode == 0, proc.stderr
    for option in ("--backend", "--concurrency", "--pool", "--queue", "--burst", "--url"):
        assert option in proc.stdout
    refused = manage(django_project, "conveyor_worker", "--backend", "nope", "--burst")
    assert refused.returncode == 1
    assert "Error: no TASKS backend 'nope'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_the_process_pool_s_children_set_django_up_and_run_the_task(
    django_project: dict[str, str],
) -> None:
    from shop.reports import process_id

    result = process_id.enqueue()
    proc = _worker(django_project, "--pool", "process", "--concurrency", "1")
    done = process_id.get_result(result.id)
    assert done.status == TaskResultStatus.SUCCESSFUL, proc.stderr
    # a child ran it: not the worker's own process (its id is in the worker id, host:pid:...)
    (worker_id,) = done.worker_ids
    assert done.return_value != int(worker_id.split(":")[1])
