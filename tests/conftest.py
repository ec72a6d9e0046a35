"""Shared fixtures: a fresh app per test on each backend (contract tests run on all)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import Backend
from tests.support.backends import BACKEND_URLS
from tests.support.mariadb_server import mariadb_server, mariadb_url  # noqa: F401
from tests.support.postgres_server import postgres_server, postgres_url  # noqa: F401
from tests.support.redis_server import redis_server, redis_url, restartable_redis  # noqa: F401

# Property tests explore at random locally; on CI they draw the same examples every run
# (derandomize), so a submission is judged on what was tried here, and a new failure
# shows up locally first, with its seed.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # the dev extra brings it; a test that needs it imports it itself
    pass
else:
    _hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI", "").lower() == "true":
        _hypothesis_settings.load_profile("ci")


@pytest.fixture(params=sorted(BACKEND_URLS))
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh URL on every backend, isolated to this test."""
    return BACKEND_URLS[request.param](request, tmp_path)


@pytest.fixture
def app(backend_url: str) -> Iterator[conveyor.App]:
    """An app on a fresh store (fast timings so liveness tests run in seconds)."""
    application = conveyor.App(
        backend_url, heartbeat_interval=0.2, heartbeat_ttl=2.0, rescue_interval=0.2
    )
    yield application
    application.close()


@pytest.fixture
def backend(app: conveyor.App) -> Backend:
    return app.backend


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"
