"""Workflows and unique jobs on any SQL store: inserting jobs with flow fields and
settling dependants when parents finish, as :mod:`conveyor.rules` decides.

Every function runs inside the caller's transaction, so a child becomes ready (or
cancelled) in the same commit as its parent's finish, and a unique key is settled with
the insert. Where the store has row locks (:attr:`Dialect.lock`), the key's holder and
a waiting child are read locked, and the store's ``job_insert_flow`` skips a key that
another transaction inserted meanwhile (the loser waits for the winner's commit, then
reads it as the holder); on SQLite the write transaction already excludes every other.

Example::

    with backend._write() as conn:
        ids = insert_flow(SQLITE, conn, params, time.time())
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from conveyor.backends.base import Dependency, JobInsertParams, join_of, waiting_step
from conveyor.backends.sql import fair
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.errors import JobNotFound
from conveyor.rules import (
    FAILED_AT_INSERT,
    PIPE_ALL,
    PIPE_ONE,
    PIPE_SEQUENCE,
    WAS_CANCELLED,
    ChildEffect,
    JobStory,
    cancelled_reason,
    debounced_run_at,
    failure_error,
    insert_decision,
    is_sequence_blocked,
    not_needed_reason,
    on_parent_end,
    ready_state,
    sequence_blocked_reason,
)


def _ready_state(run_at: float, now: float) -> str:
    return ready_state(run_at, now).value


def _by_id(d: Dialect, ex: Executor, columns: str, ids: Sequence[str]) -> dict[Any, Any]:
    """``{id: column}`` of the jobs among ``ids`` (``columns``: "id, <column>")."""
    found: dict[Any, Any] = {}
    for where, args in d.in_list("id", ids):
        found.update(
            ex.execute(d.sql(f"SELECT {columns} FROM jobs WHERE {where}"), args).fetchall()
        )
    return found


def _piped_payload(
    d: Dialect, ex: Executor, payload: str, parents: Sequence[str], pipe: int
) -> str:
    """Put the parents' results first in the child's arguments (chain: the one result;
    group callback: the list of results in order)."""
    stored = _by_id(d, ex, "id, result", parents)
    results = [json.loads(stored[p]) if stored.get(p) is not None else None for p in parents]
    data = json.loads(payload)
    first = results[0] if pipe == 1 else results
    data["args"] = [first, *data.get("args", [])]
    return json.dumps(data, separators=(",", ":"))


def _failure_payload(d: Dialect, ex: Executor, payload: str, parent: str, why: str) -> str:
    """Put what happened to the failed parent first in a failure handler's arguments."""
    query = d.sql("SELECT state, reason, error FROM jobs WHERE id = ?")

    def story(job_id: str) -> JobStory:
        row = ex.execute(query, (job_id,)).fetchone()
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


def _release_expired_key(d: Dialect, ex: Executor, p: JobInsertParams, now: float) -> None:
    # A finished holder whose window passed gives the key up (inside this transaction).
    ex.execute(
        d.sql(
            "UPDATE jobs SET unique_key = NULL WHERE task = ? AND unique_key = ? "
            "AND state IN ('succeeded', 'dead', 'cancelled', 'expired') "
            "AND (unique_until IS NULL OR unique_until <= ?)"
        ),
        (p.task, p.unique_key, now),
    )


def _holder(d: Dialect, ex: Executor, p: JobInsertParams, run_at: float, now: float) -> str | None:
    """The job holding ``p``'s unique key (locked where the store locks rows), after
    applying ``replace``."""
    row = ex.execute(
        d.sql(f"SELECT id, state, created_at FROM jobs WHERE task = ? AND unique_key = ?{d.lock}"),
        (p.task, p.unique_key),
    ).fetchone()
    if row is None:
        return None
    existing, state = str(row[0]), str(row[1])
    if p.on_conflict == "replace" and state in ("queued", "scheduled", "waiting"):
        run_at = debounced_run_at(run_at, float(row[2]), p.max_wait)
        # Debounce: newest arguments and run time win; a waiting job keeps waiting.
        new_state = state if state == "waiting" else _ready_state(run_at, now)
        ex.execute(
            d.sql(
                "UPDATE jobs SET payload = ?, run_at = ?, state = ?, unique_until = ? WHERE id = ?"
            ),
            (p.payload, run_at, new_state, p.unique_until, existing),
        )
    return existing


