"""The harness's side of the completion marker (:mod:`bench.jobs` writes it).

Each measurement gets a fresh marker file. The harness detects completion from the
file's size alone (N x 64 bytes, one ``os.stat`` every 2 ms from the harness's own
process: nothing is asked of the measured processes or of the Redis the arms use), then
reads the records to verify that every job ran exactly once and to take the timings.

>>> import tempfile
>>> m = MarkerFile(os.path.join(tempfile.mkdtemp(), "marks"))
>>> os.environ[jobs.PATH_ENV] = m.path
>>> for i in (0, 1, 1): jobs.run_job(i, 0.0, "noop")
0
1
1
>>> v = m.verify(3)
>>> (v["done"], v["distinct"], v["duplicates"], v["lost"], v["valid"])
(3, 2, 1, 1, False)

``python -m bench.marker [--n 100000]`` prints the marker's own cost per job, measured
as in every run (:func:`measure_cost`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench import jobs

#: What results measured with this marker say about it (``meta.json`` → ``marker``).
KIND = "file-append"
DESCRIPTION = (
    f"one os.write of a {jobs.RECORD.size}-byte record per job to a per-run file opened "
    "O_WRONLY|O_APPEND; completion = file size, polled with os.stat by the harness"
)
#: Runs from before issue 16 have no ``marker`` entry in their metadata.
LEGACY = {
    "kind": "redis-round-trip",
    "description": "Redis round-trip marker: one pipelined INCR + SETBIT + RPUSH per job "
    "(~85 µs a job; it held every arm near 3,000 jobs/s)",
}
#: The marker may cost at most this share of the fastest arm's time per job.
FAIR_SHARE = 0.05
POLL_S = 0.002

Timing = tuple[int, float, float, float]  # (i, t0, start, end)


class MarkerFile:
    """One measurement's marker file (created empty, owned by the harness)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.reset()

    def reset(self) -> None:
        """Empty the file (and create it). Writers hold it with ``O_APPEND``, so their
        next record lands at the new end, offset 0."""
        with open(self.path, "wb"):
            pass

    def size(self) -> int:
        return os.stat(self.path).st_size

    def count(self) -> int:
        """Records written so far (a torn tail, which verify reports, is not counted)."""
        return self.size() // jobs.RECORD.size

    def wait(
        self, n: int, timeout: float, alive: Callable[[], bool] | None = None
    ) -> tuple[int, float]:
        """Poll the size every 2 ms (same for every arm) until ``n`` records are there,
        the worker exited, or ``timeout``; return (records, wall time)."""
        deadline = time.time() + timeout
        done = 0
        while time.time() < deadline:
            done = self.count()
            if done >= n:
                return done, time.time()
            if alive is not None and not alive():
                time.sleep(0.05)  # a burst worker exits right after its last write
                return self.count(), time.time()
            time.sleep(POLL_S)
        return done, time.time()

    def records(self) -> tuple[list[tuple[int, float, float, float, int]], int]:
        """All well-formed records (i, t0, start, end, pid) and the number of bad ones
        (wrong magic or newline: a torn or interleaved write, or a partial tail)."""
        with open(self.path, "rb") as f:
            data = f.read()
        size = jobs.RECORD.size
        whole = len(data) - len(data) % size
        good: list[tuple[int, float, float, float, int]] = []
        bad = 1 if whole != len(data) else 0
        for magic, i, t0, start, end, pid, nl in jobs.RECORD.iter_unpack(data[:whole]):
            if magic != jobs.MAGIC or nl != b"\n":
                bad += 1
            else:
                good.append((i, t0, start, end, pid))
        return good, bad

    def verify(self, n: int) -> dict[str, Any]:
        """Exactly jobs ``0..n-1`` ran, each once: records == distinct indices == n,
        nothing missing, nothing outside the range, no torn record."""
        recs, bad = self.records()
        indices = [r[0] for r in recs]
        distinct = set(indices)
        expected = set(range(n))
        lost = len(expected - distinct)
        stray = len(distinct - expected)
        done = len(recs)
        return {
            "n": n,
            "done": done,
            "distinct": len(distinct),
            "duplicates": done - len(distinct),
            "lost": lost,
            "stray": stray,
            "torn": bad,
            "valid": done == n and len(distinct) == n and lost == 0 and stray == 0 and not bad,
        }

    def timings(self) -> list[Timing]:
        """Per-job (i, t0, start, end), in the order the jobs finished."""
        return [(i, t0, s, e) for i, t0, s, e, _ in self.records()[0]]


