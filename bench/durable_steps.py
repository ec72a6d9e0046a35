"""Durable steps, measured (issue 23): jobs of 10 no-op steps drained by one burst
worker, steps per second and store statements per step (SQLite's trace callback
counts them), and the replay overhead of a 100-step job whose steps are all saved.

A first figure, not the issue's benchmark scenario (DBOS Transact as the peer arm is
not in the suite yet). Run: ``python -m bench.durable_steps [--jobs 200] [--url URL]``.

Example::

    python -m bench.durable_steps --jobs 100
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import conveyor
from conveyor.backends.base import ClaimedJob, JobClaimParams
from conveyor.context import context_of, reset_current, set_current
from conveyor.durable import Replay


def build(url: str, steps: int) -> tuple[conveyor.App, conveyor.Task[..., int]]:
    app = conveyor.App(url)

    @app.step(name="noop")
    def noop(i: int) -> int:
        return i

    @app.task(name="flow")
    def flow(n: int) -> int:
        return sum(noop(i) for i in range(n))

    return app, flow


def steps_per_second(url: str, jobs: int, steps: int = 10) -> dict[str, float]:
    app, flow = build(url, steps)
    flow.enqueue_many([(steps,)] * jobs)
    statements = [0]
    conn = getattr(app.backend, "_conn", None)  # SQLite: count every statement it runs
    if conn is not None and hasattr(conn, "set_trace_callback"):
        conn.set_trace_callback(lambda _sql: statements.__setitem__(0, statements[0] + 1))
    started = time.perf_counter()
    conveyor.Worker(app, burst=True, concurrency=4).run(install_signals=False)
    seconds = time.perf_counter() - started
    app.close()
    total = jobs * steps
    return {
        "jobs_per_s": jobs / seconds,
        "steps_per_s": total / seconds,
        "statements_per_step": statements[0] / total if statements[0] else float("nan"),
    }


def replay_overhead(url: str, steps: int = 100) -> float:
    """Seconds to replay a job whose ``steps`` steps are all saved (one read, then each
    step served from memory)."""
    app, flow = build(url, steps)
    job = flow.enqueue(steps)
    conveyor.Worker(app, burst=True).run(install_signals=False)
    assert job.result(timeout=10) == sum(range(steps))
    claimed: ClaimedJob = (
        flow.enqueue(0) and app.backend.job_claim(JobClaimParams("bench", [("default", 1)], 1))[0]
    )
    # Replay the finished job's steps under a context of the new claim (reads only).
    ctx = context_of(claimed)
    fake = ClaimedJob(job.id, "flow", "default", "{}", 1, 3, claimed.token, None, 30.0,
                      0.0, 0.0, 0, 0)  # fmt: skip
    ctx._durable = lambda c: Replay(app.backend, fake, "bench")
    token = set_current(ctx)
    try:
        started = time.perf_counter()
        assert flow.fn(steps) == sum(range(steps))
        return time.perf_counter() - started
    finally:
        reset_current(token)
        app.close()


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.durable_steps")
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--url", help="a store URL (default: a fresh SQLite file)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'steps.db'}"
        figures = steps_per_second(url, args.jobs)
        print(
            f"{args.jobs} jobs x 10 steps: {figures['jobs_per_s']:.0f} jobs/s, "
            f"{figures['steps_per_s']:.0f} steps/s, "
            f"{figures['statements_per_step']:.2f} statements/step"
        )
        url2 = args.url or f"sqlite:///{Path(tmp) / 'replay.db'}"
        print(f"replay of a 100-step job: {replay_overhead(url2) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