def insert_flow(
    d: Dialect, ex: Executor, params: Sequence[JobInsertParams], now: float
) -> list[str]:
    """Insert jobs with unique keys, parents or limits; returns the id that stands for
    each (the holder's on a unique conflict). See ``HotPath.job_insert_many``."""
    results: list[str] = []
    standing: dict[str, str] = {}  # id asked for -> id that stands (unique conflicts)
    for p in params:
        run_at = now if p.run_at is None else p.run_at
        holder = None
        if p.unique_key is not None:
            _release_expired_key(d, ex, p, now)
            holder = _holder(d, ex, p, run_at, now)
        if holder is None:
            parents = [standing.get(dep, dep) for dep in p.depends_on]
            if p.sequence_key is not None:
                parents = sequence_tail(d, ex, p.sequence_key, p.id)
            queued = (
                p.fair_key is not None and p.sequence_key is None and not parents and run_at <= now
            )
            if queued:  # its place in the queue's round (fair.py), queued whatever it is
                run_at = fair.place(d, ex, p.queue, str(p.fair_key), p.fair_weight, now)
            if _insert_one(d, ex, p, parents, run_at, now, queued):
                _link(d, ex, p, parents)
                holder = p.id
            else:
                # Another transaction inserted this key since we looked; its commit
                # (which the insert waited for) makes it the holder.
                holder = _holder(d, ex, p, run_at, now)
                if holder is None:  # it rolled back after all: our row was not written
                    raise RuntimeError(
                        f"unique key {p.unique_key!r} of {p.task} changed under the insert"
                    )
        standing[p.id] = holder
        results.append(holder)
    return results


def sequence_tail(d: Dialect, ex: Executor, key: str, job_id: str) -> list[str]:
    """The job a new job of sequence ``key`` waits on (none: the first, or the last one
    was deleted), after making ``job_id`` the key's tail. Where rows lock, the key's row
    is locked (a placeholder inserted first, so two first jobs of a key queue on it)."""
    row = None
    while row is None:  # None: the pruner deleted the key's row between the two (retry)
        ex.execute(d.sql(d.insert_ignore('sequences ("key", tail) VALUES (?, ?)')), (key, job_id))
        row = ex.execute(
            d.sql(f'SELECT tail FROM sequences WHERE "key" = ?{d.lock}'), (key,)
        ).fetchone()
    tail = str(row[0])
    if tail == job_id:
        return []
    ex.execute(d.sql('UPDATE sequences SET tail = ? WHERE "key" = ?'), (job_id, key))
    found = ex.execute(d.sql("SELECT 1 FROM jobs WHERE id = ?"), (tail,)).fetchone()
    return [tail] if found else []


def _insert_one(
    d: Dialect,
    ex: Executor,
    p: JobInsertParams,
    parents: Sequence[str],
    run_at: float,
    now: float,
    queued: bool = False,
) -> bool:
    """Write ``p``'s row in the state its parents decide (``queued``: placed in a fair
    round, queued even if that place is ahead of ``now``); False if a unique key that
    another transaction holds kept it out."""
    state, payload, reason, finished_at, waiting = (
        "queued" if queued else _ready_state(run_at, now),
        p.payload,
        None,
        None,
        0,
    )
    if parents:
        found = _by_id(d, ex, "id, state", parents)
        missing = [dep for dep in parents if dep not in found]
        if missing:
            raise JobNotFound(missing[0])
        decided = insert_decision(p.pipe, parents, [str(found[dep]) for dep in parents])
        waiting, reason = decided.waiting_on, decided.reason
        if decided.state == "waiting":
            state = "waiting"
        elif decided.state == "cancelled":
            state, finished_at = "cancelled", now
        elif decided.failure_of is not None:
            payload = _failure_payload(d, ex, payload, decided.failure_of, FAILED_AT_INSERT)
        elif decided.piped:
            payload = _piped_payload(d, ex, payload, parents, p.pipe)
    values = {
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
    }
    return ex.execute(d.queries["job_insert_flow"], values).rowcount == 1


