"""Wait deadlines: jobs parked by ``conveyor.wait_for(name, timeout=...)`` whose timeout
passed go back to ``queued`` (``backend.job_wake_due``), where their replay raises
``TimeoutError`` at the wait.

Cheap when idle: a store statement only when a job this worker parked is due (it is
told of each park: :meth:`WaitDeadlines.expect`), within :data:`CHECK_INTERVAL` of its
time, and once every :data:`SWEEP_INTERVAL` for the jobs other workers parked (a
worker that stopped since). A per-second statement cost a burst worker of no-op jobs
~19,000 instructions a job in the instruction budget (a valgrind run is slow, so it
ticks often); this costs a few hundred.

Example::

    deadlines = WaitDeadlines(worker)
    worker.attempts.on_park = deadlines.expect
    deadlines.start()
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from typing import TYPE_CHECKING

from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")

#: Seconds between looks at this worker's own deadlines (no store call unless one is
#: due), between sweeps for everyone's, and the most jobs woken per statement.
CHECK_INTERVAL = 0.25
SWEEP_INTERVAL = 30.0
BATCH = 500


class WaitDeadlines(Looper):
    name = "deadlines"

    def __init__(self, worker: Worker, interval: float = CHECK_INTERVAL) -> None:
        super().__init__(interval)
        self.worker = worker
        self._due: list[float] = []  # a heap of the deadlines of jobs parked here
        self._lock = threading.Lock()
        self._next_sweep = 0.0  # at once: jobs parked before this worker started

    def expect(self, deadline: float) -> None:
        """A job of this worker parked until ``deadline`` (epoch seconds)."""
        with self._lock:
            heapq.heappush(self._due, deadline)

    def tick(self) -> None:
        now = time.time()
        with self._lock:
            due = bool(self._due) and self._due[0] <= now
            while self._due and self._due[0] <= now:
                heapq.heappop(self._due)
        if not due and now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_INTERVAL
        woken = self.worker.app.backend.job_wake_due(BATCH)
        if woken:
            log.info("%d job(s) waited past their timeout: queued to time out", woken)
