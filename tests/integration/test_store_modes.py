"""Files that hold jobs are private (0600) whatever the umask: ``backup`` and
``export -o`` copies, and an existing store found readable by others (with its -wal and
-shm), which conveyor fixes when it opens it, saying so in one line. Through the real
console script, under ``umask 022`` as on most machines."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from tests.integration.cli_run import CONVEYOR, clean_env


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``conveyor ARGS`` started with ``umask 022`` (new files would be 0644)."""
    return subprocess.run(
        [str(CONVEYOR), *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.umask(0o022),  # the child has no threads yet
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    """A store holding one job, written through the public API."""
    path = tmp_path / "jobs.db"
    app = conveyor.App(f"sqlite:///{path}")

    @app.task
    def charge(card: str) -> None: ...

    charge.enqueue("4111 1111 1111 1111")
    app.close()
    yield path


def test_backup_is_written_0600(store: Path, tmp_path: Path) -> None:
    done = run("backup", "--url", f"sqlite:///{store}", "copy.db", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "copy.db"
    assert mode(copy) == 0o600
    with contextlib.closing(sqlite3.connect(copy)) as conn:  # a real, complete copy
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1
    again = run("backup", "--url", f"sqlite:///{store}", "copy.db", cwd=tmp_path)
    assert again.returncode == 1 and "exists; choose a new file" in again.stderr


def test_backup_from_the_python_api_is_0600_and_never_overwrites(
    store: Path, tmp_path: Path
) -> None:
    app = conveyor.App(f"sqlite:///{store}")
    copy = tmp_path / "api-copy.db"
    old = os.umask(0o022)
    try:
        app.backend.backup(str(copy))
    finally:
        os.umask(old)
    assert mode(copy) == 0o600
    with pytest.raises(FileExistsError):
        app.backend.backup(str(copy))
    with contextlib.closing(sqlite3.connect(copy)) as conn:  # the first copy is intact
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 1
    app.close()


def test_export_file_is_0600_new_or_existing(store: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{store}"
    done = run("export", "--url", url, "-o", "dead.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert mode(tmp_path / "dead.jsonl") == 0o600
    assert "4111 1111" in (tmp_path / "dead.jsonl").read_text()
    old = tmp_path / "old.csv"
    old.write_text("stale\n")
    old.chmod(0o644)
    done = run("export", "--url", url, "--format", "csv", "-o", "old.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert mode(old) == 0o600 and "stale" not in old.read_text()


def test_an_existing_readable_store_and_its_wal_and_shm_are_made_0600(
    store: Path, tmp_path: Path
) -> None:
    # Another process holds the store open in WAL mode, so its -wal and -shm exist.
    with contextlib.closing(sqlite3.connect(store)) as holder:
        holder.execute("PRAGMA journal_mode=WAL")
        holder.execute("UPDATE jobs SET priority = priority")
        companions = [Path(f"{store}-wal"), Path(f"{store}-shm")]
        for path in (store, *companions):
            assert path.exists()
            path.chmod(0o644)
        done = run("status", "--url", f"sqlite:///{store}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert [mode(p) for p in (store, *companions)] == [0o600] * 3
        warning = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(warning) == 1, done.stderr
        assert f"store {store} was readable by other users (mode 0644)" in warning[0]
        assert "jobs.db-wal" in warning[0] and "jobs.db-shm" in warning[0]
        quiet = run("status", "--url", f"sqlite:///{store}", cwd=tmp_path)
        assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_a_worker_on_a_readable_store_fixes_it_and_logs_one_warning(
    store: Path, tmp_path: Path
) -> None:
    (tmp_path / "tasks.py").write_text(
        f"import conveyor\napp = conveyor.App('sqlite:///{store}')\n"
        "@app.task\ndef charge(card: str) -> None: ...\n"
    )
    store.chmod(0o644)
    done = run("worker", "tasks:app", "--burst", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert mode(store) == 0o600
    warnings = [line for line in done.stderr.splitlines() if "readable by other users" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], done.stderr
