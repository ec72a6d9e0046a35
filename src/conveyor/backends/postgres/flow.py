"""Workflows and unique jobs on PostgreSQL: the SQL side of inserting jobs with flow
fields and of settling dependants when parents finish (decided by :mod:`conveyor.rules`,
the same calls as the SQLite backend's ``flow_writes``).

Every function runs inside the caller's transaction, so a child becomes ready (or
cancelled) in the same commit as its parent's finish. Unique keys: the holder is read
``FOR UPDATE`` and the insert is ``ON CONFLICT DO NOTHING`` on the ``jobs_unique`` index,
so two inserts of one key at once settle on one job (the loser waits for the winner's
commit, then reads it as the holder).

Example::

    with backend._tx() as cur:
        ids = insert_flow(cur, params, server_now(cur))
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.base import Dependency, JobInsertParams
from conveyor.backends.postgres.sql import NOW
from conveyor.errors import JobNotFound
from conveyor.rules import (
    FAILED_AT_INSERT,
    WAS_CANCELLED,
    ChildEffect,
    JobStory,
    cancelled_reason,
    failure_error,
    insert_decision,
    not_needed_reason,
    on_parent_end,
    ready_state,
)

Cursor = Any  # psycopg.Cursor[tuple[Any, ...]]; Any keeps psycopg out of import time

_INSERT = """
INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at,
                  created_at, timeout, lease, unique_key, unique_until, waiting_on, pipe,
                  limit_key, reason, finished_at, headers, expires_at)
VALUES (%(id)s, %(task)s, %(queue)s, %(state)s, %(priority)s, %(payload)s, %(max_attempts)s,
        %(run_at)s, %(created_at)s, %(timeout)s, %(lease)s, %(unique_key)s, %(unique_until)s,
        %(waiting_on)s, %(pipe)s, %(limit_key)s, %(reason)s, %(finished_at)s,
        %(headers)s, %(expires_at)s)
