"""The operator's reads at scale (issue 25, "fast at a million jobs, and at ten thousand
queues"): makes (or reuses, ``--keep PATH``) a store of ``--jobs`` jobs with
:func:`bench.search_million.make_store` (half queued in ``mail``, the rest finished in
``default``: three in four succeeded, one in four dead), or with ``--queues Q`` a store
of ``--jobs`` queued jobs spread over Q queues, then times what an operator runs:

* ``conveyor status``, ``conveyor queues`` and ``conveyor check``, each as a user runs
  it (a fresh process: its wall time includes Python's start and conveyor's import, shown
  once on its own as ``conveyor --version``);
* every dashboard page over HTTP on a real ``conveyor dashboard`` process, and the
  confirmation of "cancel all queued" (``/jobs/bulk?action=cancel&state=queued``),
  with each page's size, each page requested once before it is timed (an open
  overview has its hour of throughput cached; the full re-read it does once a minute
  is timed on its own, in process, as "store: throughput hour").

p50 and p95 of ``--repeat`` runs each. Not part of ``make test``.

``python -m bench.million_pages [--jobs 1000000] [--queues 10000] [--repeat 20]
[--keep PATH] [--store sqlite|postgres] [--queue-counts] [--pages-only]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import conveyor
from bench.postgres_cluster import free_port
from bench.search_million import make_store
from conveyor.backends.base import OPERATOR_COUNT_CAP, QueueStatsParams
from conveyor.durations import recent
from conveyor.web.throughput import ThroughputHistory

#: (label, path) of each dashboard page timed; search is another bench's (search_million).
PAGES = (
    ("overview /", "/"),
    ("queues page", "/queues"),
    ("jobs", "/jobs"),
    ("jobs, queued", "/jobs?state=queued"),
    ("jobs, dead", "/jobs?state=dead"),
    ("jobs sorted by task", "/jobs?sort=task"),
    ("jobs, one queue", "/jobs?queue=mail"),
    ("jobs sorted by task, desc", "/jobs?sort=task&dir=desc"),
    ("jobs sorted by queue", "/jobs?sort=queue"),
    ("jobs sorted by state", "/jobs?sort=state"),
    ("jobs sorted by task, dead", "/jobs?sort=task&state=dead"),
    ("jobs sorted by finished", "/jobs?sort=finished"),
    ("jobs, one task", "/jobs?task=shop.charge"),
    ("jobs, dead in mail (none)", "/jobs?queue=mail&state=dead"),
    ("jobs, cancelled (none)", "/jobs?state=cancelled"),
    ("jobs, word search", "/jobs?q=customer_4242"),
    ("workers", "/workers"),
    ("schedules", "/schedules"),
    ("audit", "/audit"),
    ("confirm cancel queued", "/jobs/bulk?action=cancel&state=queued"),
    ("confirm retry, one task", "/jobs/bulk?action=retry&task=shop.charge&state=dead"),
)
CONVEYOR = [sys.executable, "-m", "conveyor"]


def make_queues(url: str, jobs: int, queues: int) -> conveyor.App:
    """``jobs`` queued jobs, round robin over ``queues`` queues ``t0``, ``t1``, ..."""
    app = conveyor.App(url)

    @app.task(name="tenant.sync")
    def sync(n: int) -> None: ...

    start = time.perf_counter()
    per = max(1, jobs // queues)
    for q in range(queues):
        sync.with_options(queue=f"t{q}").enqueue_many({"n": i} for i in range(per))
    print(f"store of {per * queues:,} jobs over {queues:,} queues made in "
          f"{time.perf_counter() - start:.0f} s")  # fmt: skip
    return app


def timed(run: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    """p50 and p95 in ms of ``repeat`` calls, and the last call's answer (a size)."""
    times, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        size = run()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))], size


def show(label: str, p50: float, p95: float, size: int) -> None:
    print(f"{label:24} p50 {p50:8.1f} ms  p95 {p95:8.1f} ms  {size:>11,} bytes", flush=True)


