"""``Worker``: one fetcher, one executor pool, one completer, and the services.

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
import itertools
import logging
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from conveyor import records
from conveyor.backends.base import (
    ClaimedJob,
    JobClaimParams,
    JobFinishParams,
    JobReleaseParams,
    WorkerHeartbeatParams,
    WorkerInfo,
)
from conveyor.context import JobContext
from conveyor.errors import BackendUnavailable, ConfigurationError
from conveyor.ids import new_id
from conveyor.worker import procinfo
from conveyor.worker.completer import MAX_PENDING, Completer
from conveyor.worker.executors import make_executor
from conveyor.worker.outcome import Outcome, finish_params
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
    from conveyor.worker.executors.thread import ThreadExecutor
    from conveyor.worker.observers import WorkerObserver

log = logging.getLogger("conveyor.worker")

#: How long the fetch loop sleeps at most before re-checking stop flags (seconds).
IDLE_WAIT = 0.25
#: With fewer than ``concurrency // 4`` slots free and jobs still running, the fetcher
#: waits up to this long (seconds) for more slots before claiming, so a claim serves
#: several slots. Bounds the extra start delay of a queued job behind busy slots.
CLAIM_GATHER = 0.002


#: One-slot worker with prefetch: a finish held for the next claim for longer than this
#: (seconds) is written by the completer instead.
FLUSH_AFTER = 0.05
#: The reason recorded for a prefetched job cancelled while it waited for a slot.
CANCELLED_BEFORE_START = "cancelled before it started"


class _Flusher(Looper):
    """Hands a one-slot worker's held finishes to the completer once they are old."""

    name = "flusher"

    def __init__(self, worker: Worker, interval: float) -> None:
        super().__init__(interval)
        self.worker = worker

    def tick(self) -> None:
        self.worker._write_unwritten(older_than=FLUSH_AFTER)


