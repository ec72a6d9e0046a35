"""Observers: the worker's internal hooks as jobs move (the event log uses them, and
:class:`~conveyor.worker.middleware_observer.MiddlewareObserver` turns them into the
public middleware hooks, ``conveyor/middleware.py``, that metrics and users register).

The worker keeps a list and calls each hook inline, on its own threads, so a hook must
be cheap and must not block (count, observe a histogram, hand a line to a non-blocking
log handler; no I/O). With no observers registered the hot path pays one truthiness
test per batch. :class:`BaseObserver` implements every hook as a no-op: subclass it and
override what you need.

Example::

    class Count(BaseObserver):
        n = 0
        def on_claimed(self, jobs): self.n += len(jobs)

    worker.observers.append(Count())

Applications use middleware (``app.add_middleware``) instead: observers are internal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from conveyor.backends.base import ClaimedJob, JobFinishParams, RescueResult

if TYPE_CHECKING:
    from conveyor.worker.outcome import Outcome
    from conveyor.worker.worker import Worker


class WorkerObserver(Protocol):
    def on_started(self, worker: Worker) -> None:
        """The worker registered and is about to claim its first jobs."""

    def on_claimed(self, jobs: Sequence[ClaimedJob]) -> None:
        """Jobs this worker just claimed (they start now)."""

    def on_finished(
        self, job: ClaimedJob, params: JobFinishParams, outcome: Outcome | None = None
    ) -> None:
        """An attempt ended; ``params.kind`` says how (before the write is committed);
        ``outcome`` is what the pool produced (its ``error`` the exception)."""

    def on_rescued(self, results: Sequence[RescueResult]) -> None:
        """Jobs this worker's rescuer took back from dead workers."""

    def on_stopping(self, running: int, timeout: float, hard: bool) -> None:
        """Shutdown began: ``running`` jobs get up to ``timeout`` seconds (none if
        ``hard``) before they are released."""

    def on_released(self, jobs: Sequence[ClaimedJob], started: bool) -> None:
        """Jobs given back to their queue at shutdown (attempt not counted); ``started``
        is False for prefetched jobs that never ran."""


class BaseObserver:
    """Every hook of :class:`WorkerObserver`, doing nothing."""

    def on_started(self, worker: Worker) -> None:
        pass

    def on_claimed(self, jobs: Sequence[ClaimedJob]) -> None:
        pass

    def on_finished(
        self, job: ClaimedJob, params: JobFinishParams, outcome: Outcome | None = None
    ) -> None:
        pass

    def on_rescued(self, results: Sequence[RescueResult]) -> None:
        pass

    def on_stopping(self, running: int, timeout: float, hard: bool) -> None:
        pass

    def on_released(self, jobs: Sequence[ClaimedJob], started: bool) -> None:
        pass
