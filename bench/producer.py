"""The producer side of one measurement, run as a fresh process per measurement.

``python -m bench.producer '<json spec>'`` prints one JSON line with the result. A fresh
process per measurement gives every arm the same clean heap and interpreter state, and
keeps one library's global state (Dramatiq's broker, Celery's app) away from another's.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import sys
import time
import traceback
from typing import Any

from bench import arms
from bench.arms.base import Arm, Item, durability


def _timed(fn: Any) -> float:
    """Run ``fn`` with GC collected then disabled (same for every arm); return seconds."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def check(arm_cls: type[Arm], name: str) -> dict[str, Any]:
    """Availability, exact configuration and (for SQLite arms) the PRAGMAs in force."""
    _, variant = arms.load(name)
    reason = arm_cls.unavailable(variant)
    out: dict[str, Any] = {
        "available": reason is None,
        "reason": reason,
        "config": variant.config,
        "storage": variant.storage,
        "durability": durability(variant),
        "unsupported": {**dict(variant.unsupported), **arm_cls.gaps(variant)},
        "w4": variant.w4,
    }
    if reason is None and variant.storage == "sqlite":
        arm = arm_cls(variant)
        arm.open()
        out["pragmas"] = _pragmas(name, arm)
        arm.close()
    return out


def _pragmas(name: str, arm: Arm) -> dict[str, Any]:
    """Read the PRAGMAs from the arm's own connection (introspection only, not timed)."""
    names = ("journal_mode", "synchronous", "cache_size", "temp_store", "busy_timeout", "mmap_size")
    conn: sqlite3.Connection | None = None
    if name.startswith("qler"):
        from bench.arms.qler_arm import QlerArm

        assert isinstance(arm, QlerArm)
        return arm.read_pragmas(names)  # aiosqlite: sqler's own pragma_report
    if name.startswith("huey"):
        from bench.arms.huey_arm import huey

        conn = huey.storage.conn
    elif name.startswith("floor"):
        from bench.arms.floor_arm import FloorArm

        assert isinstance(arm, FloorArm)
        conn = arm.conn
    elif name.startswith("conveyor"):
        from bench.arms.conveyor_arm import app

        conn = getattr(app.backend, "connection", None)  # private; read-only check
    if conn is None:
        return {"error": "no connection to inspect"}
    return {p: conn.execute(f"PRAGMA {p}").fetchone()[0] for p in names}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    name = spec["arm"]
    arm_cls, variant = arms.load(name)
    if spec["action"] == "check":
        return check(arm_cls, name)
    arm = arm_cls(variant)
    arm.open()
    action, n, kind = spec["action"], int(spec.get("n", 0)), spec.get("kind", "noop")
    out: dict[str, Any] = {}
    if action == "e1":
        items: list[Item] = [(i, 0.0, "noop") for i in range(n)]
        seconds = _timed(lambda: [arm.enqueue_one(it) for it in items])
        out = {"seconds": seconds, "jobs_per_s": n / seconds}
    elif action == "e2":
        items = [(i, 0.0, "noop") for i in range(n)]
        seconds = _timed(lambda: arm.enqueue_batch(items))
        out = {"seconds": seconds, "jobs_per_s": n / seconds}
    elif action == "fill":
        base = int(spec.get("base", 0))
        for lo in range(0, n, 10_000):
            now = time.time()
            arm.enqueue_batch([(base + i, now, kind) for i in range(lo, min(n, lo + 10_000))])
    elif action == "fill_spread":  # W7: round robin over many queues
        now = time.time()
        arm.enqueue_spread([(i, now, kind) for i in range(n)], spec["queues"])
    elif action == "w2":
        warm = int(spec.get("warmup", 3))
        for i in range(warm):
            arm.round_trip((n + i, time.time(), "noop"), timeout=30)
        lat = []
        for i in range(n):
            t = time.perf_counter()
            arm.round_trip((i, time.time(), "noop"), timeout=30)
            lat.append((time.perf_counter() - t) * 1000)
        out = {"latencies_ms": lat}
    elif action == "w3":
        out = open_loop(arm, float(spec["rate"]), float(spec["duration"]))
    elif action == "w8":  # the long jobs (indices n..), then W3's open loop of noops
        n = max(1, int(float(spec["rate"]) * float(spec["duration"])))
        for j in range(int(spec["long"])):
            arm.enqueue_one((n + j, time.time(), "long"))
        out = open_loop(arm, float(spec["rate"]), float(spec["duration"]), 0.2, at_call=True)
    elif action == "w6_enqueue":
        out = timed_enqueues(arm, float(spec["rate"]), n, int(spec["base"]), float(spec["t_start"]))
    arm.close()
    return out


def open_loop(
    arm: Arm, rate: float, duration: float, lead: float = 0.05, at_call: bool = False
) -> dict[str, Any]:
    """Enqueue job i at its scheduled time t_start + i/rate (seed 002: latency is measured
    from the *scheduled* time, carried in the job as t0, so a late producer cannot hide
    its own delay). ``at_call`` (W8): t0 is the enqueue call's start instead, so a wait
    is enqueue -> start even where one enqueue outlasts 1/rate (PostgreSQL's fsync)."""
    n = max(1, int(rate * duration))
    t_start = time.time() + lead
    late = 0
    for i in range(n):
        due = t_start + i / rate
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)
        elif wait < -0.001:
            late += 1
        arm.enqueue_one((i, time.time() if at_call else due, "noop"))
    return {
        "n": n,
        "t_start": t_start,
        "t_last": t_start + (n - 1) / rate,
        "producer_end": time.time(),
        "late_enqueues": late,
    }


def timed_enqueues(arm: Arm, rate: float, n: int, base: int, t_start: float) -> dict[str, Any]:
    """W6: enqueue jobs ``base .. base+n-1`` one at a time, job k due at ``t_start +
    k/rate`` (a steady rate, shared start with the other producers), timing each call."""
    late = 0
    lat: list[float] = []
    for k in range(n):
        due = t_start + k / rate
        wait = due - time.time()
        if wait > 0:
            time.sleep(wait)
        elif wait < -0.001:
            late += 1
        t = time.perf_counter()
        arm.enqueue_one((base + k, due, "noop"))
        lat.append((time.perf_counter() - t) * 1000)
    return {"n": n, "latencies_ms": lat, "late_enqueues": late}


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        result = run(spec)
    except BaseException:
        # Exit now: a peer's non-daemon threads (qler's aiosqlite connections) would keep
        # a failed producer alive until the harness's timeout.
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # some peers leave non-daemon threads behind; do not wait on them


if __name__ == "__main__":
    main()
