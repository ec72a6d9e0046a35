"""Gathering batch calls in a worker: ``@app.task(batch=conveyor.Batch(size, wait))``.

A batch task's claimed job that gets a slot *leads* a call: it takes its task's other
jobs waiting in the prefetch buffer, and jobs of the task claimed while it gathers join
it, up to ``size``; the call is handed to the executor (one slot, in the leader's
thread or asyncio task) once it is full or ``wait`` seconds after it opened. Its other
jobs are *riders*: held (their leases extended by the heartbeat like any running job's),
but taking no slot (``InFlight.riders``). When the executor reports the leader's outcome
the riders' outcomes (kept by the call, ``runner.BatchCall``) are ended first, each
job's finish written as any job's, through the completion strategy.

The claim grows to ``size`` through the claim allowance (``claim_size.ClaimAllowance``
with a floor), so a call can fill from one claim. At shutdown, calls still gathering are
released unrun (attempt not counted), as prefetched jobs are.

Example::

    batcher = Batcher(worker, sizes)          # task name -> Batch, served by the worker
    rest = batcher.join(entries)              # claimed jobs joining open calls
    if batcher.serves(entry.job): batcher.lead(entry)   # an admitted job opens one
    riders = batcher.finished(leader_job, outcome)      # (job, outcome) to end first
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import TYPE_CHECKING

from conveyor.backends.base import ClaimedJob
from conveyor.worker.inflight import Held
from conveyor.worker.outcome import OK, Outcome
from conveyor.worker.runner import BatchCall

if TYPE_CHECKING:
    from conveyor.batch import Batch
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")


class _Gathering:
    __slots__ = ("deadline", "leader", "riders", "size", "task")

    def __init__(self, leader: Held, size: int, deadline: float) -> None:
        self.leader = leader
        self.task = leader.job.task
        self.riders: list[Held] = []
        self.size = size
        self.deadline = deadline

    def full(self) -> bool:
        return len(self.riders) + 1 >= self.size


def served_batches(worker: Worker) -> dict[str, Batch]:
    """The batch tasks declared on the worker's queues: task name -> its ``Batch``."""
    names = set(worker.selection.names)
    return {
        name: task.options.batch
        for name, task in worker.app.tasks.items()
        if task.options.batch is not None and task.options.queue in names
    }


