"""Operations on the Redis backend: listing and counting by filter, purge, pause and
resume, per-job logs, import (``conveyor migrate``) and the integrity audit.

A mixin of :class:`~conveyor.backends.redis.backend.RedisBackend`, kept apart from the
transitions in ``backend.py``; writes are Lua scripts of their own (``scripts/queue_pause``,
``job_log_insert``, ``job_purge``, ``job_import``, ``integrity_check``), registered here
so the hot path's ``Scripts`` stays as it is.

Costs differ from SQLite: there is no secondary index by task, state or argument, so
``job_list``/``job_count`` with a filter scan the id index and read every job hash (in
pages, pipelined); ``job_purge`` and ``job_clear_results`` walk the finished-job index. Fine for ops commands;
``docs/redis.md`` says so.

Example:
    >>> b = RedisBackend("redis://localhost:6379/0?prefix=demo")  # doctest: +SKIP
    >>> b.queue_pause(QueuePauseParams("mail"))  # doctest: +SKIP
    >>> [(q.queue, q.paused) for q in b.queue_list()]  # doctest: +SKIP
    [('mail', True)]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

from redis.commands.core import Script

from conveyor.backends.base import (
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    DurationSample,
    FinishedBucket,
    IntegrityCheckParams,
    IntegrityProblem,
    JobClearResultsParams,
    JobCountParams,
    JobDurationsParams,
    JobExpireDueParams,
    JobFilter,
    JobFinishedHistogramParams,
    JobImport,
    JobImportParams,
    JobKeysParams,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobLogRecord,
    JobPurgeParams,
    JobRecord,
    QueueInfo,
    QueuePauseParams,
    QueueResumeParams,
    QueueStatsParams,
    check_histogram,
)
from conveyor.backends.durable_params import parked_event
from conveyor.backends.filter_match import matches
from conveyor.backends.params import check_importable
from conveyor.backends.records import JobFlow, queue_list_of
from conveyor.backends.redis import integrity, reads
from conveyor.backends.redis.connection import Unavailable
from conveyor.backends.redis.keys import Keys
from conveyor.backends.redis.scripts import load_source
from conveyor.backends.redis.steps import step_json
from conveyor.errors import ConfigurationError
from conveyor.states import JobState

#: Ids read per round trip when a filter scans the id index.
SCAN_PAGE = 500
#: Finished-index entries one purge script call reads (bounds how long it holds Redis).
PURGE_PAGE = 2000
#: Jobs per import script call.
IMPORT_CHUNK = 200
#: Job hash fields an import writes (the rest of JobRecord is per-claim state).
_IMPORT_FIELDS = (
    "id",
    "task",
    "queue",
    "state",
    "priority",
    "payload",
    "attempt",
    "max_attempts",
    "rescues",
    "token",
    "run_at",
    "created_at",
    "timeout",
    "lease",
    "cancel_requested",
    "result",
    "error",
    "reason",
    "started_at",
    "finished_at",
    "headers",
    "expires_at",
    "unique_key",  # kept unless another job holds it here (job_import.lua)
    "waiting_on",
)


class _OpsScripts:
    """The ops scripts, registered on one client (EVALSHA, reloaded after a restart)."""

    def __init__(self, client: Any) -> None:
        def load(name: str) -> Script:
            return Script(client, load_source(name))

        self.integrity_check = load("integrity_check")
        self.job_finished_histogram = load("job_finished_histogram")
        self.job_import = load("job_import")
        self.job_log_insert = load("job_log_insert")
        self.job_purge = load("job_purge")
        self.job_clear_results = load("job_clear_results")
        self.job_expire_due = load("job_expire_due")
        self.queue_pause = load("queue_pause")


def _field(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _log_json(r: JobLogRecord) -> str:
    return json.dumps(
        {
            "attempt": r.attempt,
            "ts": r.ts,
            "level": r.level,
            "logger": r.logger,
            "message": r.message,
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


class RedisOpsMixin:
    """Ops methods of :class:`~conveyor.backends.redis.backend.RedisBackend`."""

    keys: Keys
    _client: Any
    _guard: Unavailable
    _ttl: int
    _ops_scripts: _OpsScripts | None = None

    def _prune(self) -> None:
        raise NotImplementedError  # RedisBackend's

    def _server_time(self) -> float:
        raise NotImplementedError  # RedisBackend's

    @property
    def _ops(self) -> _OpsScripts:
        if self._ops_scripts is None:
            self._ops_scripts = _OpsScripts(self._client)
        return self._ops_scripts

    # -- jobs by filter ------------------------------------------------------------------

    def _scan(
        self, filters: Sequence[JobFilter], after_id: str | None, descending: bool = False
    ) -> Iterator[JobRecord]:
        """Matching jobs in id order after ``after_id`` (one page of hashes per trip);
        ``descending``: newest first, ``after_id`` then bounds from above."""
        if descending:
            cursor = "+" if after_id is None else "(" + after_id
        else:
            cursor = "-" if after_id is None else "(" + after_id
        while True:
            if descending:
                ids = self._client.zrevrangebylex(self.keys.jobs, cursor, "-", 0, SCAN_PAGE)
            else:
                ids = self._client.zrangebylex(self.keys.jobs, cursor, "+", 0, SCAN_PAGE)
            for record in reads.get_jobs(self._client, self.keys, ids):
                if all(matches(f, record) for f in filters):
                    yield record
            if len(ids) < SCAN_PAGE:
                return
            cursor = "(" + ids[-1]

    def job_list(self, params: JobListParams) -> list[JobRecord]:
        legacy = JobFilter(
            queue=params.queue, task=params.task, states=(params.state,) if params.state else ()
        )
        filters = [legacy, params.filter or JobFilter()]
        found: list[JobRecord] = []
        with self._guard:
            self._prune()
            for record in self._scan(filters, params.after_id, params.descending):
                found.append(record)
                if len(found) >= params.limit:
                    break
        return found

    def job_count(self, params: JobCountParams) -> int:
        with self._guard:
            self._prune()
            if params.filter == JobFilter():
                total = int(self._client.zcard(self.keys.jobs))
                return total if params.limit is None else min(total, params.limit)
            found = self._scan([params.filter], None)
            return sum(1 for _ in itertools.islice(found, params.limit))

    def job_purge(self, params: JobPurgeParams) -> int:
        k = self.keys
        keys = [k.base, k.jobs, k.expiry, k.counts]
        states = [str(s) for s in params.states]
        deleted, offset = 0, 0
        with self._guard:
            self._prune()
            while deleted < params.limit:
                args: list[str | int] = [
                    repr(params.finished_before), params.limit - deleted, offset, PURGE_PAGE
                ]  # fmt: skip
                gone, read = self._ops.job_purge(keys, [*args, *states])
                deleted += int(gone)
                # Deleted entries left the index: the next page starts that much earlier.
                offset += int(read) - int(gone)
                if int(read) < PURGE_PAGE:  # the end of the index
                    break
        return deleted

    def job_expire_due(self, params: JobExpireDueParams) -> int:
        k = self.keys
        with self._guard:
            expired, _read = self._ops.job_expire_due(
                [k.base, k.scheduled, k.expiry, k.counts, k.expiring], [self._ttl, params.limit]
            )
        return int(expired)

    def job_clear_results(self, params: JobClearResultsParams) -> int:
        k = self.keys
        after = "" if params.finished_after is None else repr(params.finished_after)
        cleared, offset = 0, 0
        with self._guard:
            while cleared < params.limit:
                args: list[str | int] = [
                    params.task, after, repr(params.finished_before),
                    params.limit - cleared, offset, PURGE_PAGE,
                ]  # fmt: skip
                done, read = self._ops.job_clear_results([k.base, k.expiry], args)
                cleared += int(done)
                offset += int(read)  # cleared entries stay in the index
                if int(read) < PURGE_PAGE:  # the end of the index
                    break
        return cleared

    # -- queues --------------------------------------------------------------------------

    def queue_list(self, params: QueueStatsParams | None = None) -> list[QueueInfo]:
        with self._guard:
            self._prune()
            stats = reads.queue_stats(self._client, self.keys, self._server_time())
            paused = set(self._client.smembers(self.keys.paused))
        return queue_list_of(stats, paused)

    def queue_pause(self, params: QueuePauseParams) -> None:
        self._set_paused(params.queue, True)

    def queue_resume(self, params: QueueResumeParams) -> None:
        self._set_paused(params.queue, False)

    def _set_paused(self, queue: str, paused: bool) -> None:
        k = self.keys
        with self._guard:
            self._ops.queue_pause([k.base, k.paused, k.wake], [queue, "1" if paused else "0"])

    # -- logs ----------------------------------------------------------------------------

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        groups: dict[str, list[JobLogRecord]] = {}
        for r in params.records:
            groups.setdefault(r.job_id, []).append(r)
        if not groups:
            return 0
        batch = [
            [job_id, [_log_json(r) for r in recs], [[str(r.attempt), repr(r.ts)] for r in recs]]
            for job_id, recs in groups.items()
        ]
        limit = params.max_per_job
        with self._guard:
            return int(
                self._ops.job_log_insert(
                    [self.keys.base],
                    [
                        limit,
                        TRUNCATED_MESSAGE.format(limit=limit),
                        TRUNCATED_LOGGER,
                        json.dumps(batch, ensure_ascii=False, separators=(",", ":")),
                    ],
                )
            )

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        if params.limit <= 0:
            return []
        with self._guard:
            entries = self._client.lrange(self.keys.logs(params.job_id), 0, params.limit - 1)
        out = []
        for e in entries:
            d = json.loads(e)
            out.append(
                JobLogRecord(
                    params.job_id,
                    int(d["attempt"]),
                    float(d["ts"]),
                    str(d["level"]),
                    str(d["logger"]),
                    str(d["message"]),
                )
            )
        return out

    # -- import (conveyor migrate) -------------------------------------------------------

    def job_import_many(self, params: JobImportParams) -> list[str]:
        jobs = list(params.jobs)
        for item in jobs:  # checked before anything is written: a script is not rolled back
            check_importable(item)
        k = self.keys
        keys = [k.base, k.jobs, k.scheduled, k.expiry, k.counts, k.wake]
        inserted: list[str] = []
        with self._guard:
            for start in range(0, len(jobs), IMPORT_CHUNK):
                batch = [_import_entry(j) for j in jobs[start : start + IMPORT_CHUNK]]
                inserted += self._ops.job_import(
                    keys, [self._ttl, json.dumps(batch, ensure_ascii=False)]
                )
        return inserted

    def job_flow_many(self, ids: Sequence[str]) -> list[JobFlow]:
        with self._guard:
            pipe = self._client.pipeline(transaction=False)
            for job_id in ids:
                pipe.hmget(self.keys.job(job_id), "id", "pipe", "unique_until")
                pipe.lrange(self.keys.base + "deps:" + job_id, 0, -1)
            found = pipe.execute()
        flows = []
        for n, job_id in enumerate(ids):
            (exists, pipe_field, until), parents = found[2 * n], found[2 * n + 1]
            if exists is not None:
                flows.append(
                    JobFlow(job_id, int(pipe_field or 0), tuple(parents),
                            None if until is None else float(until))
                )  # fmt: skip
        return flows

    # -- audit ---------------------------------------------------------------------------

    def job_keys(self, params: JobKeysParams) -> list[str]:
        """Not on Redis (no feature ``list_keys``): no index by task or queue to step
        through; the dashboard sorts those columns over the newest jobs (web/sorting.py)."""
        raise ConfigurationError(
            f"job_keys ({params.column}) needs an index by that column; redis has none"
        )

    def backup(self, path: str) -> None:
        """Not on Redis (no feature ``backup``): the server's own tools copy it."""
        raise ConfigurationError(
            "backup is only available on the SQLite backend, not redis; "
            "back Redis up with its own tools (BGSAVE, replicas)"
        )

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        with self._guard:
            self._prune()
            return integrity.audit(
                self._client, self.keys, self._ops.integrity_check, params.heartbeat_ttl
            )

    # -- throughput history (the dashboard's chart) --------------------------------------

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        """Read from the expiry index, whose score is the store's finish time plus this
        backend's ``result_ttl``: open the reader with the workers' ``result_ttl``."""
        k = self.keys
        with self._guard:
            now = self._server_time()
            check_histogram(params, now)
            count = max(0, int((now - params.since) // params.bucket_s) + 1)
            starts = [params.since + n * params.bucket_s for n in range(count)]
            # One script call per bucket, pipelined: each holds Redis for one bucket only.
            pipe = self._client.pipeline(transaction=False)
            for start in starts:
                bounds = [repr(start + self._ttl), repr(start + params.bucket_s + self._ttl)]
                self._ops.job_finished_histogram([k.base, k.expiry], bounds, client=pipe)
            replies = pipe.execute()
        out: list[FinishedBucket] = []
        for start, flat in zip(starts, replies, strict=True):
            for i in range(0, len(flat), 3):
                out.append(
                    FinishedBucket(start, str(flat[i]), JobState(flat[i + 1]), int(flat[i + 2]))
                )
        return sorted(out, key=lambda b: (b.start, b.queue, b.state))

    def job_durations(self, params: JobDurationsParams) -> list[DurationSample]:
        with self._guard:
            return reads.durations(self._client, self.keys, params.since, self._ttl, params.limit)


def _import_entry(item: JobImport) -> list[object]:
    j = item.job
    fields: list[str] = []
    for name in _IMPORT_FIELDS:
        value = getattr(j, name)
        if value is not None:
            fields += [name, _field(value)]
    attempts = [
        json.dumps(
            {
                "job_id": j.id,
                "attempt": a.attempt,
                "token": a.token,
                "worker_id": a.worker_id,
                "started_at": a.started_at,
                "finished_at": a.finished_at,
                "outcome": a.outcome,
                "error": a.error,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for a in item.attempts
    ]
    parents: list[str] = []
    if item.flow is not None:
        parents = list(item.flow.parents)
        fields += ["pipe", str(item.flow.pipe)]
        if item.flow.unique_until is not None:
            fields += ["unique_until", repr(float(item.flow.unique_until))]
        if parents:
            fields += ["flow", "1"]
    run_at = repr(float(j.run_at))
    steps = [[str(s.position), step_json(s)] for s in item.steps]
    events = [json.dumps([e.name, e.payload], ensure_ascii=False) for e in item.events]
    # The event a parked job waits for (None: parked by its parents, or not waiting).
    parked = parked_event(item.steps) if j.state is JobState.WAITING else None
    return [j.id, j.queue, str(j.state), str(j.priority), run_at, fields, attempts,
            [_log_json(r) for r in item.logs], parents, steps, events, parked or False]  # fmt: skip
