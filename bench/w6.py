"""W6 (issue 16): two ``conveyor worker`` processes on one SQLite file: W1's queue
drained by one and by two workers, then producers enqueueing at a steady rate while two
workers run (bench/NOTES.md describes the figures). Split from :mod:`bench.scenarios`,
whose helpers (fresh store, worker, marker) it shares.

Example::

    python -m bench run --suite W6 --arms conveyor-sqlite-default
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from bench import harness
from bench.scenarios import Ctx, _fresh, _marker, _pct, _warm, _worker

#: Why an arm has no W6 row: the scenario is about SQLite's single writer, with conveyor's
#: own worker command (two processes on one file), so it runs for conveyor's SQLite arms.
W6_ONLY = "conveyor SQLite arms only (two `conveyor worker` processes on one file)"


def unsupported(arm: str, storage: str) -> str | None:
    """``None`` when ``arm`` runs W6, else the reason it does not.

    >>> unsupported("conveyor-sqlite-default", "sqlite") is None
    True
    >>> unsupported("huey-sqlite-thread1", "sqlite") == W6_ONLY
    True
    """
    return None if arm.startswith("conveyor-") and storage == "sqlite" else W6_ONLY


def drain(ctx: Ctx, arm: str, n: int, workers: int) -> dict[str, Any]:
    """W1's queue of ``n`` noop jobs drained by ``workers`` fresh ``conveyor worker``
    processes on one file: the workers start on the empty store and are ready (their
    ready line) before the queue is filled in one transaction, so one worker's start-up
    does not count against the other's drain; first job start to last job end over all
    of them, CPU summed over every worker's process tree."""
    env = _fresh(ctx, arm)
    procs = [_worker(arm, env, burst=False) for _ in range(workers)]
    try:
        _wait_ready(procs)
        harness.run_producer({"arm": arm, "action": "fill", "n": n, "kind": "noop"}, env, 600)
        _, t_done = _marker(ctx).wait(
            n, ctx.scale["timeout"], lambda: all(w.alive() for w in procs)
        )
        cpu_done = sum(w.sample_now()[1] if w.alive() else w.cpu_at(t_done) for w in procs)
    finally:
        for w in procs:
            w.stop()
    row = _marker(ctx).verify(n)
    row["workers"] = workers
    recs = _marker(ctx).records()[0]
    if not row["valid"] or not recs:
        row["reason"] = f"{workers} workers: expected jobs 0..{n - 1} once each; {row}"
        return row
    first = min(r[2] for r in recs)
    last = max(r[3] for r in recs)
    by_pid: dict[int, int] = {}
    for r in recs:
        by_pid[r[4]] = by_pid.get(r[4], 0) + 1
    row.update(
        {
            "jobs_per_s": n / (last - first),
            "span_s": last - first,
            "cpu_s_per_1000": (cpu_done - sum(w.cpu_at(first) for w in procs)) / n * 1000,
            # How the work split between the processes (0.5 = evenly): a collapse into
            # one worker doing everything while the other waits on the lock shows here.
            "smaller_share": min(by_pid.values()) / n if len(by_pid) == workers else 0.0,
        }
    )
    if workers == 1:
        del row["smaller_share"]
    return row


def _wait_ready(procs: list[harness.Worker], timeout: float = 60) -> None:
    """Until every worker printed its ready line; raise with the logs if one did not."""
    deadline = time.time() + timeout
    while not all(w.ready_at for w in procs):
        if time.time() > deadline or not all(w.alive() for w in procs):
            logs = " || ".join(" | ".join(list(w.tail)[-5:]) for w in procs)
            raise RuntimeError(f"a worker never became ready: {logs}")
        time.sleep(0.005)


def producers(ctx: Ctx, arm: str, producers: int, rate: float, seconds: float) -> dict[str, Any]:
    """``producers`` producer processes enqueue one job at a time, open loop, at
    ``rate`` jobs/s in total (``rate / producers`` each), for ``seconds``, while two
    long-running workers drain the same file; each ``enqueue`` call is timed. Every job
    must run exactly once (verified from the records)."""
    env = _fresh(ctx, arm)
    procs = [_worker(arm, env, burst=False) for _ in range(2)]
    try:
        if not _warm(ctx, arm, env, procs[0]):
            raise RuntimeError("warm-up jobs never ran: " + " | ".join(procs[0].tail))
        _wait_ready(procs)
        each = max(1, int(rate / producers * seconds))
        t_start = time.time() + 1.5  # every producer imported and connected by then
        specs = [
            {
                "arm": arm,
                "action": "w6_enqueue",
                "rate": rate / producers,
                "n": each,
                "base": k * each,
                "t_start": t_start,
            }
            for k in range(producers)
        ]
        results = harness.run_producers(specs, env, seconds + 300)
        n = each * producers
        done, _ = _marker(ctx).wait(
            n, max(10.0, seconds * 3), lambda: all(w.alive() for w in procs)
        )
    finally:
        for w in procs:
            w.stop()
    row = _marker(ctx).verify(n)
    lat = [x for r in results for x in r["latencies_ms"]]
    e2e = [(e - t0) * 1000 for _, t0, _, e in _marker(ctx).timings()]
    row.update(
        {
            "producers": producers,
            "workers": 2,
            "rate": rate,
            "enqueue_p50_ms": statistics.median(lat),
            "enqueue_p99_ms": _pct(lat, 0.99),
            "enqueue_max_ms": max(lat),
            "late_enqueues": sum(int(r["late_enqueues"]) for r in results),
            "e2e_p99_ms": _pct(e2e, 0.99) if e2e else float("nan"),
        }
    )
    if not row["valid"]:
        row["reason"] = f"expected jobs 0..{n - 1} once each; records {done}; {row}"
    return row