class Batcher:
    """Open calls (one per task at a time), their deadlines, and calls running."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.table = worker.inflight
        tasks = worker.app.tasks
        #: every batch task of the app (a job may come on another queue than its task's)
        self.batches = {n: t.options.batch for n, t in tasks.items() if t.options.batch}
        self._lock = threading.Condition()
        self._open: dict[str, _Gathering] = {}
        self._deadlines: list[tuple[float, int, _Gathering]] = []
        #: leader id -> the call and its riders (in order)
        self._running: dict[str, tuple[BatchCall, list[Held]]] = {}
        self._members: set[str] = set()
        self._count = itertools.count(1)
        self._tie = itertools.count()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def serves(self, job: ClaimedJob) -> bool:
        return job.task in self.batches

    def member(self, job_id: str) -> bool:
        """True while ``job_id`` is in a call gathering or running here (a cancel then
        reaches the item through its context, never by cancelling the whole call)."""
        return job_id in self._members

    def start(self) -> None:
        self._thread = threading.Thread(target=self._expire, name="conveyor-batches", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(1.0)

    # -- gathering ---------------------------------------------------------------------

    def join(self, entries: list[Held]) -> list[Held]:
        """Claimed jobs of a task with an open call join it (as riders, full calls are
        handed on); the others are returned, to be admitted as usual."""
        rest: list[Held] = []
        full: list[_Gathering] = []
        joined = 0
        with self._lock:
            for entry in entries:
                gathering = self._open.get(entry.job.task)
                if gathering is None:
                    rest.append(entry)
                    continue
                gathering.riders.append(entry)
                self._members.add(entry.job.id)
                joined += 1
                if gathering.full():
                    del self._open[gathering.task]
                    full.append(gathering)
        if joined:
            self.table.ride(joined)
        for gathering in full:
            self._call(gathering)
        return rest

    def lead(self, entry: Held) -> bool:
        """A job of a batch task given a slot: it joins its task's open call (False: the
        slot is free again) or opens one (True: it holds the slot until its call ends),
        with the task's jobs waiting in the buffer as riders."""
        batch = self.batches[entry.job.task]
        with self._lock:  # then the table's lock (take_riders), never the other way
            self._members.add(entry.job.id)
            gathering = self._open.get(entry.job.task)
            if gathering is not None:
                gathering.riders.append(entry)
                if gathering.full():
                    del self._open[gathering.task]
                    ready: _Gathering | None = gathering
                else:
                    ready = None
                led = False
            else:
                led = True
                gathering = _Gathering(entry, batch.size, time.monotonic() + batch.wait)
                gathering.riders = self.table.take_riders(entry.job.task, batch.size - 1)
                self._members.update(r.job.id for r in gathering.riders)
                # A job rescued before runs alone (poison isolation: nothing more is
                # claimed meanwhile), so its call does not wait for company.
                if gathering.full() or batch.wait <= 0 or entry.job.rescues:
                    ready = gathering
                else:
                    ready = None
                    self._open[gathering.task] = gathering
                    heapq.heappush(
                        self._deadlines, (gathering.deadline, next(self._tie), gathering)
                    )
                    self._lock.notify()
        if not led:
            self.table.ride(1)
        if ready is not None:
            self._call(ready)
        return led

    def _expire(self) -> None:
        """Hand on calls whose wait is over (this service's thread)."""
        while True:
            with self._lock:
                due: list[_Gathering] = []
                while not due and not self._stopped:
                    if not self._deadlines:
                        self._lock.wait()
                        continue
                    deadline, _, gathering = self._deadlines[0]
                    delay = deadline - time.monotonic()
                    if delay > 0:
                        self._lock.wait(delay)
                        continue
                    heapq.heappop(self._deadlines)
                    if self._open.get(gathering.task) is gathering:
                        del self._open[gathering.task]
                        due.append(gathering)
                if self._stopped:
                    return
            for gathering in due:
                self._call(gathering)

    def _call(self, gathering: _Gathering) -> None:
        """Hand a closed call to the executor in its leader's slot: jobs cancelled or
        expired while it gathered end now, unrun (their outcome is kept for the end)."""
        attempts = self.worker.attempts
        leader = gathering.leader
        call = BatchCall([], next(self._count))
        for entry in [leader, *gathering.riders]:
            refused = attempts.refusal(entry)
            if refused is None:
                call.members.append((entry.job, entry.ctx))
            else:
                call.outcomes[entry.job.id] = refused
        with self._lock:
            self._running[leader.job.id] = (call, gathering.riders)
        leader.ctx._batch = call
        log.debug(
            "batch %d of %s: %d job(s) (led by %s)",
            call.number,
            gathering.task,
            len(gathering.riders) + 1,
            leader.job.id,
        )
        self.worker.executor.submit(leader.job, leader.ctx)

    # -- the end -----------------------------------------------------------------------

    def finished(self, job: ClaimedJob, outcome: Outcome) -> list[tuple[ClaimedJob, Outcome]]:
        """The leader ``job`` of a call ended with ``outcome``: its riders and theirs,
        to end before the leader (no rider takes a slot: the count drops now). Empty for
        a job that led no call."""
        with self._lock:
            running = self._running.pop(job.id, None)
            if running is None:
                return []
            call, riders = running
            self._members.discard(job.id)
            for entry in riders:
                self._members.discard(entry.job.id)
        if riders:
            self.table.ride(-len(riders))
        fallback = outcome
        if outcome.status == OK:  # the call ended without this item's outcome
            fallback = Outcome.failed(RuntimeError("the batch call ended without its outcome"))
        return [(e.job, call.outcomes.get(e.job.id, fallback)) for e in riders]

    def release_open(self) -> list[Held]:
        """Shutdown: calls still gathering, out of the table (the caller releases them:
        never started, attempt not counted)."""
        with self._lock:
            open_calls = list(self._open.values())
            self._open.clear()
            self._deadlines.clear()
        entries: list[Held] = []
        riders = 0
        for gathering in open_calls:
            entries += [gathering.leader, *gathering.riders]
            riders += len(gathering.riders)
            for entry in (gathering.leader, *gathering.riders):
                self._members.discard(entry.job.id)
        if entries:
            self.table.drop_gathered(entries, riders)
        return entries
