"""How a worker gets jobs to run: the fetch strategies, chosen once at start.

* :class:`PooledFetch` -- claim as many jobs as there are free slots (plus the prefetch
  allowance), hand them to the executor's pool; finishes are group-committed by the
  completer (:class:`~conveyor.worker.completion.GroupCommit`).
* :class:`InlineFetch` -- one slot on the thread pool, on a store where it saves work
  (feature ``ack_with_claim``): the fetcher thread runs each job itself and its finish
  rides with the next claim (:class:`~conveyor.worker.completion.RideOnClaim`): one
  transaction per job, no thread hand-off (BENCHMARKS.md#hot-path-benchquickpy).

Both share the worker's one back-off (:class:`ClaimBackoff`), its one burst exit
(``Worker._burst_over``) and its one check before a job starts (a cancel requested, or
past its expiry: ``Worker._ends_before_start``).

Example::

    fetch, completion = choose(worker, executor_given=False)
    fetch.start()   # the executor
    fetch.run()     # until stopped (or, in burst mode, until nothing is left)
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol

from conveyor.backends.base import ClaimedJob, JobClaimParams
from conveyor.errors import BackendUnavailable
from conveyor.worker.completer import MAX_PENDING
from conveyor.worker.completion import CompletionStrategy, GroupCommit, RideOnClaim
from conveyor.worker.outage import Outage, OutageLog
from conveyor.worker.outcome import Outcome

if TYPE_CHECKING:
    from conveyor.worker.executors.thread import ThreadExecutor
    from conveyor.worker.worker import Worker, _InFlight

log = logging.getLogger("conveyor.worker")

#: How long the fetch loop sleeps at most before re-checking stop flags (seconds).
IDLE_WAIT = 0.25
#: With fewer than ``concurrency // 4`` slots free and jobs still running, the fetcher
#: waits up to this long (seconds) for more slots before claiming, so a claim serves
#: several slots. Bounds the extra start delay of a queued job behind busy slots.
CLAIM_GATHER = 0.002
#: Back-off after a failed claim: doubles from this, up to MAX_BACKOFF (seconds).
FIRST_BACKOFF, MAX_BACKOFF = 0.2, 5.0


class ClaimBackoff:
    """The one back-off of a fetch loop whose store is away (it keeps trying): a Redis
    outage and a SQLite store fault (disk full, I/O error, locked, read-only:
    :class:`~conveyor.errors.StoreError`) alike. One log line when the outage starts,
    one when it ends."""

    __slots__ = ("failures", "outage")

    def __init__(self, outages: OutageLog | None = None) -> None:
        self.failures = 0
        self.outage = Outage("fetch", outages)

    def succeeded(self) -> None:
        if self.failures:
            self.failures = 0
            self.outage.recovered()

    def wait(self, exc: BackendUnavailable, stopping: threading.Event) -> None:
        """Log (once per outage) and sleep (0.2 s, 0.4 s, ... 5 s), waking at once when
        stopping."""
        self.failures += 1
        delay = min(FIRST_BACKOFF * 2 ** (self.failures - 1), MAX_BACKOFF)
        self.outage.failed(exc, f"claims retried with back-off up to {MAX_BACKOFF:g} s")
        stopping.wait(delay)


class FetchStrategy(Protocol):
    def start(self) -> None:
        """Start the executor the way this strategy uses it."""
        ...

    def run(self) -> None:
        """Fetch and run until the worker stops (or a burst is over)."""
        ...

    def slot_freed(self) -> None:
        """A job finished and prefetched ones wait: start the next if this strategy's
        slots are the executor's."""
        ...


def choose(worker: Worker, *, executor_given: bool) -> tuple[FetchStrategy, CompletionStrategy]:
    """Inline + ride-on-claim for one thread slot on an ``ack_with_claim`` store; pooled
    + group commit for every other pool, size and store."""
    if (
        worker.concurrency == 1
        and worker.pool == "thread"
        and not executor_given
        and "ack_with_claim" in worker.app.backend.features
    ):
        from conveyor.worker.executors.thread import ThreadExecutor

        if isinstance(worker.executor, ThreadExecutor):
            completion = RideOnClaim(worker.completer)
            return InlineFetch(worker, worker.executor, completion), completion
    return PooledFetch(worker), GroupCommit(worker.completer)