def _link(d: Dialect, ex: Executor, p: JobInsertParams, parents: Sequence[str]) -> None:
    """The written job's edges to its parents, and its limit's settings."""
    if parents:
        ex.executemany(
            d.sql(d.insert_ignore("job_deps (parent_id, child_id, position) VALUES (?, ?, ?)")),
            [(parent, p.id, i) for i, parent in enumerate(parents)],
        )
    if p.limit is not None:
        lim = p.limit
        ex.execute(
            # "key" quoted: KEY is a reserved word on MariaDB (its sessions set ANSI_QUOTES).
            d.sql(
                'INSERT INTO limits ("key", concurrency, rate_count, rate_period) '
                "VALUES (?, ?, ?, ?)"
                + d.upsert('"key"', ["concurrency", "rate_count", "rate_period"])
            ),
            (lim.key, lim.concurrency, lim.rate_count, lim.rate_period),
        )


#: A waiting job whose waiting step names the event goes back to the queue.
_WAKE = (
    "UPDATE jobs SET state = 'queued', run_at = ? WHERE id = ? AND state = 'waiting' "
    "AND EXISTS (SELECT 1 FROM job_steps WHERE job_steps.job_id = jobs.id "
    "AND job_steps.state = 'waiting' AND job_steps.name = ?)"
)


def wake_waiting(d: Dialect, ex: Executor, job_id: str, event: str, now: float) -> bool:
    """Queue ``job_id`` if it waits in the step that waits for ``event`` (a sent event's
    ``wait_for``, or a join woken by its child's end: ``flow.settle``); in the caller's
    transaction. True when woken (the caller wakes workers)."""
    return ex.execute(d.sql(_WAKE), (now, job_id, waiting_step(event))).rowcount == 1


def settle(
    d: Dialect, ex: Executor, succeeded: Sequence[str], failed: Mapping[str, str], now: float
) -> int:
    """Move the dependants of finished parents as :func:`conveyor.rules.on_parent_end`
    says: one fewer parent to wait for (ready at zero, results piped), released with the
    parent's story (an on_failure handler), or cancelled with a reason, transitively, so
    a whole chain behind a failure is cancelled in one commit. Returns how many became
    ready, so the caller knows whether to wake workers. Children are visited in id
    order: two transactions lock shared children in the same order (no deadlock)."""
    pending: dict[str, str] = dict(failed)
    readied = 0
    for where, args in d.in_list("parent_id", succeeded):
        edges = ex.execute(
            d.sql(
                f"SELECT parent_id, child_id FROM job_deps WHERE {where} "
                "ORDER BY child_id, parent_id"
            ),
            args,
        ).fetchall()
        for parent, child in edges:
            readied += _dependant_of_ended(d, ex, str(parent), str(child), None, now, pending)
    query = d.sql("SELECT child_id FROM job_deps WHERE parent_id = ? ORDER BY child_id")
    while pending:
        parent, why = pending.popitem()
        for (child,) in ex.execute(query, (parent,)).fetchall():
            readied += _dependant_of_ended(d, ex, parent, str(child), why, now, pending)
    return readied


def _dependant_of_ended(
    d: Dialect, ex: Executor, parent: str, child: str, why: str | None, now: float,
    pending: dict[str, str],
) -> int:  # fmt: skip
    """A workflow child moves; a job joining the ended one (its mark ``join:<id>``,
    ``conveyor.join``) is woken in its join step, however the job ended."""
    joiner = join_of(child)
    if joiner is not None:
        return 1 if wake_waiting(d, ex, joiner, f"join:{parent}", now) else 0
    return _child_of_ended(d, ex, parent, child, why, now, pending)


