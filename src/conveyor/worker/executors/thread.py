"""Thread pool: ``concurrency`` long-lived threads pulling from one queue.

Timeouts: a watchdog raises :class:`~conveyor.worker.runner.JobTimeout` inside the
task's thread at its deadline (``PyThreadState_SetAsyncExc``). That lands at the next
Python bytecode, so a task blocked inside a C call (a long ``time.sleep``, a socket
read without timeout) is interrupted only when the call returns. In every case the slot
stays taken and the job stays ``running`` (its lease extended) until the function really
returns; only then is the failure written and a retry scheduled, so a timed-out job never
runs at the same time as its own retry.

Example:
    >>> import conveyor
    >>> ex = ThreadExecutor(conveyor.App("sqlite:///:memory:"), 2)
    >>> ex.name
    'thread'
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from typing import TYPE_CHECKING

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext
from conveyor.worker.executors.base import DoneCallback, deliver
from conveyor.worker.executors.slots import SlotThreads
from conveyor.worker.outcome import Outcome
from conveyor.worker.runner import JobTimeout, run_sync, valid_timeout

if TYPE_CHECKING:
    from conveyor.app import App

log = logging.getLogger("conveyor.worker")


class _Watchdog:
    """Raises JobTimeout in threads whose job passed its deadline."""

    def __init__(self, daemon: bool = True) -> None:
        # daemon=False inside subinterpreters, where daemon threads are not allowed.
        self._cond = threading.Condition()
        self._heap: list[tuple[float, str]] = []
        self._armed: dict[str, int] = {}  # job id -> thread ident
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="conveyor-watchdog", daemon=daemon)
        self._thread.start()

    def arm(self, job_id: str, timeout: float) -> None:
        with self._cond:
            self._armed[job_id] = threading.get_ident()
            heapq.heappush(self._heap, (time.monotonic() + timeout, job_id))
            self._cond.notify()

    def disarm(self, job_id: str) -> None:
        with self._cond:
            ident = self._armed.pop(job_id, None)
            if ident is not None:
                # Clear a timeout that was raised but not yet delivered.
                _set_async_exc(ident, None)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _loop(self) -> None:
        with self._cond:
            while not self._stopped:
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, job_id = self._heap[0]
                delay = deadline - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(self._heap)
                ident = self._armed.get(job_id)
                if ident is not None:
                    log.warning("job %s timed out; interrupting its thread", job_id)
                    _set_async_exc(ident, JobTimeout)


def _set_async_exc(ident: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in thread ``ident`` at its next bytecode (``None`` clears a pending
    one). :mod:`ctypes` is imported here, by the first job with a timeout, rather than
    at start-up (~4 ms)."""
    import ctypes

    arg = ctypes.py_object(exc) if exc is not None else None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), arg)


class ThreadExecutor:
    """Runs sync tasks in threads (async tasks get a private loop per call)."""

    name = "thread"

    def __init__(self, app: App, concurrency: int) -> None:
        self._app = app
        self._threads = SlotThreads("thread", concurrency)
        self._done: DoneCallback | None = None
        self._watchdog: _Watchdog | None = None

    def start(self, done: DoneCallback) -> None:
        self._done = done
        self._watchdog = _Watchdog()
        self._threads.start(self._work)

    def start_inline(self) -> None:
        """Prepare for :meth:`run_one` in the caller's thread only (no pool threads): the
        worker's one-slot mode, where the fetcher runs each job itself."""
        self._watchdog = _Watchdog()

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None:
        self._threads.submit(job, ctx)

    def cancel(self, job_id: str) -> None:
        # Sync code cannot be cancelled from outside; the context flag (set by the
        # worker) is what the task can check.
        return None

    def dead_slots(self) -> list[str]:
        return self._threads.dead()

    def stop(self, timeout: float) -> None:
        self._threads.stop(timeout)
        if self._watchdog:
            self._watchdog.stop()

    def _work(self, n: int, ready: threading.Barrier, errors: list[BaseException]) -> None:
        ready.wait()  # nothing to open for a plain thread
        assert self._done is not None
        while True:
            item = self._threads.next()
            if item is None:
                return
            job, ctx = item
            try:
                outcome = self.run_one(job, ctx)
            except BaseException as exc:  # whatever escapes, the slot lives on
                outcome = Outcome.failed(exc)
            deliver(self._done, job, outcome)

    def run_one(self, job: ClaimedJob, ctx: JobContext) -> Outcome:
        """Run one job in the calling thread, its timeout watched (same guarantees as a
        pool thread: the watchdog interrupts whichever thread armed it)."""
        assert self._watchdog is not None
        outcome: Outcome | None = None
        task = self._app.tasks.get(job.task)
        # async tasks time out inside their own loop (asyncio.timeout), not here
        # (an invalid timeout is not armed: prepare() sends the job to dead with why)
        watched = (
            valid_timeout(job.timeout)
            and bool(job.timeout)
            and task is not None
            and not task.is_async
        )
        try:
            if watched:
                self._watchdog.arm(job.id, job.timeout or 0.0)
            outcome = run_sync(self._app, job, ctx)
        except JobTimeout as exc:  # delivered just outside the task's own frames
            outcome = outcome or Outcome.failed(exc)
        finally:
            if watched:
                self._disarm(job.id)
        return outcome

    def _disarm(self, job_id: str) -> None:
        assert self._watchdog is not None
        while True:
            try:
                self._watchdog.disarm(job_id)
                return
            except JobTimeout:  # a late delivery; once disarmed no other can come
                continue
