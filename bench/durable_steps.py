"""conveyor's arm of the durable-steps benchmark (issue 23): ``--jobs`` jobs of 10 no-op
``@app.step`` calls enqueued and drained by one burst worker (thread pool, 4 slots or ``--concurrency``),
timed from before the enqueue to the drained queue; steps per second, and store
statements and commits per step counted as for DBOS's arm (:mod:`bench.sql_counter`);
and the replay overhead of a 100-step job whose steps are all saved.

The comparison with DBOS Transact (alternated rounds, both stores, the fairness lines)
is :mod:`bench.durable_peer`, which runs this module with ``--json`` in a fresh process
per measurement. Alone: ``python -m bench.durable_steps [--jobs 200] [--url URL]``.

Example::

    python -m bench.durable_steps --jobs 100
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import conveyor
from bench.sql_counter import count_sqlite, pg_delta, pg_snapshot


def build(url: str) -> tuple[conveyor.App, conveyor.Task[..., int]]:
    app = conveyor.App(url)

    @app.step(name="noop")
    def noop(i: int) -> int:
        return i

    @app.task(name="flow")
    def flow(n: int) -> int:
        return sum(noop(i) for i in range(n))

    return app, flow


def steps_per_second(url: str, jobs: int, steps: int = 10, slots: int = 4) -> dict[str, Any]:
    counter = count_sqlite() if url.startswith("sqlite") else None
    app, flow = build(url)
    flow.enqueue(0)  # the schema made, one job of no step run: outside the window
    conveyor.Worker(app, burst=True).run(install_signals=False)
    settings = {**_settings(app), "concurrency": f"{slots} worker slots (thread pool)"}
    before = None if counter is not None else pg_snapshot(url)
    if counter is not None:
        counter.reset()
    started = time.perf_counter()
    flow.enqueue_many([(steps,)] * jobs)
    conveyor.Worker(app, burst=True, concurrency=slots).run(install_signals=False)
    seconds = time.perf_counter() - started
    app.close()
    total = jobs * steps
    figures: dict[str, Any] = {
        "arm": "conveyor", "seconds": seconds, "jobs_per_s": jobs / seconds,
        "steps_per_s": total / seconds, "settings": settings,
    }  # fmt: skip
    if counter is not None:
        figures["statements_per_step"] = counter.statements / total
        figures["commits_per_step"] = counter.commits / total
    else:
        assert before is not None
        figures["pg"] = pg_delta(before, pg_snapshot(url))
    return figures


def _settings(app: conveyor.App) -> dict[str, Any]:
    out: dict[str, Any] = {"conveyor": conveyor.__version__}
    conn = getattr(app.backend, "_conn", None)
    if conn is not None:  # SQLite: the PRAGMAs of the worker's own connection
        for name in ("journal_mode", "synchronous"):
            out[name] = conn.execute(f"PRAGMA {name}").fetchone()[0]
    return out


def replay_overhead(url: str, steps: int = 100, jobs: int = 10) -> dict[str, float]:
    """The replay overhead of a ``steps``-step job whose steps are all saved: the second
    attempt of jobs that ran their steps, then failed once (retried at once), against
    the attempt of a plain job, both from the store's attempt records (claim to finish),
    one job at a time; medians, in ms."""
    app = conveyor.App(url)

    @app.step(name="noop")
    def noop(i: int) -> int:
        return i

    @app.task(name="replayed", max_attempts=2, retry=conveyor.Backoff(base=0.0, jitter=0.0))
    def replayed(n: int) -> int:
        total = sum(noop(i) for i in range(n))
        if conveyor.current_job().attempt == 1:
            raise RuntimeError("once, so that the retry replays every step")
        return total

    @app.task(name="plain")
    def plain(n: int) -> int:
        return n

    try:
        pairs = [(replayed.enqueue(steps), plain.enqueue(steps)) for _ in range(jobs)]
        conveyor.Worker(app, burst=True, concurrency=1).run(install_signals=False)
        replays, plains = [], []
        for r, p in pairs:
            assert r.result(timeout=30) == sum(range(steps)) and p.result(timeout=30) == steps
            second = r.attempts()[-1]
            only = p.attempts()[-1]
            replays.append((second.finished_at or 0.0) - (second.started_at or 0.0))
            plains.append((only.finished_at or 0.0) - (only.started_at or 0.0))
        replay_ms, plain_ms = statistics.median(replays) * 1000, statistics.median(plains) * 1000
        return {"replay_ms": replay_ms, "plain_ms": plain_ms, "overhead_ms": replay_ms - plain_ms}
    finally:
        app.close()


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.durable_steps")
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--url", help="a store URL (default: a fresh SQLite file)")
    p.add_argument("--json", action="store_true", help="one JSON line (bench.durable_peer)")
    p.add_argument("--replay", action="store_true", help="only the replay overhead")
    p.add_argument("--concurrency", type=int, default=4, help="the worker's slots")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'steps.db'}"
        if args.replay:
            print(json.dumps(replay_overhead(url)))
            return
        figures = steps_per_second(url, args.jobs, slots=args.concurrency)
        if args.json:
            print(json.dumps(figures))
            return
        print(
            f"{args.jobs} jobs x 10 steps: {figures['jobs_per_s']:.0f} jobs/s, "
            f"{figures['steps_per_s']:.0f} steps/s, "
            f"{figures.get('statements_per_step', float('nan')):.2f} statements/step, "
            f"{figures.get('commits_per_step', float('nan')):.2f} commits/step"
        )
        url2 = args.url or f"sqlite:///{Path(tmp) / 'replay.db'}"
        print(f"replay of a 100-step job: {replay_overhead(url2)}")


if __name__ == "__main__":
    main()
