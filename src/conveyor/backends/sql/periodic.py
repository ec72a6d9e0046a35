"""Periodic schedules on any SQL store: fire the due slots of one schedule exactly once
across workers, and record where the schedule stands.

The primary key ``(name, slot)`` of ``periodic_slots`` makes a slot fire once: the
insert-or-ignore of a second worker writes nothing (on PostgreSQL it waits for the
first's commit, then does nothing), so only the worker whose slot row was written
enqueues the slot's job, in the same transaction.

Example::

    with backend._write() as conn:
        fired = periodic_fire(SQLITE, conn, params, now, lambda job: insert(conn, job))
"""

from __future__ import annotations

from collections.abc import Callable

from conveyor.backends.base import JobInsertParams, PeriodicFireParams
from conveyor.backends.sql import flow
from conveyor.backends.sql.dialect import Dialect, Executor

#: Slot rows older than this before the oldest slot being fired are pruned (seconds).
#: Only slots after the schedule's last fired one are ever fired again, so this is slack
#: for a worker that stalls between reading the schedule and firing.
SLOT_RETENTION = 86400.0


def periodic_fire(
    d: Dialect,
    ex: Executor,
    params: PeriodicFireParams,
    now: float,
    insert_plain: Callable[[JobInsertParams], None],
) -> list[float]:
    """Fire ``params``' slots that no worker fired yet (their jobs enqueued: plain ones
    by ``insert_plain``, the store's fast insert, the rest by the flow insert); returns
    the slots this call fired. See ``Periodic.periodic_fire``.

    A paused schedule (``periodic_pause``, read under the row's lock where rows lock)
    fires none: its due slots are recorded as the last one, so a resume does not catch
    them up. A pending "run now" (``params.run``) is enqueued once whatever the pause.
    """
    fired: list[float] = []
    last: tuple[float, str] | None = None

    def enqueue(job: JobInsertParams) -> None:
        if job.is_plain:
            insert_plain(job)
        else:
            flow.insert_flow(d, ex, [job], now)

    claim_slot = d.sql(
        d.insert_ignore("periodic_slots (name, slot, job_id, fired_at) VALUES (?, ?, ?, ?)")
    )
    paused = _paused(d, ex, params.name)
    for slot, job in [] if paused else params.slots:
        if ex.execute(claim_slot, (params.name, slot, job.id, now)).rowcount != 1:
            continue  # another worker fired it
        enqueue(job)
        fired.append(slot)
        last = (slot, job.id)
    ex.execute(
        d.sql(
            "INSERT INTO periodic_schedules (name, spec, next_slot) VALUES (?, ?, ?)"
            + d.upsert("name", ["spec", "next_slot"])
        ),
        (params.name, params.spec, params.next_slot),
    )
    if fired:
        ex.execute(
            d.sql("DELETE FROM periodic_slots WHERE name = ? AND slot < ?"),
            (params.name, min(fired) - SLOT_RETENTION),
        )
    if last is not None:
        _record_fired(d, ex, params.name, last, now)
    if paused and params.slots:
        _record_skipped(d, ex, params.name, max(slot for slot, _ in params.slots))
    if params.run is not None and _take_run_request(d, ex, params.name, params.run[0]):
        enqueue(params.run[1])
        ex.execute(
            d.sql(
                "UPDATE periodic_schedules SET last_fired_at = ?, last_job_id = ? WHERE name = ?"
            ),
            (now, params.run[1].id, params.name),
        )
    return fired


_LAST_SLOT_SET = "UPDATE periodic_schedules SET last_slot = ? "


def _paused(d: Dialect, ex: Executor, name: str) -> bool:
    """Whether schedule ``name`` is paused, its row locked until commit where rows lock
    (a pause waits for a fire in progress, and the next fire sees it)."""
    row = ex.execute(
        d.sql("SELECT paused FROM periodic_schedules WHERE name = ?" + d.lock), (name,)
    ).fetchone()
    return row is not None and str(row[0]) == "1"


def _record_skipped(d: Dialect, ex: Executor, name: str, skipped: float) -> None:
    """A paused schedule's due slots become its last one: not caught up after a resume."""
    ex.execute(
        d.sql(_LAST_SLOT_SET + "WHERE name = ? AND (last_slot IS NULL OR last_slot < ?)"),
        (skipped, name, skipped),
    )


def _record_fired(d: Dialect, ex: Executor, name: str, last: tuple[float, str], now: float) -> None:
    ex.execute(
        d.sql(
            _LAST_SLOT_SET + ", last_fired_at = ?, last_job_id = ? "
            "WHERE name = ? AND (last_slot IS NULL OR last_slot < ?)"
        ),
        (last[0], now, last[1], name, last[0]),
    )


def _take_run_request(d: Dialect, ex: Executor, name: str, requested_at: float) -> bool:
    """Clear the "run now" request this caller read; True for the one caller that did
    (exactly once across workers: a second sees the request gone)."""
    taken = ex.execute(
        d.sql(
            "UPDATE periodic_schedules SET run_requested_at = NULL "
            "WHERE name = ? AND run_requested_at = ?"
        ),
        (name, requested_at),
    )
    return taken.rowcount == 1
