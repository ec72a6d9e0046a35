"""Heartbeat: proves the worker alive, extends its leases, delivers cancel requests.

Every ``heartbeat_interval`` (default 1 s) it first checks the pool (a dead executor
thread or event loop stops the worker with an error) and, on SQLite, that the store file
is still the one opened (deleted or replaced: stop, non-zero exit); then one write refreshes the worker's row and one
extends the lease of every job it runs; the answer carries cancel requests (delivered to
the job's context and executor) and claims the worker no longer holds (the job was
rescued: its eventual finish will be refused, so it is only logged).

Example::

    Heartbeat(worker, interval=1.0).start()
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from conveyor.backends.base import JobExtendLeasesParams
from conveyor.errors import StoreReplaced
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")


class Heartbeat(Looper):
    name = "heartbeat"

    def __init__(self, worker: Worker, interval: float) -> None:
        super().__init__(interval)
        self.worker = worker

    def tick(self) -> None:
        worker = self.worker
        worker.check_capacity()  # never heartbeat with slots the pool no longer has
        try:
            worker.beat()
        except StoreReplaced as exc:  # serving a file nobody else sees: stop, non-zero exit
            worker.fail(str(exc))
            return
        held = worker.held_claims()
        if not held:
            return
        statuses = worker.app.backend.job_extend_leases(JobExtendLeasesParams(worker.id, held))
        for status in statuses:
            if status.cancel_requested:
                worker.request_cancel(status.id)
            if not status.held:
                worker.mark_lost(status.id)
