"""Task modules the app's own module does not import: ``App(include=[...])`` and
``conveyor worker --include MODULE``, imported when the worker starts (in every pool's
children too), by every CLI command given the app, and by ``task.execute``; a module
that cannot be imported is one error line naming it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.errors import ConfigurationError
from tests.integration.cli_run import assert_one_error
from tests.integration.cli_run import conveyor as run_conveyor

#: A Celery-style layout: the app in myapp/app.py, the tasks in modules that import it.
PROJECT = {
    "myapp/__init__.py": "",
    "myapp/app.py": """
        import conveyor

        app = conveyor.App("sqlite:///jobs.db", include=["myapp.tasks"])
    """,
    "myapp/tasks.py": """
        from myapp.app import app


        @app.task(queue="mail")
        def send(to: str) -> str:
            return f"sent to {to}"
    """,
    "myapp/reports.py": """
        from myapp.app import app


        @app.task(queue="reports")
        def build(day: str) -> str:
            return f"report for {day}"
    """,
    "myapp/broken.py": """
        raise RuntimeError("settings missing")
    """,
    "producer.py": """
        import myapp.reports
        import myapp.tasks

        print(myapp.tasks.send.delay("ann").id)
        print(myapp.reports.build.apply_async(("monday",)).id)
    """,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in PROJECT.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def _produce(project: Path) -> list[str]:
    run = subprocess.run(
        [sys.executable, "producer.py"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def _states(project: Path) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(project / "jobs.db") as db:
        rows = db.execute("SELECT task, state, result FROM jobs").fetchall()
    return {task: (state, result) for task, state, result in rows}


def test_app_include_is_imported_when_the_worker_starts(project: Path) -> None:
    _produce(project)
    # Only myapp.tasks is included: its queue (mail) is served by default, which needs
    # the module imported before the worker chose its queues; reports is not.
    run = run_conveyor("worker", "myapp.app:app", "--burst", cwd=project)
    assert run.returncode == 0, run.stderr
    states = _states(project)
    assert states["myapp.tasks.send"][0] == "succeeded"
    assert states["myapp.reports.build"][0] == "queued"


def test_worker_include_flag_adds_modules(project: Path) -> None:
    _produce(project)
    run = run_conveyor(
        "worker", "myapp.app:app", "--include", "myapp.reports", "--burst", cwd=project
    )
    assert run.returncode == 0, run.stderr
    assert {state for state, _ in _states(project).values()} == {"succeeded"}


@pytest.mark.parametrize("pool", ["process", "interpreter"])
def test_pool_children_import_the_includes(project: Path, pool: str) -> None:
    if pool == "interpreter" and sys.version_info < (3, 13):
        # as in test_pools.py: .ci/pools313 runs this file on 3.13, where it cannot skip
        pytest.skip(
            f"interpreter pool needs Python >= 3.13 (this is {sys.version.split()[0]}); "
            "run .ci/pools313"
        )
    _produce(project)
    run = run_conveyor(
        "worker",
        "myapp.app:app",
        "--include",
        "myapp.reports",
        "--pool",
        pool,
        "-c",
        "1",
        "--burst",
        cwd=project,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    states = _states(project)
    assert states["myapp.reports.build"] == ("succeeded", '"report for monday"')
    assert states["myapp.tasks.send"][0] == "succeeded"  # App(include=...) in the child


def test_a_missing_include_is_one_line_naming_it(project: Path) -> None:
    run = run_conveyor(
        "worker", "myapp.app:app", "--include", "myapp.reportz", "--burst", cwd=project
    )
    assert_one_error(run, 1, "--include: no module named 'myapp.reportz'")
    (project / "myapp" / "app.py").write_text(
        'import conveyor\napp = conveyor.App("sqlite:///jobs.db", include=["myapp.taskz"])\n'
    )
    run = run_conveyor("worker", "myapp.app:app", "--burst", cwd=project)
    assert_one_error(run, 1, "App(include=...): no module named 'myapp.taskz'")
    run = run_conveyor("jobs", "--app", "myapp.app:app", cwd=project)
    assert_one_error(run, 1, "App(include=...): no module named 'myapp.taskz'")


def test_an_include_that_fails_to_import_says_why(project: Path) -> None:
    run = run_conveyor(
        "worker", "myapp.app:app", "--include", "myapp.broken", "--burst", cwd=project
    )
    assert_one_error(
        run, 1, "--include: importing 'myapp.broken' failed: RuntimeError: settings missing"
    )


def test_cli_commands_given_the_app_know_the_included_tasks(project: Path) -> None:
    run = run_conveyor(
        "enqueue", "send", "--app", "myapp.app:app", "--args", '["bob"]', cwd=project
    )
    assert run.returncode == 0, run.stderr
    assert _states(project)["myapp.tasks.send"][0] == "queued"


@pytest.fixture
def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("included_")]:
        del sys.modules[name]


def test_task_execute_and_an_embedded_worker_import_the_includes(importable: Path) -> None:
    (importable / "included_hooks.py").write_text("LOADED = True\n")
    app = conveyor.App(
        f"sqlite:///{importable / 'jobs.db'}", include=["included_hooks", "included_later"]
    )
    assert app.include == ("included_hooks", "included_later")
    assert "included_hooks" not in sys.modules  # App() imports nothing

    @app.task
    def double(x: int) -> int:
        return 2 * x

    with pytest.raises(ConfigurationError, match="no module named 'included_later'"):
        double.execute(2)
    (importable / "included_later.py").write_text("from conveyor import App\n\nLOADED = True\n")
    assert double.execute(2) == 4
    assert "included_hooks" in sys.modules and "included_later" in sys.modules
    other = conveyor.App(f"sqlite:///{importable / 'other.db'}", include=["included_worker"])
    (importable / "included_worker.py").write_text("LOADED = True\n")
    conveyor.Worker(other, burst=True).run(install_signals=False)
    assert "included_worker" in sys.modules
    other.close()
    app.close()


def test_include_names_are_checked_at_app() -> None:
    with pytest.raises(ConfigurationError, match=r"write include=\['myapp.tasks'\]"):
        conveyor.App("sqlite:///:memory:", include="myapp.tasks")
    with pytest.raises(ConfigurationError, match=r"'myapp/tasks\.py' is not a module name"):
        conveyor.App("sqlite:///:memory:", include=["myapp/tasks.py"])
