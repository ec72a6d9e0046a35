"""Concurrency and rate limits on SQLite, enforced inside the claim transaction.

Claim-then-check: the claim statement stays the same one-statement ``UPDATE ... RETURNING``
(so unlimited queues pay nothing but one ``SELECT 1 FROM limits LIMIT 1`` per claim
batch); then, only if a claimed job has a ``limit_key``, the running jobs and recent
starts of that key are counted, and jobs over the limit are put back — ``scheduled``
a little later, the attempt given back, no error — in the same transaction, so no other
worker ever sees them running. Running jobs are counted by state, so a holder whose
worker died frees its slot as soon as the rescuer requeues it.

Example::

    claimed = apply_limits(conn, claimed, now)
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Sequence

from conveyor.backends.base import ClaimedJob
from conveyor.backends.sqlite import rows
from conveyor.rules import limit_deferral


def limits_exist(conn: sqlite3.Connection) -> bool:
    """One indexed probe per claim: no limit ever declared -> nothing else to do."""
    return conn.execute("SELECT 1 FROM limits LIMIT 1").fetchone() is not None


def _defer(conn: sqlite3.Connection, job: ClaimedJob, run_at: float) -> None:
    conn.execute(
        "UPDATE jobs SET state = 'scheduled', run_at = ?, attempt = attempt - 1, "
        "worker_id = NULL, lease_until = NULL WHERE id = ? AND token = ?",
        (run_at, job.id, job.token),
    )


def apply_limits(
    conn: sqlite3.Connection, claimed: Sequence[ClaimedJob], now: float
) -> list[ClaimedJob]:
    """The claimed jobs that may run; the others are deferred (see module docstring)."""
    ids = [j.id for j in claimed]
    keyed: dict[str, str] = {}
    for chunk in rows.chunks(ids):
        keyed.update(
            conn.execute(
                f"SELECT id, limit_key FROM jobs WHERE id IN ({rows.placeholders(len(chunk))}) "
                "AND limit_key IS NOT NULL",
                chunk,
            ).fetchall()
        )
    if not keyed:
        return list(claimed)
    keys = sorted(set(keyed.values()))
    config = {
        str(k): (c, n, p)
        for k, c, n, p in conn.execute(
            f"SELECT key, concurrency, rate_count, rate_period FROM limits "
            f"WHERE key IN ({rows.placeholders(len(keys))})",
            keys,
        ).fetchall()
    }
    mine: dict[str, int] = {}
    for key in keyed.values():
        mine[key] = mine.get(key, 0) + 1
    running: dict[str, int] = {}
    hits: dict[str, list[float]] = {}
    for key in keys:
        total = conn.execute(
            "SELECT COUNT(*) FROM jobs WHERE state = 'running' AND limit_key = ?", (key,)
        ).fetchone()[0]
        running[key] = int(total) - mine[key]  # the ones held before this claim
        _, rate_count, period = config.get(key, (None, None, None))
        if rate_count is not None and period is not None:
            conn.execute("DELETE FROM limit_hits WHERE key = ? AND at <= ?", (key, now - period))
            hits[key] = [
                float(r[0])
                for r in conn.execute("SELECT at FROM limit_hits WHERE key = ? ORDER BY at", (key,))
            ]
    kept: list[ClaimedJob] = []
    # Highest priority first, so what runs under a limit is what the queue order says.
    for job in sorted(claimed, key=lambda j: (-j.priority, j.run_at, j.id)):
        found = keyed.get(job.id)
        if found is None:
            kept.append(job)
            continue
        key = found
        concurrency, rate_count, period = config.get(key, (None, None, None))
        deferred = limit_deferral(
            concurrency=concurrency,
            running=running[key],
            rate_count=rate_count,
            period=period,
            starts=hits.get(key, ()),
            now=now,
            jitter=random.random(),
        )
        if deferred is not None:
            _defer(conn, job, deferred)
            continue
        running[key] += 1
        if key in hits:
            hits[key].append(now)
            conn.execute("INSERT INTO limit_hits (key, at) VALUES (?, ?)", (key, now))
        kept.append(job)
    return kept
