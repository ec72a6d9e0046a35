"""The small Django project in ``project/``, set up once for this directory's tests.

Django's settings are process-wide, so one project per test session: its database and
job stores live in a session temporary directory; each test uses fresh usernames.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.support import mariadb_server
from tests.support.postgres_server import drop_schema, require_binary, with_schema
from tests.with_django.requires import require_django

PROJECT = Path(__file__).parent / "project"
#: The project is the application under test, not tests: never collected (its modules
#: need its settings, and --doctest-modules would import them).
collect_ignore = ["project"]


@pytest.fixture(scope="session")
def django_project(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict[str, str]]:
    """Django set up on the test project; the environment a worker subprocess needs.
    With PostgreSQL at hand (the session's own cluster), a second database "pg" whose
    store is a schema of it (``pg_database`` says whether)."""
    require_django()
    import django
    from django.core.management import call_command

    where = tmp_path_factory.mktemp("django")
    env = {
        "DJANGO_SETTINGS_MODULE": "djproject.settings",
        "DJANGO_DB": str(where / "django.sqlite3"),
        "CONVEYOR_JOBS_URL": f"sqlite:///{where / 'jobs.db'}",
        "CONVEYOR_DIRECT_URL": f"sqlite:///{where / 'direct.db'}",
        "CONVEYOR_TIMED_URL": f"sqlite:///{where / 'timed.db'}",
    }
    if os.environ.get("CONVEYOR_DJANGO_DB") == "mariadb":
        env.update(_on_mariadb(request))
    postgres = _postgres_url(request)
    if postgres is not None:
        schema = f"t_{uuid.uuid4().hex}"
        request.addfinalizer(lambda: drop_schema(postgres, schema))
        env["DJANGO_PG_URL"] = postgres
        env["CONVEYOR_TOGETHER_PG_URL"] = with_schema(postgres, schema)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    sys.path.insert(0, str(PROJECT))
    try:
        django.setup()  # reads the settings (and the variables above) once, here
    finally:
        # Not left behind for the other tests of the session: a docs page's shell
        # (docs/django.md) must not find DJANGO_SETTINGS_MODULE pointing here.
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    call_command("migrate", verbosity=0)  # Django's own tables (auth, contenttypes)
    if postgres is not None:
        call_command("migrate", database="pg", verbosity=0)
    yield env
    sys.path.remove(str(PROJECT))


def _on_mariadb(request: pytest.FixtureRequest) -> dict[str, str]:
    """``CONVEYOR_DJANGO_DB=mariadb``: Django's "default" database and the job stores of
    the contract's backends are databases of the session's own MariaDB (a MySQL
    database, as a Django shop on MySQL has: Django's ``mysql`` backend over
    mysqlclient), each new, dropped at the end."""
    base = request.getfixturevalue("mariadb_url")
    made = {name: f"{name}_{uuid.uuid4().hex[:12]}" for name in ("django", "jobs", "direct", "timed")}  # fmt: skip
    for database in made.values():
        mariadb_server.execute(base, f"CREATE DATABASE {database} CHARACTER SET utf8mb4")
        request.addfinalizer(lambda d=database: mariadb_server.drop_database(base, d))  # type: ignore[misc]
    return {
        "DJANGO_MYSQL_URL": mariadb_server.database_url(base, made["django"]),
        "CONVEYOR_JOBS_URL": mariadb_server.database_url(base, made["jobs"]),
        "CONVEYOR_DIRECT_URL": mariadb_server.database_url(base, made["direct"]),
        "CONVEYOR_TIMED_URL": mariadb_server.database_url(base, made["timed"]),
    }


def _postgres_url(request: pytest.FixtureRequest) -> str | None:
    """The session's PostgreSQL when its binaries are here (when ``CI=true`` they must
    be: ``require_binary`` fails the session then), else None (the PostgreSQL tests
    skip, saying why, through :func:`require_postgres`)."""
    try:
        require_binary("initdb")
    except pytest.skip.Exception:
        if not os.environ.get("CONVEYOR_TEST_POSTGRES_URL"):
            return None
    url: str = request.getfixturevalue("postgres_url")
    return url


def require_postgres(env: Mapping[str, str]) -> None:
    """Skip (locally) or fail (``CI=true``) a test that needs the "pg" database."""
    if "DJANGO_PG_URL" not in env:
        require_binary("initdb")  # skips or fails with the reason


def manage(env: Mapping[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python manage.py ARGS`` in the project directory, as a user runs it."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
