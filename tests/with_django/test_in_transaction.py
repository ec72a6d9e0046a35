"""``"enqueue": "in_transaction"`` and ``conveyor.transaction(django.db.connection)``:
the job is written through Django's own connection inside the view's ``atomic()``, so
the view's rollback leaves no job and its commit leaves the job a real worker runs. On
SQLite (the store is Django's database file) and on PostgreSQL (the store is a schema of
Django's "pg" database, on the session's own cluster)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.with_django.conftest import manage, require_postgres
from tests.with_django.requires import require_django

require_django()

from django.db import connections, transaction  # noqa: E402
from django.tasks import TaskResultStatus, task_backends  # noqa: E402
from django.tasks.exceptions import TaskResultDoesNotExist  # noqa: E402
from django.test import Client, override_settings  # noqa: E402

from conveyor.errors import ConfigurationError  # noqa: E402

pytestmark = pytest.mark.slow

#: the Django database -> the backend whose store it is
BACKEND = {"default": "together", "pg": "together_pg"}


@pytest.fixture(params=["default", "pg"], ids=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, django_project: dict[str, str]) -> str:
    if request.param == "pg":
        require_postgres(django_project)
    return str(request.param)


def _post(database: str, **data: str) -> tuple[int, dict[str, Any]]:
    response = Client().post("/signup-together/", {"db": database, **data})
    return response.status_code, json.loads(response.content)


def _job_rows(database: str, job_id: str) -> int:
    """The job's rows as Django's own connection sees them (its transaction included)."""
    schema = ""
    if database == "pg":
        schema = task_backends[BACKEND[database]].app.backend.schema + "."
    with connections[database].cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {schema}jobs WHERE id = %s", [job_id])
        count: int = cur.fetchone()[0]
    return count


def _greet(database: str) -> Any:
    """The project's greeting task on the backend whose store is ``database``."""
    if database == "pg":
        from shop.pg_tasks import greet_pg

        return greet_pg
    from shop.tasks import greet

    return greet


def _get(database: str, job_id: str) -> Any:
    return task_backends[BACKEND[database]].get_result(job_id)


def test_a_rolled_back_view_leaves_neither_the_user_nor_the_job(database: str) -> None:
    from django.contrib.auth.models import User

    status, body = _post(database, username=f"refused-{database}", refuse="1")
    assert (status, body["committed"]) == (409, False)
    assert _job_rows(database, body["result_id"]) == 0
    with pytest.raises(TaskResultDoesNotExist):
        _get(database, body["result_id"])
    assert not User.objects.using(database).filter(username=f"refused-{database}").exists()


def test_a_committed_view_leaves_the_job_and_a_worker_runs_it(
    database: str, django_project: dict[str, str]
) -> None:
    status, body = _post(database, username=f"ada-{database}")
    assert (status, body["committed"]) == (200, True)
    assert _get(database, body["result_id"]).status == TaskResultStatus.READY

    proc = manage(django_project, "conveyor_worker", "--burst", "--backend", BACKEND[database])
    assert proc.returncode == 0, proc.stderr

    done = _get(database, body["result_id"])
    assert done.errors == []
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.return_value == f"hello ada-{database}"


def test_the_job_is_in_the_transaction_before_the_commit(database: str) -> None:
    """Not written after the commit (on_commit's window): the transaction holds it,
    only Django's connection sees it, and the rollback takes it."""
    task = _greet(database)
    with transaction.atomic(using=database):
        result = task.enqueue(1, database)
        assert _job_rows(database, result.id) == 1  # in Django's transaction
        with pytest.raises(TaskResultDoesNotExist):  # conveyor's connection: not yet
            _get(database, result.id)
        transaction.set_rollback(True, using=database)
    assert _job_rows(database, result.id) == 0


def test_a_rolled_back_savepoint_takes_only_its_own_jobs(database: str) -> None:
    task = _greet(database)
    with transaction.atomic(using=database):
        kept = task.enqueue(1, database)
        with transaction.atomic(using=database):  # a SAVEPOINT
            dropped = task.enqueue(2, database)
            transaction.set_rollback(True, using=database)
    assert _get(database, kept.id).status == TaskResultStatus.READY
    with pytest.raises(TaskResultDoesNotExist):
        _get(database, dropped.id)


