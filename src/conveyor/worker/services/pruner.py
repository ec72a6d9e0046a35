"""Pruner: deletes finished jobs older than the app's ``retention`` (default 7 days),
drops the results of tasks with a ``result_ttl`` once it passed, and sweeps jobs nobody
started before their ``expires`` to ``expired`` (``job_expire_due``), so that listings
and ``conveyor status`` do not show them waiting forever. It also forgets sequence
keys with no active job (``sequence_prune``: a key's last job succeeded or was purged). A claimed job past its expiry
never needs the sweep: its worker ends it before it starts (``Attempts.refusal``).

Every worker runs one, so retention needs no separate daemon; running it on several
workers at once is harmless (each purge is one short transaction over the
``jobs_finished`` index, at most ``BATCH`` jobs, repeated while a full batch came back).

Results: for each registered task with ``result_ttl``, ``job_clear_results`` clears
the results of its jobs that succeeded more than ``result_ttl`` ago (the jobs stay,
``succeeded``, until the retention). Each worker remembers where its last complete pass
ended and starts the next one there, so a tick reads only the jobs that finished since;
its first pass reads from the oldest. A result outlives its ttl by up to
``prune_interval``.

Example::

    Pruner(worker, interval=60.0).start()
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from conveyor.backends.base import (
    JobClearResultsParams,
    JobExpireDueParams,
    JobPurgeParams,
    SequencePruneParams,
)
from conveyor.options import seconds_of
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
        #: results cleared so far, over every task
        self.results_cleared = 0
        #: jobs swept to ``expired`` so far
        self.expired = 0
        #: sequence keys forgotten so far (``sequence_prune``)
        self.sequences_pruned = 0
        #: task name -> the ``finished_before`` of its last complete pass
        self._cleared_to: dict[str, float] = {}

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
        if "result_ttl" in backend.features:
            self.clear_results(time.time())
        if "expires" in backend.features:
            self.expire_due()
        if "sequences" in backend.features:
            self.prune_sequences()

    def prune_sequences(self) -> int:
        """Forget sequence keys with no active job (their last job succeeded or was
        purged above), so the store keeps no state for keys nobody uses any more."""
        backend = self.worker.app.backend
        total = 0
        for _ in range(MAX_BATCHES):
            if self._stop.is_set():
                break
            n = backend.sequence_prune(SequencePruneParams(limit=BATCH))
            total += n
            if n < BATCH:
                break
        self.sequences_pruned += total
        return total

    def expire_due(self) -> int:
        """Sweep unstarted jobs past their expiry to ``expired``; how many went."""
        backend = self.worker.app.backend
        total = 0
        for _ in range(MAX_BATCHES):
            if self._stop.is_set():
                break
            n = backend.job_expire_due(JobExpireDueParams(limit=BATCH))
            total += n
            if n < BATCH:
                break
        if total:
            self.expired += total
            log.info("pruner: %d job(s) expired before any worker started them", total)
        return total

    def clear_results(self, now: float) -> int:
        """One pass for every task with a ``result_ttl``, as of ``now``; how many results
        were cleared."""
        backend = self.worker.app.backend
        total = 0
        for name, task in list(self.worker.app.tasks.items()):
            ttl = task.options.result_ttl
            if ttl is None or self._stop.is_set():
                continue
            before = now - seconds_of("result_ttl", ttl)
            params = JobClearResultsParams(
                task=name,
                finished_before=before,
                finished_after=self._cleared_to.get(name),
                limit=BATCH,
            )
            for _ in range(MAX_BATCHES):
                n = backend.job_clear_results(params)
                total += n
                if n < BATCH:  # the window is done: the next pass starts where it ended
                    self._cleared_to[name] = before
                    break
        if total:
            self.results_cleared += total
            log.info("pruner: cleared %d result(s) older than their task's result_ttl", total)
        return total
