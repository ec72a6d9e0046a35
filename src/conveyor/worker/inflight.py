"""``InFlight``: the one record of what a worker holds and whether it may claim more.

Everything the fetch loop, the executor's callback, the heartbeat and the shutdown share
lives here, behind one lock: the table of held jobs (claimed, lease extended by the
heartbeat, until their finish is handed to the completion strategy), the prefetch buffer
(held, not started yet), the slot accounting (how many to claim now, waiting for a slot),
poison isolation's pause (a rescued job running alone) and the run state (quiet,
stopping, stopping now). It does no I/O and knows neither the store nor the executor:
the job path around it is :class:`~conveyor.worker.attempts.Attempts`.

Example:
    >>> from conveyor.backends.base import ClaimedJob
    >>> from conveyor.context import context_of
    >>> table = InFlight()
    >>> job = ClaimedJob("j", "t", "q", "{}", 1, 3, 7, None, 30.0, 0.0, 0.0, 0, 0)
    >>> table.hold([Held(job, context_of(job))])
    >>> len(table), table.held_claims()
    (1, [('j', 7)])
    >>> table.finish(job).job.id, len(table), table.empty()
    ('j', 0, False)
    >>> table.handed_on(); table.empty()
    True
"""

from __future__ import annotations

import collections
import threading
import time

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext

#: How long a waiting loop sleeps at most before re-checking the stop flags (seconds).
IDLE_WAIT = 0.25
#: With fewer than ``concurrency // 4`` slots free and jobs still running, the fetcher
#: waits up to this long (seconds) for more slots before claiming, so a claim serves
#: several slots. Bounds the extra start delay of a queued job behind busy slots.
CLAIM_GATHER = 0.002


class Held:
    """One job this worker holds: its claim, its context, whether it was lost."""

    __slots__ = ("ctx", "job", "lost", "started")

    def __init__(self, job: ClaimedJob, ctx: JobContext) -> None:
        self.job = job
        self.ctx = ctx
        self.lost = False
        #: When it started: its claim, or for a prefetched job the moment it left the
        #: buffer (kept here rather than copying the frozen job: ~10 µs a job).
        self.started = job.claimed_at


