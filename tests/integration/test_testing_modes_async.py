"""The testing modes from ``async def`` tests under pytest-asyncio: the asyncio enqueue
twins, sync enqueues of async tasks inside a running loop, and the pytest plugin as a
user's project gets it (entry point, no configuration; the ``conveyor_app`` ini)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor import Args, JobState, current_job


@pytest.fixture
def app(tmp_path: Path) -> Iterator[conveyor.App]:
    store = tmp_path / "never.db"
    application = conveyor.App(f"sqlite:///{store}")
    yield application
    application.close()
    assert not store.exists(), "a testing mode wrote to the store"


@pytest.mark.asyncio
async def test_inline_aenqueue_and_sync_enqueue_inside_a_running_loop(app: conveyor.App) -> None:
    @app.task
    async def double(x: int) -> list[int]:
        await asyncio.sleep(0)
        return [x * 2, current_job().attempt]

    @app.task
    def plain(x: int) -> int:
        return x + 1

    with app.testing("inline"):
        job = await double.aenqueue(3)
        assert await job.aresult() == [6, 1]
        assert await job.astatus() is JobState.SUCCEEDED
        # a sync enqueue of an async task while this test's loop runs
        assert double.enqueue(5).result() == [10, 1]
        assert (await plain.aenqueue_after(60, 1)).result() == 2
        assert [j.result() for j in await plain.aenqueue_many([Args(1), (2,)])] == [2, 3]


@pytest.mark.asyncio
async def test_capture_with_async_twins_then_drain(app: conveyor.App) -> None:
    @app.task
    async def notify(user: int) -> int:
        await asyncio.sleep(0)
        return user

    with app.testing("capture") as captured:
        await notify.aenqueue(1)
        await notify.with_options(queue="push").aenqueue(2)
        captured.assert_enqueued(notify, 2)
        assert [j.queue for j in captured.jobs] == ["default", "push"]
        assert [await j.aresult() for j in captured.drain()] == [1, 2]


@pytest.mark.asyncio
async def test_execute_of_an_async_task_in_a_running_loop(app: conveyor.App) -> None:
    @app.task
    async def name() -> str:
        await asyncio.sleep(0)
        return current_job().task

    assert name.execute() == name.name


def test_plugin_reaches_a_users_project_without_configuration(tmp_path: Path) -> None:
    """A project of its own, run by pytest in a subprocess: the fixtures come from the
    installed entry point; with ``conveyor_app = "tasks:app"`` the fixture is the
    project's app on a fresh store."""
    (tmp_path / "tasks.py").write_text(
        textwrap.dedent(
            """
            import conveyor
            app = conveyor.App("sqlite:///production.db")

            @app.task
            def add(a: int, b: int) -> int:
                return a + b
            """
        )
    )
    (tmp_path / "test_fresh.py").write_text(
        textwrap.dedent(
            """
            def test_fresh(conveyor_app, conveyor_worker):
                @conveyor_app.task
                def mul(a: int, b: int) -> int:
                    return a * b
                assert mul.enqueue(6, 7).result(timeout=20) == 42
            """
        )
    )
    run = _pytest(tmp_path, "test_fresh.py")
    assert "1 passed" in run.stdout, run.stdout + run.stderr

    (tmp_path / "pytest.ini").write_text("[pytest]\nconveyor_app = tasks:app\n")
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent(
            """
            import tasks
            from conveyor.testing import drain

            def test_mine(conveyor_app):
                assert conveyor_app is tasks.app
                assert "production.db" not in conveyor_app.url
                job = tasks.add.enqueue(1, 2)
                drain(conveyor_app, timeout=20)
                assert job.result(timeout=0) == 3

            def test_back_to_its_own_store_after():
                assert tasks.app.url == "sqlite:///production.db"
            """
        )
    )
    run = _pytest(tmp_path, "test_mine.py")
    assert "2 passed" in run.stdout, run.stdout + run.stderr
    assert not (tmp_path / "production.db").exists()


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