class _InFlight:
    __slots__ = ("ctx", "job", "lost")

    def __init__(self, job: ClaimedJob, ctx: JobContext) -> None:
        self.job = job
        self.ctx = ctx
        self.lost = False


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
        prefetch: int = 0,
    ) -> None:
        if concurrency < 1:
            raise ConfigurationError(f"concurrency must be >= 1, got {concurrency}")
        if prefetch < 0:
            raise ConfigurationError(f"prefetch must be >= 0, got {prefetch}")
        #: Jobs claimed beyond the free slots, waiting in this worker for a slot (0: every
        #: claim is sized to the free slots). See docs/guarantees.md, "Prefetch".
        self.prefetch = prefetch
        self.app = app
        self.selection = QueueSelection.parse(list(queues) if queues else ["default"])
        self.concurrency = concurrency
        self.pool = pool
        self.shutdown_timeout = shutdown_timeout
        self.burst = burst
        # app_spec ("module:attr"): how process/interpreter pools import the app again.
        self.executor = executor or make_executor(
            pool,
            app,
            concurrency,
            app_spec=app_spec,
            max_jobs_per_child=max_jobs_per_child,
            max_memory_per_child=max_memory_per_child,
        )
        host = procinfo.host_name()
        pid = os.getpid()
        self.id = f"{host}:{pid}:{new_id()[-8:]}"
        self.info = WorkerInfo(
            id=self.id,
            host=host,
            pid=pid,
            pid_started=process_start_time(pid),
            started_at=time.time(),
            queues=self.selection.names,
            concurrency=concurrency,
            pool=pool,
        )
        self._lock = threading.Lock()
        self._slot_freed = threading.Condition(self._lock)
        self._inflight: dict[str, _InFlight] = {}
        #: Prefetched: claimed and in ``_inflight`` (leases extended), not yet started.
        self._buffer: collections.deque[_InFlight] = collections.deque()
        self._released: set[str] = set()
        self._stopping = threading.Event()
        self._hard = threading.Event()
        self._quiet = threading.Event()
        self._started = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_fetch_at: float | None = None
        self.completer = Completer(app.backend)
        self._claim_batch = max(1, concurrency // 4)
        # One slot on the thread pool, on a store where it saves work (ack_with_claim):
        # the fetcher thread runs each job itself and its finish rides with the next
        # claim (one transaction per job, no thread hand-off; the figures are in
        # BENCHMARKS.md#hot-path-benchquickpy). Other pools, sizes and stores keep the
        # pool + completer.
        self._inline: ThreadExecutor | None = None
        inline_ok = "ack_with_claim" in app.backend.features
        if concurrency == 1 and pool == "thread" and executor is None and inline_ok:
            from conveyor.worker.executors.thread import ThreadExecutor

            if isinstance(self.executor, ThreadExecutor):
                self._inline = self.executor
        #: One-slot mode: finishes held to ride with the next claim. Guarded by
        #: ``_unwritten_lock``: with prefetch, the flusher may take them first.
        self._unwritten: list[JobFinishParams] = []
        self._unwritten_lock = threading.Lock()
        self.processed = itertools.count()
        s = app.settings
        ops = app.backend.features
        self._services: list[Looper] = [
            Heartbeat(self, s.heartbeat_interval),
            Rescuer(self, s.rescue_interval),
        ]
        if self._inline is not None and prefetch:
            # A prefetched batch runs in the fetcher thread and its finishes ride with the
            # next claim; a slow job later in the batch must not hold back the results of
            # the ones before it: past FLUSH_AFTER they go to the completer instead.
            self._services.append(_Flusher(self, FLUSH_AFTER / 2))
        if "purge" in ops:  # retention, where the backend can purge
            self._services.append(Pruner(self, s.prune_interval))
        # Flow-control services, only where the backend implements them.
        from conveyor.worker.services.by_feature import flow_services

        self._services += flow_services(self)
        #: Hooks called as jobs are claimed, finish or are rescued (metrics); see observers.py.
        self.observers: list[WorkerObserver] = []
        self.log_capture: LogCapture | None = (
            self._make_log_capture() if s.capture_logs and "logs" in ops else None
        )

    def __repr__(self) -> str:
        return f"<Worker {self.id} pool={self.pool} c={self.concurrency}>"

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
        try:
            self._setup()
            self._started.set()
            if self._inline is not None:
                self._run_inline()
            else:
                self._fetch_loop()
        finally:
            try:
                self._shutdown()
            finally:
                self._started.set()
                self._finished.set()

    def start(self) -> Worker:
        """Run in a background thread; returns once the worker has registered."""
        self._thread = threading.Thread(
            target=self.run, kwargs={"install_signals": False}, name="conveyor-worker", daemon=True
        )
        self._thread.start()
        self._started.wait()
        return self

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
            entry = self._inflight.pop(job.id, None)
            released = job.id in self._released
            self._released.discard(job.id)
            self._slot_freed.notify()
        if released or entry is None:
            return
        task = self.app.tasks.get(job.task)
        params = finish_params(outcome, job, task, self.id, entry.ctx.cancel_requested)
        if self._inline is not None:
            # Called in the fetcher thread itself: written with the next claim.
            with self._unwritten_lock:
                self._unwritten.append(params)
        else:
            self.completer.put(params)
        if self.observers:
            for observer in self.observers:
                observer.on_finished(job, params)
        next(self.processed)
        if self._buffer and self._inline is None:
            self._start_buffered()

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
        if self._inline is not None:
            self._inline.start_inline()
        else:
            self.executor.start(self.on_outcome)
        for service in self._services:
            service.start()
        log.info(
            "worker %s ready: queues=%s pool=%s concurrency=%d",
            self.id,
            ",".join(self.selection.names),
            self.pool,
            self.concurrency,
        )

    def _fetch_loop(self) -> None:
        backend = self.app.backend
        failures = 0
        while not self._stopping.is_set():
            if self._quiet.is_set():
                self._stopping.wait(IDLE_WAIT)
                continue
            capacity = self.concurrency + self.prefetch
            with self._lock:
                free = capacity - len(self._inflight)
                if free <= 0 or self.completer.pending > MAX_PENDING:
                    self._slot_freed.wait(IDLE_WAIT)
                    continue
                if free < self._claim_batch and free < capacity:
                    # Slots free one by one while short jobs finish: wait a moment for a
                    # few more, so one claim transaction serves several (still never more
                    # jobs than free slots plus the prefetch allowance).
                    self._slot_freed.wait(CLAIM_GATHER)
                    free = capacity - len(self._inflight)
            try:
                jobs = backend.job_claim(
                    JobClaimParams(self.id, self.selection.allocate(free), free)
                )
                failures = 0
            except BackendUnavailable as exc:
                failures += 1
                delay = min(0.1 * 2**failures, 5.0)
                log.warning("claim failed (%s); retrying in %.1f s", exc, delay)
                self._stopping.wait(delay)
                continue
            self._last_fetch_at = time.time()
            if jobs:
                self._dispatch(jobs)
                continue
            try:
                if self.burst and self._idle():
                    log.info("burst: nothing ready or running; stopping")
                    return
                backend.work_wait(IDLE_WAIT)
            except BackendUnavailable as exc:
                # The wait (a BLPOP on Redis) fails when the store goes away; the loop
                # must survive it, or the worker stays alive but never claims again.
                log.warning("waiting for work failed (%s); claiming again", exc)
                self._stopping.wait(0.1)

    def _run_inline(self) -> None:
        """One-slot mode: the fetch loop runs in its own thread (so this thread keeps
        handling signals and can enforce the shutdown timeout, as with a pool); returns
        once it has stopped, or when stopping and the running job outlives the timeout
        (the shutdown then releases it, as it would a pool thread's job)."""
        thread = threading.Thread(target=self._inline_loop, name="conveyor-fetcher", daemon=True)
        thread.start()
        self._stopping.wait()
        self._release_buffered()  # now, not after the running job
        if not self._hard.is_set():
            thread.join(self.shutdown_timeout)

    def _inline_loop(self) -> None:
        assert self._inline is not None
        backend = self.app.backend
        failures = 0
        try:
            while not self._stopping.is_set():
                if self._quiet.is_set():
                    self._write_unwritten()
                    self._stopping.wait(IDLE_WAIT)
                    continue
                n = 1 + self.prefetch
                claim = JobClaimParams(self.id, self.selection.allocate(n), n)
                try:
                    with self._unwritten_lock:
                        batch, self._unwritten = self._unwritten, []
                    stale, jobs = backend.job_finish_and_claim(batch, claim)
                    failures = 0
                except BackendUnavailable as exc:  # the finishes are kept and retried
                    with self._unwritten_lock:
                        self._unwritten[:0] = batch
                    failures += 1
                    delay = min(0.1 * 2**failures, 5.0)
                    log.warning("claim failed (%s); retrying in %.1f s", exc, delay)
                    self._stopping.wait(delay)
                    continue
                if batch:
                    self.completer.report(batch, stale)
                self._last_fetch_at = time.time()
                if jobs:
                    self._run_here(jobs)
                    continue
                # The finishes just written went in before this (empty) claim, in the
                # same transaction / pipeline: nothing they made due can be missed.
                if self.burst and not self._inflight:
                    log.info("burst: nothing ready or running; stopping")
                    return
                backend.work_wait(IDLE_WAIT)
        finally:
            self._write_unwritten()
            self.stop_soon()

    def _run_here(self, jobs: list[ClaimedJob]) -> None:
        """Run a claimed batch (one job, or more with prefetch) in this thread, in order."""
        assert self._inline is not None
        first, *rest = self._track(jobs)
        with self._lock:
            self._buffer.extend(rest)
        entry: _InFlight | None = first
        while entry is not None:
            if entry.ctx.cancel_requested:  # cancelled while it waited in the buffer
                outcome = Outcome.cancelled(CANCELLED_BEFORE_START)
            else:
                outcome = self._inline.run_one(entry.job, entry.ctx)
            self.on_outcome(entry.job, outcome)
            entry = self._next_buffered()

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
        entry.job = records.replace(entry.job, claimed_at=time.time())
        return entry

    def _write_unwritten(self, older_than: float | None = None) -> None:
        """Hand finishes not yet written to the completer: all of them (stopping, quiet),
        or, from the flusher, all once the oldest finished ``older_than`` seconds ago."""
        with self._unwritten_lock:
            if not self._unwritten:
                return
            oldest = self._unwritten[0].finished_at or 0.0
            if older_than is not None and time.time() - oldest < older_than:
                return
            batch, self._unwritten = self._unwritten, []
        for params in batch:
            self.completer.put(params)

    def _idle(self) -> bool:
        with self._lock:
            if self._inflight:
                return False
        if self.completer.pending:
            return False
        # A finish written just now may have made a retry due: look once more.
        jobs = self.app.backend.job_claim(
            JobClaimParams(self.id, self.selection.allocate(self.concurrency), self.concurrency)
        )
        if jobs:
            self._dispatch(jobs)
            return False
        return True

    def _dispatch(self, jobs: list[ClaimedJob]) -> None:
        """Hand claimed jobs to free slots; with prefetch, buffer the rest."""
        entries = self._track(jobs)
        with self._lock:
            running = len(self._inflight) - len(self._buffer) - len(entries)
            free = max(0, self.concurrency - running)
            self._buffer.extend(entries[free:])
        for entry in entries[:free]:
            self.executor.submit(entry.job, entry.ctx)

    def _start_buffered(self) -> None:
        """A pool slot freed: start the oldest prefetched job in it (or finish it as
        cancelled if a cancel arrived while it waited)."""
        entry = self._next_buffered()
        if entry is None:
            return
        if entry.ctx.cancel_requested:
            self.on_outcome(entry.job, Outcome.cancelled(CANCELLED_BEFORE_START))
        else:
            self.executor.submit(entry.job, entry.ctx)

    def _track(self, jobs: list[ClaimedJob]) -> list[_InFlight]:
        """Record claimed jobs as in flight (heartbeats extend their leases from now on)."""
        entries = [
            _InFlight(j, JobContext(j.id, j.task, j.queue, j.attempt, j.max_attempts)) for j in jobs
        ]
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
            while self._inflight and not self._hard.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._slot_freed.wait(min(remaining, IDLE_WAIT))
            leftovers = [f for f in self._inflight.values() if not f.lost]
            self._released.update(f.job.id for f in leftovers)
        if leftovers:
            self._release(leftovers)
        self.completer.stop()
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
        what = "running" if started else "prefetched"
        log.warning("releasing %d %s job(s) back to the queue", len(leftovers), what)
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
