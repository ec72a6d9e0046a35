"""VACUUM and bloat on PostgreSQL: many noop jobs through conveyor with retention on,
table and index sizes sampled over time.

``python -m bench.pg_bloat [--jobs 1000000] [--minutes 10] [--retention 30]
[--prune-interval 5] [--sample 20]`` starts its own cluster (bench/postgres_cluster.py,
settings read back and printed), a fresh database, one ``conveyor worker -c 10`` (thread
pool, defaults otherwise) on an app with ``retention`` / ``prune_interval`` set, and
keeps the queue fed with ``enqueue_many`` batches (backlog capped, so the table holds
what a steady production queue holds, not a million queued rows). Every ``--sample``
seconds it prints one row: jobs done, rows live and dead in ``jobs``, the heap and index
sizes of ``jobs`` and of the whole schema, and how often autovacuum/autoanalyze ran. It
stops at ``--jobs`` done or after ``--minutes``, whichever comes first, and says which.

Retention is scaled to the run (a user keeps finished jobs for days; a 10-minute run
keeps them 30 s): what matters for bloat is that the pruner deletes at the rate jobs
finish, so autovacuum finds dead rows to reclaim and the heap reuses its pages.

Example::

    .venv-bench/bin/python -m bench.pg_bloat --minutes 1 --jobs 20000
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
import time
from typing import Any

import conveyor
from bench.postgres_cluster import PostgresCluster

SCHEMA = "conveyor"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

app = conveyor.App(
    os.environ.get("BENCH_BLOAT_URL", "postgresql://127.0.0.1/none"),
    retention=float(os.environ.get("BENCH_BLOAT_RETENTION", "30")),
    prune_interval=float(os.environ.get("BENCH_BLOAT_PRUNE_INTERVAL", "5")),
)


@app.task
def noop(i: int) -> int:
    return i


#: One sample: jobs table stats, sizes of jobs and of every conveyor table.
SAMPLE_SQL = f"""
SELECT s.n_live_tup, s.n_dead_tup, s.autovacuum_count, s.autoanalyze_count,
       s.n_tup_del,
       pg_relation_size('{SCHEMA}.jobs'), pg_indexes_size('{SCHEMA}.jobs'),
       (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = '{SCHEMA}' AND c.relkind = 'r'),
       (SELECT count(*) FROM {SCHEMA}.jobs WHERE state IN ('queued', 'running'))
FROM pg_stat_user_tables s WHERE s.schemaname = '{SCHEMA}' AND s.relname = 'jobs'
"""

HEADER = (
    f"{'t_s':>5} {'done':>9} {'pruned':>9} {'backlog':>7} {'live':>8} {'dead':>8} {'heap_MB':>8} "
    f"{'idx_MB':>7} {'schema_MB':>9} {'autovac':>7} {'autoanl':>7}"
)


def mb(n: Any) -> str:
    return f"{(n or 0) / 2**20:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.pg_bloat")
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--retention", type=float, default=30.0, help="App(retention=) seconds")
    p.add_argument("--prune-interval", type=float, default=5.0, help="App(prune_interval=)")
    p.add_argument("--sample", type=float, default=20.0, help="seconds between samples")
    p.add_argument("--backlog", type=int, default=20_000, help="queued jobs kept at most")
    args = p.parse_args(argv)

    import psycopg

    cluster = PostgresCluster().init().start()
    worker: subprocess.Popen[bytes] | None = None
    try:
        url = cluster.fresh_database("bloat")
        settings = cluster.settings()
        print("postgres (read back): " + ", ".join(f"{k}={v}" for k, v in settings.items()))
        print(
            f"app: retention={args.retention:g}s prune_interval={args.prune_interval:g}s; "
            f"worker: conveyor worker -c 10 --pool thread; target {args.jobs:,} jobs or "
            f"{args.minutes:g} min"
        )
        env = {
            **os.environ,
            "BENCH_BLOAT_URL": url,
            "BENCH_BLOAT_RETENTION": str(args.retention),
            "BENCH_BLOAT_PRUNE_INTERVAL": str(args.prune_interval),
        }
        os.environ.update(env)
        # This file runs as __main__, whose app was made before the URL existed: the
        # producer imports the module again, now with the worker's URL and settings.
        module = importlib.import_module("bench.pg_bloat")
        local, task = module.app, module.noop
        _ = local.backend  # creates the schema before the worker starts
        conveyor_bin = os.path.join(os.path.dirname(sys.executable), "conveyor")
        worker = subprocess.Popen(
            [conveyor_bin, "worker", "bench.pg_bloat:app", "-c", "10", "--pool", "thread"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stats = psycopg.connect(url, autocommit=True)
        t0 = time.monotonic()
        deadline = t0 + args.minutes * 60
        next_sample = t0
        enqueued = 0
        print(HEADER)
        rows: list[str] = []
        reason = "time limit"
        while True:
            now = time.monotonic()
            row = stats.execute(SAMPLE_SQL).fetchone()
            assert row is not None
            live, dead, autovac, autoanl, pruned, heap, idx, total, backlog = row
            done = enqueued - backlog
            if now >= next_sample or done >= args.jobs or now >= deadline:
                line = (
                    f"{now - t0:5.0f} {done:9,} {pruned:9,} {backlog:7,} {live:8,} {dead:8,} "
                    f"{mb(heap):>8} {mb(idx):>7} {mb(total):>9} {autovac:7} {autoanl:7}"
                )
                print(line, flush=True)
                rows.append(line)
                next_sample = now + args.sample
            if done >= args.jobs:
                reason = f"{args.jobs:,} jobs done"
                break
            if now >= deadline:
                break
            if backlog < args.backlog // 2 and enqueued < args.jobs:
                n = min(5_000, args.jobs - enqueued)
                task.enqueue_many([(enqueued + k,) for k in range(n)])
                enqueued += n
            else:
                time.sleep(0.2)
        elapsed = time.monotonic() - t0
        print(f"stopped: {reason}; {done:,} jobs in {elapsed:.0f} s ({done / elapsed:,.0f} jobs/s)")
        stats.close()
        local.close()
    finally:
        if worker is not None:
            worker.terminate()
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:
                worker.kill()
        cluster.stop("immediate")
        cluster.remove()
    return 0


if __name__ == "__main__":
    sys.exit(main())