def test_conveyor_transaction_takes_django_s_connection(
    database: str, django_project: dict[str, str]
) -> None:
    """The adapter on its own: ``conveyor.transaction(django.db.connection)`` (the
    proxy) and ``connections[alias]`` (the wrapper), with a plain conveyor App."""
    import django.db

    import conveyor

    app = conveyor.App(task_backends[BACKEND[database]].app.url)

    @app.task
    def noop() -> None: ...

    given = django.db.connection if database == "default" else connections[database]
    with transaction.atomic(using=database):
        with conveyor.transaction(given):
            lost = noop.enqueue()
        transaction.set_rollback(True, using=database)
    with transaction.atomic(using=database), conveyor.transaction(given):
        kept = noop.enqueue()
    assert app.backend.job_get_many([lost.id]) == []
    assert [r.id for r in app.backend.job_get_many([kept.id])] == [kept.id]
    app.close()


def _together(url: str, **options: Any) -> dict[str, Any]:
    """The project's TASKS with the "together" backend's OPTIONS replaced."""
    from django.conf import settings

    backend = "conveyor.contrib.django.ConveyorBackend"
    opts = {"url": url, "enqueue": "in_transaction", **options}
    return {**settings.TASKS, "together": {"BACKEND": backend, "OPTIONS": opts}}


def test_a_store_in_another_sqlite_file_is_refused(
    django_project: dict[str, str], tmp_path: Any
) -> None:
    from django.core.checks import run_checks
    from shop.tasks import greet

    other = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    with override_settings(TASKS=_together(other)):
        with pytest.raises(ConfigurationError, match="not one file") as refused:
            greet.enqueue(1, "default")
        found = [m for m in run_checks() if m.id == "conveyor.E002"]
    assert '"enqueue": "in_transaction"' in str(refused.value)
    assert "DATABASES['default']" in str(refused.value)
    assert len(found) == 1 and "not one file" in found[0].msg
    assert [m for m in run_checks() if m.id == "conveyor.E002"] == []  # the project's own


def test_a_store_of_another_kind_is_refused(django_project: dict[str, str]) -> None:
    from django.core.checks import run_checks
    from shop.tasks import greet

    with override_settings(TASKS=_together("redis://127.0.0.1:1/0")):
        with pytest.raises(ConfigurationError, match="sqlite and the store is redis://"):
            greet.enqueue(1, "default")
        assert [m.id for m in run_checks() if m.id.startswith("conveyor.")] == ["conveyor.E002"]


def test_a_store_in_another_postgres_database_is_refused(django_project: dict[str, str]) -> None:
    require_postgres(django_project)
    import psycopg
    from shop.tasks import greet

    base = django_project["DJANGO_PG_URL"]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS elsewhere")
        conn.execute("CREATE DATABASE elsewhere")
    other = base.rsplit("/", 1)[0] + "/elsewhere?schema=conveyor"
    tasks = _together(other, database="pg")
    with (
        override_settings(TASKS=tasks),
        transaction.atomic(using="pg"),
        pytest.raises(ConfigurationError, match="it is the database 'postgres'"),
    ):
        greet.enqueue(1, "pg")
    task_backends["together"].app.close()


def test_an_unknown_enqueue_mode_and_the_old_option_are_refused(
    django_project: dict[str, str],
) -> None:
    from shop.tasks import greet

    url = task_backends["together"].app.url
    for options, message in [
        ({"enqueue": "later"}, "'enqueue'] is 'later': one of 'on_commit'"),
        ({"enqueue_on_commit": False}, 'enqueue_on_commit is now "enqueue"'),
    ]:
        with (
            override_settings(TASKS=_together(url, **options)),
            pytest.raises(ConfigurationError, match=message),
        ):
            greet.enqueue(1, "default")


def test_an_atomic_block_an_error_doomed_refuses_the_job(database: str) -> None:
    """As Django's own next query would: the block will roll back, so no job either."""
    from django.db import DatabaseError
    from django.db.transaction import TransactionManagementError

    task = _greet(database)
    with transaction.atomic(using=database):
        # an error caught inside the outer block, no savepoint to roll back to: doomed
        with (
            pytest.raises(DatabaseError),
            transaction.atomic(using=database, savepoint=False),
            connections[database].cursor() as cur,
        ):
            cur.execute("SELECT * FROM no_such_table")
        with pytest.raises(TransactionManagementError):
            task.enqueue(1, database)


def test_outside_atomic_the_job_commits_at_once(database: str) -> None:
    """Django's autocommit: the job is committed as Django's own statements are, so
    conveyor's connection sees it at once and no later rollback can take it."""
    result = _greet(database).enqueue(1, database)
    assert not connections[database].in_atomic_block
    assert _get(database, result.id).status == TaskResultStatus.READY
