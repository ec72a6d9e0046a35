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
    the slots this call fired. See ``Periodic.periodic_fire``."""
    fired: list[float] = []
    last: tuple[float, str] | None = None
    claim_slot = d.sql(
        d.insert_ignore("periodic_slots (name, slot, job_id, fired_at) VALUES (?, ?, ?, ?)")
    )
    for slot, job in params.slots:
        if ex.execute(claim_slot, (params.name, slot, job.id, now)).rowcount != 1:
            continue  # another worker fired it
        if job.is_plain:
            insert_plain(job)
        else:
            flow.insert_flow(d, ex, [job], now)
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
        ex.execute(
            d.sql(
                "UPDATE periodic_schedules SET last_slot = ?, last_fired_at = ?, "
                "last_job_id = ? WHERE name = ? AND (last_slot IS NULL OR last_slot < ?)"
            ),
            (last[0], now, last[1], params.name, last[0]),
        )
    return fired