ON CONFLICT (task, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
RETURNING id
"""


def server_now(cur: Cursor) -> float:
    """The server's clock (epoch seconds), once per transaction that needs a value."""
    cur.execute(f"SELECT {NOW}")
    return float(cur.fetchone()[0])


def _ready_state(run_at: float, now: float) -> str:
    return ready_state(run_at, now).value


def _piped_payload(cur: Cursor, payload: str, parents: Sequence[str], pipe: int) -> str:
    """Put the parents' results first in the child's arguments (chain: the one result;
    group callback: the list of results in order)."""
    cur.execute("SELECT id, result FROM jobs WHERE id = ANY(%s)", (list(parents),))
    stored = dict(cur.fetchall())
    results = [json.loads(stored[p]) if stored.get(p) is not None else None for p in parents]
    data = json.loads(payload)
    first = results[0] if pipe == 1 else results
    data["args"] = [first, *data.get("args", [])]
    return json.dumps(data, separators=(",", ":"))


def _failure_payload(cur: Cursor, payload: str, parent: str, why: str) -> str:
    """Put what happened to the failed parent first in a failure handler's arguments."""

    def story(job_id: str) -> JobStory:
        cur.execute("SELECT state, reason, error FROM jobs WHERE id = %s", (job_id,))
        row = cur.fetchone()
        return (str(row[0]), row[1], row[2]) if row else None

    found = story(parent)
    error = failure_error(parent, story)  # behind a cancelled parent: the failed one's
    info = {
        "job_id": parent,
        "state": found[0] if found else "deleted",
        "reason": (found[1] if found and found[1] else why),
        "error": json.loads(error) if error else None,
    }
    data = json.loads(payload)
    data["args"] = [info, *data.get("args", [])]
    return json.dumps(data, separators=(",", ":"))


def _holder(cur: Cursor, p: JobInsertParams, run_at: float, now: float) -> str | None:
    """The job holding ``p``'s unique key (locked), after applying ``replace``."""
    cur.execute(
        "SELECT id, state FROM jobs WHERE task = %s AND unique_key = %s FOR UPDATE",
        (p.task, p.unique_key),
    )
    row = cur.fetchone()
    if row is None:
        return None
    existing, state = str(row[0]), str(row[1])
    if p.on_conflict == "replace" and state in ("queued", "scheduled", "waiting"):
        # Debounce: newest arguments and run time win; a waiting job keeps waiting.
        new_state = state if state == "waiting" else _ready_state(run_at, now)
        cur.execute(
            "UPDATE jobs SET payload = %s, run_at = %s, state = %s, unique_until = %s "
            "WHERE id = %s",
            (p.payload, run_at, new_state, p.unique_until, existing),
        )
    return existing


def _release_expired_key(cur: Cursor, p: JobInsertParams, now: float) -> None:
    # A finished holder whose window passed gives the key up (inside this transaction).
    cur.execute(
        "UPDATE jobs SET unique_key = NULL WHERE task = %s AND unique_key = %s "
        "AND state IN ('succeeded', 'dead', 'cancelled', 'expired') "
        "AND (unique_until IS NULL OR unique_until <= %s)",
        (p.task, p.unique_key, now),
    )


def insert_flow(cur: Cursor, params: Sequence[JobInsertParams], now: float) -> list[str]:
    """Insert jobs with unique keys, parents or limits; returns the id that stands for
    each (the holder's on a unique conflict). See ``HotPath.job_insert_many``."""
    results: list[str] = []
    standing: dict[str, str] = {}  # id asked for -> id that stands (unique conflicts)
    for p in params:
        run_at = now if p.run_at is None else p.run_at
        if p.unique_key is not None:
            _release_expired_key(cur, p, now)
            holder = _holder(cur, p, run_at, now)
            if holder is not None:
                standing[p.id] = holder
                results.append(holder)
                continue
        state, payload, reason, finished_at, waiting = (
            _ready_state(run_at, now),
            p.payload,
            None,
            None,
            0,
        )
        parents = [standing.get(d, d) for d in p.depends_on]
        if parents:
            cur.execute("SELECT id, state FROM jobs WHERE id = ANY(%s)", (parents,))
            found = dict(cur.fetchall())
            missing = [d for d in parents if d not in found]
            if missing:
                raise JobNotFound(missing[0])
            decided = insert_decision(p.pipe, parents, [str(found[d]) for d in parents])
            waiting, reason = decided.waiting_on, decided.reason
            if decided.state == "waiting":
                state = "waiting"
            elif decided.state == "cancelled":
                state, finished_at = "cancelled", now
            elif decided.failure_of is not None:
                payload = _failure_payload(cur, payload, decided.failure_of, FAILED_AT_INSERT)
            elif decided.piped:
                payload = _piped_payload(cur, payload, parents, p.pipe)
        cur.execute(
            _INSERT,
            {
                "id": p.id,
                "task": p.task,
                "queue": p.queue,
                "state": state,
                "priority": p.priority,
                "payload": payload,
                "max_attempts": p.max_attempts,
                "run_at": run_at,
                "created_at": now,
                "timeout": p.timeout,
                "lease": p.lease,
                "unique_key": p.unique_key,
                "unique_until": p.unique_until,
                "waiting_on": waiting,
                "pipe": p.pipe,
                "limit_key": p.limit.key if p.limit else None,
                "reason": reason,
                "finished_at": finished_at,
                "headers": p.headers,
                "expires_at": p.expires_at,
            },
        )
        if cur.fetchone() is None:
            # Another transaction inserted this key since we looked; its commit (which
            # ON CONFLICT waited for) makes it the holder.
            holder = _holder(cur, p, run_at, now)
            if holder is None:  # it rolled back after all: our row was not written
                raise RuntimeError(
                    f"unique key {p.unique_key!r} of {p.task} changed under the insert"
                )
            standing[p.id] = holder
            results.append(holder)
            continue
        if parents:
            cur.executemany(
                "INSERT INTO job_deps (parent_id, child_id, position) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [(parent, p.id, i) for i, parent in enumerate(parents)],
            )
        if p.limit is not None:
            lim = p.limit
            cur.execute(
                "INSERT INTO limits (key, concurrency, rate_count, rate_period) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET "
                "concurrency = excluded.concurrency, rate_count = excluded.rate_count, "
                "rate_period = excluded.rate_period",
                (lim.key, lim.concurrency, lim.rate_count, lim.rate_period),
            )
        standing[p.id] = p.id
        results.append(p.id)
    return results


def settle(cur: Cursor, succeeded: Sequence[str], failed: Mapping[str, str], now: float) -> int:
    """Move the dependants of finished parents as :func:`conveyor.rules.on_parent_end`
    says (see the SQLite twin, ``flow_writes.settle``); returns how many became ready,
    so the caller knows whether to wake workers."""
    pending: dict[str, str] = dict(failed)
    readied = 0
    if succeeded:
        cur.execute(
            "SELECT parent_id, child_id FROM job_deps WHERE parent_id = ANY(%s) "
            "ORDER BY child_id, parent_id",
            (list(succeeded),),
        )
        for parent, child in cur.fetchall():
            readied += _child_of_ended(cur, str(parent), str(child), None, now, pending)
    while pending:
        parent, why = pending.popitem()
        cur.execute(
            "SELECT child_id FROM job_deps WHERE parent_id = %s ORDER BY child_id", (parent,)
        )
        for (child,) in cur.fetchall():
            readied += _child_of_ended(cur, parent, str(child), why, now, pending)
    return readied


def _child_of_ended(
    cur: Cursor, parent: str, child: str, why: str | None, now: float, pending: dict[str, str]
) -> int:
    """Apply one parent's end (``why`` None: it succeeded) to one waiting child; a child
    cancelled here joins ``pending`` so its own dependants follow. 1 if it became ready."""
    # Locked: two parents finishing at once count the child down one after the other.
    cur.execute(
        "SELECT pipe, payload, run_at FROM jobs WHERE id = %s AND state = 'waiting' FOR UPDATE",
        (child,),
    )
    row = cur.fetchone()
    if row is None:
        return 0
    pipe, payload, run_at = int(row[0]), str(row[1]), float(row[2])
    effect = on_parent_end(pipe, parent_succeeded=why is None)
    if effect is ChildEffect.COUNT_DOWN:
        cur.execute(
            "UPDATE jobs SET waiting_on = waiting_on - 1 WHERE id = %s RETURNING waiting_on",
            (child,),
        )
        if cur.fetchone()[0] > 0:
            return 0
        if pipe:
            cur.execute(
                "SELECT parent_id FROM job_deps WHERE child_id = %s ORDER BY position", (child,)
            )
            parents = [str(r[0]) for r in cur.fetchall()]
            payload = _piped_payload(cur, payload, parents, pipe)
        cur.execute(
            "UPDATE jobs SET state = %s, payload = %s WHERE id = %s",
            (_ready_state(run_at, now), payload, child),
        )
        return 1
    if effect is ChildEffect.RELEASE:
        cur.execute(
            "UPDATE jobs SET state = %s, payload = %s, waiting_on = 0 WHERE id = %s",
            (_ready_state(run_at, now), _failure_payload(cur, payload, parent, why or ""), child),
        )
        return 1
    reason = not_needed_reason(parent) if why is None else cancelled_reason(parent, why)
    cur.execute(
        "UPDATE jobs SET state = 'cancelled', reason = %s, finished_at = %s, waiting_on = 0 "
        "WHERE id = %s",
        (reason, now, child),
    )
    pending[child] = WAS_CANCELLED
    return 0


def dependencies(cur: Cursor, ids: Sequence[str]) -> list[Dependency]:
    cur.execute(
        "SELECT child_id, parent_id, position FROM job_deps WHERE child_id = ANY(%s) "
        "ORDER BY child_id, position",
        (list(ids),),
    )
    return [Dependency(str(c), str(p), int(pos)) for c, p, pos in cur.fetchall()]
