"""The rescue on any SQL store: running jobs whose worker is gone go back to the queue,
or end dead when :func:`conveyor.rules.rescue_state` says so (attempts used up, rescued
too often, the one job its worker held, an odd row), each with a ``lost`` attempt row;
dependants of the dead ones move, and the lost workers' rows go, all in the caller's
transaction.

The store's named queries (``Dialect.queries``), each taking ``stale_before`` and
``dead`` (the caller's dead workers as one parameter, :attr:`Dialect.one_list`):
``job_rescue_candidates`` (``id, token, attempt, max_attempts, rescues, worker_id,
started_at``), ``worker_delete_lost``, and where rows lock, ``worker_lock_lost``, run
first so that a heartbeat arriving meanwhile waits for the rescue's commit.

Example::

    results = rescue(SQLITE, conn, JobRescueParams(time.time() - 30, 3, ["w1"]))
"""

from __future__ import annotations

import time
from typing import Any

from conveyor.backends import decoding
from conveyor.backends.base import JobRescueParams, RescueResult
from conveyor.backends.sql import flow
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.leases import insert_attempts
from conveyor.rules import (
    LOST,
    LOST_PARENT_FAILED,
    WORKER_LOST_ERROR,
    WORKER_LOST_REASON,
    held_alone,
    rescue_charge,
    rescue_gives_back_attempt,
    rescue_state,
)
from conveyor.states import JobState

_FENCE = "WHERE id = ? AND token = ? AND state = 'running'"
_DEAD = (
    "UPDATE jobs SET state = 'dead', reason = ?, error = ?, finished_at = ?, "
    f"worker_id = NULL, lease_until = NULL {_FENCE}"
)
_REQUEUE = (
    "UPDATE jobs SET state = 'queued', rescues = rescues + ?, attempt = attempt - ?, "
    f"worker_id = NULL, lease_until = NULL {_FENCE}"
)


def rescue(d: Dialect, ex: Executor, params: JobRescueParams) -> list[RescueResult]:
    """Rescue the jobs of lost workers (see the module docstring); what became of each."""
    age = time.time() - params.stale_before
    now = d.clock(ex)
    # Where times are the server's, the caller's stale_before is an age re-anchored on
    # the server's clock (heartbeats and leases are written with it).
    stale_before = now - age if d.server_clock else params.stale_before
    args = {"stale_before": stale_before, "dead": d.one_list(list(params.dead_worker_ids))}
    if "worker_lock_lost" in d.queries:
        ex.execute(d.queries["worker_lock_lost"], args)
    candidates = ex.execute(d.queries["job_rescue_candidates"], args).fetchall()
    # Poison isolation: was each the one job its dead worker held? (rules.py)
    alone_flags = held_alone([c[5] for c in candidates])
    progressed = _progressed(d, ex, candidates) if candidates else set()
    results: list[RescueResult] = []
    attempts: list[tuple[Any, ...]] = []
    lost: dict[str, str] = {}
    for candidate, alone in zip(candidates, alone_flags, strict=True):
        job_id, token, *_, worker_id, started = candidate
        moved = str(job_id) in progressed
        state, attempt = _rescue_one(d, ex, candidate, alone, params.max_rescues, now, moved)
        if state is JobState.DEAD:
            lost[str(job_id)] = LOST_PARENT_FAILED
        attempts.append((job_id, token, attempt, worker_id, started, now, LOST, WORKER_LOST_ERROR))
        results.append(RescueResult(str(job_id), worker_id, state))
    insert_attempts(d, ex, attempts)
    if lost:
        flow.settle(d, ex, (), lost, now)
    ex.execute(d.queries["worker_delete_lost"], args)
    return results


def _progressed(d: Dialect, ex: Executor, candidates: list[Any]) -> set[str]:
    """The durable candidates that saved a step during their lost attempt (a step
    finished after the attempt started): rescued uncharged (``rules.rescue_state``)."""
    started = {str(c[0]): c[6] for c in candidates}
    last: dict[str, float] = {}
    for where, args in d.in_list("job_id", list(started)):
        query = f"SELECT job_id, MAX(finished_at) FROM job_steps WHERE {where} AND pos >= 0 "
        for job_id, finished in ex.execute(d.sql(query + "GROUP BY job_id"), args).fetchall():
            last[str(job_id)] = float(finished or 0.0)
    return {
        job_id for job_id, at in last.items()
        if started[job_id] is not None and at >= float(started[job_id])
    }  # fmt: skip


def _rescue_one(
    d: Dialect, ex: Executor, candidate: Any, alone: bool, max_rescues: int, now: float,
    progressed: bool = False,
) -> tuple[JobState, int]:  # fmt: skip
    """Requeue or bury one candidate; (its new state, its attempt as read)."""
    job_id, token, *counts, _worker_id, _started = candidate
    # A row written around the API may hold anything in its counts (SQLite), or one at
    # its column's limit (typed columns: rescues + 1 would fail every pass): such a row
    # ends dead with the problem as its reason, never fails the rescue.
    attempt, max_attempts, rescues, problem = decoding.rescue_counts(*counts)
    if problem is None and d.count_problem is not None:
        problem = d.count_problem(attempt, int(token), rescues)
    state = rescue_state(
        attempt=attempt,
        max_attempts=max_attempts,
        rescues=rescues,
        max_rescues=max_rescues,
        alone=alone,
        odd=problem is not None,
        progressed=progressed,
    )
    if state is JobState.DEAD:
        why = problem or WORKER_LOST_REASON
        ex.execute(d.sql(_DEAD), (why, WORKER_LOST_ERROR, now, job_id, token))
    else:
        give_back = int(rescue_gives_back_attempt(alone=alone and not progressed))
        charge = rescue_charge(progressed=progressed)
        ex.execute(d.sql(_REQUEUE), (charge, give_back, job_id, token))
    return state, attempt
