"""Workflows and unique jobs on SQLite: the SQL side of inserting jobs with flow fields
and of settling dependants when parents finish (decided by :mod:`conveyor.rules`).

Every function runs inside the caller's ``BEGIN IMMEDIATE`` transaction, so a child
becomes ready (or cancelled) in the same commit as its parent's finish, and a unique
key is settled atomically with the insert (the ``jobs_unique`` index is the backstop).

Example::

    with backend._write() as conn:
        results = insert_flow(conn, params, time.time())
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from conveyor.backends.base import Dependency, JobInsertParams
from conveyor.backends.sqlite import rows
from conveyor.backends.sqlite.connection import load_query
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

_INSERT = load_query("job_insert_flow")


def _ready_state(run_at: float, now: float) -> str:
    return ready_state(run_at, now).value


def _piped_payload(
    conn: sqlite3.Connection, payload: str, parents: Sequence[str], pipe: int
) -> str:
    """Put the parents' results first in the child's arguments (chain: the one result;
    group callback: the list of results in order)."""
    results = []
    for parent in parents:
        row = conn.execute("SELECT result FROM jobs WHERE id = ?", (parent,)).fetchone()
        results.append(json.loads(row[0]) if row and row[0] is not None else None)
    data = json.loads(payload)
    first = results[0] if pipe == 1 else results
    data["args"] = [first, *data.get("args", [])]
    return json.dumps(data, separators=(",", ":"))


def _failure_payload(conn: sqlite3.Connection, payload: str, parent: str, why: str) -> str:
    """Put what happened to the failed parent first in a failure handler's arguments."""

    def story(job_id: str) -> JobStory:
        row = conn.execute(
            "SELECT state, reason, error FROM jobs WHERE id = ?", (job_id,)
        ).fetchone()
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


def _unique_conflict(
    conn: sqlite3.Connection, p: JobInsertParams, run_at: float, now: float
) -> str | None:
    # A finished holder whose window passed gives the key up (inside this transaction).
    conn.execute(
        "UPDATE jobs SET unique_key = NULL WHERE task = ? AND unique_key = ? "
        "AND state IN ('succeeded', 'dead', 'cancelled', 'expired') "
        "AND (unique_until IS NULL OR unique_until <= ?)",
        (p.task, p.unique_key, now),
    )
    row = conn.execute(
        "SELECT id, state FROM jobs WHERE task = ? AND unique_key = ?", (p.task, p.unique_key)
    ).fetchone()
    if row is None:
        return None
    existing, state = str(row[0]), str(row[1])
    if p.on_conflict == "replace" and state in ("queued", "scheduled", "waiting"):
        # Debounce: newest arguments and run time win; a waiting job keeps waiting.
        new_state = state if state == "waiting" else _ready_state(run_at, now)
        conn.execute(
            "UPDATE jobs SET payload = ?, run_at = ?, state = ?, unique_until = ? WHERE id = ?",
            (p.payload, run_at, new_state, p.unique_until, existing),
        )
    return existing


