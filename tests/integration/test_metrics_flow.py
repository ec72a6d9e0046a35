"""Per-key flow-control metrics (conveyor/metrics_flow.py): limits and sequences, with
labels bounded by the code (a key function's answers fold into ``<task>:*``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import conveyor
from conveyor.worker.worker import Worker
from tests.integration.test_worker_ops import wait_for


def test_per_key_metrics(tmp_path: Path) -> None:
    pytest.importorskip("prometheus_client")
    from conveyor.metrics import WorkerMetrics

    app = conveyor.App(f"sqlite:///{tmp_path / 'jobs.db'}", queue_concurrency={"bulk": 3})
    release = threading.Event()

    @app.task(name="t.api", concurrency=1, limit_key=lambda account: account)
    def api(account: str) -> None:
        release.wait(10)

    @app.task(name="t.post", sequence_key="ledger", max_attempts=1)
    def post(n: int) -> None:
        if n == 0:
            raise ValueError("bad entry")

    jobs = [api.enqueue(a) for a in ("acme", "acme", "beta", "beta", "gamma")]
    bad, held = post.enqueue(0), post.enqueue(1)
    worker = Worker(app, concurrency=6)
    metrics = WorkerMetrics(worker, refresh=60)
    worker.start()
    try:
        bad.wait(timeout=10)
        # one job per account runs (concurrency 1 per key), the others are held back
        assert wait_for(lambda: sum(j.refresh().state == "running" for j in jobs) == 3)
        metrics.refresh()
        running = metrics.text()
        release.set()
        for job in jobs:
            job.wait(timeout=10)
        time.sleep(0.1)
        metrics.refresh()
        body = metrics.text()
    finally:
        release.set()
        worker.stop()
        metrics.close()
        app.close()
    assert held.refresh().state == "waiting"
    # three accounts, one series: the function key's answers fold into t.api:*
    assert 'conveyor_limit_running{limit_key="t.api:*"} 3.0' in running
    assert 'conveyor_limit_concurrency{limit_key="t.api:*"} 1.0' in running
    assert 'conveyor_limit_running{limit_key="t.api:*"} 0.0' in body
    assert 'conveyor_limit_wait_seconds_count{limit_key="t.api:*"} 5.0' in body
    assert 'conveyor_sequence_wait_seconds_count{sequence_key="ledger"} 1.0' in body
    assert "conveyor_sequence_held_jobs 1.0" in body
    assert "acme" not in body