def _child(path: str, n: int, start_at: float) -> None:
    """One writer of :func:`measure_cost`: ``n`` noop job bodies in a loop."""
    os.environ[jobs.PATH_ENV] = path
    jobs.run_job(0, 0.0, "noop")  # open outside the timed loop, as a worker's first job
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    t = time.perf_counter()
    for i in range(1, n + 1):
        jobs.run_job(i, 0.0, "noop")
    elapsed = time.perf_counter() - t
    print(json.dumps({"elapsed": elapsed, "n": n, "pid": os.getpid()}), flush=True)


def measure_cost(n: int = 100_000, processes: int = 1) -> dict[str, Any]:
    """Microseconds per job of the whole harness part of a noop job body (two
    ``time.time()`` calls and the marker write), with ``processes`` fresh processes
    writing ``n`` records each to one file at the same moment. Also proves the
    atomicity claim on this machine: every record must read back intact."""
    workdir = tempfile.mkdtemp(prefix="bench-marker-")
    m = MarkerFile(os.path.join(workdir, "marks"))
    start_at = time.time() + 0.3 + 0.1 * processes  # after every child has started
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(__file__))}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.marker", "--child", m.path, str(n), repr(start_at)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(processes)
    ]
    outs = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
    per_job = [o["elapsed"] / o["n"] * 1e6 for o in outs]
    recs, bad = m.records()
    total = processes * (n + 1)
    intact = bad == 0 and len(recs) == total and len({(r[4], r[0]) for r in recs}) == total
    os.unlink(m.path)
    os.rmdir(workdir)
    return {
        "processes": processes,
        "records_per_process": n,
        "us_per_job": max(per_job),  # the slower writer: what a job pays at worst
        "us_per_job_each": per_job,
        "intact": intact,
    }


def measure(n: int = 100_000) -> dict[str, Any]:
    """The run's marker entry: what it is, and its cost from 1 and from 2 processes."""
    one = measure_cost(n, 1)
    two = measure_cost(n, 2)
    return {
        "kind": KIND,
        "description": DESCRIPTION,
        "record_bytes": jobs.RECORD.size,
        "cost_us_1proc": one["us_per_job"],
        "cost_us_2proc": two["us_per_job"],
        "cost_us": max(one["us_per_job"], two["us_per_job"]),
        "intact": one["intact"] and two["intact"],
        "n": n,
    }


def describe(marker: dict[str, Any] | None) -> str:
    """One line naming the marker a result directory was measured with."""
    if not marker:
        return LEGACY["description"]
    line = (
        f"{marker['description']}; cost {marker['cost_us_1proc']:.2f} µs a job from one "
        f"process, {marker['cost_us_2proc']:.2f} µs from 2 processes at once "
        f"({marker['n']:,} records each, the noop job body's own part)"
    )
    if not marker.get("intact", True):
        line += "; RECORDS DAMAGED in the self-test: appends are not atomic here"
    return line


def verdict(marker: dict[str, Any] | None, w1_jobs_per_s: dict[str, float]) -> str:
    """The fairness check: the marker's cost against the fastest W1 arm's time per job."""
    if not marker:
        return "Marker cost not measured in this run (Redis round-trip marker)."
    if not w1_jobs_per_s:
        return "Marker cost not checked against the arms: no W1 figure in this run."
    arm, rate = max(w1_jobs_per_s.items(), key=lambda kv: kv[1])
    per_job = 1e6 / rate
    share = marker["cost_us"] / per_job
    text = (
        f"marker {marker['cost_us']:.2f} µs a job = {share:.1%} of the fastest arm's time "
        f"per job ({arm}, W1 {rate:,.0f} jobs/s = {per_job:.1f} µs)"
    )
    if share >= FAIR_SHARE or not marker.get("intact", True):
        return f"FAIRNESS: {text}: not below {FAIR_SHARE:.0%}; the harness shows in the figures."
    return f"Marker check passed: {text}, below {FAIR_SHARE:.0%}."


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.marker")
    p.add_argument("--n", type=int, default=100_000, help="records per process")
    p.add_argument("--child", nargs=3, metavar=("PATH", "N", "START_AT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child[0], int(args.child[1]), float(args.child[2]))
        return 0
    m = measure(args.n)
    print(describe(m))
    print(f"intact: {m['intact']}")
    return 0 if m["intact"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
