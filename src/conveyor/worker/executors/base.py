"""The executor seam: how a worker runs claimed jobs, whatever the pool.

An executor receives a claimed job (its payload still the encoded JSON, so a process or
subinterpreter pool can ship it across without pickle) and reports exactly one
:class:`~conveyor.worker.outcome.Outcome` per job through the ``done`` callback. It never
touches storage: the worker turns outcomes into finish writes.

Example (the shape every pool follows)::

    executor.start(done=worker.on_outcome)
    executor.submit(job, ctx)        # returns at once
    executor.cancel(job.id)          # best effort: cancels async tasks
    executor.stop(timeout=5.0)       # after the worker stopped submitting
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext
from conveyor.worker.outcome import Outcome

DoneCallback = Callable[[ClaimedJob, Outcome], None]


class Executor(Protocol):
    """One pool of execution slots. The worker never submits more than ``concurrency``."""

    name: str

    def start(self, done: DoneCallback) -> None: ...

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None: ...

    def cancel(self, job_id: str) -> None: ...

    def stop(self, timeout: float) -> None: ...
