"""Progress writer: stores what running tasks reported with ``current_job().progress``.

Tasks only set a value in memory (never blocking); this service takes the latest value
of every running job every ``interval`` seconds and writes them all in one backend
call. So a job's progress is written at most ``1 / interval`` times a second
(``PROGRESS_INTERVAL`` = 0.25 s: 4/s), whatever the task does, and nothing at all is
written while no task reports progress.

Example::

    ProgressWriter(worker).start()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conveyor.backends.base import JobProgressParams
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

#: Seconds between progress writes (the per-job throttle).
PROGRESS_INTERVAL = 0.25


class ProgressWriter(Looper):
    name = "progress"

    def __init__(self, worker: Worker, interval: float = PROGRESS_INTERVAL) -> None:
        super().__init__(interval)
        self.worker = worker

    def tick(self) -> None:
        updates = [
            JobProgressParams(job_id, token, value[0], value[1])
            for job_id, token, ctx in self.worker.running_contexts()
            if (value := ctx.take_progress()) is not None
        ]
        if updates:
            self.worker.app.backend.job_progress_many(updates)

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)
        self.tick()  # the last values reported before shutdown
