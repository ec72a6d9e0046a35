"""Ops behaviour of real workers: pause obeyed within a second and across restarts,
retention pruning, captured logs, and the metrics endpoint scraped over HTTP."""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import conveyor
from conveyor.backends.base import JobCountParams, JobFilter, JobLogListParams
from conveyor.cli.main import cli
from conveyor.states import JobState
from conveyor.worker.worker import Worker


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def make_app(url: str, **settings: object) -> tuple[conveyor.App, conveyor.Task]:  # type: ignore[type-arg]
    app = conveyor.App(url, heartbeat_interval=0.2, rescue_interval=0.2, **settings)

    @app.task(name="t.noop")
    def noop(x: int) -> int:
        logging.getLogger("t.noop").warning("noop %d", x)
        return x

    return app, noop


def count(app: conveyor.App, state: JobState) -> int:
    return app.backend.job_count(JobCountParams(JobFilter(states=(state,))))


def test_pause_obeyed_within_a_second_and_across_restarts(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    app, noop = make_app(url)
    worker = Worker(app, queues=["mail", "default"], concurrency=4).start()
    try:
        noop.with_options(queue="mail").enqueue(1)
        assert wait_for(lambda: count(app, JobState.SUCCEEDED) == 1)
        # Paused from another connection (as an operator on another host would).
        assert CliRunner().invoke(cli, ["queues", "--url", url, "pause", "mail"]).exit_code == 0
        paused_at = time.monotonic()
        noop.with_options(queue="mail").enqueue(2)
        noop.enqueue(3)  # other queues keep flowing
        assert wait_for(lambda: count(app, JobState.SUCCEEDED) == 2, timeout=1.0)
        time.sleep(max(0.0, 1.0 - (time.monotonic() - paused_at)))
        assert count(app, JobState.QUEUED) == 1  # the paused queue's job stayed put
    finally:
        worker.stop()
    # A new worker (a restart) still sees the pause: it is stored, not remembered.
    app2, _ = make_app(url)
    worker2 = Worker(app2, queues=["mail"], concurrency=2).start()
    try:
        time.sleep(0.6)
        assert count(app2, JobState.QUEUED) == 1
        CliRunner().invoke(cli, ["queues", "--url", url, "resume", "mail"])
        resumed = time.monotonic()
        assert wait_for(lambda: count(app2, JobState.QUEUED) == 0, timeout=2.0)
        assert time.monotonic() - resumed < 1.0
    finally:
        worker2.stop()
        app.close()
        app2.close()


def test_workers_prune_finished_jobs_past_retention(tmp_path: Path) -> None:
    app, noop = make_app(f"sqlite:///{tmp_path / 'jobs.db'}", retention=0.5, prune_interval=0.1)
    worker = Worker(app, concurrency=2).start()
    try:
        jobs = [noop.enqueue(i) for i in range(5)]
        assert wait_for(lambda: count(app, JobState.SUCCEEDED) == 5)
        logged = app.backend.job_log_list(JobLogListParams(jobs[0].id))
        assert [r.message for r in logged] == ["noop 0"]
        assert wait_for(
            lambda: app.backend.job_count(JobCountParams(JobFilter())) == 0, timeout=3.0
        )
        assert app.backend.job_log_list(JobLogListParams(jobs[0].id)) == []
        noop.enqueue(9)
        assert wait_for(lambda: count(app, JobState.SUCCEEDED) == 1)
    finally:
        worker.stop()
        app.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_metrics_endpoint(tmp_path: Path) -> None:
    pytest.importorskip("prometheus_client")  # the metrics extra; in the dev extra too
    from conveyor.metrics import WorkerMetrics

    app, noop = make_app(f"sqlite:///{tmp_path / 'jobs.db'}")

    @app.task(name="t.boom", max_attempts=2)
    def boom() -> None:
        raise RuntimeError("boom")

    worker = Worker(app, concurrency=2)
    metrics = WorkerMetrics(worker, refresh=0.1)
    port = free_port()
    metrics.serve(port)
    worker.start()
    try:
        for i in range(3):
            noop.enqueue(i)
        boom.with_options(queue="default").enqueue()
        assert wait_for(lambda: count(app, JobState.DEAD) == 1, timeout=8.0)
        time.sleep(0.3)  # one refresher tick
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        worker.stop()
        metrics.close()
        app.close()
    assert 'conveyor_jobs_enqueued_total{queue="default",task="t.noop"} 3.0' in body
    assert 'conveyor_jobs_succeeded_total{queue="default",task="t.noop"} 3.0' in body
    assert 'conveyor_jobs_started_total{queue="default",task="t.boom"} 2.0' in body
    assert 'conveyor_jobs_retried_total{queue="default",task="t.boom"} 1.0' in body
    assert 'conveyor_jobs_failed_total{queue="default",task="t.boom"} 2.0' in body
    assert 'conveyor_jobs_dead_total{queue="default",task="t.boom"} 1.0' in body
    assert 'conveyor_job_queue_wait_seconds_count{queue="default"} 5.0' in body
    assert "conveyor_job_run_seconds_bucket" in body
    assert 'conveyor_queue_depth{queue="default",state="queued"} 0.0' in body
    assert "conveyor_queue_oldest_ready_age_seconds" in body
    assert "conveyor_log_backlog" in body and "conveyor_log_dropped_total 0.0" in body


def test_metrics_serves_the_autoscaling_signal_at_load(tmp_path: Path) -> None:
    pytest.importorskip("prometheus_client")
    import json

    from conveyor.metrics import WorkerMetrics

    app, _ = make_app(f"sqlite:///{tmp_path / 'jobs.db'}")
    release = threading.Event()

    @app.task(name="t.hold", queue="work")
    def hold() -> None:
        release.wait(10)

    worker = Worker(app, queues=["work"], concurrency=2)
    metrics = WorkerMetrics(worker, refresh=0.1)
    port = free_port()
    metrics.serve(port)
    worker.start()
    try:
        for _ in range(5):
            hold.enqueue()
        assert wait_for(lambda: count(app, JobState.RUNNING) == 2)
        time.sleep(0.3)  # one refresher tick after the claims
        doc = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/load", timeout=5).read())
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        release.set()
        worker.stop()
        metrics.close()
        app.close()
    work = doc["queues"]["work"]
    assert (work["ready"], work["running"], work["demand"]) == (3, 2, 5)
    assert (work["workers"], work["capacity"], work["load"]) == (1, 2, 2.5)
    assert doc["total"] == {"ready": 3, "running": 2, "demand": 5, "workers": 1, "capacity": 2}
    assert 'conveyor_queue_demand{queue="work"} 5.0' in body
    assert 'conveyor_queue_capacity{queue="work"} 2.0' in body
    assert 'conveyor_queue_load{queue="work"} 2.5' in body
