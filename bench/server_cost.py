"""What one job costs the store's server (issue 26, docs/scaling.md): the server's CPU
time per job while a batch of jobs is enqueued, and while one ``conveyor worker`` with
its default flags claims, runs and finishes them, beside the worker's own CPU per job.
From these, the capacity model: how many jobs/s one server core can feed
(1 / server CPU per job) and how many such workers one server core keeps busy.

The server is started here, alone: a private redis-server (no persistence, as the
suite's) or a PostgreSQL cluster with PostgreSQL's durable defaults (fsync and
synchronous_commit on). Its CPU is read from the process tree (``psutil``: the
redis-server process; the postmaster, its live backends and the backends it has reaped),
so round trips, parsing, Lua and WAL writing are all counted. Redis also answers
``INFO commandstats``: calls and server microseconds per job, by command.

Example::

    python -m bench.server_cost --store redis --n 10000
    python -m bench.server_cost --store postgres --n 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import psutil

from bench import harness, jobs
from bench.arms.base import bin_path
from bench.marker import MarkerFile
from bench.postgres_cluster import DURABLE_SETTINGS, PostgresCluster

APP = "bench.arms.conveyor_arm:app"


def per_job(cpu_s: float, n: int) -> float:
    """Microseconds per job.

    >>> per_job(0.5, 10_000)
    50.0
    """
    return cpu_s / n * 1e6


def _fill(env: dict[str, str], n: int) -> None:
    code = (
        "from bench.arms.conveyor_arm import job;"
        f"[job.enqueue_many([(i, 0.0, 'noop') for i in range(lo, min({n}, lo + 10000))])"
        f" for lo in range(0, {n}, 10000)]"
    )
    subprocess.run([sys.executable, "-c", code], env=env, cwd=harness.ROOT, check=True)


def _round(url: str, n: int, server_cpu: Callable[[], float], stats: Any) -> dict[str, Any]:
    """One measurement on an empty store: fill, then drain with one default worker."""
    workdir = tempfile.mkdtemp(prefix="bench-cost-")
    marks = MarkerFile(os.path.join(workdir, "marks"))
    env = {
        **os.environ,
        "BENCH_CONVEYOR_URL": url,
        jobs.PATH_ENV: marks.path,
        "PYTHONPATH": harness.ROOT,
    }
    c0 = server_cpu()
    _fill(env, n)
    c1 = server_cpu()
    if stats is not None:
        stats.config_resetstat()
    t = time.time()
    worker = subprocess.Popen([bin_path("conveyor"), "worker", APP, "--burst"], env=env)
    ps = psutil.Process(worker.pid)
    wcpu = 0.0
    while worker.poll() is None:
        wcpu = max(wcpu, harness.tree_cpu(ps))
        time.sleep(0.05)
    wall = time.time() - t
    c2 = server_cpu()
    verified = marks.verify(n)
    ends = [e for _, _, _, e in marks.timings()]
    starts = [s for _, _, s, _ in marks.timings()]
    row = {
        "n": n,
        "valid": verified["valid"],
        "jobs_per_s": n / (max(ends) - min(starts)) if ends else 0.0,
        "enqueue_server_us_per_job": per_job(c1 - c0, n),
        "drain_server_us_per_job": per_job(c2 - c1, n),
        "drain_worker_us_per_job": per_job(wcpu, n),
        "drain_wall_s": wall,
    }
    if stats is not None:
        info = stats.info("commandstats")
        row["commands_per_job"] = {
            k.removeprefix("cmdstat_"): round(v["calls"] / n, 3) for k, v in info.items()
        }
        row["command_usec_per_job"] = round(sum(v["usec"] for v in info.values()) / n, 2)
    return row


def measure(store: str, n: int, rounds: int) -> dict[str, Any]:
    """``rounds`` measurements on one server; medians and the model's figures."""
    rows = []
    if store == "redis":
        server = harness.RedisServer()
        proc = psutil.Process(server.proc.pid)
        try:
            for _ in range(rounds):
                server.flushall()
                rows.append(
                    _round(f"{server.url}/0", n, lambda: harness.tree_cpu(proc), server.client)
                )
        finally:
            server.stop()
    else:
        cluster = PostgresCluster().init(DURABLE_SETTINGS).start()
        try:
            pid = int((cluster.data / "postmaster.pid").read_text().split()[0])
            post = psutil.Process(pid)
            for i in range(rounds):
                url = cluster.fresh_database(f"cost{i}")
                rows.append(_round(url, n, lambda: harness.tree_cpu(post), None))
        finally:
            cluster.stop("immediate")
            cluster.remove()
    return _summary(store, rows)


def _summary(store: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("jobs_per_s", "enqueue_server_us_per_job", "drain_server_us_per_job")
    med = {k: statistics.median(r[k] for r in rows) for k in (*keys, "drain_worker_us_per_job")}
    server = med["drain_server_us_per_job"]
    return {
        "store": store,
        "rounds": rows,
        "median": med,
        # One server core spends `server` µs per claimed-run-finished job (enqueue apart).
        "jobs_per_s_one_server_core": 1e6 / server if server else None,
        "jobs_per_s_one_server_core_with_enqueue": 1e6
        / (server + med["enqueue_server_us_per_job"]),
        "default_workers_to_fill_one_server_core": 1e6 / server / med["jobs_per_s"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.server_cost")
    p.add_argument("--store", choices=("redis", "postgres"), required=True)
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    print(json.dumps(measure(args.store, args.n, args.rounds), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
