"""Steering periodic schedules on any SQL store: pause, resume, "run now", and the
list's statement (``conveyor schedules``, the dashboard's ``/schedules``).

Each is one statement on the schedule's row of ``periodic_schedules`` (its ``paused``
and ``run_requested_at`` columns: SQLite ``schema_007.sql``, PostgreSQL
``schema_003.sql``, MariaDB ``schema.sql``). Workers obey them inside
:func:`~conveyor.backends.sql.periodic.periodic_fire`, in the fire's transaction, so a
pause stops every worker's next fire and a "run now" is enqueued once. A schedule the
store has never seen (no worker fired or planned it yet) is refused: ``False``.

Example::

    backend.periodic_pause(PeriodicPauseParams("nightly"))    # True: paused
    backend.periodic_run_request(PeriodicRunParams("nightly"))  # a worker enqueues it
"""

from __future__ import annotations

from conveyor.backends.base import PeriodicPauseParams, PeriodicResumeParams, PeriodicRunParams
from conveyor.backends.sql.store import SqlStore

#: The columns of ``periodic_list``, in ``decoding.periodic_record``'s order.
LIST = (
    "SELECT name, spec, last_slot, last_fired_at, last_job_id, next_slot, paused, "
    "run_requested_at FROM periodic_schedules ORDER BY name"
)


class SqlSchedules(SqlStore):
    """``periodic_pause``, ``periodic_resume``, ``periodic_run_request`` (feature
    ``periodic``), written once on the store's transaction hook."""

    def periodic_pause(self, params: PeriodicPauseParams) -> bool:
        return self._schedule_set_paused(params.name, 1)

    def periodic_resume(self, params: PeriodicResumeParams) -> bool:
        return self._schedule_set_paused(params.name, 0)

    def periodic_run_request(self, params: PeriodicRunParams) -> bool:
        d = self._dialect
        with self._ops_tx() as ex:
            # COALESCE: a second request before a worker took the first is the same one
            # (one run), and the worker holding the first's time still takes it.
            found = ex.execute(
                d.sql(
                    "UPDATE periodic_schedules SET run_requested_at = "
                    "COALESCE(run_requested_at, ?) WHERE name = ?"
                ),
                (d.clock(ex), params.name),
            )
            return found.rowcount == 1

    def _schedule_set_paused(self, name: str, paused: int) -> bool:
        d = self._dialect
        with self._ops_tx() as ex:
            found = ex.execute(
                d.sql("UPDATE periodic_schedules SET paused = ? WHERE name = ?"), (paused, name)
            )
            return found.rowcount == 1
