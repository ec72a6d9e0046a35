"""Backends the contract suite runs against.

Each entry makes a fresh, isolated URL for one test (a tmp_path file for SQLite; a
unique key prefix on a test-owned redis-server for Redis; a fresh schema on a
test-owned PostgreSQL cluster). Adding a backend = one entry
here: the contract suite, the CLI tests (tests/integration/test_cli_*.py) and the worker
process tests then run on it (plus its raw-store helpers in tests/support/stores.py for
the two tests that reach under the seam).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import postgres_server
from tests.support.redis_server import isolated_url


def _redis_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # The session server starts on first use only; each test gets its own key prefix.
    return isolated_url(request)


def _postgres_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # The session cluster starts on first use only; each test gets its own schema.
    return postgres_server.isolated_url(request)


# name -> (request, tmp_path) -> URL
BACKEND_URLS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "postgres": _postgres_url,
    "redis": _redis_url,
    "sqlite": lambda request, tmp_path: f"sqlite:///{tmp_path / 'jobs.db'}",
}
