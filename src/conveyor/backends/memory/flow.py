"""Writes of the memory store that move more than one row: inserts (unique keys,
workflow edges, limits), dependants settled when parents end, limits admitted at claim,
and deletes. The decisions are :mod:`conveyor.rules`' (as in ``sqlite/flow_writes.py``
and ``redis/scripts/_flow.lua``); these functions apply them to a
:class:`~conveyor.backends.memory.store.MemoryStore` whose lock the caller holds.

Example:
    >>> from conveyor.backends.memory.store import MemoryStore
    >>> from conveyor.backends.base import JobInsertParams
    >>> store = MemoryStore()
    >>> insert(store, [JobInsertParams(id="j1", task="t", queue="q", payload="{}")], 0.0)
    ['j1']
    >>> store.jobs["j1"].state
    <JobState.QUEUED: 'queued'>
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence

from conveyor.backends.base import (
    JOIN_PREFIX,
    STEP_WAITING,
    ClaimedJob,
    JobImport,
    JobInsertBatchParams,
    JobInsertParams,
    join_of,
    waiting_step,
)
from conveyor.backends.durable_params import parked_event
from conveyor.backends.memory.store import MemoryStore, Row
from conveyor.backends.params import one_per_job
from conveyor.backends.records import merged_limit
from conveyor.errors import ConveyorError, JobNotFound
from conveyor.rules import (
    FAILED_AT_INSERT,
    PIPE_ALL,
    PIPE_ONE,
    PIPE_SEQUENCE,
    WAS_CANCELLED,
    WAS_DELETED,
    ChildEffect,
    JobStory,
    cancelled_reason,
    debounced_run_at,
    failure_error,
    fair_place,
    insert_decision,
    is_sequence_blocked,
    limit_deferral,
    not_needed_reason,
    on_parent_end,
    ready_state,
    sequence_blocked_reason,
)
from conveyor.states import FINISHED_STATES, JobState

_ACTIVE_FOR_REPLACE = (JobState.QUEUED, JobState.SCHEDULED, JobState.WAITING)


def insert(
    store: MemoryStore, jobs: Sequence[JobInsertParams] | JobInsertBatchParams, now: float
) -> list[str]:
    """Write ``jobs``; the id standing for each (the holder's on a unique conflict).
    All or nothing: a missing parent raises before any job is written."""
    jobs = one_per_job(jobs)
    known = set(store.jobs)
    for p in jobs:  # checked first: the SQL stores roll the whole batch back instead
        missing = [d for d in p.depends_on if d not in known]
        if missing:
            raise JobNotFound(missing[0])
        if p.id in known and (p.unique_key is None or p.id in store.jobs):
            raise ConveyorError(f"a job with id {p.id!r} already exists")
        known.add(p.id)
    standing: dict[str, str] = {}
    results: list[str] = []
    for p in jobs:
        found = insert_one(store, p, now, standing)
        standing[p.id] = found
        results.append(found)
    return results


def insert_one(store: MemoryStore, p: JobInsertParams, now: float, standing: dict[str, str]) -> str:
    """One job (see :func:`insert`); ``standing`` maps ids asked for to ids that stand."""
    run_at = now if p.run_at is None else p.run_at
    if p.unique_key is not None:
        conflict = _unique_conflict(store, p, run_at, now)
        if conflict is not None:
            return conflict
    row = Row(
        p.id,
        p.task,
        p.queue,
        ready_state(run_at, now),
        p.priority,
        p.payload,
        p.max_attempts,
        run_at,
        now,
        p.timeout,
        p.lease,
        unique_key=p.unique_key,
        unique_until=p.unique_until,
        pipe=p.pipe,
        headers=p.headers,
        expires_at=p.expires_at,
        limit_key=p.limit.key if p.limit else None,
    )
    parents = [standing.get(d, d) for d in p.depends_on]
    if p.sequence_key is not None:
        tail = store.sequences.get(p.sequence_key)
        store.sequences[p.sequence_key] = p.id
        parents = [tail] if tail is not None and tail in store.jobs else []
    if p.fair_key is not None and p.sequence_key is None and not parents and run_at <= now:
        row.run_at = fair_place_in(store, p.queue, p.fair_key, p.fair_weight, now)
        row.state = JobState.QUEUED  # queued whatever its place (rules.fair_place)
    if parents:
        states = [store.jobs[d].state.value for d in parents]
        decided = insert_decision(p.pipe, parents, states)
        row.waiting_on, row.reason = decided.waiting_on, decided.reason
        if decided.state == "waiting":
            row.state = JobState.WAITING
        elif decided.state == "cancelled":
            row.state, row.finished_at = JobState.CANCELLED, now
        elif decided.failure_of is not None:
            row.payload = failure_payload(store, row.payload, decided.failure_of, FAILED_AT_INSERT)
        elif decided.piped:
            row.payload = piped_payload(store, row.payload, parents, p.pipe)
        store.parents[p.id] = parents
        for parent in parents:
            store.children.setdefault(parent, []).append(p.id)
    store.jobs[p.id] = row
    if p.limit is not None:
        lim = p.limit
        store.limits[lim.key] = (lim.concurrency, lim.rate_count, lim.rate_period)
    return p.id


def fair_place_in(store: MemoryStore, queue: str, key: str, weight: float, now: float) -> float:
    """A ready job's place in ``queue``'s round (``sql/fair.py``); the key's moves there."""
    ready = [r for r in store.jobs.values() if r.queue == queue and r.state is JobState.QUEUED]
    head = min(ready, key=claim_order).run_at if ready else None
    at = fair_place(store.fair.get((queue, key)), head, now, weight)
    store.fair[(queue, key)] = at
    return at


def _unique_conflict(
    store: MemoryStore, p: JobInsertParams, run_at: float, now: float
) -> str | None:
    """The job holding ``p``'s unique key, after a finished holder whose window passed
    gave it up; with ``on_conflict="replace"`` the holder takes the new arguments."""
    holder: Row | None = None
    for row in store.jobs.values():
        if row.task != p.task or row.unique_key != p.unique_key:
            continue
        if row.state in FINISHED_STATES and (row.unique_until is None or row.unique_until <= now):
            row.unique_key = None
            continue
        holder = row
    if holder is None:
        return None
    if p.on_conflict == "replace" and holder.state in _ACTIVE_FOR_REPLACE:
        # Debounce: newest arguments and run time win; a waiting job keeps waiting.
        run_at = debounced_run_at(run_at, holder.created_at, p.max_wait)
        if holder.state is not JobState.WAITING:
            holder.state = ready_state(run_at, now)
        holder.payload, holder.run_at, holder.unique_until = p.payload, run_at, p.unique_until
    return holder.id


def _result(store: MemoryStore, job_id: str) -> object:
    row = store.jobs.get(job_id)
    return json.loads(row.result) if row is not None and row.result is not None else None


def piped_payload(store: MemoryStore, payload: str, parents: Sequence[str], pipe: int) -> str:
    """The parents' results first in the child's arguments (a chain: the one result; a
    group's callback: the list of results in order)."""
    results = [_result(store, parent) for parent in parents]
    data = json.loads(payload)
    data["args"] = [results[0] if pipe == PIPE_ONE else results, *data.get("args", [])]
    return json.dumps(data, separators=(",", ":"))


def failure_payload(store: MemoryStore, payload: str, parent: str, why: str) -> str:
    """What happened to the failed parent first in an on_failure handler's arguments."""

    def story(job_id: str) -> JobStory:
        row = store.jobs.get(job_id)
        return (row.state.value, row.reason, row.error) if row is not None else None

    found = store.jobs.get(parent)
    error = failure_error(parent, story)  # behind a cancelled parent: the failed one's
    info = {
        "job_id": parent,
        "state": found.state.value if found else "deleted",
        "reason": (found.reason if found and found.reason else why),
        "error": json.loads(error) if error else None,
    }
    data = json.loads(payload)
    data["args"] = [info, *data.get("args", [])]
    return json.dumps(data, separators=(",", ":"))


def wake_waiting(store: MemoryStore, job_id: str, event: str, now: float) -> bool:
    """Queue ``job_id`` if it waits in the step that waits for ``event`` (a sent
    event's ``wait_for``, or a join woken by its child's end); True when woken."""
    row = store.jobs.get(job_id)
    if row is None or row.state is not JobState.WAITING:
        return False
    name = waiting_step(event)
    steps = store.steps.get(job_id, {}).values()
    if not any(s.state == STEP_WAITING and s.name == name for s in steps):
        return False
    row.state, row.run_at = JobState.QUEUED, now
    return True


def restore_joins(store: MemoryStore, items: Sequence[JobImport], now: float) -> None:
    """Joins across an import (as SQL's ``imports.restore_joins``): a job parked in
    ``conveyor.join(child)`` marks its child again, or is woken when the child here has
    ended; a job imported ended wakes the joiners marked on it by an earlier import."""
    for item in items:
        event = parked_event(item.steps) if item.job.state is JobState.WAITING else None
        child = join_of(event or "")
        if event is None or child is None:
            continue
        row = store.jobs.get(child)
        if row is not None and row.state.is_finished:
            wake_waiting(store, item.job.id, event, now)
        elif JOIN_PREFIX + item.job.id not in store.children.get(child, []):
            store.children.setdefault(child, []).append(JOIN_PREFIX + item.job.id)
    for item in items:
        if item.job.state.is_finished:
            for mark in store.children.get(item.job.id, []):
                joiner = join_of(mark)
                if joiner is not None:
                    wake_waiting(store, joiner, JOIN_PREFIX + item.job.id, now)


def settle(
    store: MemoryStore, succeeded: Sequence[str], failed: Mapping[str, str], now: float
) -> None:
    """Move the dependants of ended parents as :func:`conveyor.rules.on_parent_end` says
    (``failed``: parent -> how its end reads), transitively through cancelled children;
    a job joining an ended one (mark ``join:<id>``) is woken in its join step."""
    pending: dict[str, str] = dict(failed)
    for parent in succeeded:
        for child in list(store.children.get(parent, ())):
            _dependant_of_ended(store, parent, child, None, now, pending)
    while pending:
        parent, why = pending.popitem()
        for child in list(store.children.get(parent, ())):
            _dependant_of_ended(store, parent, child, why, now, pending)


def _dependant_of_ended(
    store: MemoryStore, parent: str, child: str, why: str | None, now: float,
    pending: dict[str, str],
) -> None:  # fmt: skip
    joiner = join_of(child)
    if joiner is not None:
        wake_waiting(store, joiner, f"join:{parent}", now)
    else:
        _child_of_ended(store, parent, child, why, now, pending)


def _child_of_ended(
    store: MemoryStore,
    parent: str,
    child: str,
    why: str | None,
    now: float,
    pending: dict[str, str],
) -> None:
    row = store.jobs.get(child)
    if row is None or row.state is not JobState.WAITING:
        return
    effect = on_parent_end(row.pipe, parent_succeeded=why is None)
    if effect is ChildEffect.COUNT_DOWN:
        row.waiting_on -= 1
        if row.waiting_on > 0:
            return
        if row.pipe in (PIPE_ONE, PIPE_ALL):
            row.payload = piped_payload(store, row.payload, store.parents.get(child, []), row.pipe)
        row.state = ready_state(row.run_at, now)
    elif effect is ChildEffect.HOLD:
        row.reason = sequence_blocked_reason(parent, why or "")
    elif effect is ChildEffect.RELEASE:
        row.payload = failure_payload(store, row.payload, parent, why or "")
        row.state, row.waiting_on = ready_state(row.run_at, now), 0
    else:
        row.reason = not_needed_reason(parent) if why is None else cancelled_reason(parent, why)
        row.state, row.finished_at, row.waiting_on = JobState.CANCELLED, now, 0
        pending[child] = WAS_CANCELLED


def sequence_release(store: MemoryStore, ids: Sequence[str], now: float) -> list[str]:
    """The held jobs among ``ids`` made ready (``sql/flow.py sequence_release``)."""
    released: list[str] = []
    for job_id in sorted(set(ids)):
        row = store.jobs.get(job_id)
        if row is None or row.state is not JobState.WAITING or row.pipe != PIPE_SEQUENCE:
            continue
        if not is_sequence_blocked(row.reason):
            continue
        row.state, row.waiting_on, row.reason = ready_state(row.run_at, now), 0, None
        released.append(job_id)
    return released


def apply_limits(store: MemoryStore, claimed: Sequence[Row], now: float) -> list[Row]:
    """The claimed rows that may start under their limit keys; the others go back to
    ``scheduled`` as :func:`conveyor.rules.limit_deferral` says (attempt given back)."""
    keyed = [r for r in claimed if r.limit_key is not None]
    if not keyed:
        return list(claimed)
    mine: dict[str, int] = {}
    for r in keyed:
        mine[r.limit_key or ""] = mine.get(r.limit_key or "", 0) + 1
    running = {key: -n for key, n in mine.items()}  # the ones held before this claim
    for row in store.jobs.values():
        if row.state is JobState.RUNNING and row.limit_key in running:
            running[row.limit_key] += 1
    kept: list[Row] = []
    for row in sorted(claimed, key=claim_order):
        key = row.limit_key
        if key is None:
            kept.append(row)
            continue
        concurrency, rate_count, period = merged_limit(
            store.limits.get(key, (None, None, None)), store.limit_overrides.get(key)
        )
        hits = store.limit_hits.setdefault(key, [])
        if period is not None:
            hits[:] = [at for at in hits if at > now - period]
        deferred = limit_deferral(
            concurrency=concurrency,
            running=running[key],
            rate_count=rate_count,
            period=period,
            starts=hits,
            now=now,
            jitter=random.random(),
        )
        if deferred is not None:
            row.state, row.run_at, row.attempt = JobState.SCHEDULED, deferred, row.attempt - 1
            row.worker_id = row.lease_until = None
            continue
        running[key] += 1
        if rate_count is not None and period is not None:
            hits.append(now)
        kept.append(row)
    return kept


def claim_order(row: Row | ClaimedJob) -> tuple[int, float, str]:
    """The order a claim takes ready jobs in (the SQL stores' ``ORDER BY``)."""
    return (-row.priority, row.run_at, row.id)


def delete(store: MemoryStore, ids: Sequence[str], now: float) -> int:
    """Delete jobs with their attempts, logs and edges; dependants of an unfinished one
    are cancelled first (it can never release them)."""
    present = [i for i in dict.fromkeys(ids) if i in store.jobs]
    unfinished = {i: WAS_DELETED for i in present if store.jobs[i].state is not JobState.SUCCEEDED}
    settle(store, (), unfinished, now)
    for job_id in present:
        del store.jobs[job_id]
        store.attempts.pop(job_id, None)
        store.logs.pop(job_id, None)
        store.forget_steps(job_id)
        for parent in store.parents.pop(job_id, ()):
            siblings = store.children.get(parent)
            if siblings is not None and job_id in siblings:
                siblings.remove(job_id)
        for child in store.children.pop(job_id, ()):
            if child in store.parents:
                store.parents[child] = [p for p in store.parents[child] if p != job_id]
    return len(present)
