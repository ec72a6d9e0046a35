"""SIGTERM under load on every pool: the running jobs are released with the attempt not
counted, the worker exits 0, and a later worker finishes everything (nothing lost)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.faults.conftest import fresh_store_url
from tests.faults.scenarios import sigterm_under_load

pytestmark = pytest.mark.slow

#: (backend, pool): every pool on SQLite; on PostgreSQL the thread pool (the release is
#: the worker's, the same for every pool; what PostgreSQL adds is its release path).
CASES = [
    pytest.param("sqlite", "thread", id="sqlite-thread"),
    pytest.param("sqlite", "async", id="sqlite-async"),
    pytest.param("sqlite", "process", id="sqlite-process"),
    pytest.param(
        "sqlite",
        "interpreter",
        id="sqlite-interpreter",
        marks=pytest.mark.skipif(
            sys.version_info < (3, 13), reason="the interpreter pool needs Python >= 3.13"
        ),
    ),
    pytest.param("postgres", "thread", id="postgres-thread"),
]


@pytest.mark.parametrize(("backend", "pool"), CASES)
def test_sigterm_releases_running_jobs(
    backend: str, pool: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    result = sigterm_under_load(
        fresh_store_url(backend, request, tmp_path), tmp_path, pool, concurrency=4, queued=20,
        shutdown_timeout=0.5,
    )  # fmt: skip
    tally = result.tally
    assert result.status == 0, f"exit status {result.status}\n{result.output[-3000:]}"
    # --shutdown-timeout 0.5, then the release: well within a few seconds.
    assert result.stop_seconds < 5.0, result.stop_seconds
    assert len(result.released) == 4
    # queued again, attempt 0 (not counted), the attempt recorded as "released"
    assert result.released == [("queued", 0, "released")] * 4, result.released
    assert tally.lost == 0, tally.line()
    assert tally.succeeded == 24, tally.line()
    assert tally.unexplained_duplicates == 0, tally.line()
    # Every job succeeded on its first counted attempt: the released one did not count.
    assert result.final_attempts == {1: 24}, dict(result.final_attempts)
