"""Shared fixtures: a fresh app per test on each backend (contract tests run on all)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.backends.base import Backend
from tests.support.backends import BACKEND_URLS
from tests.support.redis_server import redis_server, redis_url, restartable_redis  # noqa: F401


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
