"""Redis SIGKILLed mid-run and restarted from its AOF (appendfsync always): the workers
back off, resume once it answers, and lose nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.scenarios import AofRedis, redis_kill_restart

pytestmark = [pytest.mark.redis, pytest.mark.slow]


def test_redis_kill_and_restart_loses_nothing(tmp_path: Path) -> None:
    server = AofRedis(tmp_path / "redis").start()
    try:
        result = redis_kill_restart(
            server, tmp_path, 600, concurrency=4, job_seconds=0.01, down_for=1.0, timeout=60
        )
    finally:
        server.stop()
    tally = result.tally
    assert tally.lost == 0, f"{tally.line()}\n{result.output[-3000:]}"
    assert tally.unexplained_duplicates == 0, tally.line()
    assert result.exits == [], f"workers exited during the outage: {result.exits}"
    assert result.resumed_after is not None, "no job ran after Redis came back"
    # Back-off is capped at 5 s (worker.py): consuming again within that after it answers.
    assert result.resumed_after < 6.0, tally.line()
