"""Store work of an enqueue, counted (not timed): a plain ``task.enqueue(...)`` is one
``BEGIN IMMEDIATE`` + one ``INSERT`` + ``COMMIT`` on SQLite and one round trip on Redis;
``enqueue_many`` is one transaction / one round trip for the whole batch. E1 and E2 in
BENCHMARKS.md are read as ratios to exactly that raw work (bench/floors.py), so an
extra statement or round trip per enqueue fails here before it shows in a benchmark.

SQLite statements come from the connection's own trace callback, Redis round trips from
a counting redis-py connection (tests/support/store_counts.py); the stores are real.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

import conveyor
from conveyor.backends.params import JobCountParams, JobFilter
from tests.support.store_counts import StoreCounts

JOBS = 200
#: columns that differ between two jobs of the same arguments and options
_PER_JOB = ("id", "created_at", "run_at")


def _task(app: conveyor.App) -> Any:
    @app.task
    def job(i: int, t0: float, kind: str) -> int:
        return i

    return job


@pytest.fixture
def sqlite_app(sqlite_url: str) -> Iterator[conveyor.App]:
    app = conveyor.App(sqlite_url)
    yield app
    app.close()


def _traced(app: conveyor.App) -> list[str]:
    """The verb of each statement run on the backend's connection from now on. Those a
    trigger runs ("-- TRIGGER name") are part of the statement that fired them: left out.
    A statement from a .sql file starts with its comment lines: the verb is after them."""
    verbs: list[str] = []

    def trace(sql: str) -> None:
        if not sql.startswith("-- TRIGGER"):
            code = [line for line in sql.splitlines() if not line.lstrip().startswith("--")]
            words = " ".join(code).upper().split()
            verbs.append(" ".join(words[:2]) if words[0] == "BEGIN" else words[0])

    conn: sqlite3.Connection = app.backend.connection  # type: ignore[attr-defined]
    conn.set_trace_callback(trace)
    return verbs


def _same(verbs: list[str], expected: list[str]) -> bool:
    """Compared outside the assert: a diff of thousands of words helps nobody."""
    return verbs == expected


def test_sqlite_single_enqueue_is_begin_insert_commit(sqlite_app: conveyor.App) -> None:
    job = _task(sqlite_app)
    job.enqueue(0, 0.0, "warm")  # the store is opened and migrated before counting
    verbs = _traced(sqlite_app)
    for i in range(JOBS):
        job.enqueue(i, 0.0, "noop")
    sqlite_app.backend.connection.set_trace_callback(None)  # type: ignore[attr-defined]
    ok = _same(verbs, ["BEGIN IMMEDIATE", "INSERT", "COMMIT"] * JOBS)
    assert ok, f"{len(verbs)} statements for {JOBS} enqueues, first {verbs[:6]}"
    assert sqlite_app.backend.job_count(JobCountParams(JobFilter())) == JOBS + 1


def test_sqlite_enqueue_many_is_one_transaction(sqlite_app: conveyor.App) -> None:
    job = _task(sqlite_app)
    job.enqueue(0, 0.0, "warm")
    verbs = _traced(sqlite_app)
    job.enqueue_many([(i, 0.0, "noop") for i in range(JOBS)])
    sqlite_app.backend.connection.set_trace_callback(None)  # type: ignore[attr-defined]
    # executemany reports each row's INSERT: one transaction around them all.
    ok = _same(verbs, ["BEGIN IMMEDIATE", *["INSERT"] * JOBS, "COMMIT"])
    assert ok, f"{len(verbs)} statements for {JOBS} jobs, first {verbs[:4]}"


def test_sqlite_single_enqueue_writes_the_row_enqueue_many_writes(
    sqlite_app: conveyor.App,
) -> None:
    """The single enqueue's own path and the batch path store the same job, field for
    field (apart from its id and creation time)."""
    job = _task(sqlite_app)
    one = job.enqueue(7, 1.5, "same")
    (many,) = job.enqueue_many([(7, 1.5, "same")])
    conn = sqlite3.connect(sqlite_app.backend.target.path)  # type: ignore[attr-defined]
    try:
        cursor = conn.execute("SELECT * FROM jobs")
        names = [d[0] for d in cursor.description]
        rows = {
            row[0]: {n: v for n, v in zip(names, row, strict=True) if n not in _PER_JOB}
            for row in cursor
        }
    finally:
        conn.close()
    assert rows[one.id] == rows[many.id]
    assert rows[one.id]["state"] == "queued" and rows[one.id]["headers"] is None


def test_sqlite_single_enqueue_with_a_hook_still_runs_it(sqlite_app: conveyor.App) -> None:
    """A middleware added after the first enqueue takes the full path from then on."""
    job = _task(sqlite_app)
    job.enqueue(0, 0.0, "before")

    class Stamp:
        def on_enqueue(self, new: Any) -> None:
            new.headers["stamped"] = "yes"

    sqlite_app.add_middleware(Stamp)
    assert sqlite_app.job(job.enqueue(1, 0.0, "after").id).headers == {"stamped": "yes"}


def test_redis_single_enqueue_is_one_round_trip(request: pytest.FixtureRequest) -> None:
    from tests.support.redis_server import isolated_url

    app = conveyor.App(isolated_url(request))
    try:
        job = _task(app)
        job.enqueue(0, 0.0, "warm")  # connected, script loaded
        job.enqueue_many([(0, 0.0, "warm")])
        counts = StoreCounts.attach(app.backend)
        try:
            job.enqueue(1, 0.0, "warm")  # the counting pool's first connection
            counts.counts.clear()
            for i in range(JOBS):
                job.enqueue(i, 0.0, "noop")
            single = dict(counts.counts)
            counts.counts.clear()
            job.enqueue_many([(i, 0.0, "noop") for i in range(JOBS)])
            many = dict(counts.counts)
        finally:
            counts.detach()
        assert single == {"round_trips": JOBS}
        assert many == {"round_trips": 1}
    finally:
        app.close()
