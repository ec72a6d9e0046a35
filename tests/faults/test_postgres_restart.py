"""PostgreSQL crashed mid-run (``pg_ctl stop -m immediate``: no checkpoint, crash recovery
at restart) and restarted on the same port: the workers back off, reconnect their pools
and listeners, resume once it answers, and lose nothing committed. The twin of
test_redis_restart.py, on a cluster of this test's own (the session's is shared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.scenarios import CrashablePostgres, postgres_kill_restart
from tests.support.postgres_server import require_binary

pytestmark = pytest.mark.slow


def test_postgres_crash_and_restart_loses_nothing(tmp_path: Path) -> None:
    server = CrashablePostgres(require_binary("initdb"), require_binary("pg_ctl")).init().start()
    try:
        result = postgres_kill_restart(
            server, tmp_path, 600, concurrency=4, job_seconds=0.01, down_for=1.0, timeout=60
        )
    finally:
        server.stop("immediate")
        server.remove()
    tally = result.tally
    assert tally.lost == 0, f"{tally.line()}\n{result.output[-3000:]}"
    assert tally.unexplained_duplicates == 0, tally.line()
    assert result.exits == [], f"workers exited during the outage: {result.exits}"
    assert result.resumed_after is not None, "no job ran after PostgreSQL came back"
    # Back-off is capped at 5 s (worker.py): consuming again within that after it answers.
    assert result.resumed_after < 6.0, tally.line()