class InFlight:
    """The held jobs, the prefetch buffer, slot accounting and run state of one worker.

    ``lock`` guards the table, the buffer and the isolation state; ``slot_freed`` (on the
    same lock) is notified as a job ends and on every stop. ``buffer`` is read without the
    lock as a cheap "anything prefetched?" test; change it only through the methods."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slot_freed = threading.Condition(self.lock)
        self._held: dict[str, Held] = {}
        #: Prefetched: held (leases extended), not yet started; oldest first.
        self.buffer: collections.deque[Held] = collections.deque()
        self._released: set[str] = set()
        #: attempts out of the table whose finish is not handed on yet (see finish())
        self._handing_on = 0
        #: Held jobs of batch calls (gathering or running) other than each call's first:
        #: they take no slot (worker/batching.py). Read without the lock by the fetcher.
        self.riders = 0
        #: Poison isolation (docs/guarantees.md): the id of a job rescued before that runs
        #: alone here (nothing else is claimed until it finished), and whether the
        #: fetcher waits for this worker to empty before claiming such a job.
        self._solo: str | None = None
        self._draining = False
        #: Set by a graceful stop: no more claims, nothing more leaves the buffer.
        self.stopping = threading.Event()
        #: Set by a stop "now": running jobs are released at once.
        self.hard = threading.Event()
        #: Set by ``quiet()``: no more claims; running and buffered jobs go on.
        self.quieted = threading.Event()
        #: When the last claim answered (the heartbeat reports it).
        self.last_fetch_at: float | None = None
        #: ``job_id in table``, without the lock (the log capture's filter).
        self.holds = self._held.__contains__

    def __len__(self) -> int:
        return len(self._held)

    # -- run state -------------------------------------------------------------------

    def stop(self) -> None:
        """No more claims; wake whatever waits for a slot."""
        self.stopping.set()
        self.wake()

    def stop_now(self) -> None:
        self.hard.set()
        self.stop()

    def wake(self) -> None:
        with self.lock:
            self.slot_freed.notify_all()

    # -- the table -------------------------------------------------------------------

    def hold(self, entries: list[Held]) -> None:
        """Record claimed jobs as held (heartbeats extend their leases from now on)."""
        with self.lock:
            for entry in entries:
                self._held[entry.job.id] = entry

    def get(self, job_id: str) -> Held | None:
        with self.lock:
            return self._held.get(job_id)

    def finish(self, job: ClaimedJob) -> Held | None:
        """An attempt ended: forget it, free its slot. Its entry, or ``None`` when it was
        not held or was released meanwhile (its finish must not be written). An entry
        returned counts as *handing on* until :meth:`handed_on`: burst mode must not
        stop in between (the finish would be lost and the job left running).

        An attempt whose job this worker claimed again meanwhile (released or rescued
        under it, then claimed here anew: the table holds the newer claim under the same
        id) is stale: the newer attempt keeps its entry, and the stale one's finish,
        which the store would refuse by its token, is not written."""
        with self.lock:
            entry = self._held.get(job.id)
            if entry is not None and entry.job.token != job.token:
                return None
            if job.id == self._solo:
                self._solo = None
            self._held.pop(job.id, None)
            released = job.id in self._released
            self._released.discard(job.id)
            self.slot_freed.notify()
            if released or entry is None:
                return None
            self._handing_on += 1
        return entry

    def handed_on(self) -> None:
        """The finish of an entry :meth:`finish` returned is with the completion
        strategy (or was not to be written)."""
        with self.lock:
            self._handing_on -= 1

    def held_claims(self) -> list[tuple[str, int]]:
        """(id, token) of every job whose lease this worker still extends."""
        with self.lock:
            return [
                (f.job.id, f.job.token)
                for f in self._held.values()
                if not f.lost and f.job.id not in self._released
            ]

    def running_contexts(self) -> list[tuple[str, int, JobContext]]:
        """(id, token, context) of every job this worker still holds."""
        with self.lock:
            return [(f.job.id, f.job.token, f.ctx) for f in self._held.values() if not f.lost]

    def cancel_target(self, job_id: str) -> tuple[Held | None, bool]:
        """The entry of ``job_id`` (``None``: not held) and whether it is still buffered."""
        with self.lock:
            entry = self._held.get(job_id)
            return entry, entry is not None and entry in self.buffer

    def mark_lost(self, job_id: str) -> bool:
        """The store says this worker's claim on ``job_id`` is gone; True if it was held."""
        with self.lock:
            entry = self._held.get(job_id)
            if entry is not None:
                entry.lost = True
        return entry is not None

    # -- the prefetch buffer -----------------------------------------------------------

    def admit(self, entries: list[Held], concurrency: int) -> list[Held]:
        """Of ``entries`` (just held), those that fit the free slots, to start now; the
        rest wait in the buffer."""
        with self.lock:
            running = len(self._held) - len(self.buffer) - self.riders - len(entries)
            free = max(0, concurrency - running)
            self.buffer.extend(entries[free:])
        return entries[:free]

    def wait_in_buffer(self, entries: list[Held]) -> None:
        """Put held jobs in the buffer, after those already there."""
        with self.lock:
            self.buffer.extend(entries)

    def next_buffered(self) -> Held | None:
        """The oldest prefetched job, to start now; ``None`` when there is none, or when
        stopping (the shutdown releases what is still buffered). A job rescued elsewhere
        while it waited is dropped. Its recorded start time becomes now."""
        with self.lock:
            while self.buffer and not self.stopping.is_set():
                entry = self.buffer.popleft()
                if not entry.lost:
                    break
                self._held.pop(entry.job.id, None)
            else:
                return None
        entry.started = entry.ctx.started_at = time.time()
        return entry

    def ride(self, count: int) -> None:
        """``count`` held jobs (just claimed, or leaving the slot they were started in)
        join a batch call as riders: no slot is theirs (worker/batching.py)."""
        with self.lock:
            self.riders += count
            if count > 0:
                self.slot_freed.notify()

    def take_riders(self, task: str, limit: int) -> list[Held]:
        """Up to ``limit`` buffered jobs of ``task``, out of the buffer, as riders of a
        batch call its first job opens (oldest first)."""
        with self.lock:
            taken = [e for e in self.buffer if e.job.task == task and not e.lost][:limit]
            if taken:
                ids = {id(e) for e in taken}
                kept = [e for e in self.buffer if id(e) not in ids]
                self.buffer.clear()
                self.buffer.extend(kept)
                self.riders += len(taken)
        now = time.time()
        for entry in taken:
            entry.started = entry.ctx.started_at = now
        return taken

    def drop_gathered(self, entries: list[Held], riders: int) -> None:
        """Batch jobs gathered but never called, no longer held (the shutdown releases
        them); ``riders`` of them were riders."""
        with self.lock:
            for entry in entries:
                self._held.pop(entry.job.id, None)
            self.riders -= riders
            self.slot_freed.notify_all()

    def take_buffered(self) -> list[Held]:
        """Every prefetched job, no longer held (the caller releases them)."""
        with self.lock:
            buffered = list(self.buffer)
            self.buffer.clear()
            for entry in buffered:
                self._held.pop(entry.job.id, None)
        return buffered

    # -- slot accounting -----------------------------------------------------------------

    def free_for_claim(self, capacity: int, extra: int, batch: int, backlog: bool) -> int:
        """How many jobs to claim now for ``capacity`` slots (the concurrency plus the
        prefetch allowance ``extra``); 0 after waiting a moment when none should be:
        none free, finishes backed up (``backlog``), claims paused, the buffer still
        more than half full. Fewer than ``batch`` free while jobs run: wait up to
        ``CLAIM_GATHER`` for more, so one claim serves several slots."""
        with self.lock:
            free = capacity - len(self._held)
            if free <= 0 or backlog or self._claim_paused():
                self.slot_freed.wait(IDLE_WAIT)
                return 0
            if self.buffer and free < (extra + 1) // 2:
                # The slots are still fed from the prefetch buffer: refill it once half
                # of it has started, so one claim serves many jobs.
                self.slot_freed.wait(IDLE_WAIT)
                return 0
            if free < batch and free < capacity:
                # Slots free one by one while short jobs finish: wait a moment for a
                # few more, so one claim transaction serves several (still never more
                # jobs than free slots plus the prefetch allowance).
                self.slot_freed.wait(CLAIM_GATHER)
                free = capacity - len(self._held)
        return free

    def _claim_paused(self) -> bool:
        """True while a rescued job runs alone here, or while this worker empties so that
        one can (poison isolation). Under the lock."""
        if self._solo is not None:
            return True
        if self._draining and not self._held:
            self._draining = False
        return self._draining

    def isolate(self, jobs: list[ClaimedJob]) -> list[ClaimedJob]:
        """Poison isolation's decision (``Attempts.isolate`` gives the rest back): of a
        batch with a job rescued before, what to keep. Holding nothing: that one job,
        alone, and nothing is claimed until it ended; holding others: the batch without
        the rescued jobs, and nothing is claimed until this worker is empty."""
        with self.lock:
            if self._held:
                self._draining = True
                return [j for j in jobs if not j.rescues]
            keep = next(j for j in jobs if j.rescues)
            self._solo = keep.id
            return [keep]

    # -- shutdown ------------------------------------------------------------------------

    def wait_empty(self, deadline: float) -> list[Held]:
        """Wait (until ``deadline``, monotonic; not when stopping now) for the held jobs
        to end; those still held then, marked released (their finishes are dropped)."""
        with self.lock:
            while self._held and not self.hard.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.slot_freed.wait(min(remaining, IDLE_WAIT))
            leftovers = [f for f in self._held.values() if not f.lost]
            self._released.update(f.job.id for f in leftovers)
        return leftovers

    def empty(self) -> bool:
        """Nothing held, and no ended attempt's finish still being handed on."""
        with self.lock:
            return not self._held and not self._handing_on
