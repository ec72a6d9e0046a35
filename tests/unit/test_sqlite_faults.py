"""Which SQLite errors are store faults (retried like an outage) and which are raised as
they are; and the file identity the heartbeat compares."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.backends.sqlite.faults import check_same_file, file_identity, store_error
from conveyor.errors import StoreError, StoreReplaced


def error(message: str, code: int | None) -> sqlite3.OperationalError:
    exc = sqlite3.OperationalError(message)
    if code is not None:
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


@pytest.mark.parametrize(
    ("message", "code", "fault"),
    [
        ("database or disk is full", 13, "disk full"),
        ("disk I/O error", 10 | (3 << 8), "I/O error"),  # SQLITE_IOERR_WRITE
        ("database is locked", 5, "locked beyond busy_timeout"),
        ("attempt to write a readonly database", 8, "read-only"),
        ("unable to open database file", 14, "cannot open"),
        ("database or disk is full", None, "disk full"),  # no code: by its text
        ("no such column: nope", 1, None),  # a bad --where: raised as it is
        ("malformed JSON", 1, None),
        ("UNIQUE constraint failed: jobs.id", 19, None),
    ],
)
def test_store_faults_are_told_from_other_errors(
    message: str, code: int | None, fault: str | None
) -> None:
    found = store_error(error(message, code), "/srv/jobs.db")
    if fault is None:
        assert found is None
    else:
        assert isinstance(found, StoreError)
        assert str(found).startswith(f"SQLite store /srv/jobs.db: {message} ({fault}")


def test_a_read_only_store_refuses_writes_with_store_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root writes through file modes: a read-only mount would be needed instead
        backend = SQLiteBackend(f"sqlite:///{tmp_path / 'jobs.db'}")
        backend.close()
        backend._conn = sqlite3.connect(f"file:{tmp_path / 'jobs.db'}?mode=ro", uri=True)
        backend._conn.isolation_level = None
    else:
        SQLiteBackend(f"sqlite:///{tmp_path / 'jobs.db'}").close()
        os.chmod(tmp_path / "jobs.db", 0o400)
        backend = SQLiteBackend(f"sqlite:///{tmp_path / 'jobs.db'}")
    with pytest.raises(StoreError, match="read-only"):
        backend.worker_deregister("w")
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        backend._read("SELECT nope FROM jobs")  # private: not translated, not a fault


def test_a_deleted_or_replaced_file_is_noticed(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    db.write_bytes(b"")
    opened = file_identity(str(db))
    check_same_file(str(db), opened)  # the same file: fine
    other = tmp_path / "other.db"
    other.write_bytes(b"")
    os.replace(other, db)
    with pytest.raises(StoreReplaced, match="was replaced"):
        check_same_file(str(db), opened)
    db.unlink()
    with pytest.raises(StoreReplaced, match="was deleted"):
        check_same_file(str(db), opened)
    check_same_file(":memory:", file_identity(":memory:"))  # nothing to compare


def test_locked_beyond_busy_timeout_is_store_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}?busy_timeout=50"
    backend = SQLiteBackend(url)
    other = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    try:
        with pytest.raises(StoreError, match="locked beyond busy_timeout"):
            backend.worker_deregister("w")
    finally:
        other.execute("ROLLBACK")
        other.close()
    backend.worker_deregister("w")  # the lock is gone: writes go through again
    backend.close()