def insert_flow(
    conn: sqlite3.Connection, params: Sequence[JobInsertParams], now: float
) -> list[str]:
    """Insert jobs with unique keys, parents or limits; returns the id that stands for
    each (the holder's on a unique conflict). See ``HotPath.job_insert_many``."""
    results: list[str] = []
    standing: dict[str, str] = {}  # id asked for -> id that stands (unique conflicts)
    for p in params:
        run_at = now if p.run_at is None else p.run_at
        if p.unique_key is not None:
            conflict = _unique_conflict(conn, p, run_at, now)
            if conflict is not None:
                standing[p.id] = conflict
                results.append(conflict)
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
            found = dict(
                conn.execute(
                    f"SELECT id, state FROM jobs WHERE id IN ({rows.placeholders(len(parents))})",
                    parents,
                ).fetchall()
            )
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
                payload = _failure_payload(conn, payload, decided.failure_of, FAILED_AT_INSERT)
            elif decided.piped:
                payload = _piped_payload(conn, payload, parents, p.pipe)
        conn.execute(
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
        conn.executemany(
            "INSERT OR IGNORE INTO job_deps (parent_id, child_id, position) VALUES (?, ?, ?)",
            [(parent, p.id, i) for i, parent in enumerate(parents)],
        )
        if p.limit is not None:
            lim = p.limit
            conn.execute(
                "INSERT INTO limits (key, concurrency, rate_count, rate_period) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET concurrency = excluded.concurrency, "
                "rate_count = excluded.rate_count, rate_period = excluded.rate_period",
                (lim.key, lim.concurrency, lim.rate_count, lim.rate_period),
            )
        standing[p.id] = p.id
        results.append(p.id)
    return results


def settle(
    conn: sqlite3.Connection, succeeded: Sequence[str], failed: Mapping[str, str], now: float
) -> None:
    """Move the dependants of finished parents as :func:`conveyor.rules.on_parent_end`
    says: one fewer parent to wait for (ready at zero, results piped), released with the
    parent's story (an on_failure handler), or cancelled with a reason, transitively, so
    a whole chain behind a failure is cancelled in one commit."""
    pending: dict[str, str] = dict(failed)
    for chunk in rows.chunks(list(succeeded)):
        marks = rows.placeholders(len(chunk))
        edges = conn.execute(
            f"SELECT parent_id, child_id FROM job_deps WHERE parent_id IN ({marks})", chunk
        ).fetchall()
        for parent, child in edges:
            _child_of_ended(conn, str(parent), str(child), None, now, pending)
    while pending:
        parent, why = pending.popitem()
        for (child,) in conn.execute(
            "SELECT child_id FROM job_deps WHERE parent_id = ?", (parent,)
        ).fetchall():
            _child_of_ended(conn, parent, str(child), why, now, pending)


def _child_of_ended(
    conn: sqlite3.Connection,
    parent: str,
    child: str,
    why: str | None,
    now: float,
    pending: dict[str, str],
) -> None:
    """Apply one parent's end (``why`` None: it succeeded) to one waiting child; a child
    cancelled here joins ``pending`` so its own dependants follow."""
    row = conn.execute(
        "SELECT pipe, payload, run_at FROM jobs WHERE id = ? AND state = 'waiting'", (child,)
    ).fetchone()
    if row is None:
        return
    pipe, payload, run_at = int(row[0]), str(row[1]), float(row[2])
    effect = on_parent_end(pipe, parent_succeeded=why is None)
    if effect is ChildEffect.COUNT_DOWN:
        left = conn.execute(
            "UPDATE jobs SET waiting_on = waiting_on - 1 WHERE id = ? RETURNING waiting_on",
            (child,),
        ).fetchone()[0]
        if left > 0:
            return
        if pipe:
            parents = [
                str(r[0])
                for r in conn.execute(
                    "SELECT parent_id FROM job_deps WHERE child_id = ? ORDER BY position",
                    (child,),
                )
            ]
            payload = _piped_payload(conn, payload, parents, pipe)
        conn.execute(
            "UPDATE jobs SET state = ?, payload = ? WHERE id = ?",
            (_ready_state(run_at, now), payload, child),
        )
    elif effect is ChildEffect.RELEASE:
        conn.execute(
            "UPDATE jobs SET state = ?, payload = ?, waiting_on = 0 WHERE id = ?",
            (_ready_state(run_at, now), _failure_payload(conn, payload, parent, why or ""), child),
        )
    else:
        reason = not_needed_reason(parent) if why is None else cancelled_reason(parent, why)
        conn.execute(
            "UPDATE jobs SET state = 'cancelled', reason = ?, finished_at = ?, waiting_on = 0 "
            "WHERE id = ?",
            (reason, now, child),
        )
        pending[child] = WAS_CANCELLED


def dependencies(conn: sqlite3.Connection, ids: Sequence[str]) -> list[Dependency]:
    found: list[Dependency] = []
    for chunk in rows.chunks(list(ids)):
        found += [
            Dependency(str(c), str(p), int(pos))
            for c, p, pos in conn.execute(
                "SELECT child_id, parent_id, position FROM job_deps "
                f"WHERE child_id IN ({rows.placeholders(len(chunk))}) ORDER BY child_id, position",
                chunk,
            ).fetchall()
        ]
    return found
