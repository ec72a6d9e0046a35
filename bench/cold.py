"""Cold start on its own (W5's figures, without the suite): medians of fresh processes.

``python -m bench.cold [--rounds 9] [--warmup 1] [--backend sqlite|redis|both]`` prints,
for each figure, the median over ``rounds`` fresh processes with min and max (``$PYTHONPATH``
is passed on: point it at another checkout's ``src`` to measure that code the same way):

* ``python start``: the interpreter alone (``bench/cold_start.py --floor``), the floor;
* ``in-process first job (sqlite)``: import conveyor, open a fresh SQLite store, enqueue
  one job, a burst ``Worker`` runs it (``bench/cold_start.py URL``);
* ``worker ready (sqlite|redis)``: ``conveyor worker MODULE:app --burst`` from spawn to
  its ``ready:`` log line (a fresh store each time).

The figures of one round run in an order rotated every round, so a load change on the
machine touches each alike. Issue 16's targets: first job <= 50 ms, ready <= 200 ms
(SQLite) / <= 250 ms (Redis).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from bench import harness

HERE = os.path.dirname(os.path.abspath(__file__))
COLD_START = os.path.join(HERE, "cold_start.py")
READY = "ready: queues="
APP_MODULE = """import os

import conveyor

app = conveyor.App(os.environ["COLD_URL"])


@app.task
def first(x: int) -> int:
    return x + 1
"""


def _children_cpu() -> float:
    """User + system CPU seconds of every child reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _until_done(cmd: list[str]) -> float:
    """Milliseconds from just before spawning ``cmd`` to the ``done <t>`` it prints."""
    started = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("done "):
            return (float(line.split()[1]) - started) * 1000
    raise RuntimeError(f"{cmd} printed no 'done': {out.stdout[-300:]} {out.stderr[-500:]}")


def _until_ready(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    """Milliseconds from just before spawning ``cmd`` to its ready line."""
    started = time.time()
    proc = subprocess.Popen(
        cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    ready = None
    for line in proc.stdout:
        if ready is None and READY in line:
            ready = time.time()
    proc.wait(30)
    if ready is None:
        raise RuntimeError(f"{cmd} never logged {READY!r} (exit {proc.returncode})")
    return (ready - started) * 1000


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cold")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--warmup", type=int, default=1, help="rounds run first, not counted")
    p.add_argument("--backend", choices=("sqlite", "redis", "both"), default="both")
    args = p.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="bench-cold-")
    with open(os.path.join(workdir, "cold_app.py"), "w") as f:
        f.write(APP_MODULE)
    server = harness.RedisServer() if args.backend != "sqlite" else None
    conveyor_bin = os.path.join(os.path.dirname(sys.executable), "conveyor")
    worker_cmd = [conveyor_bin, "worker", "cold_app:app", "--burst"]
    fresh = iter(range(10**9))

    def sqlite_url() -> str:
        return f"sqlite:///{workdir}/store-{next(fresh)}.db"

    def ready(url: Callable[[], str]) -> Callable[[], float]:
        def measure() -> float:
            path = os.pathsep.join(filter(None, [workdir, os.environ.get("PYTHONPATH")]))
            env = {**os.environ, "COLD_URL": url(), "PYTHONPATH": path}
            return _until_ready(worker_cmd, env, workdir)

        return measure

    figures: dict[str, Callable[[], float]] = {
        "python start": lambda: _until_done([sys.executable, COLD_START, "--floor"]),
    }
    if args.backend != "redis":
        figures["in-process first job (sqlite)"] = lambda: _until_done(
            [sys.executable, COLD_START, sqlite_url()]
        )
        figures["worker ready (sqlite)"] = ready(sqlite_url)
    if server is not None:
        figures["worker ready (redis)"] = ready(lambda: f"{server.url}?prefix=cold{next(fresh)}")
    results: dict[str, list[float]] = {name: [] for name in figures}
    cpu: dict[str, list[float]] = {name: [] for name in figures}
    names = list(figures)
    try:
        for r in range(args.warmup + args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                before = _children_cpu()
                ms = figures[name]()
                if r >= args.warmup:  # the first runs write .pyc files and warm caches
                    results[name].append(ms)
                    cpu[name].append((_children_cpu() - before) * 1000)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"cold start, {args.rounds} fresh processes each, {sys.executable}")
    print("  wall time to the event; CPU of the process to its exit (less moved by load)")
    for name, ms in results.items():
        print(
            f"  {name:<32} median {statistics.median(ms):7.1f} ms"
            f"  [min {min(ms):.1f}, max {max(ms):.1f}]"
            f"   CPU median {statistics.median(cpu[name]):6.1f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
