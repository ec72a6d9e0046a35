"""Operations of the memory store: handles, listing by filter, bulk actions, sweeps,
queues and workers, import, audit and statistics (flow and logs: ``flow_methods.py``).

A mixin of :class:`~conveyor.backends.memory.backend.MemoryBackend`; every method is one
step under the store's lock. Filters are evaluated by the same Python matcher as the
Redis store's (``backends/filter_match.py``: the SQL stores' meaning, typed JSON included).

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> from conveyor.backends.base import QueuePauseParams
    >>> b = MemoryBackend("memory://")
    >>> b.queue_pause(QueuePauseParams("mail"))
    >>> [(q.queue, q.paused) for q in b.queue_list()]
    [('mail', True)]
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator, Sequence

from conveyor.backends.base import (
    AttemptRecord,
    DurationSample,
    FinishedBucket,
    IntegrityCheckParams,
    IntegrityProblem,
    JobCancelParams,
    JobClearResultsParams,
    JobCountParams,
    JobDurationsParams,
    JobExpireDueParams,
    JobFilter,
    JobFinishedHistogramParams,
    JobFlow,
    JobImportParams,
    JobKeysParams,
    JobListParams,
    JobPurgeParams,
    JobRecord,
    JobRetryParams,
    JobWaitParams,
    QueueInfo,
    QueuePauseParams,
    QueueResumeParams,
    QueueStats,
    QueueStatsParams,
    WorkerInfo,
    check_histogram,
)
from conveyor.backends.filter_match import matches
from conveyor.backends.memory import flow
from conveyor.backends.memory.audit import audit
from conveyor.backends.memory.store import MemoryStore, Row
from conveyor.backends.params import check_importable
from conveyor.backends.records import queue_list_of
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.records import replace
from conveyor.rules import (
    CANCEL_AT_ONCE,
    EXPIRE_UNCLAIMED,
    EXPIRED_REASON,
    RETRY_BY_HAND,
    WAS_CANCELLED,
    WAS_EXPIRED,
)
from conveyor.states import FINISHED_STATES, RAN_STATES, JobState


class MemoryOpsMixin:
    """Ops methods of the memory backend (it sets ``store``)."""

    store: MemoryStore

    # -- handles ---------------------------------------------------------------------------

    def job_get_many(self, ids: Sequence[str]) -> list[JobRecord]:
        with self.store.lock:
            jobs = self.store.jobs
            return [jobs[i].record() for i in ids if i in jobs]

    def job_attempts(self, job_id: str) -> list[AttemptRecord]:
        with self.store.lock:
            found = self.store.attempts.get(job_id, {})
            return [found[t] for t in sorted(found)]

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        deadline = None if params.timeout is None else time.monotonic() + params.timeout
        store = self.store
        with store.lock:
            while True:
                row = store.jobs.get(params.id)
                if row is None:
                    raise JobNotFound(params.id)
                if row.state.is_finished:
                    return row.record()
                remaining = 1.0 if deadline is None else deadline - time.monotonic()
                if remaining <= 0:
                    return None
                store.changed.wait(min(remaining, 1.0))

    def job_cancel_many(self, params: JobCancelParams) -> list[JobRecord]:
        now = time.time()
        with self.store.write() as store:
            cancelled: dict[str, str] = {}
            for job_id in params.ids:
                row = store.jobs.get(job_id)
                if row is None:
                    continue
                if row.state in CANCEL_AT_ONCE:
                    row.state, row.reason, row.finished_at = JobState.CANCELLED, params.reason, now
                    cancelled[job_id] = WAS_CANCELLED
                elif row.state is JobState.RUNNING:
                    row.cancel_requested, row.reason = True, params.reason
            flow.settle(store, (), cancelled, now)
            return [store.jobs[i].record() for i in params.ids if i in store.jobs]

    def job_retry_many(self, params: JobRetryParams) -> list[JobRecord]:
        now = time.time()
        with self.store.write() as store:
            for job_id in params.ids:
                row = store.jobs.get(job_id)
                if row is not None and row.state in RETRY_BY_HAND:
                    row.state, row.attempt, row.rescues, row.run_at = JobState.QUEUED, 0, 0, now
                    row.cancel_requested = False
                    row.finished_at = row.result = row.reason = None
            return [store.jobs[i].record() for i in params.ids if i in store.jobs]

    def job_delete_many(self, ids: Sequence[str]) -> int:
        with self.store.write() as store:
            return flow.delete(store, ids, time.time())

    # -- listing ---------------------------------------------------------------------------

    def _matching(
        self, filters: Sequence[JobFilter], after: str | None, down: bool
    ) -> Iterator[Row]:
        for job_id in sorted(self.store.jobs, reverse=down):
            if after is not None and (job_id >= after if down else job_id <= after):
                continue
            row = self.store.jobs[job_id]
            record = row.record()
            if all(matches(f, record) for f in filters):
                yield row

    def job_keys(self, params: JobKeysParams) -> list[str]:
        column = {"task": "task"}[params.column]  # KEY_COLUMNS, as the SQL stores'
        with self.store.lock:
            values = {getattr(row.record(), column) for row in self.store.jobs.values()}
        if params.after is not None:
            after = params.after
            values = {v for v in values if (v < after if params.descending else v > after)}
        return sorted(values, reverse=params.descending)[: params.limit]

    def job_list(self, params: JobListParams) -> list[JobRecord]:
        shortcut = JobFilter(
            queue=params.queue, task=params.task, states=(params.state,) if params.state else ()
        )
        filters = [shortcut, params.filter or JobFilter()]
        found: list[JobRecord] = []
        with self.store.lock:
            for row in self._matching(filters, params.after_id, params.descending):
                if len(found) >= params.limit:
                    break
                found.append(row.record())
        return found

    def job_count(self, params: JobCountParams) -> int:
        with self.store.lock:
            found = self._matching([params.filter], None, False)
            return sum(1 for _ in itertools.islice(found, params.limit))

    def job_flow_many(self, ids: Sequence[str]) -> list[JobFlow]:
        with self.store.lock:
            jobs, parents = self.store.jobs, self.store.parents
            return [
                JobFlow(i, jobs[i].pipe, tuple(parents.get(i, ())), jobs[i].unique_until)
                for i in ids
                if i in jobs
            ]

    # -- sweeps ----------------------------------------------------------------------------

    def job_purge(self, params: JobPurgeParams) -> int:
        with self.store.write() as store:
            ids = [
                r.id
                for r in store.jobs.values()
                if r.state in params.states
                and r.finished_at is not None
                and r.finished_at < params.finished_before
            ][: params.limit]
            return flow.delete(store, ids, time.time())

    def job_expire_due(self, params: JobExpireDueParams) -> int:
        now = time.time()
        with self.store.write() as store:
            due = sorted(
                (
                    r
                    for r in store.jobs.values()
                    if r.expires_at is not None
                    and r.expires_at <= now
                    and r.state in EXPIRE_UNCLAIMED
                ),
                key=lambda r: r.expires_at or 0.0,
            )[: params.limit]
            for row in due:
                row.state, row.reason, row.finished_at = JobState.EXPIRED, EXPIRED_REASON, now
                row.waiting_on = 0
            # Dependants move in the same step, as behind a dead parent.
            flow.settle(store, (), dict.fromkeys([r.id for r in due], WAS_EXPIRED), now)
            return len(due)

    def job_clear_results(self, params: JobClearResultsParams) -> int:
        after = params.finished_after
        cleared = 0
        with self.store.write() as store:
            for row in store.jobs.values():
                if cleared >= params.limit:
                    break
                fin = row.finished_at
                if (
                    row.state is JobState.SUCCEEDED
                    and row.task == params.task
                    and row.result is not None
                    and fin is not None
                    and (after is None or fin >= after)
                    and fin < params.finished_before
                ):
                    row.result = None
                    cleared += 1
        return cleared

    # -- queues and workers ----------------------------------------------------------------

    def queue_stats(self, params: QueueStatsParams | None = None) -> list[QueueStats]:
        # counts kept by every write: exact whatever the cap
        now = time.time()
        counts: dict[str, dict[str, int]] = {}
        oldest: dict[str, float] = {}
        with self.store.lock:
            for row in self.store.jobs.values():
                by_state = counts.setdefault(row.queue, {})
                by_state[row.state.value] = by_state.get(row.state.value, 0) + 1
                if row.state is JobState.QUEUED:
                    oldest[row.queue] = min(oldest.get(row.queue, row.run_at), row.run_at)
        return [
            QueueStats(q, counts[q], now - oldest[q] if q in oldest else None)
            for q in sorted(counts)
        ]

    def queue_list(self, params: QueueStatsParams | None = None) -> list[QueueInfo]:
        with self.store.lock:
            flags = dict(self.store.queues)
        paused = {q for q, p in flags.items() if p}
        return queue_list_of(self.queue_stats(), paused, flagged=list(flags))

    def queue_pause(self, params: QueuePauseParams) -> None:
        with self.store.write() as store:
            store.queues[params.queue] = True

    def queue_resume(self, params: QueueResumeParams) -> None:
        with self.store.write() as store:  # the write wakes idle workers to claim
            store.queues[params.queue] = False

    def worker_list(self) -> list[WorkerInfo]:
        with self.store.lock:
            found = [
                replace(
                    w.info,
                    heartbeat_at=w.heartbeat_at,
                    last_fetch_at=w.last_fetch_at,
                    running=w.running,
                )
                for w in self.store.workers.values()
            ]
        return sorted(found, key=lambda w: w.started_at)

    # -- import, audit, history ------------------------------------------------------------

    def job_import_many(self, params: JobImportParams) -> list[str]:
        for item in params.jobs:  # all checked before anything is written
            check_importable(item)
        inserted: list[str] = []
        now = time.time()
        with self.store.write() as store:
            for item in params.jobs:
                j, flow_of = item.job, item.flow or JobFlow(item.job.id)
                if j.id in store.jobs:
                    continue  # already there: a rerun after an interruption
                store.jobs[j.id] = Row(
                    j.id,
                    j.task,
                    j.queue,
                    j.state,
                    j.priority,
                    j.payload,
                    j.max_attempts,
                    j.run_at,
                    j.created_at,
                    j.timeout,
                    j.lease,
                    attempt=j.attempt,
                    rescues=j.rescues,
                    token=j.token,
                    cancel_requested=j.cancel_requested,
                    result=j.result,
                    error=j.error,
                    reason=j.reason,
                    started_at=j.started_at,
                    finished_at=j.finished_at,
                    progress=j.progress,
                    progress_message=j.progress_message,
                    unique_key=_importable_key(store, j, now),
                    unique_until=flow_of.unique_until,
                    waiting_on=j.waiting_on,
                    pipe=flow_of.pipe,
                    headers=j.headers,
                    expires_at=j.expires_at,
                )
                inserted.append(j.id)
                attempts = store.attempts.setdefault(j.id, {})
                for a in item.attempts:
                    attempts.setdefault(a.token, replace(a, job_id=j.id))
                store.logs.setdefault(j.id, []).extend(item.logs)
                if item.steps:
                    store.steps[j.id] = {s.position: replace(s, job_id=j.id) for s in item.steps}
                if item.events:  # not consumed yet: a wait takes them (a parked job waits)
                    store.events[j.id] = [[e.name, e.payload, False] for e in item.events]
                if flow_of.parents:
                    store.parents[j.id] = list(flow_of.parents)
                    for parent in flow_of.parents:
                        store.children.setdefault(parent, []).append(j.id)
            added = set(inserted)
            flow.restore_joins(store, [i for i in params.jobs if i.job.id in added], now)
        return inserted

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        with self.store.lock:
            return audit(self.store, time.time() - params.heartbeat_ttl)

    def backup(self, path: str) -> None:
        """Not here (no feature ``backup``): the store ends with its process."""
        raise ConfigurationError(
            "backup is only available on the SQLite backend, not memory; "
            "the memory store ends with its process"
        )

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        check_histogram(params, time.time())
        counts: dict[tuple[int, str, str], int] = {}
        with self.store.lock:
            for r in self.store.jobs.values():
                fin = r.finished_at
                if r.state in FINISHED_STATES and fin is not None and fin >= params.since:
                    key = (int((fin - params.since) // params.bucket_s), r.queue, r.state.value)
                    counts[key] = counts.get(key, 0) + 1
        return [
            FinishedBucket(params.since + n * params.bucket_s, q, JobState(s), c)
            for (n, q, s), c in sorted(counts.items())
        ]

    def job_durations(self, params: JobDurationsParams) -> list[DurationSample]:
        with self.store.lock:
            found = [
                DurationSample(r.task, r.started_at - r.run_at, r.finished_at - r.started_at,
                               r.finished_at)
                for r in self.store.jobs.values()
                if r.state in RAN_STATES and r.started_at is not None
                and r.finished_at is not None and r.finished_at >= params.since
            ]  # fmt: skip
        found.sort(key=lambda d: -d.finished_at)
        return found[: params.limit]


def _importable_key(store: MemoryStore, j: JobRecord, now: float) -> str | None:
    """The unique key an imported job keeps: its own, unless another job holds it here.
    A finished holder whose window passed gives the key up, as at an insert."""
    if j.unique_key is None:
        return None
    for row in store.jobs.values():
        if row.task != j.task or row.unique_key != j.unique_key or row.id == j.id:
            continue
        if row.state in FINISHED_STATES and (row.unique_until is None or row.unique_until <= now):
            row.unique_key = None
            continue
        return None
    return j.unique_key
