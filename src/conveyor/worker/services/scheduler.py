"""Scheduler: enqueues the due slots of the app's periodic schedules.

Every worker runs one; they do not coordinate. Each tick reads the schedules' last fired
slots (one read), works out the due slots per ``catch_up`` and hands them to
``backend.periodic_fire``, which enqueues a slot only if no worker did (a unique key on
(schedule, slot), in the insert's transaction). Writes happen only when a slot is due
or the next firing time shown by ``conveyor status`` changed, or an operator asked for
a run now. A paused schedule's slots are skipped by the store itself (``periodic_fire``),
so every worker obeys a pause at its next fire.

Example::

    Scheduler(worker).start()
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from conveyor.backends.base import PeriodicFireParams
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

#: Seconds between scheduler ticks: a slot fires at most this late (plus the claim).
SCHEDULER_INTERVAL = 0.25


class Scheduler(Looper):
    name = "scheduler"

    def __init__(self, worker: Worker, interval: float = SCHEDULER_INTERVAL) -> None:
        super().__init__(interval)
        self.worker = worker

    def tick(self) -> None:
        app = self.worker.app
        backend = app.backend
        records = {r.name: r for r in backend.periodic_list()}
        now = time.time()
        for schedule in app.schedules.values():
            record = records.get(schedule.name)
            slots = schedule.due_slots(record.last_slot if record else None, now)
            next_slot = schedule.next_after(max(now, slots[-1]) if slots else now)
            # "run now" (conveyor schedules run): handed to the store with the request's
            # time, which enqueues it once however many workers see it
            requested = record.run_requested_at if record is not None else None
            run = None if requested is None else (requested, schedule.job_params())
            if (
                slots
                or run is not None
                or record is None
                or record.next_slot != next_slot
                or record.spec != schedule.spec
            ):
                backend.periodic_fire(
                    PeriodicFireParams(
                        schedule.name,
                        schedule.spec,
                        [(slot, schedule.job_params()) for slot in slots],
                        next_slot,
                        run=run,
                    )
                )
