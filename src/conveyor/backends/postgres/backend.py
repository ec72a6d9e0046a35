"""The PostgreSQL backend: jobs in the database the application already runs.

One psycopg 3 connection pool per backend object (``self._pool``; see connection.py
for its settings; autocommit on); every method is one transaction: ``_tx()`` (BEGIN ...
COMMIT, for statements that read as they go), ``_pipelined()`` (the hot path: one
implicit transaction that the pipeline's Sync commits) or ``_once()`` (one statement).
The hot path's algorithms are the SQL engine's (:mod:`conveyor.backends.sql`) spelled by
:data:`~conveyor.backends.postgres.dialect.POSTGRES`; this module wires them to the pool,
the pipeline and LISTEN/NOTIFY. Claims are ``UPDATE ... WHERE id IN (SELECT ... FOR
UPDATE SKIP LOCKED LIMIT n) RETURNING`` over the partial index of ready jobs, so
concurrent workers never wait on each other's rows; every transition out of ``running``
is fenced by the claim token. docs/postgres.md has the schema and the locks held.

Example (needs a server; the test suite starts one)::

    backend = PostgresBackend("postgresql://app@db/main?schema=conveyor")
    backend.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    backend.job_get_many(["j1"])[0].state    # JobState.QUEUED
"""

from __future__ import annotations

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
from conveyor.backends.postgres.action_log import PostgresActionLog
from conveyor.backends.postgres.connection import connect_options, open_pool
from conveyor.backends.postgres.dialect import POSTGRES, Cursors
from conveyor.backends.postgres.faults import translate_faults
from conveyor.backends.postgres.listener import CHANNEL, DoneListener, Listener, notify_done
from conveyor.backends.postgres.ops import PostgresOperations
from conveyor.backends.postgres.search import PostgresSearch
from conveyor.backends.postgres.url import parse_postgres_url
from conveyor.backends.sql import leases, periodic, rescue, schedules, workers
from conveyor.backends.sql.claim import Claim, promote_due
from conveyor.backends.sql.finish import Finish
from conveyor.errors import JobNotFound
from conveyor.rules import (
    FINISH,
)

if TYPE_CHECKING:
    import psycopg

    from conveyor.backends.base import Backend
    from conveyor.backends.sql.dialect import Executor

#: job_wait while its listener is not listening: it polls the job's row by primary key,
#: first after WAIT_FIRST seconds, each wait WAIT_GROWTH times the last, at most
#: WAIT_MAX; while listening it re-reads every WAIT_MAX s (a notification wakes it).
WAIT_FIRST, WAIT_GROWTH, WAIT_MAX = 0.002, 1.5, 0.25

# -- FEATURES (one line; pg-ops adds the Operations names as they land) --------------------
FEATURES = frozenset({"snooze", "progress", "unique", "workflows", "limits", "periodic", "sequences", "fair", "aging", "ack_with_claim", "transactional_enqueue", "transactional_completion", "filters", "list_keys", "purge", "result_ttl", "queues", "logs", "integrity", "expires", "shared", "action_log", "search", "search_index", "steps"})  # fmt: skip


@translate_faults
class PostgresBackend(PostgresSearch, PostgresOperations, PostgresActionLog):
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

    def _steps_through(self, connection: object) -> AbstractContextManager[Executor]:
        """A transactional step's checkpoint on the task's connection (sql/steps.py)."""
        return transactional.in_schema(self.schema, connection)

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
        with self._tx() as cur:
            return leases.extend_leases(POSTGRES, cur, params.jobs, None)

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
            refused = leases.release(POSTGRES, cur, params.worker_id, params.jobs, None)
            if len(refused) < len(params.jobs):
                self._notify(cur)
        return refused

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        with self._tx() as cur:
            results = rescue.rescue(POSTGRES, cur, params)
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
            workers.deregister(POSTGRES, cur, worker_id)

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        self._size_pool_for(params.worker.concurrency)
        with self._tx() as cur:
            workers.heartbeat(POSTGRES, cur, params, None)

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
            cur.execute(schedules.LIST)
            found = cur.fetchall()
        return [decoding.periodic_record(r) for r in found]  # NaN times read as None


if TYPE_CHECKING:

    def _implements_the_seam(backend: PostgresBackend) -> Backend:
        return backend  # mypy proves PostgresBackend has every method of every protocol
