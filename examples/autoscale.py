"""Grow and shrink a pool of ``conveyor worker`` processes from the autoscaling signal.

A plain-script autoscaler for one host (on Kubernetes, KEDA does this: see
docs/operations.md#autoscaling). Every ``--interval`` seconds it reads the queue's
demand (ready + running jobs) and keeps ``ceil(demand / concurrency)`` workers, within
``--min`` and ``--max``. A worker it no longer needs gets SIGTERM: it finishes its
running jobs and releases what it had claimed, so nothing is lost.

    python autoscale.py tasks:app --queue mail --concurrency 4 --max 8

It prints one line per change: ``demand=12 workers 1 -> 3``.
"""

from __future__ import annotations

import argparse
import math
import signal
import subprocess
import sys
import time

import conveyor
from conveyor.scaling import queue_load


def wanted(demand: int, concurrency: int, low: int, high: int) -> int:
    """Workers for ``demand`` slots at ``concurrency`` each, within [low, high]."""
    return max(low, min(high, math.ceil(demand / concurrency)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app", help="the app, module:attribute")
    parser.add_argument("--url", help="the store (default: the app's)")
    parser.add_argument("--queue", default="default")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--min", type=int, default=0)
    parser.add_argument("--max", type=int, default=8)
    parser.add_argument("--interval", type=float, default=2.0)
    args = parser.parse_args()

    app = conveyor.App(args.url) if args.url else conveyor.App()
    command = ["conveyor", "worker", args.app, "--queue", args.queue]
    command += ["--concurrency", str(args.concurrency)] + (["--url", args.url] if args.url else [])
    pool: list[subprocess.Popen[bytes]] = []
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while not stopping:
        pool = [p for p in pool if p.poll() is None]  # a worker that exited is replaced
        load = {q.queue: q for q in queue_load(app)}.get(args.queue)
        demand = load.demand if load else 0
        want = wanted(demand, args.concurrency, args.min, args.max)
        if want != len(pool):
            print(f"demand={demand} workers {len(pool)} -> {want}", flush=True)
        while len(pool) < want:
            pool.append(subprocess.Popen(command))
        while len(pool) > want:
            pool.pop().send_signal(signal.SIGTERM)  # graceful: finishes, releases
        time.sleep(args.interval)
    for p in pool:
        p.send_signal(signal.SIGTERM)
    for p in pool:
        p.wait()
    sys.exit(0)


if __name__ == "__main__":
    main()
