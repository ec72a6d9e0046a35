"""Commits of durable steps on SQLite, counted (not timed): concurrent jobs' checkpoints
share commits (worker/checkpointer.py), so a worker of many slots commits fewer times
than its jobs run steps; a one-slot worker commits each checkpoint alone.

Counted by a trace callback on every connection of the process (bench/sql_counter.py:
a commit is a transaction that wrote), the store a real SQLite file.
"""

from __future__ import annotations

import threading
from pathlib import Path

from bench.sql_counter import count_sqlite

import conveyor

JOBS, STEPS = 8, 10


def _commits(path: Path, concurrency: int) -> tuple[int, list[object]]:
    counter = count_sqlite()
    # synchronous=FULL: each commit waits for its fsync, as a server store's does, so
    # checkpoints arrive while one is in flight.
    app = conveyor.App(f"sqlite:///{path}?synchronous=FULL")
    barrier = threading.Barrier(concurrency, timeout=10)

    @app.step(name="noop")
    def noop(i: int, n: int) -> int:
        if concurrency > 1:
            barrier.wait()  # the jobs' checkpoints come together, as under load
        return i + n

    @app.task(name="flow")
    def flow(i: int) -> int:
        return sum(noop(i, n) for n in range(STEPS))

    try:
        jobs = flow.enqueue_many([(i,) for i in range(JOBS)])
        counter.reset()
        conveyor.Worker(app, burst=True, concurrency=concurrency).run(install_signals=False)
        commits = counter.commits
        return commits, [j.result(timeout=0) for j in jobs]
    finally:
        app.close()


def test_concurrent_checkpoints_take_fewer_commits_than_steps(tmp_path: Path) -> None:
    expected = [sum(i + n for n in range(STEPS)) for i in range(JOBS)]
    grouped, results = _commits(tmp_path / "grouped.db", JOBS)
    assert results == expected
    alone, results = _commits(tmp_path / "alone.db", 1)
    assert results == expected
    steps = JOBS * STEPS
    # One slot: one commit per checkpoint, and the claims and finishes besides.
    assert alone > steps, (alone, steps)
    # Eight slots meeting at a barrier: the steps of one round mostly share a commit.
    assert grouped < steps / 2, (grouped, steps)
