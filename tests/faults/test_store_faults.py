"""SQLite store faults: the disk fills up under a running worker (a small tmpfs), a
producer writes to a full disk, the store file is deleted or replaced under a worker.

All four fail on today's code (issue 12, item 6 and 7): marked xfail(strict), so each
turns red the moment its fix lands and the fixer removes the mark.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import conveyor
from tests.faults.store_faults import describe, disk_full, producer_on_full_disk, store_replaced

pytestmark = pytest.mark.slow


@pytest.mark.xfail(
    strict=True,
    reason="issue 12 (6): disk full kills the worker (its completer thread dies on "
    "'database or disk is full', exit 1) instead of backing off until space returns",
)
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


@pytest.mark.xfail(
    strict=True,
    reason="issue 12 (6): a producer on a full disk gets a raw sqlite3.OperationalError, "
    "not conveyor.StoreError",
)
def test_producer_on_a_full_disk_gets_store_error(small_tmpfs: Path) -> None:
    seen = producer_on_full_disk(f"sqlite:///{small_tmpfs / 'jobs.db'}", small_tmpfs)
    store_error = getattr(conveyor, "StoreError", None)
    assert store_error is not None, f"no conveyor.StoreError; the producer got {describe(seen)}"
    assert isinstance(seen, store_error), describe(seen)
    assert re.search(r"full|space|disk", str(seen), re.I), (
        f"should name the cause: {describe(seen)}"
    )


@pytest.mark.xfail(
    strict=True,
    reason="issue 12 (7): deleting the SQLite file under a running worker goes unnoticed",
)
def test_worker_stops_when_its_store_is_deleted(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    result = store_replaced(f"sqlite:///{path}", path, replace=False, timeout=3.0)
    assert result.status not in (None, 0), f"exit status {result.status}"
    assert "jobs.db" in result.output.rsplit("ready:", 1)[-1], result.output[-2000:]


@pytest.mark.xfail(
    strict=True,
    reason="issue 12 (7): replacing the SQLite file under a running worker goes "
    "unnoticed (it keeps serving the unlinked file)",
)
def test_worker_stops_when_its_store_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    result = store_replaced(f"sqlite:///{path}", path, replace=True, timeout=3.0)
    assert result.status not in (None, 0), f"exit status {result.status}"
    assert "jobs.db" in result.output.rsplit("ready:", 1)[-1], result.output[-2000:]
