"""Rescuer: gives the jobs of dead workers back to the queue (or to ``dead``).

Same host: a worker whose PID is gone (or reused by another process, told apart by the
process start time) is dead at once. Any host: a worker whose heartbeat is older than
``heartbeat_ttl`` is dead; the backend re-checks that inside its transaction or script,
so a live claim is never requeued. A rescue counts an attempt; past ``max_rescues`` the
job goes to ``dead`` with reason "worker lost". One worker row written around the API
(a ``queues`` that is not JSON) is skipped by the pid rule and logged once; the others
are still rescued.

Example::

    Rescuer(worker, interval=2.0).start()
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from conveyor.backends.base import JobRescueParams, WorkerInfo
from conveyor.rowtext import printable
from conveyor.worker.procinfo import pid_alive
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")


class Rescuer(Looper):
    name = "rescuer"

    def __init__(self, worker: Worker, interval: float) -> None:
        super().__init__(interval)
        self.worker = worker
        #: ids of odd worker rows already logged (each is logged once, not every tick)
        self._odd: set[str] = set()

    def _trusted(self, workers: list[WorkerInfo]) -> list[WorkerInfo]:
        """The rows whose pid can be believed. A row written around the API (a ``queues``
        that is not JSON, a text pid) is skipped by the pid rule, logged once: its jobs
        are still rescued once its heartbeat is older than ``heartbeat_ttl``."""
        trusted = []
        for w in workers:
            if not w.problems:
                trusted.append(w)
            elif w.id not in self._odd:
                self._odd.add(w.id)
                log.warning(
                    "rescuer: skipping worker row %r (%s); its jobs are rescued once its "
                    "heartbeat is older than heartbeat_ttl",
                    printable(w.id),
                    "; ".join(w.problems),
                )
        return trusted

    def tick(self) -> None:
        worker = self.worker
        backend = worker.app.backend
        settings = worker.app.settings
        dead = [
            w.id
            for w in self._trusted(backend.worker_list())
            if w.id != worker.id
            and w.host == worker.info.host
            and not pid_alive(w.pid, w.pid_started)
        ]
        rescued = backend.job_rescue(
            JobRescueParams(
                dead_worker_ids=dead,
                stale_before=time.time() - settings.heartbeat_ttl,
                max_rescues=settings.max_rescues,
            )
        )
        if rescued:  # the event log (an observer) prints one line per rescued job
            for observer in worker.observers:
                observer.on_rescued(rescued)
