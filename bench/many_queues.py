"""W7 (issue 26): one worker consuming many queues, as a multi-tenant app with a queue
per tenant runs it. N noop jobs are enqueued round robin over Q queues (job i to queue
``t{i % Q}``; with Q > N the last Q - N queues stay empty, as idle tenants do), then one
fresh ``conveyor worker`` with its default flags and one ``-q`` per queue drains them:
first job start to last job end, as W1. The issue's target: on 1,000 queues a worker
keeps >= 80% of its one-queue throughput, on 10,000 >= 50%, on every store.

Only conveyor's default-flag arms run it (a peer's multi-queue consumer is another
design, not measured here). ``--profile`` runs one worker in-process under cProfile
instead of measuring, to show where the time goes.

Example::

    python -m bench run --suite W7 --arms conveyor-sqlite-default
    python -m bench.many_queues --profile 1000 --n 1000
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import tempfile
from typing import Any

from bench import arms, harness, jobs
from bench.scenarios import Ctx, _fresh, drain

W7_ONLY = "conveyor's default-flag arms only (one worker over many queues, `-q` per queue)"


def w7_unsupported(arm: str) -> str | None:
    """``None`` when ``arm`` runs W7, else why not.

    >>> w7_unsupported("conveyor-sqlite-default") is None
    True
    >>> w7_unsupported("huey-sqlite-thread1") == W7_ONLY
    True
    """
    base = arms.base_name(arm)
    default = base.endswith("-default") or base == "conveyor-postgres-thread"
    return None if base.startswith("conveyor-") and default else W7_ONLY


def queue_names(count: int) -> list[str]:
    """The tenants' queues, in the order the worker is given them.

    >>> queue_names(3)
    ['t0', 't1', 't2']
    """
    return [f"t{k}" for k in range(count)]


def w7(ctx: Ctx, arm: str, n: int, queues: int) -> dict[str, Any]:
    """One measurement: n jobs over ``queues`` queues, one fresh default worker on all."""
    env = _fresh(ctx, arm)
    names = queue_names(queues)
    spec = {"arm": arm, "action": "fill_spread", "n": n, "kind": "noop", "queues": names}
    harness.run_producer(spec, env, 600)
    a = arms.make(arm)
    cmd = a.worker_cmd(a.variant.concurrency, burst=True)
    cmd += [arg for name in names for arg in ("-q", name)]
    worker = harness.Worker(cmd, env, a.ready_marker, stop_grace=a.stop_grace)
    return {"queues": queues, **drain(ctx, worker, n)}


def plan(ctx: Ctx, usable: list[str], it: int) -> list[tuple[str, str, str, Any]]:
    """The runner's W7 steps: every queue count, every arm."""
    n = ctx.scale["W7_n"]
    return [
        ("W7", f"{q} queues", a, lambda a=a, q=q: w7(ctx, a, n, q))
        for q in ctx.scale["W7_queues"]
        for a in usable
    ]


def profile(queues: int, n: int, top: int = 25) -> str:
    """cProfile of one burst worker, in this process, draining n jobs over ``queues``
    SQLite queues (the ``top`` lines by cumulative time, then by own time): where a
    claim's time goes."""
    from conveyor.worker.worker import Worker

    path = os.path.join(tempfile.mkdtemp(prefix="bench-w7-"), "q.db")
    os.environ["BENCH_CONVEYOR_URL"] = f"sqlite:///{path}?synchronous=NORMAL"
    marks = os.path.join(os.path.dirname(path), "marks")
    open(marks, "w").close()  # the job body appends to it, never creates it
    os.environ[jobs.PATH_ENV] = marks
    from bench.arms import conveyor_arm

    names = queue_names(queues)
    conveyor_arm.ConveyorArm(arms.load("conveyor-sqlite-default")[1]).enqueue_spread(
        [(i, 0.0, "noop") for i in range(n)], names
    )
    worker = Worker(conveyor_arm.app, queues=names, burst=True)
    prof = cProfile.Profile()
    prof.runcall(worker.run)
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    # Every thread of the worker is profiled, so cumulative times overlap (a waiting
    # thread's time is counted too): the own-time view says where the CPU went.
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.many_queues")
    p.add_argument("--profile", type=int, metavar="QUEUES", required=True)
    p.add_argument("--n", type=int, default=1000)
    args = p.parse_args(argv)
    print(profile(args.profile, args.n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
