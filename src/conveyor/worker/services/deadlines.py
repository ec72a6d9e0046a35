"""Wait deadlines: jobs parked by ``conveyor.wait_for(name, timeout=...)`` whose timeout
passed go back to ``queued`` (``backend.job_wake_due``), where their replay raises
``TimeoutError`` at the wait.

Costs nothing while idle: the service sleeps until the earliest deadline of a job this
worker parked (it is told of each park, :meth:`WaitDeadlines.expect`, which wakes it)
or until its sweep for the jobs other workers parked (a worker that stopped since),
every :data:`SWEEP_INTERVAL`. A statement a second, or even a wake-up every 0.25 s,
cost a burst worker of no-op jobs thousands of instructions a job in the instruction
budget (a valgrind run is slow, so a timed loop ticks often).

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

#: Seconds between sweeps for every worker's parked jobs, and the most jobs woken per
#: statement.
SWEEP_INTERVAL = 30.0
BATCH = 500


class WaitDeadlines(Looper):
    name = "deadlines"

    def __init__(self, worker: Worker) -> None:
        super().__init__(SWEEP_INTERVAL)
        self.worker = worker
        self._due: list[float] = []  # a heap of the deadlines of jobs parked here
        self._lock = threading.Lock()
        self._next_sweep = 0.0  # at once: jobs parked before this worker started

    def expect(self, deadline: float) -> None:
        """A job of this worker parked until ``deadline`` (epoch seconds)."""
        with self._lock:
            heapq.heappush(self._due, deadline)
        self.nudge()  # to sleep until it, not until the next sweep

    def tick(self) -> None:
        now = time.time()
        with self._lock:
            due = bool(self._due) and self._due[0] <= now
            while self._due and self._due[0] <= now:
                heapq.heappop(self._due)
        if due or now >= self._next_sweep:
            if now >= self._next_sweep:
                self._next_sweep = now + SWEEP_INTERVAL
            woken = self.worker.app.backend.job_wake_due(BATCH)
            if woken:
                log.info("%d job(s) waited past their timeout: queued to time out", woken)
        with self._lock:  # sleep until the next deadline here, or the next sweep
            wake = min(self._due[0], self._next_sweep) if self._due else self._next_sweep
        self.interval = max(0.01, wake - time.time())
