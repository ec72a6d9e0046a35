"""What SQLite's kept counts (``conveyor queue-counts on``: the ``queue_counts`` table,
its triggers and the ``jobs_queued_since`` index; sqlite/counts.py) cost each write: the
same E1-, E2- and W1-shaped work on a fresh store with them on and off, interleaved over ``--rounds`` so that a busy box's drift falls on both. Times are
this process's CPU time (SQLite runs in it; there is no server), which other processes
on a busy box disturb far less than wall time; medians. Not part of ``make test``.

``python -m bench.count_cost [--rounds 5] [--n 5000]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import conveyor
from conveyor.backends.base import JobClaimParams, JobFinishParams
from conveyor.backends.sqlite.backend import SQLiteBackend
from conveyor.states import FinishKind


def one_round(path: Path, n: int, kept: bool) -> dict[str, float]:
    """Seconds of: n single enqueues (E1), 10 n in one enqueue_many (E2), and claiming
    and finishing those 11 n jobs 50 at a time, as a worker's store calls do (W1)."""
    app = conveyor.App(f"sqlite:///{path}")

    @app.task(name="noop")
    def noop(i: int) -> None: ...

    backend = app.backend
    assert isinstance(backend, SQLiteBackend)
    backend.queue_counts_set(kept)
    out = {}
    start = time.process_time()
    for i in range(n):
        noop.enqueue(i)
    out["E1"] = time.process_time() - start
    start = time.process_time()
    noop.enqueue_many({"i": i} for i in range(10 * n))
    out["E2"] = time.process_time() - start
    start = time.process_time()
    while claimed := backend.job_claim(JobClaimParams("w", [("default", 50)], 50)):
        backend.job_finish_many(
            [JobFinishParams(c.id, c.token, FinishKind.SUCCEEDED, result="null") for c in claimed]
        )
    out["W1"] = time.process_time() - start
    app.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=5000)
    args = ap.parse_args()
    runs: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kept in (False, True) if r % 2 else (True, False):
                path = Path(tmp) / f"{r}-{kept}.db"
                runs[kept].append(one_round(path, args.n, kept))
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores); n = {args.n:,}, "
          f"{args.rounds} rounds, medians of CPU time")  # fmt: skip
    for key in ("E1", "E2", "W1"):
        jobs = args.n * (1 if key == "E1" else 10 if key == "E2" else 11)
        without = statistics.median(r[key] for r in runs[False])
        with_ = statistics.median(r[key] for r in runs[True])
        print(
            f"{key}: without {jobs / without:9,.0f} jobs/CPU-s  with {jobs / with_:9,.0f} jobs/CPU-s"
            f"  cost {(with_ / without - 1) * 100:+5.1f}%"
        )


if __name__ == "__main__":
    main()
