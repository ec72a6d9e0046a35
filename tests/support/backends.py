"""Backends the contract suite runs against.

Each entry makes a fresh, isolated URL for one test (a tmp_path file for SQLite; a
unique key prefix on a test-owned redis-server for Redis; a fresh schema on a
test-owned PostgreSQL cluster). Adding a backend = one entry
here: the contract suite, the CLI tests (tests/integration/test_cli_*.py) and the worker
process tests then run on it (plus its raw-store helpers in tests/support/stores.py for
the two tests that reach under the seam).

MariaDB (``mariadb://``) gets a database per test on a test-owned mariadbd.

The memory store (``memory://NAME``) lives in one process, so it is in
:data:`CONTRACT_URLS` only: the contract suite drives a store in the test's own process,
while the CLI and worker process tests need one other processes reach.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conveyor.ids import new_id
from tests.support import mariadb_server, postgres_server
from tests.support.redis_server import isolated_url


def _redis_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # The session server starts on first use only; each test gets its own key prefix.
    return isolated_url(request)


def _postgres_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # The session cluster starts on first use only; each test gets its own schema.
    return postgres_server.isolated_url(request)


def _mariadb_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # The session server starts on first use only; each test gets its own database.
    return mariadb_server.isolated_url(request)


# name -> (request, tmp_path) -> URL
BACKEND_URLS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    "mariadb": _mariadb_url,
    "postgres": _postgres_url,
    "redis": _redis_url,
    "sqlite": lambda request, tmp_path: f"sqlite:///{tmp_path / 'jobs.db'}",
}


#: The stores of the slow tests (worker processes, CLI subprocesses) whose outcome is not
#: a store's own: signals, the CLI over the engine's code, the worker's side of a rule.
#: Every backend but MariaDB, which runs the slow tests only where its own code decides
#: (rescue, release, rows written around the API, periodic slots, limits): each costs
#: seconds of make test's budget (docs/mariadb.md says which).
GENERIC_URLS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    name: url for name, url in BACKEND_URLS.items() if name != "mariadb"
}


def _memory_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    # A store of this process named for this test (an app reopened on it sees its jobs).
    return f"memory://{new_id()}"


#: The contract suite's stores: every backend, and the in-process memory store.
CONTRACT_URLS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = {
    **BACKEND_URLS,
    "memory": _memory_url,
}


#: The stores the CLI tests run on (``conveyor migrate`` between each two, the ops and
#: jobs commands): every backend.
CLI_URLS: dict[str, Callable[[pytest.FixtureRequest, Path], str]] = dict(BACKEND_URLS)
