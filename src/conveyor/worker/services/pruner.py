"""Pruner: deletes finished jobs older than the app's ``retention`` (default 7 days).

Every worker runs one, so retention needs no separate daemon; running it on several
workers at once is harmless (each purge is one short transaction over the
``jobs_finished`` index, at most ``BATCH`` jobs, repeated while a full batch came back).

Example::

    Pruner(worker, interval=60.0).start()
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from conveyor.backends.base import JobPurgeParams
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")

#: Jobs deleted per transaction: small enough that claims never wait long behind it.
BATCH = 1000
#: At most this many batches per tick, so one tick never monopolises the store.
MAX_BATCHES = 20


class Pruner(Looper):
    name = "pruner"

    def __init__(self, worker: Worker, interval: float) -> None:
        super().__init__(interval)
        self.worker = worker
        self.pruned = 0

    def tick(self) -> None:
        backend = self.worker.app.backend
        cutoff = time.time() - self.worker.app.settings.retention
        total = 0
        for _ in range(MAX_BATCHES):
            if self._stop.is_set():
                break
            n = backend.job_purge(JobPurgeParams(finished_before=cutoff, limit=BATCH))
            total += n
            if n < BATCH:
                break
        if total:
            self.pruned += total
            log.info("pruner: deleted %d finished job(s) older than the retention", total)
