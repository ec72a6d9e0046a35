"""One attempt of a claimed job, run in the caller as the thread pool runs it.

The testing modes and ``task.execute`` claim jobs from a memory store and run each here:
the thread pool's own ``run_one`` (``run_sync``: decode, ``current_job()``, the
watchdog for a sync task's ``timeout``, ``asyncio.timeout`` for an async one), then the
worker's ``finish_params`` (the task's ``Backoff`` and ``retry_delay`` hook) turns the
:class:`~conveyor.worker.outcome.Outcome` into the finish the store applies by
:data:`conveyor.rules.FINISH`. Nothing here decides where a job goes.

Example:
    >>> import conveyor
    >>> from conveyor.backends.base import ClaimedJob
    >>> app = conveyor.App("memory://")
    >>> @app.task(name="double")
    ... def double(x: int) -> int:
    ...     return 2 * x
    >>> job = ClaimedJob("j", "double", "q", '{"args":[21],"kwargs":{}}', 1, 3, 1, None,
    ...                  30.0, 0.0, 0.0, 0, 0)
    >>> runner = Runner(app)
    >>> runner.attempt(job)[0].result
    '42'
    >>> runner.close()
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from conveyor.backends.base import Backend, ClaimedJob, JobFinishParams
from conveyor.context import JobContext, context_of
from conveyor.durable import link
from conveyor.rules import EXPIRED_REASON, is_expired

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.executors.thread import ThreadExecutor
    from conveyor.worker.outcome import Outcome

#: The worker id the attempts of the testing modes are claimed and recorded under.
WORKER_ID = "testing"


class Runner:
    """Runs attempts as the thread pool does (its watchdog started on first need)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self._executor: ThreadExecutor | None = None
        self._lock = threading.Lock()

    def attempt(
        self, job: ClaimedJob, store: Backend | None = None
    ) -> tuple[JobFinishParams, Outcome, tuple[float | None, str | None] | None]:
        """Run one claimed attempt: the finish to write, the outcome, and the last
        progress the task reported (``None``: none). ``store``: the one it was claimed
        from, where its durable steps are kept."""
        from conveyor.worker.outcome import Outcome, finish_params

        ctx = context_of(job)
        if store is not None:
            ctx._durable = link(store, job, WORKER_ID, sleeps=False)  # time is skipped
        if is_expired(job.expires_at, time.time()):  # as the worker's check before a start
            outcome = Outcome.expired(EXPIRED_REASON)
        else:
            outcome = self.run(job, ctx)
        task = self.app.tasks.get(job.task)
        finish = ctx.finished_by_transaction or finish_params(
            outcome, job, task, WORKER_ID, ctx.cancel_requested
        )
        return finish, outcome, ctx.take_progress()

    def run(self, job: ClaimedJob, ctx: JobContext) -> Outcome:
        executor = self._started()
        task = self.app.tasks.get(job.task)
        if task is not None and task.is_async and _loop_running():
            # An async task gets its own loop, as in a thread-pool worker; asyncio.run
            # cannot start one in a thread whose loop is running (an async test), so
            # the attempt runs in a thread of its own, the caller waiting for it.
            return _in_thread(lambda: executor.run_one(job, ctx))
        return executor.run_one(job, ctx)

    def _started(self) -> ThreadExecutor:
        with self._lock:
            if self._executor is None:
                from conveyor.worker.executors.thread import ThreadExecutor

                self._executor = ThreadExecutor(self.app, 1)
                self._executor.start_inline()
            return self._executor

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.stop(0.0)
                self._executor = None


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_thread(call: Callable[[], Outcome]) -> Outcome:
    done: list[Outcome] = []
    failed: list[BaseException] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            done.append(context.run(call))
        except BaseException as exc:  # handed to the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=target, name="conveyor-testing")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]
