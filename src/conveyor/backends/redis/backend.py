"""The scale-out backend: Redis (or a Redis Cluster slot), one Lua script per transition.

Every state change is one script (``scripts/*.lua``) run atomically by Redis, fenced by
the claim token, timed by the server's ``TIME``. Jobs are hashes with the fields of the
SQLite ``jobs`` row; ready jobs sit in one sorted set per queue, scheduled ones in one
sorted set by due time, running ones in a per-worker in-flight set (plus the set of
workers holding any, where the rescuer looks). All keys share the hash tag ``{<prefix>}`` (see ``keys.py``).

Weaker than SQLite: no SQL (no feature ``sql``: filters, ``--where`` included, are
evaluated in Python over a scan of the id index; see ``ops.py``); finished jobs and their attempts expire
after ``result_ttl`` (default 7 days) instead of waiting for a pruner; durability is
whatever the server is configured for (AOF ``everysec`` loses up to a second on a crash).
Stronger: many hosts share one store, and Redis Cluster works (one slot per prefix).

Example:
    >>> b = RedisBackend("redis://localhost:6379/0?prefix=demo")  # doctest: +SKIP
    >>> b.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])  # doctest: +SKIP
    >>> b.job_get_many(["j1"])[0].state  # doctest: +SKIP
    <JobState.QUEUED: 'queued'>
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import (
    AttemptRecord,
    Backend,
    ClaimedJob,
    JobCancelParams,
    JobClaimParams,
    JobExtendLeasesParams,
    JobFinishParams,
    JobFinishThroughParams,
    JobInsertThroughParams,
    JobRecord,
    JobReleaseParams,
    JobRetryParams,
    JobWaitParams,
    LeaseStatus,
    QueueStats,
    QueueStatsParams,
    require_transactional,
)
from conveyor.backends.queue_ring import ring_of
from conveyor.backends.redis import hashes, reads
from conveyor.backends.redis import ring as claim_ring
from conveyor.backends.redis.action_log import RedisActionLog
from conveyor.backends.redis.connection import Unavailable, open_client
from conveyor.backends.redis.flow_methods import RedisFlowMixin
from conveyor.backends.redis.hashes import chunks, json_text, num
from conveyor.backends.redis.inserts import RedisInsertMixin
from conveyor.backends.redis.keys import Keys
from conveyor.backends.redis.ops import RedisOpsMixin
from conveyor.backends.redis.schedules import RedisSchedules
from conveyor.backends.redis.scripts import Scripts
from conveyor.backends.redis.steps import RedisSteps
from conveyor.backends.redis.url import parse_redis_url
from conveyor.backends.redis.workers import RedisWorkersMixin
from conveyor.backends.search_scan import ScanSearch
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.rules import (
    FINISH,
)
from conveyor.states import JobState

#: Blocking calls wait in slices of this many seconds and re-check the job, so a lost
#: notification costs at most one slice. Must stay below connection.SOCKET_TIMEOUT.
BLOCK_SLICE = 5.0
#: Due scheduled jobs promoted per script call: bounds how long one claim holds Redis.
PROMOTE_LIMIT = 1000
#: Finished jobs whose index entries one prune call removes.
PRUNE_LIMIT = 1000
#: Jobs per finish script call; larger batches become several calls.
FINISH_CHUNK = 1000
#: The wire code of each finish kind for job_finish.lua (the script looks the rule up).
_KIND = {kind: rule.code for kind, rule in FINISH.items()}
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
        *("filters", "purge", "result_ttl", "queues", "logs", "integrity", "expires"),
        "shared",
        "action_log",
        "search",
        "steps",
        "step_groups",
    }
)


_NO_COMPLETION = (
    "current_job().transaction() needs a SQL store (sqlite:// or postgresql://): "
    "the redis backend cannot commit your writes with the job's success"
)


class RedisBackend(
    RedisInsertMixin,
    RedisWorkersMixin,
    RedisOpsMixin,
    RedisFlowMixin,
    RedisActionLog,
    RedisSchedules,
    ScanSearch,
    RedisSteps,
):
    """Backend on Redis. Internal: use ``conveyor.App("redis://host:6379/0")``.

    URL options: ``?prefix=conveyor&result_ttl=604800&cluster=0`` (see ``url.py``).
    """

    name = "redis"
    #: No "ack_with_claim": merging the ack with the next claim saves no work in Redis,
    #: and from the completer the finish script's server time overlaps the next job
    #: instead of preceding its claim (BENCHMARKS.md#hot-path-benchquickpy).
    features = FEATURES

    def __init__(self, url: str) -> None:
        options = parse_redis_url(url)
        self.url = options.safe_url
        self.keys = Keys(options.prefix)
        self._guard = Unavailable(self.url)
        self._client = open_client(options)
        self._scripts = Scripts(self._client)
        self._ttl = options.result_ttl

    # -- plumbing ------------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The redis-py client, for ops tools and tests."""
        return self._client

    def _server_time(self) -> float:
        seconds, micros = self._client.time()
        return float(seconds) + float(micros) / 1e6

    def _prune(self) -> None:
        """Forget expired finished jobs before a read that lists or counts them."""
        k = self.keys
        removed = PRUNE_LIMIT
        while removed >= PRUNE_LIMIT:
            removed = self._scripts.job_prune([k.base, k.jobs, k.expiry, k.counts], [PRUNE_LIMIT])

    def close(self) -> None:
        self._client.close()

    # -- jobs ----------------------------------------------------------------------------

    def job_attempts(self, job_id: str) -> list[AttemptRecord]:
        with self._guard:
            entries = self._client.lrange(self.keys.attempts(job_id), 0, -1)
        return sorted((hashes.attempt_record(e) for e in entries), key=lambda a: a.token)

    def job_cancel_many(self, params: JobCancelParams) -> list[JobRecord]:
        k = self.keys
        ids = list(params.ids)
        with self._guard:
            for chunk in chunks(ids):
                self._scripts.job_cancel(
                    [k.base, k.scheduled, k.expiry, k.counts], [params.reason, self._ttl, *chunk]
                )
        return self.job_get_many(ids)

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        keys, args = self._claim_call(params)
        with self._guard:
            _promoted, reply = self._scripts.job_claim(keys, args)
            return self._claimed(self._ring_rest(params, reply))

    def _ring_rest(self, params: JobClaimParams, reply: str) -> list[Any]:
        """The claim's rows: the first call's, and for a ring, the rest of its walk."""
        rows: list[Any] = json.loads(reply)
        if (ring := ring_of(params.queues)) is None:
            return rows
        base = self._claim_call_keys(params)
        return claim_ring.walk(self._scripts.job_claim, base, self.keys.ready, params, ring, rows)

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        """``job_finish_many(finishes)`` then ``job_claim(claim)`` in one pipelined round
        trip (the ack of one batch rides with the next claim). Each
        script stays atomic on its own; the finishes run first."""
        if not finishes:
            return [], self.job_claim(claim)
        finish_keys = self._finish_keys()
        keys, args = self._claim_call(claim)
        with self._guard:
            pipe = self._client.pipeline(transaction=False)
            for batch in self._finish_batches(finishes):
                self._scripts.job_finish(finish_keys, [self._ttl, batch], client=pipe)
            self._scripts.job_claim(keys, args, client=pipe)
            # A script error raises here, as job_finish_many / job_claim would.
            replies = pipe.execute()
        refused: list[str] = [job_id for r in replies[:-1] for job_id in r]
        _promoted, reply = replies[-1]
        with self._guard:
            return refused, self._claimed(self._ring_rest(claim, reply))

    def _claim_call_keys(self, params: JobClaimParams) -> list[str]:
        k = self.keys
        return [k.base, k.scheduled, k.holders, k.inflight(params.worker_id), k.counts, k.wake]

    def _claim_call(self, params: JobClaimParams) -> tuple[list[str], list[str | int]]:
        keys = self._claim_call_keys(params)
        if (ring := ring_of(params.queues)) is not None:
            return keys, claim_ring.claim_args(params, ring, PROMOTE_LIMIT)
        keys += [self.keys.ready(queue) for queue, _ in params.queues]
        args: list[str | int] = [params.worker_id, params.total, PROMOTE_LIMIT]
        args += [limit for _, limit in params.queues]
        return keys, args

    @staticmethod
    def _claimed(rows: list[Any]) -> list[ClaimedJob]:
        claimed = [hashes.claimed_job(j) for j in rows]
        if len(claimed) > 1:
            claimed.sort(key=lambda j: (-j.priority, j.run_at, j.id))
        return claimed

    def job_delete_many(self, ids: Sequence[str]) -> int:
        k = self.keys
        keys = [k.base, k.jobs, k.scheduled, k.expiry, k.counts]
        with self._guard:
            return sum(
                int(self._scripts.job_delete(keys, [self._ttl, *c])) for c in chunks(list(ids))
            )

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]:
        if not params.jobs:
            return []
        args: list[str | int] = []
        for job_id, token in params.jobs:
            args += [job_id, token]
        with self._guard:
            flags = self._scripts.job_extend_leases([self.keys.base], args)
        return [
            LeaseStatus(job_id, bool(flags[2 * i]), bool(flags[2 * i + 1]))
            for i, (job_id, _) in enumerate(params.jobs)
        ]

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        keys = self._finish_keys()
        refused: list[str] = []
        for batch in self._finish_batches(params):
            with self._guard:
                refused += self._scripts.job_finish(keys, [self._ttl, batch])
        return refused

    def _finish_keys(self) -> list[str]:
        k = self.keys
        return [k.base, k.scheduled, k.expiry, k.counts, k.wake, k.jobs]

    @staticmethod
    def _finish_batches(params: Sequence[JobFinishParams]) -> list[str]:
        """The JSON argument of each finish script call (``FINISH_CHUNK`` jobs each)."""
        # ``or None``: SQLite treats 0 as "not given" too (``p.run_at or now``).
        return [
            json_text(
                [
                    [
                        p.id,
                        p.token,
                        _KIND[p.kind],
                        p.worker_id,
                        p.attempt,
                        p.result,
                        p.error,
                        p.reason,
                        num(p.run_at or None),
                        num(p.started_at),
                        num(p.finished_at or None),
                    ]
                    for p in params[start : start + FINISH_CHUNK]
                ]
            )
            for start in range(0, len(params), FINISH_CHUNK)
        ]

    def job_get_many(self, ids: Sequence[str]) -> list[JobRecord]:
        with self._guard:
            return reads.get_jobs(self._client, self.keys, ids)

    def job_insert_many_through(self, params: JobInsertThroughParams) -> Sequence[str]:
        """Not on Redis (no feature ``transactional_enqueue``): it has no transaction of
        the application's database to join."""
        require_transactional(self)
        raise AssertionError("unreachable")  # pragma: no cover

    def transaction_connection(self) -> AbstractContextManager[object]:
        """Not on Redis (no feature ``transactional_completion``)."""
        raise ConfigurationError(_NO_COMPLETION)

    def job_finish_many_through(self, params: JobFinishThroughParams) -> list[str]:
        raise ConfigurationError(_NO_COMPLETION)

    async def job_insert_many_through_async(self, params: JobInsertThroughParams) -> Sequence[str]:
        return self.job_insert_many_through(params)

    def job_promote_due(self) -> int:
        k = self.keys
        total = 0
        with self._guard:
            while True:
                promoted, scanned = self._scripts.job_promote_due(
                    [k.base, k.scheduled, k.counts, k.wake], [PROMOTE_LIMIT]
                )
                total += int(promoted)
                if int(scanned) < PROMOTE_LIMIT:
                    return total

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        if not params.jobs:
            return []
        k = self.keys
        args: list[str | int] = [params.worker_id]
        for job_id, token in params.jobs:
            args += [job_id, token]
        with self._guard:
            refused: list[str] = self._scripts.job_release([k.base, k.counts, k.wake], args)
        return refused

    def job_retry_many(self, params: JobRetryParams) -> list[JobRecord]:
        k = self.keys
        ids = list(params.ids)
        with self._guard:
            for chunk in chunks(ids):
                self._scripts.job_retry([k.base, k.expiry, k.counts, k.wake], list(chunk))
        return self.job_get_many(ids)

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        deadline = None if params.timeout is None else time.monotonic() + params.timeout
        done = self.keys.done(params.id)
        with self._guard:
            # Mark the job as waited on: from now on finishing it pushes to done:<id>.
            state = self._scripts.job_watch([self.keys.base], [params.id])
            record: JobRecord | None = None
            while True:
                if state is None:
                    raise JobNotFound(params.id)
                if JobState(state).is_finished:
                    if record is not None:
                        return record
                    found = reads.get_jobs(self._client, self.keys, [params.id])
                    if not found:
                        raise JobNotFound(params.id)
                    return found[0]
                remaining = BLOCK_SLICE
                if deadline is not None:
                    remaining = min(remaining, deadline - time.monotonic())
                if remaining <= 0:
                    return None
                # BLMOVE onto itself: the element stays, so every waiter wakes. A 0
                # timeout would block forever, hence the floor. The job's read rides in
                # the same pipeline: the server runs it once the BLMOVE returns, so the
                # wake and the finished record are one round trip (they were three: the
                # wake, the state, then the record; W2's way back, bench/HOTPATH.md).
                pipe = self._client.pipeline(transaction=False)
                pipe.blmove(done, done, max(remaining, 0.01), "LEFT", "LEFT")
                pipe.hmget(self.keys.job(params.id), hashes.JOB_FIELDS)
                woke, fields = pipe.execute()
                record = hashes.job_record(fields)
                state = None if record is None else record.state
                if woke is not None and state is not None and not JobState(state).is_finished:
                    record = None
                    # A stale notification (a deleted job that had this id): drop it so we
                    # do not spin, then look again so a finish racing the DEL is not missed.
                    self._client.delete(done)
                    state = self._client.hget(self.keys.job(params.id), "state")

    # -- queues and workers --------------------------------------------------------------

    def queue_stats(self, params: QueueStatsParams | None = None) -> list[QueueStats]:
        # counts kept by every write: exact whatever the cap
        with self._guard:
            self._prune()
            return reads.queue_stats(self._client, self.keys, self._server_time())

    def work_wait(self, timeout: float) -> None:
        with self._guard:
            first = self._client.zrange(self.keys.scheduled, 0, 0, withscores=True)
            if first:
                timeout = min(timeout, max(0.0, first[0][1] - self._server_time()))
            timeout = min(timeout, BLOCK_SLICE)
            if timeout < 0.01:
                return  # BLPOP 0 would block forever
            self._client.blpop([self.keys.wake], timeout)


if TYPE_CHECKING:

    def _implements_the_seam(backend: RedisBackend) -> Backend:
        return backend  # mypy proves RedisBackend has every method of every protocol
