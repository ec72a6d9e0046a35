"""A version-1 file is migrated in place to version 2 (new tables/indexes only)."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

from conveyor.backends.base import JobInsertParams, QueuePauseParams
from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.backends.sqlite.connection import SCHEMA_VERSION, _split


def test_v1_file_migrates_and_keeps_jobs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    schema = resources.files("conveyor.backends.sqlite").joinpath("schema.sql").read_text()
    with sqlite3.connect(path) as db:
        for statement in _split(schema):
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
        db.execute(
            "INSERT INTO jobs (id, task, queue, state, payload, max_attempts, run_at, "
            "created_at, lease) VALUES ('old', 't', 'q', 'queued', '{}', 3, 0, 0, 30)"
        )
    backend = SQLiteBackend(f"sqlite:///{path}")
    backend.queue_pause(QueuePauseParams("q"))
    backend.job_insert_many([JobInsertParams(id="new", task="t", queue="q", payload="{}")])
    assert [j.id for j in backend.job_get_many(["old", "new"])] == ["old", "new"]
    backend.close()
    again = SQLiteBackend(f"sqlite:///{path}")  # idempotent: opening twice changes nothing
    assert again.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    assert again.queue_list()[0].paused
    again.close()
