"""SQLite schema migrations from version 1: additive, keep data, idempotent."""

from __future__ import annotations

import sqlite3
from importlib import resources
from pathlib import Path

from conveyor.backends.base import (
    ActionLogListParams,
    JobFilter,
    JobInsertParams,
    JobSearchParams,
    QueuePauseParams,
)
from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.backends.sqlite.connection import SCHEMA_VERSION, _split
from conveyor.search_query import parse_search


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
    assert again.connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 12
    assert again.queue_list()[0].paused
    again.close()


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
    assert record.headers is None  # version 4: an old job has no headers
    assert record.expires_at is None  # version 5: nor an expiry
    assert backend.periodic_list() == []
    assert backend.action_log_list(ActionLogListParams()) == []  # version 6: an empty log
    assert backend.job_step_list("old") == []  # version 8: no durable steps
    tables = {r[0] for r in backend.connection.execute("SELECT name FROM sqlite_master")}
    assert {"sequences", "limit_overrides"} <= tables  # version 9: flow control by key
    assert "job_search_pending" in tables  # 10: search, after the fact
    assert "job_search" not in tables  # the index itself is off by default
    assert "jobs_waiting" in tables  # 11: waiting jobs by queue, for the capped counts
    assert "jobs_task" in tables  # 12: the dashboard's indexed sort by task
    found = backend.job_search(JobSearchParams(JobFilter(), parse_search("default").terms))
    assert [j.id for j in found.jobs] == ["old"]  # the old job: pending, then indexed
    backend.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 12
    # Re-running the migration over an already migrated file is a no-op.
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    SQLiteBackend(f"sqlite:///{path}").close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 12
    conn.close()
