"""Durable jobs' proofs at the issue's sizes (issue 23): durable sleeps hold no slot and
resume on time; event send -> resume latency per store.

- ``sleep``: ``N`` jobs each ``conveyor.sleep(2)`` and ``M`` plain jobs enqueued behind
  them, one 4-slot worker (threads). Every plain job finishes before the first sleeper
  wakes (so no slot was held by a sleeper), and each sleeper resumes within its bound
  (1 s) of its saved wake time.
- ``events``: ``N`` jobs parked on ``conveyor.wait_for("go")``, one running worker;
  each in turn is sent the event and the time from the send to its body running again
  is measured (p50, p99, max in ms).

Run (``--store`` starts a private server of that store; ``--url`` uses yours)::

    python -m bench.durable_proofs sleep --store sqlite --jobs 1000
    python -m bench.durable_proofs events --store postgres --jobs 300

The small sizes run in make test (tests/integration/test_durable_proofs.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import conveyor
from conveyor.states import JobState


@contextmanager
def running(app: conveyor.App, concurrency: int) -> Iterator[conveyor.Worker]:
    """A worker of ``concurrency`` threads running in the background of this block."""
    worker = conveyor.Worker(app, concurrency=concurrency)
    thread = threading.Thread(target=worker.run, kwargs={"install_signals": False})
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(30)


def _wait(predicate: Any, timeout: float, poll: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll)
    return bool(predicate())


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sleep_proof(url: str, sleepers: int, others: int, seconds: float = 2.0) -> dict[str, Any]:
    """See the module docstring: figures of one run (``late_*``: resume - wake, s)."""
    app = conveyor.App(url)

    @app.task(name="proof.sleeper")
    def sleeper() -> float:
        conveyor.sleep(seconds)
        return time.time()  # runs once: on the replay after the wake

    @app.task(name="proof.other")
    def other() -> float:
        time.sleep(0.01)
        return time.time()

    try:
        sleeping = sleeper.enqueue_many([()] * sleepers)
        plain = other.enqueue_many([()] * others)
        with running(app, 4):
            done = lambda js: all(j.status is JobState.SUCCEEDED for j in js)  # noqa: E731
            _wait(lambda: done(plain), 30 + sleepers * 0.05, poll=0.05)
            _wait(lambda: done(sleeping), 60 + sleepers * 0.05, poll=0.1)
        wakes = [float(j.steps()[0].result or "0") for j in sleeping]
        resumed = [float(j.result(timeout=0)) for j in sleeping]
        late = [r - w for r, w in zip(resumed, wakes, strict=True)]
        last_other = max(float(j.result(timeout=0)) for j in plain) if plain else 0.0
        return {
            "store": url.split(":", 1)[0], "sleepers": sleepers, "others": others,
            "others_done_before_first_wake": last_other < min(wakes),
            "late_p50": statistics.median(late), "late_p99": _pct(late, 0.99),
            "late_max": max(late), "late_min": min(late),
        }  # fmt: skip
    finally:
        app.close()


def event_latency(url: str, jobs: int) -> dict[str, Any]:
    """See the module docstring: send -> resume latency of ``jobs`` events, in ms."""
    app = conveyor.App(url)
    try:
        return measure_events(app, jobs)
    finally:
        app.close()


def measure_events(app: conveyor.App, jobs: int) -> dict[str, Any]:
    """:func:`event_latency` on an open app (the contract test's, on every store)."""

    @app.task(name="proof.waiter")
    def waiter() -> float:
        conveyor.wait_for("go", timeout=600)
        return time.time()

    parked = waiter.enqueue_many([()] * jobs)
    latencies = []
    with running(app, 4):
        _wait(lambda: all(j.status is JobState.WAITING for j in parked), 60 + jobs * 0.05)
        for job in parked:
            sent = time.time()
            job.send("go")
            resumed = float(job.result(timeout=30))
            latencies.append((resumed - sent) * 1000)
    return {
        "store": app.backend.name, "events": jobs,
        "p50_ms": statistics.median(latencies), "p99_ms": _pct(latencies, 0.99),
        "max_ms": max(latencies),
    }  # fmt: skip


@contextmanager
def store_url(store: str) -> Iterator[str]:
    """A fresh store of kind ``store`` on a private server started here (SQLite: a
    temp file), stopped after the block."""
    if store == "sqlite":
        yield f"sqlite:///{Path(tempfile.mkdtemp()) / 'proof.db'}"
    elif store == "redis":
        from bench.harness import RedisServer

        redis = RedisServer()
        try:
            _wait(lambda: _pings(redis), 10)
            yield redis.url + "/0"
        finally:
            redis.stop()
    elif store == "postgres":
        from bench.postgres_cluster import PostgresCluster

        cluster = PostgresCluster().init().start()
        try:
            yield cluster.url
        finally:
            cluster.stop()
            cluster.remove()
    else:  # mariadb: the test suite's server helper (bootstrap, user, database)
        from tests.support.mariadb_server import run_database

        yield run_database("proof")


def _pings(redis: Any) -> bool:
    try:
        return bool(redis.client.ping())
    except Exception:  # not up yet
        return False


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.durable_proofs")
    parser.add_argument("proof", choices=["sleep", "events"])
    parser.add_argument("--url", default=None, help="a store URL (else --store's)")
    parser.add_argument(
        "--store", choices=["sqlite", "redis", "postgres", "mariadb"], default="sqlite",
        help="start a private server of this store (SQLite: a temp file)",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--others", type=int, default=200, help="sleep: plain jobs")
    args = parser.parse_args()
    with store_url(args.store) if args.url is None else nullcontext(args.url) as url:
        if args.proof == "sleep":
            figures = sleep_proof(url, args.jobs, args.others)
        else:
            figures = event_latency(url, args.jobs)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
