"""W8 (issue 26): short jobs arriving while long ones hold slots.

One fresh ``conveyor worker`` with its default flags (10 thread slots) runs two
measurements, alternated by the runner:

- ``short only``: noop jobs enqueued one at a time at a steady rate (W3's open loop,
  job i due at ``t_start + i/rate``) for ``W8_s`` seconds;
- ``with 4 long``: the same stream, after ``W8_long`` jobs that each sleep
  ``W8_long_s`` seconds (enqueued first, 0.2 s before the stream starts, so they hold
  their slots through it).

The figure is each short job's **wait**, from its scheduled time to the start of its
body (both read from the completion marker's records: the harness never times it), as
p50 and p99. The issue's target: the p99 wait with the long jobs running no worse than
main's today. The long jobs sleep rather than spin: the issue's concern is "a job that
blocks must not hold up others" (a held slot), and a sleeping job holds its slot without
taking the GIL, so the figure is the worker's scheduling, not the interpreter's lock.
``overlap`` is the share of short jobs due while every long job was running (1.0 when
the stream fits inside the long jobs' sleep, as it must for the figure to mean anything).

Only conveyor's default-flag arms run it: a peer's default slot count differs (Huey and
RQ arms run one slot, which a long job blocks by design), so a peer figure would compare
configurations, not schedulers.

Example::

    python -m bench run --suite W8 --arms conveyor-sqlite-default,conveyor-redis-default
"""

from __future__ import annotations

import statistics
from typing import Any

from bench import arms, harness, jobs
from bench.scenarios import Ctx, _finish, _fresh, _marker, _pct, _warm, _worker

W8_ONLY = "conveyor's default-flag arms only (peers' default slot counts differ)"


def w8_unsupported(arm: str) -> str | None:
    """``None`` when ``arm`` runs W8, else why not.

    >>> w8_unsupported("conveyor-redis-default") is None
    True
    >>> w8_unsupported("rq-simple") == W8_ONLY
    True
    """
    base = arms.base_name(arm)
    default = base.endswith("-default") or base == "conveyor-postgres-thread"
    return None if base.startswith("conveyor-") and default else W8_ONLY


def param(long: int) -> str:
    """The row's label: ``short only`` or ``with <long> long``."""
    return f"with {long} long" if long else "short only"


def plan(ctx: Ctx, usable: list[str], it: int) -> list[tuple[str, str, str, Any]]:
    """The runner's W8 steps: without and with the long jobs, the order alternated by
    iteration (the runner orders the arms within each)."""
    longs = [0, int(ctx.scale["W8_long"])][:: 1 if it % 2 == 0 else -1]
    return [("W8", param(k), a, lambda a=a, k=k: w8(ctx, a, k)) for k in longs for a in usable]


def w8(ctx: Ctx, arm: str, long: int) -> dict[str, Any]:
    """One measurement: the short stream, with ``long`` long jobs (0: none) first."""
    s = ctx.scale
    rate, duration, long_s = float(s["W8_rate"]), float(s["W8_s"]), float(s["W8_long_s"])
    env = _fresh(ctx, arm)
    env[jobs.LONG_ENV] = repr(long_s)
    worker = _worker(arm, env, burst=False)
    base = {"long": long, "rate": rate}
    try:
        if not _warm(ctx, arm, env, worker):
            worker.stop()
            return {**base, "valid": False, "reason": "warm-up never ran"}
        spec = {"arm": arm, "action": "w8", "rate": rate, "duration": duration, "long": long}
        r = harness.run_producer(spec, env, duration + 300)
    except Exception:
        worker.stop()
        raise
    n = int(r["n"])
    row = _finish(ctx, worker, n + long, timeout=max(30.0, duration * 3 + long_s * 2))
    row.pop("cpu_at_done", None)
    row.update({**base, "late_enqueues": r["late_enqueues"]})
    return {**row, **waits(_marker(ctx).timings(), n)} if row["valid"] else row


def waits(t: list[tuple[int, float, float, float]], n: int) -> dict[str, float]:
    """The short jobs' (indices < n) wait p50/p99/max in ms, and the overlap share.

    >>> w = waits([(0, 1.0, 1.002, 1.002), (1, 1.1, 1.101, 1.101), (2, 0.9, 0.95, 3.0)], 2)
    >>> (round(w["wait_p50_ms"], 3), round(w["wait_p99_ms"], 3), w["overlap"])
    (1.5, 2.0, 1.0)
    """
    short = [(t0, st) for i, t0, st, _ in t if i < n]
    lw = [(st, e) for i, _, st, e in t if i >= n]
    wait = [(st - t0) * 1000 for t0, st in short]
    out = {
        "wait_p50_ms": statistics.median(wait),
        "wait_p99_ms": _pct(wait, 0.99),
        "wait_max_ms": max(wait),
    }
    if lw:
        lo, hi = max(st for st, _ in lw), min(e for _, e in lw)
        out["overlap"] = sum(lo <= t0 <= hi for t0, _ in short) / len(short)
    return out
