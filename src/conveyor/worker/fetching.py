"""How a worker gets jobs to run: the fetch strategies, chosen once when it is built.

* :class:`PooledFetch` -- claim as many jobs as there are free slots (plus the prefetch
  allowance), hand them to the executor's pool; finishes are group-committed by the
  completer (:class:`~conveyor.worker.completion.GroupCommit`).
* :class:`InlineFetch` -- one slot on the thread pool, on a store where it saves work
  (feature ``ack_with_claim``): the fetcher thread runs each job itself and its finish
  rides with the next claim (:class:`~conveyor.worker.completion.RideOnClaim`): one
  transaction per job, no thread hand-off (BENCHMARKS.md#hot-path-benchquickpy).

Both work on the worker's :class:`~conveyor.worker.inflight.InFlight` table (slots,
buffer, stop state) and its :class:`~conveyor.worker.attempts.Attempts` (claim, start
check, end, release), and share one back-off (:class:`ClaimBackoff`) and one burst exit
(:func:`burst_over`). A job's path: claimed here, ``Attempts.claimed``, started unless
``Attempts.refusal`` says otherwise, ended by ``Attempts.end`` (the finish goes to the
completion strategy); then the strategy starts the next buffered job.

Example::

    inline = inline_executor(worker, executor_given=False)   # None: pooled
    fetch = PooledFetch(worker) if inline is None else InlineFetch(worker, inline, ride)
    fetch.start()   # the executor
    fetch.run()     # until stopped (or, in burst mode, until nothing is left)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from conveyor.backends.base import ClaimedJob, JobClaimParams
from conveyor.errors import BackendUnavailable
from conveyor.worker.completer import MAX_PENDING, Completer
from conveyor.worker.completion import RideOnClaim
from conveyor.worker.inflight import IDLE_WAIT, Held, InFlight
from conveyor.worker.outage import Outage, OutageLog
from conveyor.worker.outcome import Outcome

if TYPE_CHECKING:
    from conveyor.worker.executors.thread import ThreadExecutor
    from conveyor.worker.worker import Worker

__all__ = ["IDLE_WAIT", "ClaimBackoff", "FetchStrategy", "InlineFetch", "PooledFetch"]

log = logging.getLogger("conveyor.worker")

#: Back-off after a failed claim: doubles from this, up to MAX_BACKOFF (seconds).
FIRST_BACKOFF, MAX_BACKOFF = 0.2, 5.0
#: Burst mode, before stopping: while a plain read still shows a ready job in the
#: worker's unpaused queues, claim again, at most this many times, waiting from
#: BURST_RECHECK_WAIT seconds (doubling) between claims: ~0.6 s in all at most, the
#: bound for a job that stays ready because a limit holds it back.
BURST_RECHECKS, BURST_RECHECK_WAIT = 5, 0.02


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


def inline_executor(worker: Worker, *, executor_given: bool) -> ThreadExecutor | None:
    """The thread executor to run jobs inline with (+ ride-on-claim), for one thread slot
    on an ``ack_with_claim`` store; ``None``: pooled + group commit, for every other pool,
    size and store."""
    if (
        worker.concurrency == 1
        and worker.pool == "thread"
        and not executor_given
        and worker.batcher is None  # a batch call waits for its jobs: pooled
        and "ack_with_claim" in worker.app.backend.features
    ):
        from conveyor.worker.executors.thread import ThreadExecutor

        if isinstance(worker.executor, ThreadExecutor):
            return worker.executor
    return None


def burst_over(
    table: InFlight, completer: Completer, claim_again: Callable[[], bool] | None
) -> bool:
    """Burst mode: True (and logged) once nothing is running and nothing is ready.
    ``claim_again`` looks once more, after the completer's finishes are written (one
    may make a retry due): the pooled fetch claims again, and both fetches keep
    claiming while a plain read shows a job ready that a claim skipping locked rows
    passed over (:func:`claim_until_settled`); ``None``: no second look."""
    if not table.empty():
        return False
    if claim_again is not None and (completer.pending or claim_again()):
        return False
    log.info("burst: nothing ready or running; stopping")
    return True


def ready_left(worker: Worker) -> bool:
    """Whether a plain (non-locking) read shows a job ready in one of the worker's
    unpaused queues.

    A claim that skips locked rows (``SKIP LOCKED`` on MariaDB and PostgreSQL) can
    come back empty while a job is ready: its row was held at that instant by another
    transaction of the worker's own threads (a finish, a lease extension, the rescue).
    That is harmless while the worker keeps claiming, but a burst that stopped on it
    would leave the job queued; this read, which waits on no lock, tells the two apart.

    Example::

        if ready_left(worker):   # one more claim is worth it
            ...
    """
    backend = worker.app.backend
    if "queues" not in backend.features:  # no way to look: stop, as before
        return False
    names = set(worker.selection.names)
    return any(
        q.queue in names and not q.paused and q.counts.get("queued", 0) > 0
        for q in backend.queue_list()
    )


def claim_until_settled(worker: Worker, claim: Callable[[], bool]) -> bool:
    """Burst mode, after an empty claim with nothing running: claim again while
    :func:`ready_left` says a job is ready, a bounded number of times (a job a limit
    holds back stays ready); True when a claim found something (the burst goes on).

    Example::

        if not claim_until_settled(worker, lambda: bool(fetch_some())):
            stop()
    """
    wait = BURST_RECHECK_WAIT
    for tried in range(BURST_RECHECKS):
        if not ready_left(worker):
            return False
        log.debug("burst: a job is ready but the claim found none (try %d)", tried + 1)
        if worker.inflight.stopping.wait(wait):
            return False
        wait *= 2
        if claim():
            return True
    return False


class PooledFetch:
    """Claim for the free slots, hand the jobs to the executor's pool; as a job ends, the
    next prefetched one takes its slot."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.table = worker.inflight
        self.attempts = worker.attempts
        self._claim_batch = max(1, worker.concurrency // 4)
        self._claims = worker.claims

    def start(self) -> None:
        self.worker.executor.start(self.ended)

    def run(self) -> None:
        w, table = self.worker, self.table
        backend = w.app.backend
        backoff = ClaimBackoff(w.outages)
        while not table.stopping.is_set():
            if table.quieted.is_set():
                table.stopping.wait(IDLE_WAIT)
                continue
            extra = self._claims.extra()
            # A batch call's riders take no slot: they do not count against the claim.
            capacity = w.concurrency + extra + table.riders
            free = table.free_for_claim(
                capacity, extra, self._claim_batch, w.completer.pending > MAX_PENDING
            )
            if free <= 0:
                continue
            try:
                jobs = backend.job_claim(JobClaimParams(w.id, w.selection.allocate(free), free))
                backoff.succeeded()
                if jobs:
                    jobs = self.attempts.isolate(jobs)
            except BackendUnavailable as exc:
                backoff.wait(exc, table.stopping)
                continue
            table.last_fetch_at = time.time()
            if jobs:
                self.dispatch(jobs)
                continue
            try:
                if w.burst and burst_over(table, w.completer, self._claim_again):
                    return
                backend.work_wait(IDLE_WAIT)
            except BackendUnavailable as exc:
                # The wait (a BLPOP on Redis) fails when the store goes away; the loop
                # must survive it, or the worker stays alive but never claims again. The
                # claim that follows logs the outage (once) and backs off.
                log.debug("waiting for work failed (%s); claiming again", exc)
                table.stopping.wait(0.1)

    def _claim_again(self) -> bool:
        """Burst: a finish written just now may have made a retry due; look once more,
        and again while a plain read still shows a ready job (:func:`claim_until_settled`)."""
        return self._claim_once() or claim_until_settled(self.worker, self._claim_once)

    def _claim_once(self) -> bool:
        w = self.worker
        jobs = w.app.backend.job_claim(
            JobClaimParams(w.id, w.selection.allocate(w.concurrency), w.concurrency)
        )
        if jobs:  # found something (even if isolation gave some back): not over
            self.dispatch(self.attempts.isolate(jobs))
        return bool(jobs)

    def dispatch(self, jobs: list[ClaimedJob]) -> None:
        """Hand claimed jobs to free slots; with prefetch, buffer the rest."""
        entries = self.attempts.claimed(jobs)
        batcher = self.worker.batcher
        if batcher is not None:  # jobs of a batch call being gathered join it
            entries = batcher.join(entries)
        for entry in self.table.admit(entries, self.worker.concurrency):
            self._start(entry)

    def _start(self, entry: Held | None) -> None:
        batcher = self.worker.batcher
        while entry is not None:
            refused = self.attempts.refusal(entry)
            if refused is not None:
                self.ended(entry.job, refused)
            elif batcher is None or not batcher.serves(entry.job):
                self.worker.executor.submit(entry.job, entry.ctx)
            elif not batcher.lead(entry):  # joined an open call: the slot is free again
                entry = self.table.next_buffered()
                continue
            return

    def ended(self, job: ClaimedJob, outcome: Outcome) -> None:
        """The executor's callback: the attempt ends (a batch call's other jobs first);
        a prefetched job takes the slot."""
        batcher = self.worker.batcher
        if batcher is not None:
            for rider, its_outcome in batcher.finished(job, outcome):
                self.attempts.end(rider, its_outcome)
        if self.attempts.end(job, outcome) and self.table.buffer:
            entry = self.table.next_buffered()
            if entry is not None:
                self._start(entry)


class InlineFetch:
    """One slot: the fetcher runs each job itself; finishes ride with the next claim."""

    def __init__(self, worker: Worker, executor: ThreadExecutor, completion: RideOnClaim) -> None:
        self.worker = worker
        self.table = worker.inflight
        self.attempts = worker.attempts
        self.executor = executor
        self.completion = completion

    def start(self) -> None:
        self.executor.start_inline()

    def run(self) -> None:
        """The loop runs in its own thread (so the worker's thread keeps handling signals
        and can enforce the shutdown timeout, as with a pool); returns once it stopped,
        or when stopping and the running job outlives the timeout (the shutdown then
        releases it, as it would a pool thread's job)."""
        thread = threading.Thread(target=self._loop, name="conveyor-fetcher", daemon=True)
        thread.start()
        self.table.stopping.wait()
        self.attempts.release_buffered()  # now, not after the running job
        if not self.table.hard.is_set():
            thread.join(self.worker.shutdown_timeout)

    def _loop(self) -> None:
        w = self.worker
        try:
            self._fetch_until_stopped()
        except BaseException as exc:  # this thread is the worker's only slot
            log.exception("the fetch loop failed")
            w.fail(f"the fetch loop failed: {type(exc).__name__}: {exc}")
        finally:
            self.completion.flush()
            w.stop_soon()

    def _fetch_until_stopped(self) -> None:
        w, table, completer = self.worker, self.table, self.worker.completer
        backend = w.app.backend
        backoff = ClaimBackoff(w.outages)
        while not table.stopping.is_set():
            if table.quieted.is_set():
                self.completion.flush()
                table.stopping.wait(IDLE_WAIT)
                continue
            n = 1 + w.claims.extra()
            claim = JobClaimParams(w.id, w.selection.allocate(n), n)
            batch = self.completion.take()
            try:
                stale, jobs = backend.job_finish_and_claim(batch, claim)
                backoff.succeeded()
            except BackendUnavailable as exc:  # the finishes are kept and retried
                self.completion.give_back(batch)
                backoff.wait(exc, table.stopping)
                continue
            except Exception:
                if not batch:
                    raise
                # A finish the store refuses (a result over its size limit) must not
                # stop this, the worker's only slot: written one by one, a refused
                # one ends dead (the completer's rule), then claim again.
                log.exception("writing %d finishes failed; writing them one by one", len(batch))
                completer.report(batch, completer.write_one_by_one(batch))
                continue
            if batch:
                completer.report(batch, stale)
            table.last_fetch_at = time.time()
            if jobs:
                jobs = self.attempts.isolate(jobs)  # nothing else runs here: one is kept
                if jobs:
                    self._run_here(jobs)
                continue
            # The finishes just written went in before this (empty) claim, in the
            # same transaction / pipeline: nothing they made due can be missed.
            if w.burst and burst_over(table, completer, self._claim_again):
                return
            try:
                backend.work_wait(IDLE_WAIT)
            except BackendUnavailable as exc:  # the next claim logs it and backs off
                log.debug("waiting for work failed: %s", exc)
                table.stopping.wait(0.1)

    def _claim_again(self) -> bool:
        """Burst: the empty claim just made wrote this loop's finishes first, so nothing
        they made due was missed; claim again only while a plain read shows a job ready
        that the claim skipped (:func:`claim_until_settled`), and run what it finds."""

        def claim_once() -> bool:
            w = self.worker
            jobs = w.app.backend.job_claim(JobClaimParams(w.id, w.selection.allocate(1), 1))
            kept = self.attempts.isolate(jobs) if jobs else []
            if kept:
                self._run_here(kept)
            return bool(jobs)

        try:
            return claim_until_settled(self.worker, claim_once)
        except BackendUnavailable as exc:  # not over: the next claim backs off
            log.debug("burst: looking again failed (%s)", exc)
            return True

    def _run_here(self, jobs: list[ClaimedJob]) -> None:
        """Run a claimed batch (one job, or more with prefetch) in this thread, in order."""
        attempts, table = self.attempts, self.table
        entries = attempts.claimed(jobs)
        table.wait_in_buffer(entries[1:])  # the first runs now
        entry: Held | None = entries[0]
        run_one = self.executor.run_one
        while entry is not None:
            outcome = attempts.refusal(entry)
            if outcome is None:
                try:
                    outcome = run_one(entry.job, entry.ctx)
                except BaseException as exc:  # the one slot lives on
                    outcome = Outcome.failed(exc)
            attempts.end(entry.job, outcome)
            entry = table.next_buffered()
