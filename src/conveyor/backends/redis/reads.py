"""Read paths of the Redis backend that scan indexes: jobs by id, queue stats, workers.

Kept apart from ``backend.py`` (which holds the transitions) so both stay small. None of
these run a script: they read hashes and sorted sets with pipelined commands.

Example:
    >>> ready_band_start(-2e13 + 1_700_000_000_000)
    -20000000000000.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from conveyor.backends.base import DurationSample, JobRecord, QueueStats, WorkerInfo
from conveyor.backends.redis import hashes
from conveyor.backends.redis.keys import Keys

#: ready-set score band of one priority (see ready_score in scripts/_lib.lua)
BAND = 1e13


def ready_band_start(score: float) -> float:
    """Lowest score of the priority band that ``score`` belongs to."""
    return math.floor(score / BAND) * BAND


def get_jobs(client: Any, keys: Keys, ids: Sequence[str]) -> list[JobRecord]:
    """Records of the ids that still exist, in the order asked."""
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hmget(keys.job(job_id), hashes.JOB_FIELDS)
    found = (hashes.job_record(v) for v in pipe.execute())
    return [r for r in found if r is not None]


def queue_stats(client: Any, keys: Keys, now: float) -> list[QueueStats]:
    """Counts from the ``counts`` hash; the oldest ready age from the ready sets."""
    counts: dict[str, dict[str, int]] = {}
    for field, value in client.hgetall(keys.counts).items():
        state, _, queue = field.partition(":")
        # A field written around the API ("x", "1.5") counts nothing rather than break
        # ``conveyor status``; ``conveyor check`` names it (counts_not_integer).
        count = _integer(value)
        if count is not None and count > 0:
            counts.setdefault(queue, {})[state] = count
    return [
        QueueStats(q, counts[q], oldest_ready_age(client, keys, q, now) if "queued" in counts[q]
                   else None)
        for q in sorted(counts)
    ]  # fmt: skip


def oldest_ready_age(client: Any, keys: Keys, queue: str, now: float) -> float | None:
    """Age of the smallest run_at among ready jobs. The ready set is ordered by priority
    first, so read the first member of each priority band (one call per priority)."""
    key = keys.ready(queue)
    oldest: float | None = None
    low = "-inf"
    while True:
        first = client.zrangebyscore(key, low, "+inf", 0, 1, withscores=True)
        if not first:
            break
        member, score = first[0]
        run_at = _number(client.hget(keys.job(member), "run_at"))
        if run_at is not None:
            oldest = run_at if oldest is None else min(oldest, run_at)
        if not math.isfinite(score):  # a score written by hand: no band to step past
            if score > 0:
                break
            low = "(-inf"  # past every -inf member, on to the first finite band
            continue
        low = repr(ready_band_start(score) + BAND)
    return None if oldest is None else now - oldest


def durations(
    client: Any, keys: Keys, since: float, ttl: float, limit: int
) -> list[DurationSample]:
    """``job_durations`` from the expiry index (score: finish time + ``ttl``, member
    ``state:len(queue):queue`` + id), newest first, a page of members at a time until
    ``limit`` jobs that ran are found (a cancelled job that never started is skipped)."""
    out: list[DurationSample] = []
    offset = 0
    while len(out) < limit:
        members = client.zrevrangebyscore(keys.expiry, "+inf", repr(since + ttl), offset, limit)
        if not members:
            break
        offset += len(members)
        ids = []
        for m in members:
            state, _, rest = m.partition(":")
            length, _, tail = rest.partition(":")
            if state in ("succeeded", "dead", "cancelled") and length.isdigit():
                ids.append(tail[int(length) :])
        pipe = client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hmget(keys.job(job_id), ["task", "run_at", "started_at", "finished_at"])
        for task, *times in pipe.execute():
            run_at, started, finished = (_number(v) for v in times)
            if task is None or run_at is None or started is None or finished is None:
                continue  # gone (pruned) since the index was read, or never started
            out.append(DurationSample(str(task), started - run_at, finished - started, finished))
    return out[:limit]


def list_workers(client: Any, keys: Keys) -> list[WorkerInfo]:
    """Every registered worker, oldest first (as SQLite orders by started_at)."""
    ids = client.zrange(keys.workers, 0, -1)
    pipe = client.pipeline(transaction=False)
    for worker_id in ids:
        pipe.hmget(keys.worker(worker_id), hashes.WORKER_FIELDS)
    found = [hashes.worker_info(v) for v in pipe.execute()]
    return sorted((w for w in found if w is not None), key=lambda w: w.started_at)


def _integer(value: Any) -> int | None:
    """A stored count, or None when it is not an integer.

    >>> _integer("3"), _integer("x"), _integer("1.5"), _integer(None)
    (3, None, None, None)
    """
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _number(value: Any) -> float | None:
    """A stored number, or None for a missing or odd one (a hash written around the API
    must not break ``conveyor status``).

    >>> _number("1.5"), _number("%"), _number(None), _number("nan")
    (1.5, None, None, None)
    """
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
