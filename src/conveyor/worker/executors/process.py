"""Process pool: ``concurrency`` long-lived child processes (``spawn``), one job at a time.

Each child imports the app by its ``module:attr`` spec, then loops: receive a job tuple
over its pipe, run it, send back the outcome tuple (see ``wire``). One supervising thread
per slot in the worker owns one child. What this pool guarantees:

- **Hard timeouts.** At the job's deadline the parent SIGKILLs the child, waits for it to
  be gone, and only then reports a ``JobTimeout`` failure (retried per policy): a
  timed-out job never runs at the same time as its retry. A fresh child takes the slot.
- **Crashes.** A child that dies mid-job (segfault, ``os._exit``, OOM killer) fails its
  job with ``WorkerChildDied: worker child died: exit code X`` / ``signal Y``, retried
  per policy; a fresh child takes the slot.
- **Cancel of a running job** (``job.cancel()`` or the worker releasing jobs at shutdown)
  kills the child: the job ends ``cancelled`` (or is released) and cannot keep running.
- **Recycling.** ``max_jobs_per_child`` / ``max_memory_mib`` replace a child *between*
  jobs (a clean stop, then a new child before the next job): no job is lost or failed.
- Children ignore SIGINT (the worker decides) and, on Linux, die with the worker
  (``PR_SET_PDEATHSIG``), so a SIGKILLed worker leaves no child running a rescued job.

Children are started lazily: at ``start()`` (all of them, failing the worker at once if
the app cannot be imported) and then before the next job after a child was replaced.

Example:
    >>> import conveyor
    >>> ex = ProcessExecutor(conveyor.App("sqlite:///:memory:"), 2, app_spec="tasks:app")
    >>> ex.name
    'process'
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import signal
import sys
import threading
import time
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext
from conveyor.errors import ConfigurationError
from conveyor.worker.executors.base import DoneCallback, deliver
from conveyor.worker.executors.slots import SlotThreads
from conveyor.worker.executors.wire import (
    OutcomeWire,
    failure,
    job_to_wire,
    outcome_from_wire,
)
from conveyor.worker.outcome import Outcome
from conveyor.worker.runner import invalid_timeout, valid_timeout

if TYPE_CHECKING:
    from conveyor.app import App

log = logging.getLogger("conveyor.worker")

#: Seconds a new child gets to import the app and say it is ready.
START_TIMEOUT = 60.0
#: Seconds a child gets to exit after a clean stop request before it is killed.
STOP_GRACE = 2.0


def _child_main(
    conn: Connection,
    app_spec: str,
    path: list[str],
    middleware: list[str] | None = None,
    include: list[str] | None = None,
    url: str | None = None,
) -> None:
    """Entry point of a child process: import the app (and instantiate the parent's
    middleware classes), pointed at the worker's store ``url``, then run jobs until told
    to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    from conveyor.worker.executors.wire import load_for_child, run_wire

    try:
        app = load_for_child(app_spec, path, middleware, include, url)
    except BaseException as exc:  # reported to the parent, which fails the worker start
        conn.send(("error", f"cannot import {app_spec!r} in a worker child: {exc!r}"))
        return
    conn.send(("ready", ""))
    while True:
        try:
            wire = conn.recv()
        except EOFError:  # the worker is gone
            return
        if wire is None:
            return
        conn.send(run_wire(app, wire))


def _die_with_parent() -> None:
    # Linux only: the kernel SIGKILLs this child when the thread that started it exits.
    # The parent starts children from supervising threads that live as long as the pool.
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Child:
    """One child process and the parent's end of its pipe."""

    def __init__(
        self,
        ctx: multiprocessing.context.SpawnContext,
        app_spec: str,
        middleware: list[str] | None = None,
        include: list[str] | None = None,
        url: str | None = None,
    ) -> None:
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.proc: BaseProcess = ctx.Process(
            target=_child_main,
            args=(child_conn, app_spec, list(sys.path), middleware, include, url),
            name="conveyor-child",
            daemon=True,
        )
        self.proc.start()
        child_conn.close()
        self.jobs = 0
        self.rss = 0
        if not self.conn.poll(START_TIMEOUT):
            self.kill()
            raise ConfigurationError(f"worker child did not start within {START_TIMEOUT} s")
        try:
            kind, message = self.conn.recv()
        except EOFError:
            self.kill()
            raise ConfigurationError(
                f"worker child died while importing {app_spec!r}: {death_reason(self.proc)}"
            ) from None
        if kind != "ready":
            self.kill()
            raise ConfigurationError(message)

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()

    def stop(self) -> None:
        """Clean stop between jobs (recycling, shutdown)."""
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(STOP_GRACE)
        self.kill()


def death_reason(proc: BaseProcess) -> str:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"worker child died: signal {name}"
    return f"worker child died: exit code {code}"


class _Slot:
    """A supervising thread's state, shared with ``cancel``."""

    __slots__ = ("child", "job_id", "lock", "why_killed")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.child: _Child | None = None
        self.job_id: str | None = None
        self.why_killed: str | None = None


