"""The pytest plugin (entry point ``pytest11: conveyor``): ``conveyor_app`` and
``conveyor_worker`` fixtures. Nothing to configure; installed with conveyor.

- ``conveyor_app``: an :class:`~conveyor.App` on a fresh SQLite file in the test's
  ``tmp_path``, closed after the test. With the ini option ``conveyor_app =
  "module:attribute"`` it is *your* app instead, pointed at that fresh file for the test
  and back at its own store afterwards (your registered tasks included).
- ``conveyor_worker``: an embedded thread-pool worker on ``conveyor_app``, running every
  queue the app's tasks use (and ``default``), started before the test and stopped
  after it.

While a test uses ``conveyor_app``, no other App may open a store the test did not make
(issue 21: without the ini option, a test enqueueing through a real task wrote to that
task's own store, production's if that is what its URL says). Any other App's first use
of its store raises one line saying so and how to fix it; stores the test made are
allowed: SQLite in memory or a file under pytest's temporary directory, and the memory
store a testing mode puts in place of an app's (``app.testing(...)``).

Example (a test module; see docs/testing.md)::

    def test_add(conveyor_app, conveyor_worker):
        @conveyor_app.task
        def add(a: int, b: int) -> int:
            return a + b
        assert add.enqueue(1, 2).result(timeout=10) == 3
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported in the fixtures: pytest loads this plugin in every run
    from conveyor.app import App
    from conveyor.backends.base import Backend
    from conveyor.worker.worker import Worker


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "conveyor_app",
        "module:attribute of the App the conveyor_app fixture gives (default: a fresh App)",
        default="",
    )


@pytest.fixture
def conveyor_app(
    request: pytest.FixtureRequest, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[App]:
    """An App on a fresh SQLite file of this test (yours with the ``conveyor_app`` ini);
    any other App that would open a store the test did not make raises instead."""
    from conveyor.app import App, load_app

    url = f"sqlite:///{tmp_path / 'conveyor.db'}"
    spec = str(request.config.getini("conveyor_app") or "")
    if not spec:
        app = App(url)
        with only_test_stores(app, tmp_path_factory.getbasetemp()):
            yield app
        app.close()
        return
    app = load_app(spec)
    app.close()
    saved = app.url, app.url_source
    app.override_url(url, "conveyor_app fixture")
    try:
        with only_test_stores(app, tmp_path_factory.getbasetemp()):
            yield app
    finally:
        app.close()
        app.url, app.url_source = saved


@contextmanager
def only_test_stores(fixture_app: App, temp_root: Path) -> Iterator[None]:
    """While the block runs, ``App.backend`` of any App but ``fixture_app`` raises
    :class:`~conveyor.errors.ConfigurationError` unless its store is one a test made
    (:func:`made_by_a_test`). Checked at each use, not at open: an App whose store was
    opened before the test (at import, by an earlier test) is stopped too."""
    from conveyor.app import App
    from conveyor.errors import ConfigurationError

    original = App.__dict__["backend"]

    def guarded(app: App) -> Backend:
        # A store put in place of the app's (a testing mode's memory store) is the test's.
        if (
            app is not fixture_app
            and app.substitute is None
            and not made_by_a_test(app.url, temp_root)
        ):
            raise ConfigurationError(refusal(app))
        backend: Backend = original.fget(app)
        return backend

    App.backend = property(guarded)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        App.backend = original  # type: ignore[method-assign]


def made_by_a_test(url: str, temp_root: Path) -> bool:
    """SQLite in memory, or a SQLite file under pytest's temporary directory.

    >>> made_by_a_test("sqlite:///:memory:", Path("/tmp/pytest-of-me"))
    True
    >>> made_by_a_test("sqlite:////srv/shop/jobs.db", Path("/tmp/pytest-of-me"))
    False
    >>> made_by_a_test("redis://localhost:6379/0", Path("/tmp/pytest-of-me"))
    False
    """
    from conveyor.url_rule import sqlite_path

    if url.lower().startswith("sqlite:") and ":memory:" in url:
        return True
    path = sqlite_path(url)
    if path is None:
        return False
    root = os.path.realpath(temp_root)
    return os.path.realpath(path).startswith(root + os.sep)


def refusal(app: App) -> str:
    """One line: which App, which store, and the two ways out."""
    from conveyor.redaction import redacted

    tasks = ", ".join(sorted(app.tasks)[:3]) or "no tasks"
    return (
        f"conveyor_app: this test used another App (tasks: {tasks}) whose store "
        f"{redacted(app.url)} (from {app.url_source}) the test did not make; name that "
        "app in pytest's ini (conveyor_app = module:app) so the fixture gives it a fresh "
        "store, or give it a SQLite file under tmp_path (docs/testing.md)"
    )


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
