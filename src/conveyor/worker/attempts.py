"""``Attempts``: the path of a job through a worker, from its claim to its finish.

The fetch strategies (``fetching.py``) call it in order: :meth:`Attempts.isolate` on a
claimed batch (poison isolation), :meth:`~Attempts.claimed` (held in the
:class:`~conveyor.worker.inflight.InFlight` table, observers told),
:meth:`~Attempts.refusal` just before a job would start (a cancel or an expiry ends it
unrun), and :meth:`~Attempts.end` with its outcome (the executor's callback): the finish
goes to the completion strategy (``completion.py``). Jobs never started, or still running
at the shutdown, go back to ``queued`` with :meth:`~Attempts.release`.

Example::

    attempts = Attempts(app, worker_id, table, claims, completion, observers)
    for entry in attempts.claimed(attempts.isolate(jobs)):
        outcome = attempts.refusal(entry) or run(entry.job, entry.ctx)
        attempts.end(entry.job, outcome)
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import NO_DEADLINE, ClaimedJob, JobFinishParams, JobReleaseParams
from conveyor.context import JobContext, context_of
from conveyor.durable import Replay, StepLost, StepTally
from conveyor.errors import BackendUnavailable, ConfigurationError
from conveyor.rules import EXPIRED_REASON, is_expired
from conveyor.states import FinishKind
from conveyor.worker.inflight import Held, InFlight
from conveyor.worker.outcome import OK, Outcome, finish_params
from conveyor.worker.transactional import transact

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.checkpointer import Checkpointer
    from conveyor.worker.claim_size import ClaimAllowance
    from conveyor.worker.completion import CompletionStrategy
    from conveyor.worker.observers import WorkerObserver

log = logging.getLogger("conveyor.worker")

#: The reason recorded for a prefetched job cancelled while it waited for a slot.
CANCELLED_BEFORE_START = "cancelled before it started"


class Attempts:
    """Claim to finish for the jobs of one worker (``worker_id``) of ``app``."""

    def __init__(
        self,
        app: App,
        worker_id: str,
        table: InFlight,
        claims: ClaimAllowance,
        completion: CompletionStrategy,
        observers: list[WorkerObserver],
    ) -> None:
        self.app = app
        self.worker_id = worker_id
        self.table = table
        self.claims = claims
        self.completion = completion
        #: The worker's observers (the same list: appending to it takes effect).
        self.observers = observers
        #: One tick per attempt ended here (``next(processed)`` counts them).
        self.processed = itertools.count()
        #: Told the deadline of each job ``conveyor.wait_for`` parks here (the worker's
        #: deadlines service), None: nobody listens.
        self.on_park: Callable[[float], None] | None = None
        #: Steps run and replayed by this worker's jobs (its metrics read them).
        self.steps = StepTally()
        #: Saves concurrent jobs' checkpoints together (checkpointer.py); None: each
        #: alone (one slot, or a pool whose children save through their own connection).
        self.checkpointer: Checkpointer | None = None

    def claimed(self, jobs: list[ClaimedJob]) -> list[Held]:
        """Hold claimed jobs (heartbeats extend their leases from now on)."""
        entries = [Held(j, context_of(j)) for j in jobs]
        # current_job().transaction() and durable steps, in this process's pools; the
        # bound methods made once per batch, not per job
        transaction_for, replay_for = self.transaction_for, self.replay_for
        for entry in entries:
            entry.ctx._transaction = transaction_for
            entry.ctx._durable = replay_for
        self.table.hold(entries)
        if self.observers:
            for observer in self.observers:
                observer.on_claimed(jobs)
        return entries

    def refusal(self, entry: Held) -> Outcome | None:
        """Why a job about to start must not run (``None``: start it): one whose cancel
        arrived while it waited in the prefetch buffer ends cancelled; one past its
        ``expires_at`` (``rules.is_expired``: claimed too late, or kept in the buffer
        past it) ends expired. The one place for these rules, for both fetch strategies;
        the caller ends it with :meth:`end`."""
        expires_at = entry.job.expires_at
        if expires_at is not None and is_expired(expires_at, time.time()):
            return Outcome.expired(EXPIRED_REASON)
        if entry.ctx.cancel_requested:
            return Outcome.cancelled(CANCELLED_BEFORE_START)
        return None

    def end(self, job: ClaimedJob, outcome: Outcome) -> bool:
        """An attempt ended (the executor's callback): its slot is free, its finish goes
        to the completion strategy (not when its task committed it through
        ``current_job().transaction()``), observers are told. False when the job was not
        held or the shutdown released it: nothing is written."""
        entry = self.table.finish(job)
        if entry is None:
            return False
        try:
            self._hand_on(job, outcome, entry)
        finally:
            self.table.handed_on()
        return True

    def _hand_on(self, job: ClaimedJob, outcome: Outcome, entry: Held) -> None:
        self.claims.observe(outcome.finished_at - entry.started)
        committed = entry.ctx.finished_by_transaction  # current_job().transaction()
        if outcome.steps is not None:  # a process or interpreter pool child's steps
            self.steps.add(*outcome.steps)
        if committed is None and outcome.parked is not None:
            committed = self._parked_in_child(job, outcome, entry.started)
        if committed is not None:
            params = committed  # or parked by conveyor.wait_for (a SNOOZE, written)
            if outcome.status != OK and committed.kind is FinishKind.SUCCEEDED:
                log.warning(
                    "job %s committed its success in transaction(); what it raised "
                    "after that is not recorded: %s",
                    job.id,
                    outcome.error,
                )
        else:
            task = self.app.tasks.get(job.task)
            params = finish_params(
                outcome,
                job,
                task,
                self.worker_id,
                entry.ctx.cancel_requested,
                started_at=entry.started,
            )
            self.completion.put(params)
        if self.observers:
            for observer in self.observers:
                observer.on_finished(job, params, outcome)
        next(self.processed)

    def _parked_in_child(
        self, job: ClaimedJob, outcome: Outcome, started: float
    ) -> JobFinishParams:
        """A child's ``wait_for`` parked the job in the store (its attempt given back):
        nothing to write; the deadline goes to the deadlines service, as in-process."""
        deadline = outcome.parked or NO_DEADLINE
        if self.on_park is not None and deadline < NO_DEADLINE:
            self.on_park(deadline)
        return JobFinishParams(job.id, job.token, FinishKind.SNOOZE, self.worker_id,
                               job.attempt, None, None, "waiting for an event", deadline,
                               started, outcome.finished_at)  # fmt: skip

    def transaction_for(self, ctx: JobContext) -> AbstractContextManager[Any]:
        """The block of ``current_job().transaction()`` for the job ``ctx`` belongs to,
        fenced by the claim this worker holds now (worker/transactional.py)."""
        entry = self.table.get(ctx.id)
        if entry is None:
            raise ConfigurationError(f"job {ctx.id} is not running in this worker")
        if entry.ctx is not ctx:
            # The job was taken from under this attempt and claimed here again: the
            # table holds the newer claim, whose token must not fence this stale run.
            raise ConfigurationError(
                f"job {ctx.id}: this attempt's claim was taken back (released or "
                "rescued) and the job claimed again; this attempt commits nothing"
            )
        return transact(self.app.backend, entry.job, self.worker_id, ctx)

    def replay_for(self, ctx: JobContext) -> Replay:
        """The durable replay of the job ``ctx`` belongs to (its saved steps read now),
        fenced by the claim this attempt holds (conveyor/durable.py)."""
        entry = self.table.get(ctx.id)
        job = entry.job if entry is not None and entry.ctx is ctx else None
        if job is None:  # taken back and claimed again: this stale run saves nothing
            raise StepLost(f"job {ctx.id}: this attempt's claim was taken back")
        group = self.checkpointer
        return Replay(self.app.backend, job, self.worker_id, on_park=self.on_park,
                      tally=self.steps, checkpoints=group)  # fmt: skip

    def isolate(self, jobs: list[ClaimedJob]) -> list[ClaimedJob]:
        """Poison isolation, the worker's side: a job rescued before (``rescues > 0``)
        runs alone. Claimed while this worker holds nothing: it is kept alone and the rest
        of the batch released; claimed while others run here: it is released and the
        worker claims nothing more until what runs has finished. Released jobs go back
        to ``queued`` with their attempt not counted. The store's side
        (``rules.rescue_state``) charges a rescue only to a job its worker held alone.

        >>> # jobs = attempts.isolate(backend.job_claim(params))
        """
        if not any(j.rescues for j in jobs):
            return jobs
        keep = self.table.isolate(jobs)
        back = [j for j in jobs if j not in keep]
        if back:
            self.give_back(back)
        return keep

    def give_back(self, jobs: list[ClaimedJob]) -> None:
        """Release claimed jobs never held (attempt not counted); if the store refuses
        now, the rescue takes them once their leases expire."""
        try:
            self.app.backend.job_release_many(
                JobReleaseParams(self.worker_id, [(j.id, j.token) for j in jobs])
            )
        except BackendUnavailable as exc:
            log.warning("could not give back %d job(s): %s; they will be rescued", len(jobs), exc)

    def release_buffered(self) -> None:
        """Prefetched jobs never started: back to the queue at once, attempt not counted."""
        buffered = self.table.take_buffered()
        if buffered:
            self.release(buffered, started=False)

    def release(self, leftovers: list[Held], started: bool = True) -> None:
        """Give held jobs back to ``queued`` (the shutdown's last step for them); a job
        the store says was rescued meanwhile is only logged. ``started``: they ran here
        (the caller has asked them to stop), rather than waited in the buffer."""
        try:
            refused = self.app.backend.job_release_many(
                JobReleaseParams(self.worker_id, [(f.job.id, f.job.token) for f in leftovers])
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
