"""The memory store's flow reads and writes beyond the insert: workflow edges, progress,
periodic slots and per-job logs. A mixin of
:class:`~conveyor.backends.memory.backend.MemoryBackend`, one step under the store's lock
per method (kept apart so ``ops.py`` stays small).

Example:
    >>> from conveyor.backends.memory.backend import MemoryBackend
    >>> MemoryBackend("memory://").periodic_list()
    []
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from conveyor.backends.base import (
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    Dependency,
    JobAgeParams,
    JobDependenciesParams,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
    JobProgressParams,
    LimitOverrideParams,
    LimitRecord,
    PeriodicFireParams,
    PeriodicRecord,
    SequencePruneParams,
    SequenceReleaseParams,
)
from conveyor.backends.memory import flow
from conveyor.backends.memory.store import MemoryStore, Schedule
from conveyor.states import JobState

#: Slot entries older than this before the oldest slot being fired are dropped (s), as
#: on SQLite: only slots after a schedule's last fired one are ever fired again.
SLOT_RETENTION = 86400.0


class MemoryFlowMixin:
    """Flow and log methods of the memory backend (it sets ``store``)."""

    store: MemoryStore

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        with self.store.lock:
            return [
                Dependency(child, parent, n)
                for child in sorted(set(params.ids))
                for n, parent in enumerate(self.store.parents.get(child, ()))
            ]

    def job_age_many(self, params: JobAgeParams) -> int:
        with self.store.write() as store:
            aged = 0
            due = time.time() - params.step
            for row in store.jobs.values():
                if (
                    row.state is JobState.QUEUED
                    and row.queue == params.queue
                    and row.run_at <= due
                    and row.priority < params.ceiling
                ):
                    row.priority, row.run_at = row.priority + 1, row.run_at + params.step
                    aged += 1
            return aged

    def limit_list(self) -> list[LimitRecord]:
        with self.store.lock:
            store = self.store
            running: dict[str, int] = {}
            for row in store.jobs.values():
                if row.state is JobState.RUNNING and row.limit_key is not None:
                    running[row.limit_key] = running.get(row.limit_key, 0) + 1
            return [
                LimitRecord(
                    key, *store.limits[key], store.limit_overrides.get(key), running.get(key, 0)
                )
                for key in sorted(store.limits)
            ]

    def limit_override(self, params: LimitOverrideParams) -> None:
        with self.store.write() as store:
            if params.values is None:
                store.limit_overrides.pop(params.key, None)
            else:
                store.limit_overrides[params.key] = params.values

    def sequence_release_many(self, params: SequenceReleaseParams) -> list[str]:
        with self.store.write() as store:
            return flow.sequence_release(store, params.ids, time.time())

    def sequence_prune(self, params: SequencePruneParams) -> int:
        # As sql/flow.py sequence_prune: a key whose last job succeeded or is gone.
        with self.store.write() as store:
            done = [
                key
                for key, tail in store.sequences.items()
                if tail not in store.jobs or store.jobs[tail].state is JobState.SUCCEEDED
            ][: params.limit]
            for key in done:
                del store.sequences[key]
            return len(done)

    # -- progress and periodic -------------------------------------------------------------

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        refused: list[str] = []
        with self.store.write() as store:
            for p in params:
                row = store.jobs.get(p.id)
                if row is None or row.state is not JobState.RUNNING or row.token != p.token:
                    refused.append(p.id)
                    continue
                row.progress, row.progress_message = p.fraction, p.message
        return refused

    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        now = time.time()
        fired: list[float] = []
        last: tuple[float, str] | None = None
        with self.store.write() as store:
            schedule = store.schedules.get(params.name)
            paused = schedule is not None and schedule.paused
            for slot, job in [] if paused else params.slots:
                if (params.name, slot) in store.slots:
                    continue  # fired before, by this worker or another
                store.slots[(params.name, slot)] = job.id
                flow.insert(store, [job], now)
                fired.append(slot)
                last = (slot, job.id)
            schedule = store.schedules.get(params.name)
            if schedule is None:
                schedule = store.schedules[params.name] = Schedule(params.spec, params.next_slot)
            schedule.spec, schedule.next_slot = params.spec, params.next_slot
            if fired:
                oldest = min(fired) - SLOT_RETENTION
                for key in [k for k in store.slots if k[0] == params.name and k[1] < oldest]:
                    del store.slots[key]
            if last is not None and (schedule.last_slot is None or schedule.last_slot < last[0]):
                schedule.last_slot, schedule.last_fired_at, schedule.last_job_id = (
                    last[0],
                    now,
                    last[1],
                )
            if paused and params.slots:  # skipped, not caught up after a resume
                skipped = max(slot for slot, _ in params.slots)
                schedule.last_slot = max(skipped, schedule.last_slot or skipped)
            run = params.run
            if run is not None and schedule.run_requested_at == run[0]:
                schedule.run_requested_at = None  # taken: exactly once
                flow.insert(store, [run[1]], now)
                schedule.last_fired_at, schedule.last_job_id = now, run[1].id
        return fired

    def periodic_list(self) -> list[PeriodicRecord]:
        with self.store.lock:
            return [
                PeriodicRecord(
                    name,
                    s.spec,
                    s.last_slot,
                    s.last_fired_at,
                    s.last_job_id,
                    s.next_slot,
                    s.paused,
                    s.run_requested_at,
                )
                for name, s in sorted(self.store.schedules.items())
            ]

    # -- logs ------------------------------------------------------------------------------

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        stored, limit = 0, params.max_per_job
        grouped: dict[str, list[JobLogRecord]] = {}
        for r in params.records:
            grouped.setdefault(r.job_id, []).append(r)
        with self.store.write() as store:
            for job_id, records in grouped.items():
                kept = store.logs.setdefault(job_id, [])
                have = len(kept)
                room = max(0, limit - have)
                kept.extend(records[:room])
                stored += len(records[:room])
                if len(records) > room and have <= limit:
                    # Exactly one marker: after it the count is limit + 1, so have > limit.
                    first = records[room]
                    kept.append(
                        JobLogRecord(
                            job_id,
                            first.attempt,
                            first.ts,
                            "WARNING",
                            TRUNCATED_LOGGER,
                            TRUNCATED_MESSAGE.format(limit=limit),
                        )
                    )
        return stored

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        with self.store.lock:
            return list(self.store.logs.get(params.job_id, ())[: params.limit])
