"""Sequences under worker processes and SIGKILL storms (issue 24's proof, small: 5 keys
x 10 jobs; ``python -m tests.faults --long`` runs 20 x 100): per key, runs start in
enqueue order and never overlap, and a job rescued from a killed worker keeps its
place. SQLite and PostgreSQL here (the other stores run the same contract in
tests/contract/test_sequences.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.sequences import sequence_storm

pytestmark = pytest.mark.slow


@pytest.mark.timeout(150)
def test_sequences_keep_order_under_sigkill(sql_store_url: str, tmp_path: Path) -> None:
    # Jobs of 0 to 0.16 s on 5 keys: ~0.8 s of work a key, ten links each, so the storm
    # (a SIGKILL every 0.5 s) lands kills mid-job. Without kills, order and overlap are
    # the contract suite's (tests/contract/test_sequences.py, every store).
    result = sequence_storm(
        sql_store_url, tmp_path, keys=5, per_key=10, job_seconds=0.08,
        concurrency=3, kill_every=0.5, timeout=120,
    )  # fmt: skip
    print(result.line())
    assert result.succeeded == result.jobs, f"{result.line()}\n{result.output[-3000:]}"
    assert result.violations == [], result.line()
    assert result.kills >= 2, f"the storm did not get going: {result.line()}"
