"""The executor seam: how a worker runs claimed jobs, whatever the pool.

An executor receives a claimed job (its payload still the encoded JSON, so a process or
subinterpreter pool can ship it across without pickle) and reports exactly one
:class:`~conveyor.worker.outcome.Outcome` per job through the ``done`` callback. It never
touches storage: the worker turns outcomes into finish writes.

Example (the shape every pool follows)::

    executor.start(done=fetch.ended)  # the pooled fetch: Attempts.end, then the buffer
    executor.submit(job, ctx)        # returns at once
    executor.cancel(job.id)          # best effort: cancels async tasks
    executor.stop(timeout=5.0)       # after the worker stopped submitting
    executor.dead_slots()            # [] while every slot lives
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext
from conveyor.worker.outcome import Outcome

DoneCallback = Callable[[ClaimedJob, Outcome], None]

log = logging.getLogger("conveyor.worker")


class Executor(Protocol):
    """One pool of execution slots. The worker never submits more than ``concurrency``."""

    name: str

    def start(self, done: DoneCallback) -> None: ...

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None: ...

    def cancel(self, job_id: str) -> None: ...

    def stop(self, timeout: float) -> None: ...

    def dead_slots(self) -> list[str]:
        """What of the pool died under it (thread names, "event loop"): the worker stops
        with an error rather than heartbeat with capacity it no longer has."""
        ...


def deliver(done: DoneCallback, job: ClaimedJob, outcome: Outcome) -> None:
    """Report one outcome; a failure of the report itself is logged, never lets it kill
    the slot that ran the job (the worker's own bookkeeping turned it into a finish)."""
    try:
        done(job, outcome)
    except Exception:
        log.exception("recording the outcome of job %s failed", job.id)
