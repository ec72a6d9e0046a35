"""Fair queues on any SQL store: where a ready job of a fair key goes in its queue's
round, as :func:`conveyor.rules.fair_place` decides, inside the insert's transaction.

The place is the job's ``run_at`` (the claim takes queued jobs by priority, then
``run_at``), so the claim, its index and every store's claim statement stay as they
are, and a queue without fair keys pays nothing. The key's row in ``fair_keys`` is
locked where rows lock (a placeholder inserted first, so two first jobs of a key queue
on it); the queue's head is the job the claim would take next (the ``jobs_ready``
index, one row).

Example::

    run_at = place(SQLITE, conn, "default", "tenant-a", 1.0, time.time())
"""

from __future__ import annotations

from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.rules import fair_place

#: ``last_at`` of a key's placeholder row: no job placed yet.
_NONE = -1.0


def place(d: Dialect, ex: Executor, queue: str, key: str, weight: float, now: float) -> float:
    """The ``run_at`` of a job of ``key`` ready now in ``queue``; the key's last place
    moves to it."""
    ex.execute(
        d.sql(d.insert_ignore('fair_keys (queue, "key", last_at) VALUES (?, ?, ?)')),
        (queue, key, _NONE),
    )
    row = ex.execute(
        d.sql(f'SELECT last_at FROM fair_keys WHERE queue = ? AND "key" = ?{d.lock}'),
        (queue, key),
    ).fetchone()
    last = float(row[0])
    head = ex.execute(
        d.sql(
            "SELECT run_at FROM jobs WHERE state = 'queued' AND queue = ? "
            "ORDER BY priority DESC, run_at, id LIMIT 1"
        ),
        (queue,),
    ).fetchone()
    at = fair_place(
        None if last == _NONE else last, None if head is None else float(head[0]), now, weight
    )
    ex.execute(
        d.sql('UPDATE fair_keys SET last_at = ? WHERE queue = ? AND "key" = ?'), (at, queue, key)
    )
    return at
