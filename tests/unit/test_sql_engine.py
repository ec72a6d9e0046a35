"""The SQL engine's hot path (backends/sql/claim.py, finish.py) under the spellings a
store may have: the paths SQLite and PostgreSQL do not take themselves (a claim without
``UPDATE ... RETURNING``, finishes one fenced statement per row, as MariaDB's) run here on
a real SQLite file and must leave the store exactly as SQLite's own paths do.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conveyor.backends.base import (
    JobClaimParams,
    JobFinishParams,
    JobInsertParams,
    QueuePauseParams,
)
from conveyor.backends.sql.claim import Claim
from conveyor.backends.sql.dialect import Dialect, named_queries
from conveyor.backends.sql.finish import Finish
from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.backends.sqlite.dialect import SQLITE
from conveyor.states import FinishKind

#: SQLite spelled as a store without RETURNING and without batched finishes (MariaDB's
#: shape; its SKIP LOCKED is left out: SQLite has no row locks to skip).
ROWS_ONLY = dataclasses.replace(SQLITE, returning=False, finish_batch="rows")
SRC = Path(__file__).parents[2] / "src" / "conveyor" / "backends"


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SQLiteBackend, SQLiteBackend]]:
    """Two stores holding the same jobs: two queues, priorities, one paused queue."""
    made = []
    for name in ("a", "b"):
        b = SQLiteBackend(f"sqlite:///{tmp_path}/{name}.db")
        b.job_insert_many(
            [
                JobInsertParams(
                    id=f"j{i}", task="t", queue=f"q{i % 3}", payload="{}", priority=i % 4
                )
                for i in range(30)
            ]
        )
        b.queue_pause(QueuePauseParams("q2"))
        made.append(b)
    yield made[0], made[1]
    for b in made:
        b.close()


def _claim(
    d: Dialect, b: SQLiteBackend, params: JobClaimParams, now: float
) -> list[tuple[object, ...]]:
    with b._write() as conn:
        _, jobs = Claim(d, conn, params, now).result(conn)
    return [(j.id, j.queue, j.token, j.attempt, j.claimed_at, j.lease) for j in jobs]


#: What a claim or a finish writes (not the insert's own times, which differ per store).
COLUMNS = {
    "jobs": "id, state, token, attempt, worker_id, started_at, lease_until, result, error, "
    "reason, finished_at, CASE WHEN state = 'scheduled' THEN run_at END",
    "attempts": "*",
}


def _rows(b: SQLiteBackend, table: str) -> list[tuple[object, ...]]:
    with b.lock:
        query = f"SELECT {COLUMNS[table]} FROM {table} ORDER BY 1, 2"
        return b.connection.execute(query).fetchall()


def test_claim_without_returning_takes_what_returning_takes(
    stores: tuple[SQLiteBackend, SQLiteBackend],
) -> None:
    a, b = stores
    now = time.time()
    for params in (
        JobClaimParams("w", [("q0", 3), ("q1", 2), ("q2", 2)], 7),
        JobClaimParams("w", [("q1", 5), ("q0", 5)], 12),  # q1 runs dry: topped up from q0
    ):
        got = _claim(ROWS_ONLY, a, params, now)
        assert got == _claim(SQLITE, b, params, now)
        assert got and not any(q == "q2" for _, q, *_ in got)  # paused: nothing
    assert _rows(a, "jobs") == _rows(b, "jobs")


def test_finish_row_by_row_writes_what_batches_write(
    stores: tuple[SQLiteBackend, SQLiteBackend],
) -> None:
    a, b = stores
    now = time.time()
    params = JobClaimParams("w", [("q0", 10), ("q1", 10)], 20)
    claimed = [c[:3] for c in _claim(SQLITE, a, params, now)]
    assert claimed == [c[:3] for c in _claim(SQLITE, b, params, now)]
    kinds = [FinishKind.SUCCEEDED, FinishKind.RETRY, FinishKind.DEAD, FinishKind.DROP]
    mixed = [
        JobFinishParams(str(i), int(str(t)), kinds[n % 4], "w", 1, "1", '{"e": 1}', "r", now + 5)
        for n, (i, _, t) in enumerate(claimed[:8])
    ]
    successes = [
        JobFinishParams(str(i), int(str(t)), FinishKind.SUCCEEDED, "w", 1, "2", started_at=now)
        for i, _, t in claimed[8:]
    ]
    stale = JobFinishParams(str(claimed[8][0]), 99, FinishKind.SUCCEEDED, "w", 1, "3")
    for batch in (mixed, [*successes, stale]):
        answers = []
        for d, store in ((ROWS_ONLY, a), (SQLITE, b)):
            with store._write() as conn:
                sent = Finish(d, conn, batch, now)
                answers.append((sent.result(conn)[0], sent.ended))
        assert answers[0] == answers[1]
    assert answers[0][0] == [stale.id]
    for table in ("jobs", "attempts"):
        assert _rows(a, table) == _rows(b, table)


@pytest.mark.parametrize("role", ["claim"])
def test_both_stores_name_the_same_statements(role: str) -> None:
    """A role's query file defines the same names on every SQL store."""
    names = [
        set(named_queries((SRC / store / "queries" / f"{role}.sql").read_text()))
        for store in ("sqlite", "postgres")
    ]
    assert names[0] == names[1] != set()
