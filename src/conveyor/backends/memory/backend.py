"""The memory store (``memory://NAME``): the whole backend protocol in plain Python.

Every table is a Python object of one :class:`~conveyor.backends.memory.store.MemoryStore`
behind one lock; each method is one atomic step under it, as a SQL transaction or a
Redis script is. The rules are :mod:`conveyor.rules`' (the same tables and functions the
other stores apply). ``memory://NAME`` is shared by everything in this process that opens
that URL; ``memory://`` alone is a private store per backend object. Nothing survives the
process, and no other process sees it: the store of the testing modes
(``app.testing(...)``, ``task.execute``) and of tests, not of production.

What it does not do, declared by leaving the feature out: join a database transaction
(``transactional_enqueue`` / ``transactional_completion``), ``backup``, ``sql``.

Example:
    >>> from conveyor.backends.base import JobInsertParams
    >>> b = MemoryBackend("memory://")
    >>> b.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    ['j1']
    >>> b.job_get_many(["j1"])[0].state
    <JobState.QUEUED: 'queued'>
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from conveyor.backends.base import (
    AttemptRecord,
    ClaimedJob,
    JobClaimParams,
    JobExtendLeasesParams,
    JobFinishParams,
    JobFinishThroughParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobInsertThroughParams,
    JobReleaseParams,
    JobRescueParams,
    LeaseStatus,
    RescueResult,
    WorkerHeartbeatParams,
    require_transactional,
)
from conveyor.backends.memory import flow
from conveyor.backends.memory.action_log import MemoryActionLog
from conveyor.backends.memory.flow_methods import MemoryFlowMixin
from conveyor.backends.memory.ops import MemoryOpsMixin
from conveyor.backends.memory.schedules import MemorySchedules
from conveyor.backends.memory.steps import MemorySteps
from conveyor.backends.memory.store import MemoryStore, Row, Worker, store_for
from conveyor.backends.memory.url import parse_memory_url
from conveyor.backends.queue_ring import ring_of
from conveyor.backends.search_scan import ScanSearch
from conveyor.errors import ConfigurationError
from conveyor.rules import (
    FINISH,
    LOST,
    LOST_PARENT_FAILED,
    RELEASED,
    WORKER_LOST_ERROR,
    WORKER_LOST_REASON,
    held_alone,
    rescue_charge,
    rescue_gives_back_attempt,
    rescue_state,
)
from conveyor.states import JobState

if TYPE_CHECKING:
    from conveyor.backends.base import Backend

#: Everything this backend implements (names: conveyor.backends.protocols.FEATURES).
FEATURES = frozenset(
    {
        *(
            "snooze",
            "progress",
            "unique",
            "workflows",
            "limits",
            "periodic",
            "sequences",
            "fair",
            "aging",
        ),
        *("filters", "purge", "result_ttl", "expires", "queues", "logs", "integrity"),
        "ack_with_claim",
        "action_log",
        "list_keys",
        "search",
        "steps",
    }
)

_NO_TRANSACTION = (
    "current_job().transaction() needs a SQL store (sqlite:// or postgresql://): "
    "the memory backend cannot commit your writes with the job's success"
)


class MemoryBackend(
    MemoryOpsMixin, MemoryFlowMixin, MemoryActionLog, MemorySchedules, ScanSearch, MemorySteps
):
    """Backend on a store in this process's memory. Internal: use
    ``conveyor.App("memory://name")``."""

    name = "memory"
    #: "ack_with_claim": a finish and the next claim under one lock hold (one wake-up).
    features = FEATURES

    def __init__(self, url: str) -> None:
        self.url = url
        self.store_name = parse_memory_url(url)
        self.store: MemoryStore = store_for(self.store_name)
        #: the generation seen at the last empty claim: a write after it ends work_wait
        self._claim_generation = self.store.generation

    def close(self) -> None:
        """Nothing to release: the named store stays for the next open in this process."""

    # -- inserts ---------------------------------------------------------------------------

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        now = time.time()
        with self.store.write() as store:
            return flow.insert(store, params, now)

    def job_insert_many_through(self, params: JobInsertThroughParams) -> Sequence[str]:
        """Not here (no feature ``transactional_enqueue``): no database to join."""
        require_transactional(self)
        raise AssertionError("unreachable")  # pragma: no cover

    async def job_insert_many_through_async(self, params: JobInsertThroughParams) -> Sequence[str]:
        return self.job_insert_many_through(params)

    def transaction_connection(self) -> AbstractContextManager[object]:
        """Not here (no feature ``transactional_completion``)."""
        raise ConfigurationError(_NO_TRANSACTION)

    def job_finish_many_through(self, params: JobFinishThroughParams) -> list[str]:
        raise ConfigurationError(_NO_TRANSACTION)

    # -- claim ------------------------------------------------------------------------------

    def job_promote_due(self) -> int:
        with self.store.write() as store:
            return _promote(store, time.time())

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        return self.job_finish_and_claim((), params)[1]

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        now = time.time()
        with self.store.write() as store:
            refused = _finish(store, finishes, now) if finishes else []
            generation = store.generation
            claimed = _claim(store, claim, now)
            # An empty claim waits for the next write (this one's bump does not count).
            self._claim_generation = -1 if claimed else generation + 1
        return refused, claimed

    def work_wait(self, timeout: float) -> None:
        store = self.store
        with store.lock:
            due = min(
                (r.run_at for r in store.jobs.values() if r.state is JobState.SCHEDULED),
                default=None,
            )
            if due is not None:
                timeout = min(timeout, max(0.0, due - time.time()))
            store.wait(self._claim_generation, timeout)

    # -- finish, release, leases -------------------------------------------------------------

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        now = time.time()
        with self.store.write() as store:
            return _finish(store, params, now)

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        now = time.time()
        refused: list[str] = []
        with self.store.write() as store:
            for job_id, token in params.jobs:
                row = store.jobs.get(job_id)
                if row is None or row.state is not JobState.RUNNING or row.token != token:
                    refused.append(job_id)
                    continue
                _attempt(
                    store,
                    job_id,
                    token,
                    row.attempt,
                    params.worker_id,
                    row.started_at,
                    now,
                    RELEASED,
                    None,
                )
                row.state, row.attempt = JobState.QUEUED, row.attempt - 1
                row.worker_id = row.lease_until = None
        return refused

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]:
        now = time.time()
        answer: list[LeaseStatus] = []
        with self.store.write() as store:
            for job_id, token in params.jobs:
                row = store.jobs.get(job_id)
                held = row is not None and row.token == token and row.state is JobState.RUNNING
                if row is not None and held:
                    row.lease_until = now + row.lease
                answer.append(LeaseStatus(job_id, held, bool(row and row.cancel_requested)))
        return answer

    # -- workers and rescue ------------------------------------------------------------------

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        now = time.time()
        with self.store.write() as store:
            found = store.workers.get(params.worker.id)
            if found is None:
                store.workers[params.worker.id] = Worker(
                    params.worker, now, params.last_fetch_at, params.running
                )
                return
            found.heartbeat_at, found.running = now, params.running
            if params.last_fetch_at is not None:
                found.last_fetch_at = params.last_fetch_at

    def worker_deregister(self, worker_id: str) -> None:
        with self.store.write() as store:
            store.workers.pop(worker_id, None)

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        now = time.time()
        dead, stale = set(params.dead_worker_ids), params.stale_before
        results: list[RescueResult] = []
        with self.store.write() as store:

            def lost(worker_id: str | None, lease_until: float | None) -> bool:
                w = store.workers.get(worker_id or "")
                return (
                    w is None
                    or w.heartbeat_at < stale
                    or (lease_until is not None and lease_until < stale)
                    or worker_id in dead
                )

            candidates = [
                r
                for r in store.jobs.values()
                if r.state is JobState.RUNNING and lost(r.worker_id, r.lease_until)
            ]
            # Poison isolation: was each the one job its dead worker held? (rules.py)
            for row, alone in zip(
                candidates, held_alone([r.worker_id for r in candidates]), strict=True
            ):
                steps = store.steps.get(row.id, {}).values()
                progressed = any(  # saved a step in the lost attempt (rules.rescue_state)
                    s.position >= 0 and s.finished_at >= (row.started_at or now) for s in steps
                )
                state = rescue_state(
                    attempt=row.attempt,
                    max_attempts=row.max_attempts,
                    rescues=row.rescues,
                    max_rescues=params.max_rescues,
                    alone=alone,
                    progressed=progressed,
                )
                worker_id, attempt = row.worker_id, row.attempt
                if state is JobState.DEAD:
                    row.state, row.reason, row.error = state, WORKER_LOST_REASON, WORKER_LOST_ERROR
                    row.finished_at = now
                else:
                    charge = rescue_charge(progressed=progressed)
                    row.state, row.rescues = JobState.QUEUED, row.rescues + charge
                    row.attempt -= int(rescue_gives_back_attempt(alone=alone and not progressed))
                row.worker_id = row.lease_until = None
                _attempt(
                    store,
                    row.id,
                    row.token,
                    attempt,
                    worker_id,
                    row.started_at,
                    now,
                    LOST,
                    WORKER_LOST_ERROR,
                )
                if state is JobState.DEAD:
                    flow.settle(store, (), {row.id: LOST_PARENT_FAILED}, now)
                results.append(RescueResult(row.id, worker_id, state))
            holding = {r.worker_id for r in store.jobs.values() if r.state is JobState.RUNNING}
            for worker_id, w in list(store.workers.items()):
                if (w.heartbeat_at < stale or worker_id in dead) and worker_id not in holding:
                    del store.workers[worker_id]
        return results


def _promote(store: MemoryStore, now: float) -> int:
    due = [r for r in store.jobs.values() if r.state is JobState.SCHEDULED and r.run_at <= now]
    for row in due:
        row.state = JobState.QUEUED
    return len(due)


def _claim(store: MemoryStore, params: JobClaimParams, now: float) -> list[ClaimedJob]:
    """Due jobs promoted, each queue its share then a top-up from any (the SQL stores'
    two passes), paused queues skipped, limits admitted; in claim order."""
    _promote(store, now)
    ready: dict[str, list[Row]] = {}
    for row in store.jobs.values():
        if row.state is JobState.QUEUED:
            ready.setdefault(row.queue, []).append(row)
    for rows in ready.values():
        rows.sort(key=flow.claim_order)
    taken: list[Row] = []
    remaining = params.total
    # A ring (many queues, queue_ring): its queues that gave a job top the claim up, and
    # the next claim starts after the last of them, as on the SQL stores and Redis.
    ring, served = ring_of(params.queues), list[str]()
    for pass_no in (1, 2):
        if pass_no == 1:
            pass_limits: Sequence[tuple[str, int]] = params.queues
        elif ring is not None:
            pass_limits = [(q, params.total) for q in served]
        else:
            pass_limits = [(q, params.total) for q, _ in params.queues]
        for queue, limit in pass_limits:
            if remaining <= 0:
                break
            want = min(limit, remaining)
            if want <= 0 or store.queues.get(queue, False):
                continue
            rows = ready.get(queue, [])
            got, ready[queue] = rows[:want], rows[want:]
            for row in got:
                row.state, row.worker_id = JobState.RUNNING, params.worker_id
                row.token, row.attempt = row.token + 1, row.attempt + 1
                row.started_at, row.lease_until = now, now + row.lease
            remaining -= len(got)
            taken.extend(got)
            if got and pass_no == 1:
                served.append(queue)
    if ring is not None and served:
        ring.resume(served[-1])
    if taken and store.limits:
        taken = flow.apply_limits(store, taken, now)
    taken.sort(key=flow.claim_order)
    return [row.claimed() for row in taken]


def _attempt(
    store: MemoryStore,
    job_id: str,
    token: int,
    attempt: int,
    worker_id: str | None,
    started_at: float | None,
    finished_at: float,
    outcome: str,
    error: str | None,
) -> None:
    """One attempt record per (job, token), the first kept (as ``INSERT OR IGNORE``)."""
    store.attempts.setdefault(job_id, {}).setdefault(
        token,
        AttemptRecord(job_id, attempt, token, worker_id, started_at, finished_at, outcome, error),
    )


def _finish(store: MemoryStore, params: Sequence[JobFinishParams], now: float) -> list[str]:
    """Each finish fenced by its token (:data:`conveyor.rules.FINISH` says where the job
    goes); the dependants of the ended jobs move in the same step."""
    refused: list[str] = []
    succeeded: list[str] = []
    failed: dict[str, str] = {}
    for p in params:
        row = store.jobs.get(p.id)
        if row is None or row.state is not JobState.RUNNING or row.token != p.token:
            refused.append(p.id)
            continue
        rule, finished = FINISH[p.kind], p.finished_at or now
        if rule.state is JobState.SUCCEEDED:
            succeeded.append(p.id)
        elif rule.parent_failed is not None:
            failed[p.id] = rule.parent_failed
        if rule.state is None:  # dropped: the row and its history go
            del store.jobs[p.id]
            store.attempts.pop(p.id, None)
            store.logs.pop(p.id, None)
            store.forget_steps(p.id)
            continue
        if rule.state is JobState.SUCCEEDED:
            row.result = p.result
        elif rule.state is JobState.SCHEDULED:
            row.run_at = p.run_at or now
            if rule.gives_back_attempt:
                row.attempt -= 1
            else:  # a retry keeps its error and reason; a snooze is not an error
                row.error, row.reason = p.error, p.reason
        else:
            row.error, row.reason = p.error, p.reason
        if rule.ends_job:
            row.finished_at = finished
        row.state, row.worker_id, row.lease_until = rule.state, None, None
        _attempt(
            store,
            p.id,
            p.token,
            p.attempt,
            p.worker_id,
            p.started_at,
            finished,
            rule.attempt_outcome or "",
            p.error,
        )
    flow.settle(store, succeeded, failed, now)
    return refused


if TYPE_CHECKING:

    def _implements_the_seam(backend: MemoryBackend) -> Backend:
        return backend  # mypy proves MemoryBackend has every method of every protocol
