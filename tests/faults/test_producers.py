"""8 producer processes and 3 workers on one store (a SQLite file, a PostgreSQL
database): every job done exactly once, and nobody ever sees "database is locked"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.scenarios import producers_and_workers

pytestmark = pytest.mark.slow


def test_producers_and_workers_share_one_store(sql_store_url: str, tmp_path: Path) -> None:
    result = producers_and_workers(
        sql_store_url, tmp_path, producers=8, per_producer=200, timeout=60
    )
    tally = result.tally
    assert result.producer_status == [0] * 8, result.output[-3000:]
    assert result.locked == [], result.locked[:5]
    assert tally.lost == 0, tally.line()
    assert tally.succeeded == 1600, tally.line()
    assert result.runs_per_job == {1: 1600}, f"runs per job: {dict(result.runs_per_job)}"
