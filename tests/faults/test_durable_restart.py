"""Durable jobs across a store restart (issue 23's fault proof, small): jobs of 5 steps
under the SIGKILL storm, Redis SIGKILLed and restarted from its AOF (``appendfsync
always``) once a third of the steps ran. Every job succeeds and no step whose checkpoint
was saved runs again. PostgreSQL's crash + restart, and both at 1,000 jobs, run in the
long runner (``python -m tests.faults --long``, tests/faults/durable_long.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.durable_long import durable_run, durable_store

pytestmark = [pytest.mark.redis, pytest.mark.slow]


@pytest.mark.timeout(120)
def test_durable_jobs_survive_a_redis_restart(tmp_path: Path) -> None:
    with durable_store("redis", tmp_path, True, lambda: "") as (url, crash):
        outcome = durable_run(url, tmp_path, "redis", 30, restart=crash, timeout=90)
    storm = outcome.storm
    assert storm is not None
    print(outcome.why)
    assert outcome.ok, f"{outcome.why}\n{storm.output[-3000:]}"
    assert "restarted mid-run" in outcome.detail
