"""Priority aging: for each queue of ``App(priority_aging={queue: seconds})``, a ready
job gains one priority for every that many seconds it waits (``job_age_many``), up to
the highest priority, so a stream of high-priority jobs cannot starve a low one forever.

Every worker runs it (a job is aged once per step whichever worker gets there first:
the store moves its ``run_at`` a step later as it raises the priority). It ticks four
times per shortest step, at most every 5 s.

Example::

    Ager(worker, {"reports": 60.0}).start()
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from conveyor.backends.base import JobAgeParams
from conveyor.options import PRIORITY_MAX
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")


class Ager(Looper):
    name = "ager"

    def __init__(self, worker: Worker, steps: Mapping[str, float]) -> None:
        super().__init__(min(5.0, max(0.05, min(steps.values()) / 4)))
        self.worker = worker
        self.steps = dict(steps)
        #: jobs that gained a priority so far
        self.aged = 0

    def tick(self) -> None:
        backend = self.worker.app.backend
        for queue, step in self.steps.items():
            if self._stop.is_set():
                return
            self.aged += backend.job_age_many(JobAgeParams(queue, step, PRIORITY_MAX))
