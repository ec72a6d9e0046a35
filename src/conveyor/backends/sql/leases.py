"""Leases on any SQL store: a worker extending the leases of the jobs it runs, and
giving jobs back on a graceful shutdown, in the caller's transaction; each fenced by
the claim token.

Each statement is written once here, one row at a time (``executemany``); a store that
sends a list as one array parameter (:attr:`Dialect.array`) names its own batched
statement instead, by the same role name (PostgreSQL's ``queries/leases.sql``):

- ``job_extend_leases`` (``ids``, ``tokens``): the leases of those running under their
  token pushed to now + lease;
- ``job_release_many`` (``ids``, ``tokens``): back to ready, the attempt given back,
  answering ``id, token, attempt, started_at, now`` per job released;
- ``attempt_insert_many``: attempt rows from one array per column.

Example::

    statuses = extend_leases(SQLITE, conn, [("j1", 3)], time.time())
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conveyor.backends.base import LeaseStatus
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.finish import ATTEMPT_INSERT
from conveyor.rules import RELEASED

_EXTEND = "UPDATE jobs SET lease_until = ? + lease WHERE id = ? AND token = ? AND state = 'running'"
_FENCE = "id = ? AND token = ? AND state = 'running'"
#: Graceful shutdown: back to ready, and the attempt is not counted.
_RELEASE = (
    "UPDATE jobs SET state = 'queued', attempt = attempt - 1, worker_id = NULL, "
    f"lease_until = NULL WHERE {_FENCE}"
)


def extend_leases(
    d: Dialect, ex: Executor, jobs: Sequence[tuple[str, int]], now: float | None
) -> list[LeaseStatus]:
    """Extend each job's lease if it still runs under its token; whether each is still
    held and whether a cancel was asked for. ``now``: None where the store's statement
    reads its own clock."""
    ids = [i for i, _ in jobs]
    if "job_extend_leases" in d.queries:
        ex.execute(d.queries["job_extend_leases"], {"ids": ids, "tokens": [t for _, t in jobs]})
    else:
        ex.executemany(d.sql(_EXTEND), [(now, i, t) for i, t in jobs])
    seen: dict[str, Any] = {}
    for where, args in d.in_list("id", list(dict.fromkeys(ids))):
        query = d.sql(f"SELECT id, token, state, cancel_requested FROM jobs WHERE {where}")
        seen.update((str(r[0]), r) for r in ex.execute(query, args).fetchall())
    answer = []
    for job_id, token in jobs:
        row = seen.get(job_id)
        held = row is not None and row[1] == token and row[2] == "running"
        answer.append(LeaseStatus(job_id, held, bool(row and row[3])))
    return answer


def release(
    d: Dialect, ex: Executor, worker_id: str, jobs: Sequence[tuple[str, int]], now: float | None
) -> list[str]:
    """Give running jobs back (queued, the attempt not counted) with a ``released``
    attempt row each; the ids refused (not running under that token)."""
    if "job_release_many" in d.queries:
        args = {"ids": [i for i, _ in jobs], "tokens": [t for _, t in jobs]}
        released = ex.execute(d.queries["job_release_many"], args).fetchall()
    else:
        released = [row for i, t in jobs if (row := _release_one(d, ex, i, t, now)) is not None]
    insert_attempts(
        d, ex, [(i, t, a, worker_id, s, at, RELEASED, None) for i, t, a, s, at in released]
    )
    done = {str(r[0]) for r in released}
    return [job_id for job_id, _ in jobs if job_id not in done]


def _release_one(
    d: Dialect, ex: Executor, job_id: str, token: int, now: float | None
) -> tuple[Any, ...] | None:
    """Release one job: ``(id, token, attempt, started_at, now)``, or None if refused."""
    if d.returning:
        row = ex.execute(
            d.sql(f"{_RELEASE} RETURNING attempt + 1, started_at"), (job_id, token)
        ).fetchone()
    else:  # read the attempt first, the row locked until the update
        row = ex.execute(
            d.sql(f"SELECT attempt, started_at FROM jobs WHERE {_FENCE}{d.lock}"), (job_id, token)
        ).fetchone()
        if row is not None:
            ex.execute(d.sql(_RELEASE), (job_id, token))
    return None if row is None else (job_id, token, row[0], row[1], now)


def insert_attempts(d: Dialect, ex: Executor, rows: Sequence[tuple[Any, ...]]) -> None:
    """Attempt rows ``(job_id, token, attempt, worker_id, started_at, finished_at,
    outcome, error)``; one already written for that claim is kept."""
    if not rows:
        return
    if "attempt_insert_many" in d.queries:
        ex.execute(d.queries["attempt_insert_many"], [list(c) for c in zip(*rows, strict=True)])
    else:
        ex.executemany(d.sql(d.insert_ignore(ATTEMPT_INSERT)), rows)
