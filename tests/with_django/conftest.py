"""The small Django project in ``project/``, set up once for this directory's tests.

Django's settings are process-wide, so one project per test session: its database and
job stores live in a session temporary directory; each test uses fresh usernames.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.with_django.requires import require_django

PROJECT = Path(__file__).parent / "project"
#: The project is the application under test, not tests: never collected (its modules
#: need its settings, and --doctest-modules would import them).
collect_ignore = ["project"]


@pytest.fixture(scope="session")
def django_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Django set up on the test project; the environment a worker subprocess needs."""
    require_django()
    import django
    from django.core.management import call_command

    where = tmp_path_factory.mktemp("django")
    env = {
        "DJANGO_SETTINGS_MODULE": "djproject.settings",
        "DJANGO_DB": str(where / "django.sqlite3"),
        "CONVEYOR_JOBS_URL": f"sqlite:///{where / 'jobs.db'}",
        "CONVEYOR_DIRECT_URL": f"sqlite:///{where / 'direct.db'}",
    }
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
    yield env
    sys.path.remove(str(PROJECT))


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