def _child_of_ended(
    d: Dialect,
    ex: Executor,
    parent: str,
    child: str,
    why: str | None,
    now: float,
    pending: dict[str, str],
) -> int:
    """Apply one parent's end (``why`` None: it succeeded) to one waiting child; a child
    cancelled here joins ``pending`` so its own dependants follow. 1 if it became ready."""
    # Locked: two parents finishing at once count the child down one after the other.
    row = ex.execute(
        d.sql(
            "SELECT pipe, payload, run_at, waiting_on FROM jobs "
            f"WHERE id = ? AND state = 'waiting'{d.lock}"
        ),
        (child,),
    ).fetchone()
    if row is None:
        return 0
    pipe, payload, run_at = int(row[0]), str(row[1]), float(row[2])
    effect = on_parent_end(pipe, parent_succeeded=why is None)
    if effect is ChildEffect.COUNT_DOWN:
        # The count read with the row (locked, or under SQLite's write lock), not an
        # UPDATE ... RETURNING: MariaDB has none.
        ex.execute(d.sql("UPDATE jobs SET waiting_on = waiting_on - 1 WHERE id = ?"), (child,))
        left = int(row[3]) - 1
        if left > 0:
            return 0
        if pipe in (PIPE_ONE, PIPE_ALL):
            parents = [
                str(r[0])
                for r in ex.execute(
                    d.sql("SELECT parent_id FROM job_deps WHERE child_id = ? ORDER BY position"),
                    (child,),
                ).fetchall()
            ]
            payload = _piped_payload(d, ex, payload, parents, pipe)
        ex.execute(
            d.sql("UPDATE jobs SET state = ?, payload = ? WHERE id = ?"),
            (_ready_state(run_at, now), payload, child),
        )
        return 1
    if effect is ChildEffect.HOLD:  # held: the reason says behind which failed job
        reason = sequence_blocked_reason(parent, why or "")
        ex.execute(d.sql("UPDATE jobs SET reason = ? WHERE id = ?"), (reason, child))
        return 0
    if effect is ChildEffect.RELEASE:
        ex.execute(
            d.sql("UPDATE jobs SET state = ?, payload = ?, waiting_on = 0 WHERE id = ?"),
            (_ready_state(run_at, now), _failure_payload(d, ex, payload, parent, why or ""), child),
        )
        return 1
    reason = not_needed_reason(parent) if why is None else cancelled_reason(parent, why)
    ex.execute(
        d.sql(
            "UPDATE jobs SET state = 'cancelled', reason = ?, finished_at = ?, waiting_on = 0 "
            "WHERE id = ?"
        ),
        (reason, now, child),
    )
    pending[child] = WAS_CANCELLED
    return 0


def dependencies(d: Dialect, ex: Executor, ids: Sequence[str]) -> list[Dependency]:
    """The parents of each of ``ids``, by child then position."""
    found: list[Dependency] = []
    for where, args in d.in_list("child_id", ids):
        found += [
            Dependency(str(c), str(p), int(pos))
            for c, p, pos in ex.execute(
                d.sql(
                    "SELECT child_id, parent_id, position FROM job_deps "
                    f"WHERE {where} ORDER BY child_id, position"
                ),
                args,
            ).fetchall()
        ]
    return found


def sequence_release(d: Dialect, ex: Executor, ids: Sequence[str], now: float) -> list[str]:
    """The held jobs among ``ids`` (``waiting`` behind a failed job of a blocking
    sequence) made ready; the ids released, in id order."""
    released: list[str] = []
    for where, args in d.in_list("id", sorted(set(ids))):
        rows = ex.execute(
            d.sql(
                f"SELECT id, run_at, reason FROM jobs WHERE {where} AND state = 'waiting' "
                f"AND pipe = {PIPE_SEQUENCE} ORDER BY id{d.lock}"
            ),
            args,
        ).fetchall()
        for job_id, run_at, reason in rows:
            if not is_sequence_blocked(reason):
                continue
            ex.execute(
                d.sql(
                    "UPDATE jobs SET state = ?, waiting_on = 0, reason = NULL "
                    "WHERE id = ? AND state = 'waiting'"
                ),
                (_ready_state(float(run_at), now), job_id),
            )
            released.append(str(job_id))
    return released


def sequence_prune(d: Dialect, ex: Executor, limit: int) -> int:
    """Delete up to ``limit`` sequence rows whose last job succeeded or is gone (the
    next job of such a key waits on nothing either way); how many went. Each delete
    names the tail it read, so a row an insert moved on meanwhile stays (where rows
    lock, the delete re-reads the row after the insert's commit)."""
    rows = ex.execute(
        d.sql(
            'SELECT s."key", s.tail FROM sequences s LEFT JOIN jobs j ON j.id = s.tail '
            "WHERE j.id IS NULL OR j.state = 'succeeded' LIMIT ?"
        ),
        (limit,),
    ).fetchall()
    gone = 0
    for key, tail in rows:
        gone += ex.execute(
            d.sql('DELETE FROM sequences WHERE "key" = ? AND tail = ?'), (key, tail)
        ).rowcount
    return gone