class PooledFetch:
    """Claim for the free slots, hand the jobs to the executor's pool."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._claim_batch = max(1, worker.concurrency // 4)
        self._claims = worker.claims

    def start(self) -> None:
        self.worker.executor.start(self.worker.on_outcome)

    def run(self) -> None:
        w = self.worker
        backend = w.app.backend
        backoff = ClaimBackoff(w.outages)
        while not w._stopping.is_set():
            if w._quiet.is_set():
                w._stopping.wait(IDLE_WAIT)
                continue
            free = self._free_slots()
            if free <= 0:
                continue
            try:
                jobs = backend.job_claim(JobClaimParams(w.id, w.selection.allocate(free), free))
                backoff.succeeded()
                if jobs:
                    jobs = w.isolate(jobs)
            except BackendUnavailable as exc:
                backoff.wait(exc, w._stopping)
                continue
            w._last_fetch_at = time.time()
            if jobs:
                self.dispatch(jobs)
                continue
            try:
                if w.burst and w._burst_over(self._claim_again):
                    return
                backend.work_wait(IDLE_WAIT)
            except BackendUnavailable as exc:
                # The wait (a BLPOP on Redis) fails when the store goes away; the loop
                # must survive it, or the worker stays alive but never claims again. The
                # claim that follows logs the outage (once) and backs off.
                log.debug("waiting for work failed (%s); claiming again", exc)
                w._stopping.wait(0.1)

    def _free_slots(self) -> int:
        """Slots to claim for now; 0 after waiting a moment when there are none."""
        w = self.worker
        extra = self._claims.extra()
        capacity = w.concurrency + extra
        with w._lock:
            free = capacity - len(w._inflight)
            if free <= 0 or w.completer.pending > MAX_PENDING or w.claim_paused():
                w._slot_freed.wait(IDLE_WAIT)
                return 0
            if w._buffer and free < (extra + 1) // 2:
                # The slots are still fed from the prefetch buffer: refill it once half
                # of it has started, so one claim serves many jobs.
                w._slot_freed.wait(IDLE_WAIT)
                return 0
            if free < self._claim_batch and free < capacity:
                # Slots free one by one while short jobs finish: wait a moment for a
                # few more, so one claim transaction serves several (still never more
                # jobs than free slots plus the prefetch allowance).
                w._slot_freed.wait(CLAIM_GATHER)
                free = capacity - len(w._inflight)
        return free

    def _claim_again(self) -> bool:
        """Burst: a finish written just now may have made a retry due; look once more."""
        w = self.worker
        jobs = w.app.backend.job_claim(
            JobClaimParams(w.id, w.selection.allocate(w.concurrency), w.concurrency)
        )
        if jobs:  # found something (even if isolation gave some back): not over
            self.dispatch(w.isolate(jobs))
        return bool(jobs)

    def dispatch(self, jobs: list[ClaimedJob]) -> None:
        """Hand claimed jobs to free slots; with prefetch, buffer the rest."""
        w = self.worker
        entries = w._track(jobs)
        with w._lock:
            running = len(w._inflight) - len(w._buffer) - len(entries)
            free = max(0, w.concurrency - running)
            w._buffer.extend(entries[free:])
        for entry in entries[:free]:
            if not w._ends_before_start(entry):
                w.executor.submit(entry.job, entry.ctx)

    def slot_freed(self) -> None:
        w = self.worker
        entry = w._next_buffered()
        if entry is not None and not w._ends_before_start(entry):
            w.executor.submit(entry.job, entry.ctx)


class InlineFetch:
    """One slot: the fetcher runs each job itself; finishes ride with the next claim."""

    def __init__(self, worker: Worker, executor: ThreadExecutor, completion: RideOnClaim) -> None:
        self.worker = worker
        self.executor = executor
        self.completion = completion

    def start(self) -> None:
        self.executor.start_inline()

    def slot_freed(self) -> None:
        """Nothing to do: the fetcher takes the next buffered job itself."""

    def run(self) -> None:
        """The loop runs in its own thread (so the worker's thread keeps handling signals
        and can enforce the shutdown timeout, as with a pool); returns once it stopped,
        or when stopping and the running job outlives the timeout (the shutdown then
        releases it, as it would a pool thread's job)."""
        w = self.worker
        thread = threading.Thread(target=self._loop, name="conveyor-fetcher", daemon=True)
        thread.start()
        w._stopping.wait()
        w._release_buffered()  # now, not after the running job
        if not w._hard.is_set():
            thread.join(w.shutdown_timeout)

    def _loop(self) -> None:
        w = self.worker
        backend = w.app.backend
        backoff = ClaimBackoff(w.outages)
        try:
            while not w._stopping.is_set():
                if w._quiet.is_set():
                    self.completion.flush()
                    w._stopping.wait(IDLE_WAIT)
                    continue
                n = 1 + w.claims.extra()
                claim = JobClaimParams(w.id, w.selection.allocate(n), n)
                batch = self.completion.take()
                try:
                    stale, jobs = backend.job_finish_and_claim(batch, claim)
                    backoff.succeeded()
                except BackendUnavailable as exc:  # the finishes are kept and retried
                    self.completion.give_back(batch)
                    backoff.wait(exc, w._stopping)
                    continue
                except Exception:
                    if not batch:
                        raise
                    # A finish the store refuses (a result over its size limit) must not
                    # stop this, the worker's only slot: written one by one, a refused
                    # one ends dead (the completer's rule), then claim again.
                    log.exception("writing %d finishes failed; writing them one by one", len(batch))
                    w.completer.report(batch, w.completer.write_one_by_one(batch))
                    continue
                if batch:
                    w.completer.report(batch, stale)
                w._last_fetch_at = time.time()
                if jobs:
                    jobs = w.isolate(jobs)  # nothing else runs here: a rescued job is kept
                    if jobs:
                        self._run_here(jobs)
                    continue
                # The finishes just written went in before this (empty) claim, in the
                # same transaction / pipeline: nothing they made due can be missed.
                if w.burst and w._burst_over(None):
                    return
                try:
                    backend.work_wait(IDLE_WAIT)
                except BackendUnavailable as exc:  # the next claim logs it and backs off
                    log.debug("waiting for work failed: %s", exc)
                    w._stopping.wait(0.1)
        except BaseException as exc:  # this thread is the worker's only slot
            log.exception("the fetch loop failed")
            w.fail(f"the fetch loop failed: {type(exc).__name__}: {exc}")
        finally:
            self.completion.flush()
            w.stop_soon()

    def _run_here(self, jobs: list[ClaimedJob]) -> None:
        """Run a claimed batch (one job, or more with prefetch) in this thread, in order."""
        w = self.worker
        first, *rest = w._track(jobs)
        with w._lock:
            w._buffer.extend(rest)
        entry: _InFlight | None = first
        run_one = self.executor.run_one
        while entry is not None:
            if not w._ends_before_start(entry):
                try:
                    outcome = run_one(entry.job, entry.ctx)
                except BaseException as exc:  # the one slot lives on
                    outcome = Outcome.failed(exc)
                w.on_outcome(entry.job, outcome)
            entry = w._next_buffered()
