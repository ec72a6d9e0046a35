"""Fixtures of the fault tests: a store per backend, a small tmpfs for disk-full."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.redis_server import isolated_url

#: Size of the tmpfs the disk-full tests fill (a few hundred jobs' results fit).
TMPFS_SIZE = "32m"


@pytest.fixture(params=["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of this test: a SQLite file in tmp_path, or a key prefix on the
    session's own redis-server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'jobs.db'}"
    return isolated_url(request)


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