class ProcessExecutor:
    """Runs jobs in long-lived child processes (see the module docstring)."""

    name = "process"

    def __init__(
        self,
        app: App,
        concurrency: int,
        *,
        app_spec: str | None,
        max_jobs_per_child: int | None = None,
        max_memory_mib: float | None = None,
    ) -> None:
        if not app_spec:
            raise ConfigurationError(
                "--pool process needs the app as 'module:attr' so children can import it: "
                "pass app_spec= to Worker (the CLI does this)"
            )
        self._app_spec = app_spec
        #: middleware classes each child instantiates (read at each child's start)
        self._middleware = app.middleware
        self._app = app  # its include: the task modules each child imports
        self._concurrency = concurrency
        self._max_jobs = max_jobs_per_child
        self._max_rss = int(max_memory_mib * 1024 * 1024) if max_memory_mib else None
        self._ctx = multiprocessing.get_context("spawn")
        self._slots = [_Slot() for _ in range(concurrency)]
        self._threads = SlotThreads("proc", concurrency)
        self._done: DoneCallback | None = None

    def start(self, done: DoneCallback) -> None:
        self._done = done
        errors = self._threads.start(
            lambda n, ready, errs: self._supervise(self._slots[n], ready, errs)
        )
        if errors:
            self.stop(STOP_GRACE)
            raise ConfigurationError(str(errors[0]))

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None:
        self._threads.submit(job, ctx)

    def cancel(self, job_id: str) -> None:
        for slot in self._slots:
            with slot.lock:
                if slot.job_id == job_id and slot.child is not None:
                    slot.why_killed = "cancelled while running: worker child terminated"
                    slot.child.proc.kill()

    def dead_slots(self) -> list[str]:
        return self._threads.dead()

    def stop(self, timeout: float) -> None:
        self._threads.stop(timeout)
        for slot in self._slots:  # whatever did not stop in time
            with slot.lock:
                child, slot.child = slot.child, None
            if child is not None:
                child.kill()

    def _new_child(self) -> _Child:
        app = self._app  # its URL: the child's durable steps write to the worker's store
        return _Child(self._ctx, self._app_spec, self._middleware.classes, list(app.include),
                      app.url)  # fmt: skip

    # -- supervising thread --------------------------------------------------------------

    def _supervise(
        self, slot: _Slot, ready: threading.Barrier, errors: list[BaseException]
    ) -> None:
        try:
            slot.child = self._new_child()
        except BaseException as exc:
            errors.append(exc)
        ready.wait()
        if errors:  # another slot failed: the worker will not start
            if slot.child is not None:
                slot.child.stop()
                slot.child = None
            return
        assert self._done is not None
        while True:
            item = self._threads.next()
            if item is None:
                break
            job, _ctx = item
            if not valid_timeout(job.timeout):  # the parent's deadline needs a number
                deliver(self._done, job, Outcome.unrunnable(invalid_timeout(job.timeout)))
                continue
            try:
                outcome = self._run_one(slot, job)
            except Exception as exc:  # the supervising thread must outlive any one job
                outcome = Outcome.failed(exc)
            deliver(self._done, job, outcome)
        with slot.lock:
            child, slot.child = slot.child, None
        if child is not None:
            child.stop()

    def _run_one(self, slot: _Slot, job: ClaimedJob) -> Outcome:
        if slot.child is None:
            try:
                child = self._new_child()
            except ConfigurationError as exc:
                return failure("WorkerChildStartFailed", str(exc))
            with slot.lock:
                slot.child = child
        child = slot.child
        with slot.lock:
            slot.job_id, slot.why_killed = job.id, None
        try:
            wire = self._exchange(child, job)
        finally:
            with slot.lock:
                slot.job_id = None
                why_killed = slot.why_killed
        if isinstance(wire, Outcome):  # the child is gone: replace it before the next job
            child.kill()
            with slot.lock:
                slot.child = None
            if why_killed is not None:
                return Outcome.cancelled(why_killed)
            log.warning("job %s: %s", job.id, wire.reason)
            return wire
        outcome = outcome_from_wire(wire)
        child.jobs += 1
        child.rss = wire[4]
        if self._should_recycle(child):
            child.stop()
            with slot.lock:
                slot.child = None
        return outcome

    def _exchange(self, child: _Child, job: ClaimedJob) -> OutcomeWire | Outcome:
        """Send the job and wait for its outcome, the child's death or the deadline."""
        try:
            child.conn.send(job_to_wire(job))
        except OSError:
            return failure("WorkerChildDied", death_reason(child.proc))
        deadline = time.monotonic() + job.timeout if job.timeout else None
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = multiprocessing.connection.wait([child.conn, child.proc.sentinel], wait)
            if child.conn in ready:
                try:
                    result: OutcomeWire = child.conn.recv()
                    return result
                except (EOFError, OSError):
                    pass  # died right after or while writing: look at the sentinel
            if ready:
                child.proc.join()
                return failure("WorkerChildDied", death_reason(child.proc))
            if deadline is not None and time.monotonic() >= deadline:
                # Kill and reap before reporting: the retry cannot overlap this attempt.
                child.proc.kill()
                child.proc.join()
                return failure(
                    "JobTimeout",
                    f"task {job.task} timed out after {job.timeout} s (worker child killed)",
                )

    def _should_recycle(self, child: _Child) -> bool:
        if self._max_jobs is not None and child.jobs >= self._max_jobs:
            log.info("recycling worker child %s after %d jobs", child.proc.pid, child.jobs)
            return True
        if self._max_rss is not None and child.rss > self._max_rss:
            log.info("recycling worker child %s at %.0f MiB", child.proc.pid, child.rss / 2**20)
            return True
        return False
