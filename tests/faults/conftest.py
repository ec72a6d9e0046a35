"""Fixtures of the fault tests: a store per backend, a small tmpfs for disk-full."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import mariadb_server, postgres_server, redis_server


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every fault test runs in scripts/test's serial pass: a storm's deadlines and a
    rescue's timings hold on a box doing nothing else, not beside two other test
    processes (the parallel pass at load 11-22 lost storms to their deadlines)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.serial)


#: Size of the tmpfs the disk-full tests fill (a few hundred jobs' results fit).
TMPFS_SIZE = "32m"


#: The backends every store-agnostic fault scenario runs on (a test that is about one
#: store's own failure, a SQLite file deleted, Redis killed, stays on that one).
BACKENDS = ["sqlite", pytest.param("redis", marks=pytest.mark.redis), "postgres"]
#: ... and MariaDB, for the scenario whose outcome is its rescue's (an abort's batch-mates
#: spared: InnoDB's locks once hid one from it). Its storm and producers run in the long
#: runner (``python -m tests.faults --long``): a storm costs minutes on a loaded box.
RESCUE_BACKENDS = [*BACKENDS, "mariadb"]


def fresh_store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of this test: a SQLite file in tmp_path, a key prefix on the
    session's own redis-server, a database of its own on the session's MariaDB, or a
    database of its own on the session's PostgreSQL cluster (a database, not a schema: NOTIFY is per database, so no test's workers are
    woken by another's, and the drop at the end (WITH FORCE) ends any session a
    SIGKILLed worker left behind)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    if backend == "redis":
        return redis_server.isolated_url(request)
    if backend == "mariadb":
        return mariadb_server.isolated_url(request)
    return postgres_server.isolated_database_url(request)


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of this test on each backend of :data:`BACKENDS`."""
    return fresh_store_url(request.param, request, tmp_path)


@pytest.fixture(params=RESCUE_BACKENDS)
def rescue_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of this test on each backend of :data:`RESCUE_BACKENDS`."""
    return fresh_store_url(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgres"])
def sql_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store on SQLite and on PostgreSQL, for the scenarios about a pool or a
    signal more than about the store (most poison pills, producers): they run where
    issue 14 asks every process test to pass; Redis, whose worker loop is the same, runs
    the store-heavy ones (the storm, an abort's rescue) to keep the suite short."""
    return fresh_store_url(request.param, request, tmp_path)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason} (CI=true: the disk-full tests must run)")
    pytest.skip(reason)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of TMPFS_SIZE mounted on tmp_path/"mnt" (needs root, or CAP_SYS_ADMIN);
    skips with the reason where it cannot be mounted, fails when CI=true."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0:
        _unavailable("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        _unavailable(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
