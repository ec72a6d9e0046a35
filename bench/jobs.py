"""The one job body every arm runs, and the one way completion is detected.

Every arm's task calls :func:`run_job`. The body does its work (noop / cpu / io / mixed),
then, in a single pipelined round trip to the suite's Redis, ``INCR``s the completion
counter, sets bit ``i`` of a "seen" bitmap (so a lost job and a duplicate cannot cancel
out in the counter) and appends ``"i t0 start end"`` to a timing list. The harness waits
for the counter only, then checks counter == bitcount == N. The marker costs the same
for every arm, so it cancels out of every ratio.
"""

from __future__ import annotations

import os
import threading
import time

import redis

COUNTER = "bench:done"
SEEN = "bench:seen"
TIMES = "bench:times"
MARKER_DB = 15  # brokers use db 0; keeping markers apart makes FLUSHDB of a broker safe

_local = threading.local()
_clients: dict[int, redis.Redis] = {}
_lock = threading.Lock()


def marker_client() -> redis.Redis:
    """A Redis client for the marker db, one per process (rebuilt after a fork)."""
    pid = os.getpid()
    client = _clients.get(pid)
    if client is None:
        with _lock:
            client = _clients.get(pid)
            if client is None:
                url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6399")
                client = redis.Redis.from_url(f"{url}/{MARKER_DB}")
                _clients.clear()  # drop a client inherited through fork()
                _clients[pid] = client
    return client


def cpu_work() -> int:
    """The seed-004 cpu job: a 100,000-iteration integer loop."""
    total = 0
    for k in range(100_000):
        total += k
    return total


def run_job(i: int, t0: float, kind: str) -> int:
    """Do the work of job ``i`` (enqueued/scheduled at wall time ``t0``) and mark it done."""
    start = time.time()
    if kind == "cpu" or (kind == "mixed" and i % 2 == 0):
        cpu_work()
    elif kind == "io" or kind == "mixed":
        time.sleep(0.005)
    end = time.time()
    pipe = marker_client().pipeline(transaction=False)
    pipe.incr(COUNTER)
    pipe.setbit(SEEN, i, 1)
    pipe.rpush(TIMES, f"{i} {t0:.6f} {start:.6f} {end:.6f}")
    pipe.execute()
    return i
