"""Which flow-control services a worker runs (progress writer, periodic scheduler,
priority aging, search indexer),
chosen by the backend's declared ``features`` so a backend without them costs nothing.

Example::

    services += flow_services(worker)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")


def flow_services(worker: Worker) -> list[Looper]:
    features = worker.app.backend.features
    services: list[Looper] = []
    if "progress" in features:
        from conveyor.worker.services.progress import ProgressWriter

        services.append(ProgressWriter(worker))
    if worker.app.schedules and "periodic" not in features:
        log.error(
            "the %s backend does not support periodic jobs yet: %d schedule(s) will not fire",
            worker.app.backend.name,
            len(worker.app.schedules),
        )
    aging = worker.app.settings.priority_aging
    if aging and "aging" in features:
        from conveyor.worker.services.aging import Ager

        services.append(Ager(worker, aging))
    if "steps" in features:  # conveyor.wait_for's timeouts
        from conveyor.worker.services.deadlines import WaitDeadlines

        deadlines = WaitDeadlines(worker)
        worker.attempts.on_park = deadlines.expect  # its own parks: checked when due
        services.append(deadlines)
    if "search_index" in features:  # indexed after the fact, off the write path
        from conveyor.worker.services.search_indexer import SearchIndexer

        services.append(SearchIndexer(worker))
    if "periodic" in features and worker.app.schedules:
        from conveyor.worker.services.scheduler import Scheduler

        services.append(Scheduler(worker))
    return services
