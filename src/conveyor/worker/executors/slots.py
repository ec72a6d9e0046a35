"""``SlotThreads``: the shape every slot-based pool shares.

One long-lived thread per execution slot, all fed from one queue. A slot thread first
opens what it runs jobs in (a child process, a subinterpreter, or nothing for plain
threads), then waits at a barrier: the pool has started only once every slot is ready,
and a slot that failed to open makes ``start`` report it, so a worker fails at start
rather than in the middle of a job. Stopping puts one sentinel per slot and joins.

A job submitted by a slot thread itself (the worker's callback, run in the slot that just
ended a job, starting the next prefetched one in the slot it freed) stays with that
thread: it runs next there, with no hand-off through the queue to another thread (one
wake-up and two thread switches less per job when jobs are short; bench/HOTPATH.md).

Example:
    >>> slots = SlotThreads("demo", 2)
    >>> def slot(n, ready, errors):
    ...     ready.wait()
    ...     while slots.next() is not None:
    ...         pass
    >>> slots.start(slot)
    []
    >>> slots.stop(1.0)
    0
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext

Item = tuple[ClaimedJob, JobContext]
#: A slot's body: (slot number, the start barrier, the shared list of start errors).
SlotBody = Callable[[int, threading.Barrier, list[BaseException]], None]


class SlotThreads:
    """``count`` daemon threads named ``conveyor-<name>-<n>`` sharing one job queue."""

    def __init__(self, name: str, count: int) -> None:
        self._name = name
        self._count = count
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        #: per slot thread: ``mine`` (True once it asked for a job) and ``kept`` (the
        #: job it submitted itself, to run next)
        self._local = threading.local()

    def start(self, body: SlotBody) -> list[BaseException]:
        """Start every slot and wait until each passed the barrier; the start errors."""
        errors: list[BaseException] = []
        ready = threading.Barrier(self._count + 1)
        for n in range(self._count):
            thread = threading.Thread(
                target=body,
                args=(n, ready, errors),
                name=f"conveyor-{self._name}-{n}",
                daemon=True,
            )
            thread.start()
            self._threads.append(thread)
        ready.wait()
        return errors

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None:
        """Queue a job for a free slot. Called from a slot thread (its job just ended,
        so its slot is the one free), the job is kept for that thread's next turn."""
        local = self._local
        if getattr(local, "mine", False) and local.kept is None:
            local.kept = (job, ctx)
        else:
            self._queue.put((job, ctx))

    def next(self) -> Item | None:
        """The next job for the calling slot (one it submitted itself first); ``None``
        means stop."""
        local = self._local
        kept: Item | None = getattr(local, "kept", None)
        if kept is not None:
            local.kept = None
            return kept
        local.mine, local.kept = True, None
        return self._queue.get()

    def dead(self) -> list[str]:
        """Names of slot threads that died while the pool runs (none, normally: every
        slot body catches what a job raises)."""
        return [thread.name for thread in self._threads if not thread.is_alive()]

    def stop(self, timeout: float) -> int:
        """Ask every slot to stop, wait up to ``timeout``; how many are still running."""
        for _ in self._threads:
            self._queue.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return sum(thread.is_alive() for thread in self._threads)
