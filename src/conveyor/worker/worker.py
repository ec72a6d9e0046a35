"""``Worker``: the lifecycle, services and signals around one fetch strategy and one
completion strategy (``fetching.py``, ``completion.py``), chosen when it is built, and
the two parts they share: the table of held jobs with its slots, buffer and stop state
(``inflight.InFlight``) and the path of a job from claim to finish
(``attempts.Attempts``). This module only builds and wires them.

Run it blocking (``worker.run()``, what ``conveyor worker`` does), start and stop it
from a thread (``worker.start()`` / ``worker.stop()``), or inside a running asyncio loop
(``await worker.arun()``; with ``pool="async"`` the jobs run on that same loop).

Life of a worker: write the heartbeat (before any claim, so nobody can mistake it for
dead), rescue what dead workers left, then loop: claim as many jobs as there are free
slots (weighted queues), hand them to the executor, write outcomes in batches. On stop:
no more claims, running jobs get ``shutdown_timeout`` seconds, the rest are released to
``queued`` (not counted as an attempt), the worker row is removed.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def hello(name: str) -> str:
    ...     return f"hello {name}"
    >>> job = hello.enqueue("world")
    >>> Worker(app, burst=True).run()
    >>> job.result()
    'hello world'
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from conveyor.backends.base import WorkerHeartbeatParams, WorkerInfo
from conveyor.context import JobContext
from conveyor.errors import BackendUnavailable, ConfigurationError, WorkerFailed
from conveyor.ids import new_id
from conveyor.worker import fetching, procinfo
from conveyor.worker.attempts import CANCELLED_BEFORE_START, Attempts
from conveyor.worker.batching import Batcher, served_batches
from conveyor.worker.checkpointer import Checkpointer
from conveyor.worker.claim_size import AUTO, ClaimAllowance, Prefetch, parse_prefetch
from conveyor.worker.completer import Completer
from conveyor.worker.completion import CompletionStrategy, Flusher, GroupCommit, RideOnClaim
from conveyor.worker.eventlog import EventLog
from conveyor.worker.executors import make_executor
from conveyor.worker.inflight import InFlight
from conveyor.worker.middleware_observer import MiddlewareObserver
from conveyor.worker.outage import OutageLog
from conveyor.worker.procinfo import process_start_time
from conveyor.worker.queues import QueueSelection
from conveyor.worker.services.base import Looper
from conveyor.worker.services.heartbeat import Heartbeat
from conveyor.worker.services.pruner import Pruner
from conveyor.worker.services.rescuer import Rescuer

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.logs import LogCapture
    from conveyor.worker.executors.base import Executor
    from conveyor.worker.observers import WorkerObserver

__all__ = ["CANCELLED_BEFORE_START", "Worker"]

log = logging.getLogger("conveyor.worker")


class Worker:
    """Runs jobs of ``app`` from ``queues`` with ``concurrency`` slots in a ``pool``."""

    def __init__(
        self,
        app: App,
        *,
        queues: Sequence[str] | None = None,
        concurrency: int = 10,
        pool: str = "thread",
        shutdown_timeout: float = 30.0,
        burst: bool = False,
        executor: Executor | None = None,
        app_spec: str | None = None,
        max_jobs_per_child: int | None = None,
        max_memory_per_child: float | None = None,
        prefetch: Prefetch = AUTO,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError(f"concurrency must be >= 1, got {concurrency}")
        app.import_includes()  # App(include=[...]): the task modules, before any claim
        try:
            prefetch = parse_prefetch(prefetch)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        #: Jobs claimed beyond the free slots, waiting in this worker for a slot: "auto"
        #: (sized from observed job durations), N, or 0 (every claim is sized to the free
        #: slots). See docs/guarantees.md, "Prefetch", and claim_size.py.
        self.prefetch = prefetch
        self.app = app
        self.selection = QueueSelection.parse(list(queues) if queues else ["default"])
        #: batch tasks declared on this worker's queues (worker/batching.py)
        self.batches = served_batches(self)
        if self.batches and pool in ("process", "interpreter") and executor is None:
            raise ConfigurationError(
                f"batch task {next(iter(self.batches))} needs --pool thread or async: a "
                f"{pool} pool runs one job per call"
            )
        self.claims = ClaimAllowance(
            prefetch, concurrency, floor=max((b.size for b in self.batches.values()), default=0)
        )
        self.concurrency = concurrency
        self.pool = pool
        self.shutdown_timeout = shutdown_timeout
        self.burst = burst
        # app_spec ("module:attr"): how process/interpreter pools import the app again,
        # and what the start-up lines name (a worker of an app without tasks).
        self.app_spec = app_spec
        self.executor = executor or make_executor(
            pool,
            app,
            concurrency,
            app_spec=app_spec,
            max_jobs_per_child=max_jobs_per_child,
            max_memory_per_child=max_memory_per_child,
        )
        self.info = self._describe()
        self.id = self.info.id
        self._started = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        #: Why this worker stopped on its own (``None``: a requested stop or a burst's
        #: end); ``run()`` raises :class:`~conveyor.errors.WorkerFailed` with it.
        self.failure: str | None = None
        self._wire(executor_given=executor is not None)
        self._services = self._make_services()
        self.log_capture: LogCapture | None = (
            self._make_log_capture()
            if app.settings.capture_logs and "logs" in app.backend.features
            else None
        )

    def _wire(self, *, executor_given: bool) -> None:
        """The parts a job goes through, built once: the ``inflight`` table (held jobs,
        buffer, slots, stop state), the completer, and the two pipelines around them:
        pooled fetch + group commit, or (one thread slot on an ``ack_with_claim`` store)
        inline fetch + finishes riding on the claim; ``attempts``, a job's path from
        claim to finish, between the two."""
        #: One store outage, one warning: shared by the fetcher, completer and services.
        self.outages = OutageLog()
        #: One line per job event and the start/shutdown lines (logging); see eventlog.py.
        self.events = EventLog()
        observers: list[WorkerObserver] = [self.events, MiddlewareObserver(self.app)]
        self.inflight = InFlight()
        self._lock = self.inflight.lock  # also guards ``failure``
        self._stopping = self.inflight.stopping
        self.completer = Completer(self.app.backend, outages=self.outages)
        #: gathers batch calls; None when no batch task is declared on these queues
        self.batcher = Batcher(self) if self.batches else None
        inline = fetching.inline_executor(self, executor_given=executor_given)
        completion: CompletionStrategy
        if inline is not None:
            completion = ride = RideOnClaim(self.completer)
        else:
            completion = GroupCommit(self.completer)
        self.completion = completion
        self.attempts = Attempts(
            self.app, self.id, self.inflight, self.claims, completion, observers
        )
        if (
            self.concurrency > 1
            and self.pool in ("thread", "async")
            and "step_groups" in self.app.backend.features
        ):
            self.attempts.checkpointer = Checkpointer(self.app.backend)  # group commit
        #: ``next(worker.processed)``: how many attempts ended here (counts one more).
        self.processed = self.attempts.processed
        self.fetch: fetching.FetchStrategy = (
            fetching.PooledFetch(self)
            if inline is None
            else fetching.InlineFetch(self, inline, ride)
        )

    @property
    def observers(self) -> list[WorkerObserver]:
        """Hooks called as jobs are claimed, finish or are rescued (metrics, the event
        log); see observers.py. Append to it, or assign a new list."""
        return self.attempts.observers

    @observers.setter
    def observers(self, observers: list[WorkerObserver]) -> None:
        self.attempts.observers = observers

    def __repr__(self) -> str:
        return f"<Worker {self.id} pool={self.pool} c={self.concurrency}>"

    def _describe(self) -> WorkerInfo:
        """Who this worker is, as its heartbeat tells the store (the id names the host
        and pid, so an operator can find the process)."""
        host = procinfo.host_name()
        pid = os.getpid()
        return WorkerInfo(
            id=f"{host}:{pid}:{new_id()[-8:]}",
            host=host,
            pid=pid,
            pid_started=process_start_time(pid),
            started_at=time.time(),
            queues=self.selection.names,
            concurrency=self.concurrency,
            pool=self.pool,
        )

    def _make_services(self) -> list[Looper]:
        """Heartbeat and rescuer always; the rest where they apply."""
        s = self.app.settings
        services: list[Looper] = [
            Heartbeat(self, s.heartbeat_interval),
            Rescuer(self, s.rescue_interval),
        ]
        if isinstance(self.completion, RideOnClaim) and (self.claims.auto or self.prefetch):
            services.append(Flusher(self.completion))
        if "purge" in self.app.backend.features:  # retention, where the backend can purge
            services.append(Pruner(self, s.prune_interval))
        # Flow-control services, only where the backend implements them.
        from conveyor.worker.services.by_feature import flow_services

        services += flow_services(self)
        for service in services:
            service.outages = self.outages
        return services

    def _make_log_capture(self) -> LogCapture:
        from conveyor.backends.base import JobLogInsertParams
        from conveyor.logs import LogCapture

        backend, limit = self.app.backend, self.app.settings.log_max_per_job
        return LogCapture(
            lambda records: backend.job_log_insert_many(JobLogInsertParams(records, limit)),
            level=self.app.settings.log_level.upper(),
            # Only this worker's jobs: two workers in one process must not both store a record.
            owns=self.inflight.holds,
        )

    # -- control -------------------------------------------------------------------------

    def run(self, install_signals: bool | None = None) -> None:
        """Run until stopped (or, with ``burst``, until nothing is ready or running)."""
        if install_signals is None:
            install_signals = threading.current_thread() is threading.main_thread()
        if install_signals:
            from conveyor.worker import signals

            signals.install(self)
        failed = True
        try:
            self._setup()
            self._started.set()
            self.fetch.run()
            failed = False
        except BaseException as exc:
            self.fail(f"{type(exc).__name__}: {exc}", log_it=False)
            raise
        finally:
            try:
                self._shutdown()
            except Exception:
                if not failed:
                    raise
                # Report the first cause: cleanup after a failed start trips over parts
                # never started ("cannot join thread before it is started").
                log.debug("cleanup after a failed run failed too", exc_info=True)
            finally:
                self._started.set()
                self._finished.set()
        if self.failure is not None:  # stopped on its own: the caller (and exit status) know
            raise WorkerFailed(f"worker {self.id} stopped: {self.failure}")

    def start(self) -> Worker:
        """Run in a background thread; returns once the worker has registered."""
        self._thread = threading.Thread(
            target=self._run_in_thread, name="conveyor-worker", daemon=True
        )
        self._thread.start()
        self._started.wait()
        return self

    def _run_in_thread(self) -> None:
        with contextlib.suppress(WorkerFailed):  # logged by fail(); see ``worker.failure``
            self.run(install_signals=False)

    def fail(self, reason: str, *, log_it: bool = True) -> None:
        """Stop because something broke (not asked to): logged once, kept in ``failure``,
        and ``run()`` raises :class:`~conveyor.errors.WorkerFailed` after the shutdown,
        so ``conveyor worker`` exits non-zero and a supervisor restarts it."""
        with self._lock:
            first = self.failure is None
            if first:
                self.failure = reason
        if first and log_it:
            log.error("worker %s is stopping: %s", self.id, reason)
        self.stop_soon()

    def check_capacity(self) -> None:
        """A worker whose pool lost a thread or its event loop stops with an error rather
        than heartbeat with slots it no longer has (called by the heartbeat)."""
        if self._stopping.is_set():
            return
        dead = self.executor.dead_slots()
        if dead:
            self.fail(f"the {self.executor.name} pool lost {', '.join(dead)}")

    def stop(self, timeout: float | None = None) -> None:
        """Graceful stop from another thread; waits until the worker has finished."""
        self.stop_soon()
        self._finished.wait(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker to finish (True if it did)."""
        return self._finished.wait(timeout)

    async def arun(self) -> None:
        """Run inside the current asyncio loop until cancelled or stopped.

        With ``pool="async"`` jobs run as tasks of this loop; the fetch loop itself runs
        in a thread so the loop never blocks on storage."""
        import asyncio  # here, not at module level: importing it costs ~25 ms of start-up

        if self.pool == "async":
            from conveyor.worker.executors.async_ import AsyncExecutor

            self.executor = AsyncExecutor(self.app, asyncio.get_running_loop(), self.concurrency)
        try:
            await asyncio.to_thread(self.run, False)
        except asyncio.CancelledError:
            self.stop_soon()
            await asyncio.to_thread(self._finished.wait)
            raise

    def stop_soon(self) -> None:
        """Stop fetching and shut down gracefully (TERM / first INT)."""
        self.inflight.stop()

    def stop_now(self) -> None:
        """Release running jobs at once and stop (second INT)."""
        self.inflight.stop_now()

    def quiet(self) -> None:
        """Stop fetching new jobs; running ones finish (TSTP)."""
        log.warning("worker %s is quiet: no more jobs will be fetched", self.id)
        self.inflight.quieted.set()

    # -- hooks used by the services ------------------------------------------------------

    def beat(self) -> None:
        self.app.backend.worker_heartbeat(
            WorkerHeartbeatParams(self.info, self.inflight.last_fetch_at, len(self.inflight))
        )

    def held_claims(self) -> list[tuple[str, int]]:
        """(id, token) of every job whose lease this worker still extends."""
        return self.inflight.held_claims()

    def running_contexts(self) -> list[tuple[str, int, JobContext]]:
        """(id, token, context) of every job this worker still holds."""
        return self.inflight.running_contexts()

    def request_cancel(self, job_id: str) -> None:
        entry, buffered = self.inflight.cancel_target(job_id)
        if entry is not None and not entry.ctx.cancel_requested:
            entry.ctx.request_cancel()
            # A prefetched job is not in the executor yet: it finishes as cancelled when
            # its turn comes, without running.
            # A batch call's job: its item sees the request, the call goes on.
            if not buffered and (self.batcher is None or not self.batcher.member(job_id)):
                self.executor.cancel(job_id)

    def mark_lost(self, job_id: str) -> None:
        # A job that finished between the lease snapshot and the answer is not lost.
        if self.inflight.mark_lost(job_id):
            log.warning("worker %s lost its claim on job %s (rescued elsewhere)", self.id, job_id)

    # -- internals -----------------------------------------------------------------------

    def _setup(self) -> None:
        # The heartbeat is written before the first claim: a rescuer can never take
        # this worker's claims for a dead worker's.
        self.beat()
        if self.log_capture is not None:
            self.log_capture.start()
            self.log_capture.install()
        self.completer.start()
        if self.attempts.checkpointer is not None:
            self.attempts.checkpointer.start()
        if self.batcher is not None:
            self.batcher.start()
        self.fetch.start()
        for service in self._services:
            service.start()
        for observer in self.observers:  # the event log prints the start lines
            observer.on_started(self)

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.shutdown_timeout
        self.attempts.release_buffered()
        if self.batcher is not None:  # calls still gathering: never started, released
            gathered = self.batcher.release_open()
            if gathered:
                self.attempts.release(gathered, started=False)
        running = len(self.inflight)
        for observer in self.observers:  # "stopping: waiting up to S s for N job(s)"
            observer.on_stopping(running, self.shutdown_timeout, self.inflight.hard.is_set())
        leftovers = self.inflight.wait_empty(deadline)
        if leftovers:
            for entry in leftovers:
                entry.ctx.request_cancel()  # cooperative sync tasks can stop early
                self.executor.cancel(entry.job.id)
            self.attempts.release(leftovers)
        if self.attempts.checkpointer is not None:  # jobs still running save alone
            self.attempts.checkpointer.stop(timeout=max(self.shutdown_timeout, 1.0))
        # The store may still be away (disk full, Redis down): finishes are retried for
        # the shutdown timeout at most, then left to the rescue (at least once).
        self.completer.stop(timeout=max(self.shutdown_timeout, 1.0))
        for service in self._services:
            service.stop()
        if self.batcher is not None:
            self.batcher.stop()
        self.executor.stop(timeout=0.5 if leftovers else 2.0)
        if self.log_capture is not None:
            self.log_capture.uninstall()
            self.log_capture.stop(self.app.settings.log_drain_timeout)
        try:
            self.app.backend.worker_deregister(self.id)
        except BackendUnavailable as exc:
            log.warning("could not deregister worker %s: %s", self.id, exc)
        log.info("worker %s stopped", self.id)
