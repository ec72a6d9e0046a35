"""The fix a worker without tasks prints, worded for the app it was started with."""

from __future__ import annotations

from conveyor.worker.eventlog import DJANGO_WORKER_APP, no_tasks_hint


def test_the_fix_names_the_apps_own_module() -> None:
    hint = no_tasks_hint("shop.worker:app")
    assert hint.startswith("shop.worker:app registers no task")
    assert "import the module that defines them from shop.worker, the module of " in hint
    assert hint.endswith("(e.g. import shop.tasks there), or name it: --include shop.tasks")
    assert no_tasks_hint("tasks_app:app").endswith(
        "(e.g. import tasks there), or name it: --include tasks"
    )


def test_a_worker_built_in_python_and_the_django_worker_get_their_own_fix() -> None:
    assert "before the worker starts" in no_tasks_hint(None)
    django = no_tasks_hint(f"{DJANGO_WORKER_APP}:default")
    assert "tasks.py of any INSTALLED_APPS app" in django
    assert DJANGO_WORKER_APP not in django  # conveyor's own module is not where tasks go
