"""Observers: small typed hooks a worker calls as jobs move (metrics use them).

The worker keeps a list and calls each hook inline, so a hook must be cheap and must not
block (count, observe a histogram; no I/O). With no observers registered the hot path
pays one truthiness test per batch.

Example::

    class Count:
        n = 0
        def on_claimed(self, jobs): self.n += len(jobs)
        def on_finished(self, job, params): pass
        def on_rescued(self, results): pass

    worker.observers.append(Count())
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from conveyor.backends.base import ClaimedJob, JobFinishParams, RescueResult


class WorkerObserver(Protocol):
    def on_claimed(self, jobs: Sequence[ClaimedJob]) -> None:
        """Jobs this worker just claimed (they start now)."""

    def on_finished(self, job: ClaimedJob, params: JobFinishParams) -> None:
        """An attempt ended; ``params.kind`` says how (before the write is committed)."""

    def on_rescued(self, results: Sequence[RescueResult]) -> None:
        """Jobs this worker's rescuer took back from dead workers."""
