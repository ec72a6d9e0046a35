"""The pytest plugin never lets a test touch a store the test did not make (issue 21).

Without ``conveyor_app = module:app`` in the ini, a test using ``conveyor_app`` that
enqueued through a real task wrote to that task's own store (production's, if that is
what its URL says). Each case is a user's project in ``tmp_path`` whose tests run in a
real ``python -m pytest`` subprocess (the plugin is loaded from its entry point, as for a
user); the "production" store is a SQLite file of the project, which must never appear.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cli_run import clean_env

SHOP = """
import conveyor

app = conveyor.App("sqlite:///production.db")


@app.task
def receipt(order: int) -> str:
    return f"receipt {order}"
"""

TESTS = """
import conveyor
import shop
from conveyor.testing import drain


def test_enqueues_through_the_real_task(conveyor_app):
    job = shop.receipt.enqueue(7)
    drain(conveyor_app, timeout=20)
    assert job.result(timeout=0) == "receipt 7"


def test_an_app_on_a_store_the_test_made_is_fine(conveyor_app, tmp_path):
    mine = conveyor.App(f"sqlite:///{tmp_path / 'mine.db'}")

    @mine.task
    def ping() -> str:
        return "pong"

    assert ping.enqueue().status == "queued"
    mine.close()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "shop.py").write_text(SHOP.lstrip())
    (root / "test_shop.py").write_text(TESTS.lstrip())
    return root


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={project.parent / 'inner-tmp'}",
            *args,
        ],
        cwd=project,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_the_ini_line_the_real_task_is_refused_in_one_line(project: Path) -> None:
    proc = run_pytest(project)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout, proc.stdout
    # The traceback's "E" line (with CI=true pytest's short summary repeats it, untruncated).
    [line] = [
        ln
        for ln in proc.stdout.splitlines()
        if ln.startswith("E ") and "ConfigurationError: conveyor_app:" in ln
    ]
    assert "sqlite:///production.db (from App(url))" in line, line
    assert "conveyor_app = module:app" in line and "shop.receipt" in line, line
    assert not (project / "production.db").exists()  # production was never touched


def test_with_the_ini_line_the_real_task_runs_on_a_fresh_store(project: Path) -> None:
    (project / "pytest.ini").write_text("[pytest]\nconveyor_app = shop:app\n")
    proc = run_pytest(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout, proc.stdout
    assert not (project / "production.db").exists()


def test_an_app_opened_before_the_test_is_stopped_at_its_next_use(project: Path) -> None:
    # Opened at import (a module-level query, say): the guard is at each use, not at open.
    (project / "conftest.py").write_text(
        "import shop\n\n\ndef pytest_sessionstart(session):\n    shop.app.backend\n"
    )
    proc = run_pytest(project, "-k", "real_task")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ConfigurationError: conveyor_app:" in proc.stdout, proc.stdout
    # The session start opened (created) it, outside any test; no job was written to it.
    import sqlite3

    with sqlite3.connect(project / "production.db") as conn:
        assert conn.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


def test_tests_that_do_not_use_the_fixture_are_left_alone(project: Path) -> None:
    # The guard belongs to conveyor_app: a test without it (a deliberate integration test
    # against a store of its own) is not changed by the plugin.
    (project / "test_shop.py").write_text(
        "import shop\n\n\ndef test_plain():\n    assert shop.receipt.enqueue(1).status == 'queued'\n"
    )
    proc = run_pytest(project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / "production.db").exists()
