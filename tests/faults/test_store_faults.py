"""Store faults: the disk fills up under a running SQLite worker (a small tmpfs), a
producer writes to a full disk, the store file is deleted or replaced under a worker,
a PostgreSQL worker's schema is dropped under it.

What must hold: the worker rides out a full disk (one line when the outage starts, one
when it ends, no traceback, nothing lost); a producer gets ``conveyor.StoreError``; a
worker whose file was deleted or replaced (whose schema was dropped) stops at once,
non-zero, naming the file (the schema) in one line, no traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import conveyor
from tests.faults.store_faults import (
    describe,
    disk_full,
    producer_on_full_disk,
    schema_dropped,
    store_replaced,
)
from tests.support.postgres_server import isolated_database_url

pytestmark = pytest.mark.slow


def test_worker_rides_out_a_full_disk(small_tmpfs: Path) -> None:
    result = disk_full(f"sqlite:///{small_tmpfs / 'jobs.db'}", small_tmpfs, outage=2.0)
    assert result.status is None, (
        f"worker exited with {result.status} after {result.seconds_to_exit} s:\n"
        f"{result.output[-2000:]}"
    )
    assert result.tally.lost == 0, result.tally.line()
    assert result.tally.unexplained_duplicates == 0, result.tally.line()
    # One line when the outage starts (and maybe one at recovery), not one per retry,
    # and no traceback.
    outage_lines = [
        line for line in result.output.splitlines() if re.search(r" (WARNING|ERROR) ", line)
    ]
    assert 1 <= len(outage_lines) <= 2, outage_lines
    assert "Traceback" not in result.output, result.output[-2000:]


def test_producer_on_a_full_disk_gets_store_error(small_tmpfs: Path) -> None:
    seen = producer_on_full_disk(f"sqlite:///{small_tmpfs / 'jobs.db'}", small_tmpfs)
    store_error = getattr(conveyor, "StoreError", None)
    assert store_error is not None, f"no conveyor.StoreError; the producer got {describe(seen)}"
    assert isinstance(seen, store_error), describe(seen)
    assert re.search(r"full|space|disk", str(seen), re.I), (
        f"should name the cause: {describe(seen)}"
    )


def test_worker_stops_when_its_store_is_deleted(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    result = store_replaced(f"sqlite:///{path}", path, replace=False, timeout=3.0)
    assert result.status not in (None, 0), f"exit status {result.status}"
    assert "jobs.db" in result.output.rsplit("ready:", 1)[-1], result.output[-2000:]


def test_worker_stops_when_its_store_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    result = store_replaced(f"sqlite:///{path}", path, replace=True, timeout=3.0)
    assert result.status not in (None, 0), f"exit status {result.status}"
    assert "jobs.db" in result.output.rsplit("ready:", 1)[-1], result.output[-2000:]


def test_postgres_worker_stops_when_its_schema_is_dropped(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = f"{isolated_database_url(request)}?schema=jobs_here"
    result = schema_dropped(url, tmp_path, timeout=5.0)
    after = result.output.rsplit("ready:", 1)[-1]
    assert result.status not in (None, 0), f"exit status {result.status}\n{after[-2000:]}"
    assert "'jobs_here'" in after, after[-2000:]
    assert "Traceback" not in after, after[-2000:]
