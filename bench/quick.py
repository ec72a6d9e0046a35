"""Issue 2's quick check for conveyor's SQLite backend: single enqueue jobs/s,
``enqueue_many`` jobs/s, and W1 throughput (20,000 noop jobs pre-enqueued, one
``conveyor worker`` process, first job start to last job end).

``python -m bench.quick [--n 20000]``. Reuses the suite's harness (same job body, same
marker, same verification) so the numbers match ``python -m bench run``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile

from bench import harness
from bench import scenarios as sc

ARM = "conveyor-sqlite"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.quick")
    p.add_argument("--n", type=int, default=20_000, help="W1 jobs (default 20,000)")
    p.add_argument("--enqueue-n", type=int, default=10_000, help="E1/E2 jobs")
    args = p.parse_args(argv)
    server = harness.RedisServer()
    workdir = tempfile.mkdtemp(prefix="bench-quick-")
    try:
        os.environ["BENCH_REDIS_URL"] = server.url
        ctx = sc.Ctx(redis=server, workdir=workdir, scale={"timeout": 300})
        e1 = sc.e1(ctx, ARM, args.enqueue_n)
        e2 = sc.e2(ctx, ARM, args.enqueue_n)
        w1 = sc.w1(ctx, ARM, args.n)
        print(f"conveyor SQLite, {harness.ROOT}")
        print(f"single enqueue : {e1['jobs_per_s']:>10,.0f} jobs/s  (n={args.enqueue_n})")
        print(f"enqueue_many   : {e2['jobs_per_s']:>10,.0f} jobs/s  (n={args.enqueue_n})")
        if w1.get("valid"):
            print(
                f"W1 one worker  : {w1['jobs_per_s']:>10,.0f} jobs/s  (n={args.n}, first "
                f"start to last finish; {w1['start_to_last_s']:.2f} s from worker command)"
            )
        else:
            print(f"W1 one worker  : invalid run: {w1.get('reason')}")
        return 0 if w1.get("valid") else 1
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