def cli(url: str, args: Sequence[str]) -> Callable[[], int]:
    def run() -> int:
        done = subprocess.run(
            [*CONVEYOR, *args, "--url", url] if args else [*CONVEYOR, "--version"],
            capture_output=True,
            check=False,
        )
        if done.returncode not in (0, 1):  # check exits 1 when it finds problems
            raise SystemExit(f"conveyor {' '.join(args)} failed: {done.stderr.decode()}")
        return len(done.stdout)

    return run


def get(base: str, path: str) -> Callable[[], int]:
    def run() -> int:
        with urllib.request.urlopen(base + path, timeout=120) as answer:
            return len(answer.read())

    return run


def measure(url: str, repeat: int, reads: bool = True, cli_too: bool = True) -> None:
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores)")
    few = max(3, repeat // 4)
    for name in ("--version", "status", "queues", "check") if cli_too else ():
        if name == "--version":
            show("python start + import", *timed(cli(url, []), few))
            continue
        show(f"conveyor {name}", *timed(cli(url, [name]), few))
    if reads:
        app = conveyor.App(url)
        backend = app.backend
        show("store: queue_stats", *timed(lambda: len(backend.queue_stats()), few))
        capped = QueueStatsParams(cap=OPERATOR_COUNT_CAP)  # what status and pages read
        show("store: capped stats", *timed(lambda: len(backend.queue_stats(capped)), repeat))
        show("store: durations (hour)", *timed(lambda: len(recent(backend, time.time())[0]), few))
        # the overview's full re-read of the hour, once a minute (between: the last minute)
        full = ThroughputHistory(full_every=0.0)
        show(
            "store: throughput hour",
            *timed(lambda: len(full.read(backend, time.time()).buckets), few),
        )
        app.close()
    port = free_port()
    server = subprocess.Popen(
        [*CONVEYOR, "dashboard", "--url", url, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "conveyor dashboard on ..." once it is about to listen
        for _ in range(200):
            try:
                get(base, "/static/dashboard.css")()
                break
            except OSError:
                time.sleep(0.1)
        for label, path in PAGES:
            try:
                get(base, path)()  # warm: the overview's hour is then cached (see above)
                show(label, *timed(get(base, path), repeat))
            except OSError as exc:
                print(f"{label:24} {exc}")
    finally:
        server.terminate()
        server.wait(10)
    print(f"load average {os.getloadavg()[0]:.2f} (2 cores)")


def compile_sources() -> None:
    """conveyor's sources to .pyc, as pip does at install: with PYTHONDONTWRITEBYTECODE
    set (as on this box) each CLI process otherwise compiles ~170 modules again (about
    2 s of its wall time under load), which no installed conveyor does."""
    import compileall

    root = Path(conveyor.__file__).parent
    compileall.compile_dir(str(root), quiet=1)


def main() -> None:
    compile_sources()
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--queues", type=int, default=0, help="spread the jobs over Q queues")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--keep", type=Path, default=None, help="SQLite file to make or reuse")
    ap.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    ap.add_argument("--queue-counts", action="store_true", help="SQLite: turn kept counts on first")
    ap.add_argument("--pages-only", action="store_true", help="only the dashboard's pages")
    args = ap.parse_args()
    if args.store == "postgres":
        from bench.postgres_cluster import PostgresCluster

        cluster = PostgresCluster().init().start()
        try:
            _run(f"{cluster.url}?schema=million", args, fresh=True)
        finally:
            cluster.stop("immediate")
            cluster.remove()
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "jobs.db"
        _run(f"sqlite:///{path}", args, fresh=not path.exists())


def _run(url: str, args: argparse.Namespace, *, fresh: bool) -> None:
    if fresh:
        app = (
            make_queues(url, args.jobs, args.queues) if args.queues else make_store(url, args.jobs)
        )
        app.close()
    if args.queue_counts:
        from conveyor.backends.sqlite.counts import SQLiteCounts

        app = conveyor.App(url)
        assert isinstance(app.backend, SQLiteCounts)
        start = time.perf_counter()
        app.backend.queue_counts_set(True)
        print(f"queue-counts on: {time.perf_counter() - start:.1f} s")
        app.close()
    measure(url, args.repeat, reads=not args.pages_only, cli_too=not args.pages_only)


if __name__ == "__main__":
    main()
