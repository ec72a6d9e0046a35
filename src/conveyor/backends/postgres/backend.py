"""The PostgreSQL backend: jobs in the database the application already runs.

One psycopg 3 connection pool per backend object (``self._pool``; see connection.py
for its settings; autocommit on); every method is one transaction: ``_tx()`` (BEGIN ...
COMMIT, for statements that read as they go), ``_pipelined()`` (the hot path: one
implicit transaction that the pipeline's Sync commits) or ``_once()`` (one statement).
Claims are ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP LOCKED LIMIT n)
RETURNING`` over the partial index of ready jobs, so concurrent workers never wait on
each other's rows; every transition out of ``running`` is fenced by the claim token.
Wake-ups travel by LISTEN/NOTIFY. docs/postgres.md has the schema and the locks held.

Example (needs a server; the test suite starts one)::

    backend = PostgresBackend("postgresql://app@db/main?schema=conveyor")
    backend.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    backend.job_get_many(["j1"])[0].state    # JobState.QUEUED
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import (
    ClaimedJob,
    Dependency,
    JobClaimParams,
    JobDependenciesParams,
    JobExtendLeasesParams,
    JobFinishParams,
    JobFinishThroughParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobInsertThroughParams,
    JobProgressParams,
    JobRecord,
    JobReleaseParams,
    JobRescueParams,
    JobWaitParams,
    LeaseStatus,
    PeriodicFireParams,
    PeriodicRecord,
    RescueResult,
    WorkerHeartbeatParams,
)
from conveyor.backends.postgres import flow, inserts, sql, transactional
from conveyor.backends.postgres.connection import connect_options, open_pool
from conveyor.backends.postgres.dialect import POSTGRES, Cursors
from conveyor.backends.postgres.faults import translate_faults
from conveyor.backends.postgres.finish import ATTEMPT_INSERT
from conveyor.backends.postgres.listener import CHANNEL, DoneListener, Listener, notify_done
from conveyor.backends.postgres.ops import PostgresOperations
from conveyor.backends.postgres.sql import count_at_limit
from conveyor.backends.postgres.url import parse_postgres_url
from conveyor.backends.sql import periodic
from conveyor.backends.sql.claim import Claim, promote_due
from conveyor.backends.sql.finish import Finish
from conveyor.errors import JobNotFound
from conveyor.rules import (
    FINISH,
    LOST,
    LOST_PARENT_FAILED,
    RELEASED,
    WORKER_LOST_ERROR,
    WORKER_LOST_REASON,
    held_alone,
    rescue_gives_back_attempt,
    rescue_state,
)
from conveyor.states import JobState

if TYPE_CHECKING:
    import psycopg

    from conveyor.backends.base import Backend

#: job_wait while its listener is not listening: it polls the job's row by primary key,
#: first after WAIT_FIRST seconds, each wait WAIT_GROWTH times the last, at most
#: WAIT_MAX; while listening it re-reads every WAIT_MAX s (a notification wakes it).
WAIT_FIRST, WAIT_GROWTH, WAIT_MAX = 0.002, 1.5, 0.25

# -- FEATURES (one line; pg-ops adds the Operations names as they land) --------------------
FEATURES = frozenset({"snooze", "progress", "unique", "workflows", "limits", "periodic", "ack_with_claim", "transactional_enqueue", "transactional_completion", "filters", "purge", "result_ttl", "queues", "logs", "integrity", "expires", "shared"})  # fmt: skip


@translate_faults
class PostgresBackend(PostgresOperations):
    """Backend on a PostgreSQL schema. Internal: use ``conveyor.App("postgresql://...")``."""

    name = "postgres"
    #: "ack_with_claim": a one-slot worker writes each finish with its next claim, one
    #: transaction (and round trips) instead of two.
    features = FEATURES

    def __init__(self, url: str) -> None:
        self.target = parse_postgres_url(url)
        self.url = self.target.safe_url
        self.schema = self.target.schema
        self._pool = open_pool(self.target)
        self._listener: Listener | None = None
        #: The listener's generation read just before the last empty claim (None: the
        #: last claim found work, so a wait returns at once), so a notification that
        #: lands between that claim and work_wait() is never missed.
        self._claim_generation: int | None = None
        #: When (time.monotonic()) the next scheduled job is due, as the last empty claim
        #: read it; None: none was scheduled (or the last claim found work).
        self._claim_due: float | None = None
        #: Started by the first job_wait (a process that never waits never holds it).
        self._done: DoneListener | None = None
        self._listener_lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Cursor[tuple[object, ...]]]:
        """One transaction on a pooled connection: committed when the block ends,
        rolled back when it raises (BEGIN and COMMIT, each a round trip)."""
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @contextmanager
    def _pipelined(self) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
        """One transaction in pipeline mode, for the hot path: what is sent before the
        first read travels in one round trip, and the Sync that ends the block commits
        it (the statements between two Syncs are one implicit transaction; an error
        rolls it all back). So a call is one round trip when it reads nothing back,
        and two when it reads (the reads, then the commit with whatever the reads
        decided: notifications, dependants), where psycopg's own BEGIN and COMMIT
        made four."""
        with self._pool.connection() as conn, conn.pipeline():
            yield conn

    def _once(
        self, query: str, args: Sequence[object] | dict[str, object] = ()
    ) -> list[tuple[object, ...]]:
        """The rows of one statement, in its own transaction (autocommit): one round
        trip."""
        with self._pool.connection() as conn:
            return conn.execute(query, args).fetchall()

    def _notify(self, cur: psycopg.Cursor[tuple[object, ...]]) -> None:
        """Wake listening workers when this transaction commits (a rollback sends
        nothing; PostgreSQL delivers one notification per transaction however many)."""
        cur.execute("SELECT pg_notify(%s, %s)", (CHANNEL, self.schema))

    def _server_now(self, cur: psycopg.Cursor[tuple[object, ...]]) -> float:
        return flow.server_now(cur)

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._done is not None:
            self._done.close()
        self._pool.close()

    # -- insert and read -----------------------------------------------------------------

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        if not isinstance(params, JobInsertBatchParams) and not params:
            return []
        if inserts.needs_transaction(params):  # COPY, or flow jobs read as they go
            with self._tx() as cur:
                ids = inserts.insert_in(cur, params)
                self._notify(cur)
            return ids
        with self._pipelined() as conn:  # one round trip: nothing is read back
            cur = conn.cursor()
            ids = inserts.insert_in(cur, params)
            self._notify(cur)
        return ids

    def job_insert_many_through(self, params: JobInsertThroughParams) -> Sequence[str]:
        """Through the caller's psycopg connection, in its transaction, with the
        ``pg_notify`` in it (``transactional.py``)."""
        return transactional.insert_through(self.schema, params)

    def transaction_connection(self) -> AbstractContextManager[object]:
        """A new connection (the server's default search_path) for a task's writes."""
        return transactional.task_connection(self.target.conninfo)

    def job_finish_many_through(self, params: JobFinishThroughParams) -> list[str]:
        return transactional.finish_through(self.schema, params)

    async def job_insert_many_through_async(self, params: JobInsertThroughParams) -> Sequence[str]:
        return await transactional.insert_through_async(self.schema, params)

    @staticmethod
    def _insert_plain(
        cur: psycopg.Cursor[tuple[object, ...]], params: Sequence[JobInsertParams]
    ) -> None:
        cur.execute(sql.JOB_INSERT, inserts.plain_args(params))

    # -- claim and finish ----------------------------------------------------------------

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        return self.job_finish_and_claim((), params)[1]

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        """``job_finish_many(finishes)`` then ``job_claim(claim)`` in one transaction: the
        ack of one batch rides with the next claim. Returns (refused ids, claimed jobs)."""
        generation = None if self._listener is None else self._listener.generation
        # The finishes, the promotion and each queue's claim go to the server together;
        # what they decide (notifications, dependants, top-ups) goes with the commit.
        with self._pipelined() as conn:
            ex = Cursors(conn)
            sent = Finish(POSTGRES, ex, finishes, None) if finishes else None
            started = Claim(POSTGRES, ex, claim, None)
            cur = conn.cursor()
            stale, wake = sent.result(ex) if sent is not None else ([], False)
            promoted, claimed = started.result(ex)
            if wake or promoted:
                self._notify(cur)
            if sent is not None:
                notify_done(cur, self.schema, sent.ended)
        self._claim_generation = None if claimed else generation
        if not claimed:
            self._claim_due = (
                None if started.next_due is None else time.monotonic() + started.next_due
            )
        return stale, claimed

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        if not params:
            return []
        # One round trip: the finishes of jobs without dependants (nearly all) and the
        # notifications commit with the Sync that sends them. A notification that names
        # a refused finish only makes its waiter read the row once more.
        with self._pool.connection() as conn:
            with conn.pipeline():
                ex = Cursors(conn)
                sent = Finish(POSTGRES, ex, params, None, alone=True)
                cur = conn.cursor()
                if not all(FINISH[p.kind].ends_job for p in params):
                    self._notify(cur)  # a retry or snooze made a job scheduled
                notify_done(cur, self.schema, [p.id for p in params if FINISH[p.kind].ends_job])
            # The pipeline's closing Sync committed and brought every answer back.
            sent.result(ex)
        if not sent.unapplied:
            return []
        # Refused, or parents of dependants, which move in the same transaction as the
        # finish: that one reads its answer before it commits.
        return self._finish_settling([params[n] for n in sent.unapplied])

    def _finish_settling(self, params: Sequence[JobFinishParams]) -> list[str]:
        with self._pipelined() as conn:
            cur = conn.cursor()
            ex = Cursors(conn)
            sent = Finish(POSTGRES, ex, params, None)
            stale, wake = sent.result(ex)
            if wake:
                self._notify(cur)
            notify_done(cur, self.schema, sent.ended)
        return stale

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]:
        if not params.jobs:
            return []
        ids = [i for i, _ in params.jobs]
        with self._tx() as cur:
            cur.execute(
                f"UPDATE jobs SET lease_until = {sql.NOW} + lease "
                "FROM unnest(%s::text[], %s::bigint[]) AS f(id, token) "
                "WHERE jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running'",
                (ids, [t for _, t in params.jobs]),
            )
            cur.execute(
                "SELECT id, token, state, cancel_requested FROM jobs WHERE id = ANY(%s)", (ids,)
            )
            seen = {str(r[0]): r for r in cur.fetchall()}
        answer = []
        for job_id, token in params.jobs:
            row = seen.get(job_id)
            held = row is not None and row[1] == token and row[2] == "running"
            answer.append(LeaseStatus(job_id, held, bool(row and row[3])))
        return answer

    def job_promote_due(self) -> int:
        with self._tx() as cur:
            count = promote_due(POSTGRES, cur, None)
            if count:
                self._notify(cur)
        return count

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        if not params.jobs:
            return []
        with self._tx() as cur:
            # Graceful shutdown: back to ready, and the attempt is not counted.
            cur.execute(
                "UPDATE jobs SET state = 'queued', attempt = attempt - 1, worker_id = NULL, "
                "lease_until = NULL FROM unnest(%s::text[], %s::bigint[]) AS f(id, token) "
                "WHERE jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running' "
                f"RETURNING jobs.id, jobs.token, jobs.attempt + 1, jobs.started_at, {sql.NOW}",
                ([i for i, _ in params.jobs], [t for _, t in params.jobs]),
            )
            released = cur.fetchall()
            if released:
                cur.execute(
                    ATTEMPT_INSERT,
                    (
                        [r[0] for r in released],
                        [r[1] for r in released],
                        [r[2] for r in released],
                        [params.worker_id] * len(released),
                        [r[3] for r in released],
                        [r[4] for r in released],
                        [RELEASED] * len(released),
                        [None] * len(released),
                    ),
                )
                self._notify(cur)
        done = {str(r[0]) for r in released}
        return [job_id for job_id, _ in params.jobs if job_id not in done]

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        # The caller's stale_before becomes an age, re-anchored on the server's clock
        # (heartbeats and leases are written with it).
        age = time.time() - params.stale_before
        dead = list(params.dead_worker_ids)
        results: list[RescueResult] = []
        with self._tx() as cur:
            now = self._server_now(cur)
            stale_before = now - age
            # Lock the lost workers' rows first: a heartbeat arriving now waits for this
            # commit (and then finds its jobs gone), so liveness cannot change under us.
            cur.execute(
                "SELECT id FROM workers WHERE heartbeat_at < %s OR id = ANY(%s) "
                "ORDER BY id FOR UPDATE",
                (stale_before, dead),
            )
            # SKIP LOCKED: a row being finished right now is left to its finish.
            cur.execute(
                "SELECT j.id, j.token, j.attempt, j.max_attempts, j.rescues, j.worker_id, "
                "j.started_at FROM jobs AS j LEFT JOIN workers AS w ON w.id = j.worker_id "
                "WHERE j.state = 'running' AND (w.id IS NULL OR w.heartbeat_at < %(stale)s "
                "OR j.lease_until < %(stale)s OR j.worker_id = ANY(%(dead)s)) "
                "ORDER BY j.id FOR UPDATE OF j SKIP LOCKED",
                {"stale": stale_before, "dead": dead},
            )
            candidates = cur.fetchall()
            # Poison isolation: was each the one job its dead worker held? (rules.py)
            alone_flags = held_alone([c[5] for c in candidates])  # type: ignore[misc]
            lost_ids: dict[str, str] = {}
            attempts: list[tuple[object, ...]] = []
            for candidate, alone in zip(candidates, alone_flags, strict=True):
                job_id, token, attempt, max_attempts, rescues, worker_id, started = candidate
                # Typed columns hold whole numbers, but a row written around the API may
                # hold one at its column's limit: rescues + 1 would fail every pass, so
                # such a row ends dead with that as its reason (rules.rescue_state, odd).
                problem = count_at_limit(
                    attempt=int(attempt),  # type: ignore[call-overload]
                    token=int(token),  # type: ignore[call-overload]
                    rescues=int(rescues),  # type: ignore[call-overload]
                )
                state = rescue_state(
                    attempt=int(attempt),  # type: ignore[call-overload]
                    max_attempts=int(max_attempts),  # type: ignore[call-overload]
                    rescues=int(rescues),  # type: ignore[call-overload]
                    max_rescues=params.max_rescues,
                    alone=alone,
                    odd=problem is not None,
                )
                if state is JobState.DEAD:
                    cur.execute(
                        "UPDATE jobs SET state = 'dead', reason = %s, error = %s, "
                        "finished_at = %s, worker_id = NULL, lease_until = NULL "
                        "WHERE id = %s AND token = %s AND state = 'running'",
                        (problem or WORKER_LOST_REASON, WORKER_LOST_ERROR, now, job_id, token),
                    )
                    lost_ids[str(job_id)] = LOST_PARENT_FAILED
                else:
                    cur.execute(
                        "UPDATE jobs SET state = 'queued', rescues = rescues + 1, "
                        "attempt = attempt - %s, worker_id = NULL, lease_until = NULL "
                        "WHERE id = %s AND token = %s AND state = 'running'",
                        (int(rescue_gives_back_attempt(alone=alone)), job_id, token),
                    )
                attempts.append((job_id, token, attempt, worker_id, started))
                results.append(RescueResult(str(job_id), worker_id, state))  # type: ignore[arg-type]
            if attempts:
                columns = [list(c) for c in zip(*attempts, strict=True)]
                n = len(attempts)
                cur.execute(
                    ATTEMPT_INSERT,
                    (*columns[:5], [now] * n, [LOST] * n, [WORKER_LOST_ERROR] * n),
                )
            if lost_ids:
                flow.settle(cur, (), lost_ids, now)
            cur.execute(
                "DELETE FROM workers WHERE (heartbeat_at < %s OR id = ANY(%s)) "
                "AND id NOT IN (SELECT worker_id FROM jobs WHERE state = 'running' "
                "AND worker_id IS NOT NULL)",
                (stale_before, dead),
            )
            if results:
                self._notify(cur)
        return results

    # -- waiting for a job -----------------------------------------------------------------

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        """Read the job's row; until it has ended, wait for the notification naming it
        (``listener.DoneListener``), re-reading every :data:`WAIT_MAX` s in case it
        ended by a path that sends none (a rescue, a cancel of a queued job). While the
        listener is not (yet) listening: poll after WAIT_FIRST s, each wait WAIT_GROWTH
        times the last, at most WAIT_MAX."""
        deadline = None if params.timeout is None else time.monotonic() + params.timeout
        listener = self._done_listener()
        listener.watch(params.id)
        try:
            interval = WAIT_FIRST
            while True:
                seen = listener.seen(params.id)
                found = self.job_get_many([params.id])
                if not found:
                    raise JobNotFound(params.id)
                if found[0].state.is_finished:
                    return found[0]
                wait = WAIT_MAX if listener.listening else interval
                remaining = wait if deadline is None else deadline - time.monotonic()
                if remaining <= 0:
                    return None
                listener.wait_done(params.id, seen, min(wait, remaining))
                interval = min(interval * WAIT_GROWTH, WAIT_MAX)
        finally:
            listener.unwatch(params.id)

    def _done_listener(self) -> DoneListener:
        with self._listener_lock:
            if self._done is None:
                self._done = DoneListener(
                    self.target.conninfo, connect_options(self.target), self.schema
                )
            return self._done

    # -- waiting for work ----------------------------------------------------------------

    def work_wait(self, timeout: float) -> None:
        if self._listener is None:
            # Started on the first wait (an app that only enqueues never holds it);
            # what committed before LISTEN was in place is unknown: return at once.
            self._listener = Listener(
                self.target.conninfo, connect_options(self.target), self.schema
            )
            self._listener.wait_listening(min(timeout, 1.0))
            return
        # The last (empty) claim read when the next scheduled job is due; one scheduled
        # since then came with a notification, which ends the wait.
        if self._claim_due is not None:
            timeout = min(timeout, max(0.0, self._claim_due - time.monotonic()))
        self._listener.wait(self._claim_generation, timeout)

    # -- workers -------------------------------------------------------------------------

    def worker_deregister(self, worker_id: str) -> None:
        with self._tx() as cur:
            cur.execute("DELETE FROM workers WHERE id = %s", (worker_id,))

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        w = params.worker
        self._size_pool_for(w.concurrency)
        with self._tx() as cur:
            cur.execute(
                "INSERT INTO workers (id, host, pid, pid_started, started_at, heartbeat_at, "
                "last_fetch_at, queues, concurrency, pool, running) "
                f"VALUES (%s, %s, %s, %s, %s, {sql.NOW}, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, "
                "last_fetch_at = COALESCE(excluded.last_fetch_at, workers.last_fetch_at), "
                "running = excluded.running",
                (
                    w.id,
                    w.host,
                    w.pid,
                    w.pid_started,
                    w.started_at,
                    params.last_fetch_at,
                    json.dumps(list(w.queues)),
                    w.concurrency,
                    w.pool,
                    params.running,
                ),
            )

    def _size_pool_for(self, concurrency: int) -> None:
        """The pool sized to the worker it serves: one connection per task slot plus
        the fetcher's, the completer's and the heartbeat's (unless the URL chose)."""
        wanted = concurrency + 3
        if not self.target.pool_max_given and wanted > self._pool.max_size:
            self._pool.resize(min_size=self._pool.min_size, max_size=wanted)

    # -- flow ----------------------------------------------------------------------------

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        if not params.ids:
            return []
        with self._tx() as cur:
            return flow.dependencies(cur, params.ids)

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        if not params:
            return []
        with self._tx() as cur:
            cur.execute(
                "UPDATE jobs SET progress = f.fraction, progress_message = f.message "
                "FROM unnest(%s::text[], %s::bigint[], %s::float8[], %s::text[]) "
                "AS f(id, token, fraction, message) "
                "WHERE jobs.id = f.id AND jobs.token = f.token AND jobs.state = 'running' "
                "RETURNING jobs.id",
                (
                    [p.id for p in params],
                    [p.token for p in params],
                    [p.fraction for p in params],
                    [p.message for p in params],
                ),
            )
            done = {str(r[0]) for r in cur.fetchall()}
        return [p.id for p in params if p.id not in done]

    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        with self._tx() as cur:
            fired = periodic.periodic_fire(
                POSTGRES,
                cur,
                params,
                self._server_now(cur),
                lambda job: self._insert_plain(cur, [job]),
            )
            if fired:
                self._notify(cur)
        return fired

    def periodic_list(self) -> list[PeriodicRecord]:
        with self._tx() as cur:
            cur.execute(
                "SELECT name, spec, last_slot, last_fired_at, last_job_id, next_slot "
                "FROM periodic_schedules ORDER BY name"
            )
            found = cur.fetchall()
        return [decoding.periodic_record(r) for r in found]  # NaN times read as None


if TYPE_CHECKING:

    def _implements_the_seam(backend: PostgresBackend) -> Backend:
        return backend  # mypy proves PostgresBackend has every method of every protocol
