"""SQLite schema v1 -> v2 migration: additive, keeps data, idempotent."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.backends.sqlite.connection import SCHEMA_VERSION, _split


def _v1_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    schema = resources.files("conveyor.backends.sqlite").joinpath("schema.sql").read_text()
    for statement in _split(schema):
        conn.execute(statement)
    conn.execute(
        "INSERT INTO jobs (id, task, queue, state, payload, max_attempts, run_at, created_at, lease) "
        "VALUES ('old', 't', 'default', 'queued', '{\"args\":[],\"kwargs\":{}}', 3, 0, 0, 30)"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_v1_file_is_migrated_and_keeps_its_jobs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _v1_file(path)
    backend = SQLiteBackend(f"sqlite:///{path}")
    record = backend.job_get_many(["old"])[0]
    assert record.state.value == "queued" and record.progress is None and record.waiting_on == 0
    assert backend.periodic_list() == []
    backend.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    # Re-running the migration over an already migrated file is a no-op.
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    SQLiteBackend(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    conn.close()
