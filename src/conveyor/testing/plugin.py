"""The pytest plugin (entry point ``pytest11: conveyor``): ``conveyor_app`` and
``conveyor_worker`` fixtures. Nothing to configure; installed with conveyor.

- ``conveyor_app``: an :class:`~conveyor.App` on a fresh SQLite file in the test's
  ``tmp_path``, closed after the test. With the ini option ``conveyor_app =
  "module:attribute"`` it is *your* app instead, pointed at that fresh file for the test
  and back at its own store afterwards (your registered tasks included).
- ``conveyor_worker``: an embedded thread-pool worker on ``conveyor_app``, running every
  queue the app's tasks use (and ``default``), started before the test and stopped
  after it.

Example (a test module; see docs/testing.md)::

    def test_add(conveyor_app, conveyor_worker):
        @conveyor_app.task
        def add(a: int, b: int) -> int:
            return a + b
        assert add.enqueue(1, 2).result(timeout=10) == 3
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported in the fixtures: pytest loads this plugin in every run
    from conveyor.app import App
    from conveyor.worker.worker import Worker


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "conveyor_app",
        "module:attribute of the App the conveyor_app fixture gives (default: a fresh App)",
        default="",
    )


@pytest.fixture
def conveyor_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[App]:
    """An App on a fresh SQLite file of this test (yours with the ``conveyor_app`` ini)."""
    from conveyor.app import App, load_app

    url = f"sqlite:///{tmp_path / 'conveyor.db'}"
    spec = str(request.config.getini("conveyor_app") or "")
    if not spec:
        app = App(url)
        yield app
        app.close()
        return
    app = load_app(spec)
    app.close()
    saved = app.url, app.url_source
    app.override_url(url, "conveyor_app fixture")
    try:
        yield app
    finally:
        app.close()
        app.url, app.url_source = saved


@pytest.fixture
def conveyor_worker(conveyor_app: App) -> Iterator[Worker]:
    """An embedded worker on ``conveyor_app``, started before the test, stopped after."""
    from conveyor.worker.worker import Worker

    queues = sorted({"default", *(t.options.queue for t in conveyor_app.tasks.values())})
    worker = Worker(conveyor_app, queues=queues, concurrency=4, shutdown_timeout=5.0)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop(10.0)
