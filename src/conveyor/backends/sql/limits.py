"""Concurrency and rate limits on any SQL store, enforced inside the claim transaction.

Claim-then-check: the claim stays one statement; then, only if a claimed job has a
``limit_key``, the running jobs and recent starts of that key are counted, and jobs
over the limit are put back (``scheduled`` a little later, the attempt given back, no
error; :func:`conveyor.rules.limit_deferral`) in the same transaction, so no other
worker ever sees them running. Running jobs are counted by state, so a holder whose
worker died frees its slot as soon as the rescuer requeues it. Where the store locks
rows (:attr:`Dialect.lock`), the keys' ``limits`` rows are locked in key order first,
so two claimers never both take the last slot (nor deadlock).

The claim (:mod:`conveyor.backends.sql.claim`) reads each job's ``limit_key`` with its
row, so a claim of jobs without one pays nothing here.

Example::

    claimed = apply_limits(SQLITE, conn, claimed, {"j1": "api"}, now)
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.base import ClaimedJob
from conveyor.backends.records import merged_limit
from conveyor.backends.sql.dialect import Dialect, Executor, Result
from conveyor.rules import limit_deferral

#: A key's settings: (concurrency, rate_count, rate_period), each None when unset.
Config = tuple[Any, Any, Any]
_UNSET: Config = (None, None, None)
#: An operator's values (``conveyor limits set``), read with the code's at every claim
#: so a change is obeyed by every worker's next claim; merged over them part by part.
_OVERRIDE_COLUMNS = ", ".join(
    f'(SELECT o.{c} FROM limit_overrides o WHERE o."key" = limits."key")'
    for c in ("concurrency", "rate_count", "rate_period")
)


def apply_limits(
    d: Dialect,
    ex: Executor,
    claimed: Sequence[ClaimedJob],
    keyed: Mapping[str, str],
    now: float | None = None,
) -> list[ClaimedJob]:
    """The claimed jobs that may run; the others are deferred (see the module docstring).
    ``keyed``: the limit key of each claimed job that has one; ``now``: the claim's
    clock, or None to read the store's once the keys are locked."""
    if not keyed:
        return list(claimed)
    keys = sorted(set(keyed.values()))
    # Sent, then read: on PostgreSQL (pipeline) the lock and the running counts travel
    # in one round trip, and the operator's overrides ride in the lock's statement.
    # Statements run in the order sent, so the counts are read after the keys are
    # locked. A round trip and a statement per claim were most of what a global limit
    # cost (BENCHMARKS.md, "Flow control's cost").
    locked = [
        ex.execute(
            d.sql(
                'SELECT "key", concurrency, rate_count, rate_period, '
                f"{_OVERRIDE_COLUMNS} FROM limits "
                f'WHERE {where} ORDER BY "key"{d.lock}'
            ),
            args,
        )
        for where, args in d.in_list('"key"', keys)
    ]
    counts = _send_running(d, ex, keys)
    config: dict[str, Config] = {}
    for found in locked:
        for k, c, n, p, oc, on, op in found.fetchall():
            config[str(k)] = merged_limit((c, n, p), (oc, on, op))
    running = _running_before(counts, keys, keyed)
    unknown = [k for k in keys if k not in config]
    if unknown:  # an override of a key the code never declared (no limits row)
        _apply_overrides(d, ex, unknown, config)
    if now is None:
        rated = any(config.get(k, _UNSET)[1] is not None for k in keys)
        # Only a rate window needs the clock read after the lock; a concurrency
        # deferral is "a moment from now", and the claim's own time is that.
        now = d.clock(ex) if rated else max(job.claimed_at for job in claimed)
    hits = _recent_starts(d, ex, keys, config, now)
    kept: list[ClaimedJob] = []
    # Highest priority first, so what runs under a limit is what the queue order says.
    for job in sorted(claimed, key=lambda j: (-j.priority, j.run_at, j.id)):
        key = keyed.get(job.id)
        if key is None:
            kept.append(job)
            continue
        concurrency, rate_count, period = config.get(key, _UNSET)
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
            ex.execute(
                d.sql(
                    "UPDATE jobs SET state = 'scheduled', run_at = ?, attempt = attempt - 1, "
                    "worker_id = NULL, lease_until = NULL WHERE id = ? AND token = ?"
                ),
                (deferred, job.id, job.token),
            )
            continue
        running[key] += 1
        if key in hits:
            hits[key].append(now)
            ex.execute(d.sql('INSERT INTO limit_hits ("key", at) VALUES (?, ?)'), (key, now))
        kept.append(job)
    return kept


def _apply_overrides(
    d: Dialect, ex: Executor, keys: Sequence[str], config: dict[str, Config]
) -> None:
    """An operator's values (``conveyor limits set``) over the code's, part by part."""
    for where, args in d.in_list('"key"', keys):
        query = d.sql(
            f'SELECT "key", concurrency, rate_count, rate_period FROM limit_overrides WHERE {where}'
        )
        for k, c, n, p in ex.execute(query, args).fetchall():
            config[str(k)] = merged_limit(config.get(str(k), _UNSET), (c, n, p))


def _send_running(d: Dialect, ex: Executor, keys: Sequence[str]) -> list[Result]:
    """Each key's running jobs, this claim's own included (the jobs_limit_running index)."""
    return [
        ex.execute(
            d.sql(
                f"SELECT limit_key, count(*) FROM jobs WHERE state = 'running' AND {where} "
                "GROUP BY limit_key"
            ),
            args,
        )
        for where, args in d.in_list("limit_key", keys)
    ]


def _running_before(
    counts: Sequence[Result], keys: Sequence[str], keyed: Mapping[str, str]
) -> dict[str, int]:
    """Each key's running jobs held before this claim (this claim's own taken out)."""
    totals: dict[str, int] = {}
    for found in counts:
        totals.update((str(k), int(n)) for k, n in found.fetchall())
    mine: dict[str, int] = {}
    for key in keyed.values():
        mine[key] = mine.get(key, 0) + 1
    return {key: totals.get(key, 0) - mine[key] for key in keys}


def _recent_starts(
    d: Dialect, ex: Executor, keys: Sequence[str], config: Mapping[str, Config], now: float
) -> dict[str, list[float]]:
    """The starts within its period of each rate-limited key (older ones pruned)."""
    hits: dict[str, list[float]] = {}
    prune = d.sql('DELETE FROM limit_hits WHERE "key" = ? AND at <= ?')
    read = d.sql('SELECT at FROM limit_hits WHERE "key" = ? ORDER BY at')
    for key in keys:
        _, rate_count, period = config.get(key, _UNSET)
        if rate_count is not None and period is not None:
            ex.execute(prune, (key, now - period))
            hits[key] = [float(r[0]) for r in ex.execute(read, (key,)).fetchall()]
    return hits
