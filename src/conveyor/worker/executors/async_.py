"""Async pool: every job is a task on one event loop.

``async def`` tasks run on the loop: a timeout cancels them (``asyncio.timeout``) and a
cancel request cancels them at their next ``await``. Sync tasks run on a fixed pool of
daemon threads (a stopped worker never waits for them): a cancel request sets
``current_job().cancel_requested`` but their timeout is not enforced (use the thread
pool for those).

The loop is the executor's own (a thread), or the caller's when the worker runs inside
an existing loop (``await worker.arun()``).

Example:
    >>> import conveyor
    >>> AsyncExecutor(conveyor.App("sqlite:///:memory:")).name
    'async'
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext
from conveyor.worker.executors.base import DoneCallback, deliver
from conveyor.worker.executors.daemon_pool import DaemonThreadPool
from conveyor.worker.outcome import Outcome
from conveyor.worker.runner import run_async

if TYPE_CHECKING:
    from conveyor.app import App


class AsyncExecutor:
    """Runs jobs as asyncio tasks."""

    name = "async"

    def __init__(
        self, app: App, loop: asyncio.AbstractEventLoop | None = None, concurrency: int = 10
    ) -> None:
        self._app = app
        # Sync tasks run on daemon threads: a task ignoring cancellation must not keep a
        # stopped worker process from exiting (the default executor is joined at exit).
        self._sync_pool = DaemonThreadPool(concurrency)
        self._loop = loop
        self._own_loop = loop is None
        self._thread: threading.Thread | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._done: DoneCallback | None = None

    def start(self, done: DoneCallback) -> None:
        self._done = done
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="conveyor-async", daemon=True
            )
            self._thread.start()

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._spawn, job, ctx)

    def _spawn(self, job: ClaimedJob, ctx: JobContext) -> None:
        assert self._loop is not None
        self._tasks[job.id] = self._loop.create_task(self._run(job, ctx))

    async def _run(self, job: ClaimedJob, ctx: JobContext) -> None:
        assert self._done is not None
        try:
            outcome = await run_async(self._app, job, ctx, self._sync_pool.run)
        except asyncio.CancelledError:
            outcome = Outcome.cancelled()
        except BaseException as exc:  # nothing may escape onto the loop
            outcome = Outcome.failed(exc)
        finally:
            self._tasks.pop(job.id, None)
        deliver(self._done, job, outcome)

    def dead_slots(self) -> list[str]:
        """The event loop, when its thread (or the caller's loop) stopped under us."""
        loop = self._loop
        if loop is None:
            return []
        if loop.is_closed() or (self._thread is not None and not self._thread.is_alive()):
            return ["event loop"]
        return []

    def cancel(self, job_id: str) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def _cancel() -> None:
            task = self._tasks.get(job_id)
            if task is not None:
                task.cancel()

        loop.call_soon_threadsafe(_cancel)

    def stop(self, timeout: float) -> None:
        loop = self._loop
        if loop is None or not self._own_loop or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout)
