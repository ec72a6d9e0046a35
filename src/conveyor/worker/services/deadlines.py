"""Wait deadlines: jobs parked by ``conveyor.wait_for(name, timeout=...)`` whose timeout
passed go back to ``queued`` (``backend.job_wake_due``), where their replay raises
``TimeoutError`` at the wait. One indexed statement every ``interval`` seconds; a job's
timeout fires within that interval of its time (the promoter's precision for sleeps).

Example::

    WaitDeadlines(worker).start()
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")

#: Seconds between sweeps, and the most jobs woken per statement.
DEADLINE_INTERVAL = 1.0
BATCH = 500


class WaitDeadlines(Looper):
    name = "deadlines"

    def __init__(self, worker: Worker, interval: float = DEADLINE_INTERVAL) -> None:
        super().__init__(interval)
        self.worker = worker

    def tick(self) -> None:
        woken = self.worker.app.backend.job_wake_due(BATCH)
        if woken:
            log.info("%d job(s) waited past their timeout: queued to time out", woken)
