"""``Worker``: the lifecycle, services and signals around one fetch strategy and one
completion strategy (``fetching.py``, ``completion.py``), chosen when it is built.

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

import collections
import contextlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import (
    ClaimedJob,
    JobReleaseParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.context import JobContext, context_of
from conveyor.errors import BackendUnavailable, ConfigurationError, WorkerFailed
from conveyor.ids import new_id
from conveyor.rules import EXPIRED_REASON, is_expired
from conveyor.worker import fetching, procinfo
from conveyor.worker.claim_size import AUTO, ClaimAllowance, Prefetch, parse_prefetch
from conveyor.worker.completer import Completer
from conveyor.worker.completion import Flusher, RideOnClaim
from conveyor.worker.eventlog import EventLog
from conveyor.worker.executors import make_executor
from conveyor.worker.fetching import IDLE_WAIT
from conveyor.worker.middleware_observer import MiddlewareObserver
from conveyor.worker.outage import OutageLog
from conveyor.worker.outcome import OK, Outcome, finish_params
from conveyor.worker.procinfo import process_start_time
from conveyor.worker.queues import QueueSelection
from conveyor.worker.services.base import Looper
from conveyor.worker.services.heartbeat import Heartbeat
from conveyor.worker.services.pruner import Pruner
from conveyor.worker.services.rescuer import Rescuer
from conveyor.worker.transactional import transact

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.logs import LogCapture
    from conveyor.worker.executors.base import Executor
    from conveyor.worker.observers import WorkerObserver

log = logging.getLogger("conveyor.worker")

#: The reason recorded for a prefetched job cancelled while it waited for a slot.
CANCELLED_BEFORE_START = "cancelled before it started"


class _InFlight:
    __slots__ = ("ctx", "job", "lost", "started")

    def __init__(self, job: ClaimedJob, ctx: JobContext) -> None:
        self.job = job
        self.ctx = ctx
        self.lost = False
        #: When it started: its claim, or for a prefetched job the moment it left the
        #: buffer (kept here rather than copying the frozen job: ~10 µs a job).
        self.started = job.claimed_at


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
        self.claims = ClaimAllowance(prefetch, concurrency)
        self.app = app
        self.selection = QueueSelection.parse(list(queues) if queues else ["default"])
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
        self._lock = threading.Lock()
        self._slot_freed = threading.Condition(self._lock)
        self._inflight: dict[str, _InFlight] = {}
        #: Prefetched: claimed and in ``_inflight`` (leases extended), not yet started.
        self._buffer: collections.deque[_InFlight] = collections.deque()
        self._released: set[str] = set()
        #: jobs out of _inflight whose finish is not handed to the completer yet: burst
        #: mode must not stop in between (the finish would be lost, the job left running)
        self._finishing = 0
        self._stopping = threading.Event()
        self._hard = threading.Event()
        self._quiet = threading.Event()
        self._started = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_fetch_at: float | None = None
        #: Why this worker stopped on its own (``None``: a requested stop or a burst's
        #: end); ``run()`` raises :class:`~conveyor.errors.WorkerFailed` with it.
        self.failure: str | None = None
        #: Poison isolation (docs/guarantees.md): the id of a job rescued before that runs
        #: alone here (nothing else is claimed until it finished), and whether the
        #: fetcher waits for this worker to empty before claiming such a job.
        self._solo: str | None = None
        self._draining = False
        #: One store outage, one warning: shared by the fetcher, completer and services.
        self.outages = OutageLog()
        self.completer = Completer(app.backend, outages=self.outages)
        # The two pipelines, chosen once: pooled fetch + group commit, or (one thread
        # slot on an ack_with_claim store) inline fetch + finishes riding on the claim.
        self._fetch, self._completion = fetching.choose(self, executor_given=executor is not None)
        self.processed = itertools.count()
        self._services = self._make_services()
        #: One line per job event and the start/shutdown lines (logging); see eventlog.py.
        self.events = EventLog()
        #: Hooks called as jobs are claimed, finish or are rescued (metrics, the event
        #: log); see observers.py.
        self.observers: list[WorkerObserver] = [self.events, MiddlewareObserver(app)]
        self.log_capture: LogCapture | None = (
            self._make_log_capture()
            if app.settings.capture_logs and "logs" in app.backend.features
            else None
        )

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
        if isinstance(self._completion, RideOnClaim) and (self.claims.auto or self.prefetch):
            services.append(Flusher(self._completion))
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
            owns=self._inflight.__contains__,
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
            self._fetch.run()
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
        self._stopping.set()
        self._wake()

    def stop_now(self) -> None:
        """Release running jobs at once and stop (second INT)."""
        self._hard.set()
        self.stop_soon()

    def quiet(self) -> None:
        """Stop fetching new jobs; running ones finish (TSTP)."""
        log.warning("worker %s is quiet: no more jobs will be fetched", self.id)
        self._quiet.set()

    # -- hooks used by the services and executors ----------------------------------------

    def beat(self) -> None:
        self.app.backend.worker_heartbeat(
            WorkerHeartbeatParams(self.info, self._last_fetch_at, len(self._inflight))
        )

    def held_claims(self) -> list[tuple[str, int]]:
        with self._lock:
            return [
                (f.job.id, f.job.token)
                for f in self._inflight.values()
                if not f.lost and f.job.id not in self._released
            ]

    def running_contexts(self) -> list[tuple[str, int, JobContext]]:
        """(id, token, context) of every job this worker still holds."""
        with self._lock:
            return [(f.job.id, f.job.token, f.ctx) for f in self._inflight.values() if not f.lost]

    def request_cancel(self, job_id: str) -> None:
        with self._lock:
            entry = self._inflight.get(job_id)
            buffered = entry is not None and entry in self._buffer
        if entry is not None and not entry.ctx.cancel_requested:
            entry.ctx.request_cancel()
            # A prefetched job is not in the executor yet: it finishes as cancelled when
            # its turn comes, without running.
            if not buffered:
                self.executor.cancel(job_id)

    def mark_lost(self, job_id: str) -> None:
        with self._lock:
            entry = self._inflight.get(job_id)
            if entry is not None:
                entry.lost = True
        # A job that finished between the lease snapshot and the answer is not lost.
        if entry is not None:
            log.warning("worker %s lost its claim on job %s (rescued elsewhere)", self.id, job_id)

    def on_outcome(self, job: ClaimedJob, outcome: Outcome) -> None:
        with self._lock:
            if job.id == self._solo:
                self._solo = None
            entry = self._inflight.pop(job.id, None)
            released = job.id in self._released
            self._released.discard(job.id)
            self._slot_freed.notify()
            if not released and entry is not None:
                self._finishing += 1
        if released or entry is None:
            return
        try:
            self._finish(job, outcome, entry)
        finally:
            with self._lock:
                self._finishing -= 1

    def _finish(self, job: ClaimedJob, outcome: Outcome, entry: _InFlight) -> None:
        self.claims.observe(outcome.finished_at - entry.started)
        committed = entry.ctx.finished_by_transaction  # current_job().transaction()
        if committed is not None:
            params = committed
            if outcome.status != OK:
                log.warning(
                    "job %s committed its success in transaction(); what it raised "
                    "after that is not recorded: %s",
                    job.id,
                    outcome.error,
                )
        else:
            task = self.app.tasks.get(job.task)
            params = finish_params(
                outcome, job, task, self.id, entry.ctx.cancel_requested, started_at=entry.started
            )
            self._completion.put(params)
        if self.observers:
            for observer in self.observers:
                observer.on_finished(job, params, outcome)
        next(self.processed)
        if self._buffer:
            self._fetch.slot_freed()

    def _transaction_for(self, ctx: JobContext) -> AbstractContextManager[Any]:
        """The block of ``current_job().transaction()`` for the job ``ctx`` belongs to,
        fenced by the claim this worker holds now (worker/transactional.py)."""
        with self._lock:
            entry = self._inflight.get(ctx.id)
        if entry is None:
            raise ConfigurationError(f"job {ctx.id} is not running in this worker")
        return transact(self.app.backend, entry.job, self.id, ctx)

    # -- internals -----------------------------------------------------------------------

    def _wake(self) -> None:
        with self._lock:
            self._slot_freed.notify_all()

    def _setup(self) -> None:
        # The heartbeat is written before the first claim: a rescuer can never take
        # this worker's claims for a dead worker's.
        self.beat()
        if self.log_capture is not None:
            self.log_capture.start()
            self.log_capture.install()
        self.completer.start()
        self._fetch.start()
        for service in self._services:
            service.start()
        for observer in self.observers:  # the event log prints the start lines
            observer.on_started(self)

    def _ends_before_start(self, entry: _InFlight) -> bool:
        """A job about to start that must not run is finished here (True: do not start
        it): one whose cancel arrived while it waited in the prefetch buffer ends
        cancelled; one past its ``expires_at`` (``rules.is_expired``: claimed too late,
        or kept in the buffer past it) ends expired. The one place for these rules, for
        both fetch strategies."""
        expires_at = entry.job.expires_at
        if expires_at is not None and is_expired(expires_at, time.time()):
            self.on_outcome(entry.job, Outcome.expired(EXPIRED_REASON))
            return True
        if not entry.ctx.cancel_requested:
            return False
        self.on_outcome(entry.job, Outcome.cancelled(CANCELLED_BEFORE_START))
        return True

    def claim_paused(self) -> bool:
        """True while a rescued job runs alone here, or while this worker empties so that
        one can (poison isolation): the fetcher claims nothing meanwhile. Under the lock."""
        if self._solo is not None:
            return True
        if self._draining and not self._inflight:
            self._draining = False
        return self._draining

    def isolate(self, jobs: list[ClaimedJob]) -> list[ClaimedJob]:
        """Poison isolation, the worker's side: a job rescued before (``rescues > 0``)
        runs alone. Claimed while this worker holds nothing: it is kept alone and the rest
        of the batch released; claimed while others run here: it is released and the
        worker claims nothing more until what runs has finished. Released jobs go back
        to ``queued`` with their attempt not counted. The store's side
        (``rules.rescue_state``) charges a rescue only to a job its worker held alone.

        >>> # jobs = worker.isolate(backend.job_claim(params))
        """
        if not any(j.rescues for j in jobs):
            return jobs
        with self._lock:
            busy = bool(self._inflight)
            if busy:
                self._draining = True
                keep = [j for j in jobs if not j.rescues]
            else:
                keep = [next(j for j in jobs if j.rescues)]
                self._solo = keep[0].id
        back = [j for j in jobs if j not in keep]
        if back:
            self._give_back(back)
        return keep

    def _give_back(self, jobs: list[ClaimedJob]) -> None:
        """Release claimed jobs never started (attempt not counted); if the store refuses
        now, the rescue takes them once their leases expire."""
        try:
            self.app.backend.job_release_many(
                JobReleaseParams(self.id, [(j.id, j.token) for j in jobs])
            )
        except BackendUnavailable as exc:
            log.warning("could not give back %d job(s): %s; they will be rescued", len(jobs), exc)

    def _burst_over(self, claim_again: Callable[[], bool] | None) -> bool:
        """Burst mode: True (and logged) once nothing is running and nothing is ready.
        ``claim_again`` (pooled fetch): the completer's finishes must be written first,
        as one may make a retry due, then one more claim looks; the inline fetch wrote
        its finishes with the empty claim it just made, so it passes ``None``."""
        with self._lock:
            if self._inflight or self._finishing:
                return False
        if claim_again is not None and (self.completer.pending or claim_again()):
            return False
        log.info("burst: nothing ready or running; stopping")
        return True

    def _next_buffered(self) -> _InFlight | None:
        """The oldest prefetched job, to start now; ``None`` when there is none, or when
        stopping (the shutdown releases what is still buffered). A job rescued elsewhere
        while it waited is dropped. Its recorded start time becomes now."""
        with self._lock:
            while self._buffer and not self._stopping.is_set():
                entry = self._buffer.popleft()
                if not entry.lost:
                    break
                self._inflight.pop(entry.job.id, None)
            else:
                return None
        entry.started = entry.ctx.started_at = time.time()
        return entry

    def _track(self, jobs: list[ClaimedJob]) -> list[_InFlight]:
        """Record claimed jobs as in flight (heartbeats extend their leases from now on)."""
        entries = [_InFlight(j, context_of(j)) for j in jobs]
        for entry in entries:  # current_job().transaction(), in this process's pools
            entry.ctx._transaction = self._transaction_for
        with self._lock:
            for entry in entries:
                self._inflight[entry.job.id] = entry
        if self.observers:
            for observer in self.observers:
                observer.on_claimed(jobs)
        return entries

    def _shutdown(self) -> None:
        deadline = time.monotonic() + self.shutdown_timeout
        self._release_buffered()
        with self._lock:
            running = len(self._inflight)
        for observer in self.observers:  # "stopping: waiting up to S s for N job(s)"
            observer.on_stopping(running, self.shutdown_timeout, self._hard.is_set())
        with self._lock:
            while self._inflight and not self._hard.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._slot_freed.wait(min(remaining, IDLE_WAIT))
            leftovers = [f for f in self._inflight.values() if not f.lost]
            self._released.update(f.job.id for f in leftovers)
        if leftovers:
            self._release(leftovers)
        # The store may still be away (disk full, Redis down): finishes are retried for
        # the shutdown timeout at most, then left to the rescue (at least once).
        self.completer.stop(timeout=max(self.shutdown_timeout, 1.0))
        for service in self._services:
            service.stop()
        self.executor.stop(timeout=0.5 if leftovers else 2.0)
        if self.log_capture is not None:
            self.log_capture.uninstall()
            self.log_capture.stop(self.app.settings.log_drain_timeout)
        try:
            self.app.backend.worker_deregister(self.id)
        except BackendUnavailable as exc:
            log.warning("could not deregister worker %s: %s", self.id, exc)
        log.info("worker %s stopped", self.id)

    def _release_buffered(self) -> None:
        """Prefetched jobs never started: back to the queue at once, attempt not counted."""
        with self._lock:
            buffered = list(self._buffer)
            self._buffer.clear()
            for entry in buffered:
                self._inflight.pop(entry.job.id, None)
        if buffered:
            self._release(buffered, started=False)

    def _release(self, leftovers: list[_InFlight], started: bool = True) -> None:
        for entry in leftovers if started else ():
            entry.ctx.request_cancel()  # cooperative sync tasks can stop early
            self.executor.cancel(entry.job.id)
        try:
            refused = self.app.backend.job_release_many(
                JobReleaseParams(self.id, [(f.job.id, f.job.token) for f in leftovers])
            )
        except BackendUnavailable as exc:
            log.error("could not release %d job(s): %s; they will be rescued", len(leftovers), exc)
            return
        for job_id in refused:
            log.warning("release of job %s refused: it was already rescued", job_id)
        gone = set(refused)
        released = [f.job for f in leftovers if f.job.id not in gone]
        for observer in self.observers:  # one line per job, then "released N"
            observer.on_released(released, started)
