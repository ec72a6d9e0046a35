"""The MariaDB/MySQL backend: jobs in an InnoDB database, on the shared SQL engine.

Only what differs lives here: connections (one PyMySQL connection per thread, see
connection.py), the plain insert, leases, release, rescue, heartbeats and waiting. The
claim (:mod:`conveyor.backends.sql.claim`: ``SELECT ... FOR UPDATE SKIP LOCKED``, then
the update, as MariaDB has no ``UPDATE ... RETURNING``), the finish, workflows, periodic
jobs and every operation are the engine's, spelled by
:data:`~conveyor.backends.mariadb.dialect.MARIADB`. Every method is one transaction
(``_tx()``); times are the server's clock. No LISTEN/NOTIFY here: an idle worker sleeps
in a statement that a write making jobs ready interrupts (``KILL QUERY``, see wake.py),
and polls when it cannot be woken.

Example (needs a server; the test suite starts one)::

    backend = MariaDBBackend("mariadb://app:pw@db:3306/jobs")
    backend.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    backend.job_get_many(["j1"])[0].state    # JobState.QUEUED
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

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
from conveyor.backends.mariadb import wake as bell
from conveyor.backends.mariadb.action_log import MariaDBActionLog
from conveyor.backends.mariadb.connection import Executor, connect, migrate
from conveyor.backends.mariadb.dialect import MARIADB, server_now
from conveyor.backends.mariadb.search import MariaDBSearch
from conveyor.backends.mariadb.url import parse_mariadb_url
from conveyor.backends.mariadb.wake import DoneWaiter, IdleWaiter, generation_for, wake
from conveyor.backends.params import one_per_job
from conveyor.backends.sql import flow, leases, periodic, rescue, schedules, workers
from conveyor.backends.sql.claim import Claim, promote_due
from conveyor.backends.sql.dialect import Executor as SqlExecutor
from conveyor.backends.sql.finish import Finish
from conveyor.backends.sql.ops import SqlOperations
from conveyor.errors import BackendUnavailable, ConfigurationError, JobNotFound

if TYPE_CHECKING:
    from conveyor.backends.base import Backend

#: job_wait looks at the job after POLL_FIRST s (DONE_FIRST holding its lock: a worker's
#: finish of it ends the wait at once, wake.py; a cancel, expiry or rescue: the next look),
#: each wait POLL_GROWTH times the last, at most POLL_MAX. An idle worker's wait lasts
#: POLL_MAX at most, less when a write wakes it or a scheduled job comes due (wake.py).
POLL_FIRST, DONE_FIRST, POLL_GROWTH, POLL_MAX = 0.005, 0.05, 1.5, 0.25

FEATURES = frozenset({"snooze", "progress", "unique", "workflows", "limits", "periodic", "sequences", "fair", "aging", "filters", "list_keys", "purge", "result_ttl", "queues", "logs", "integrity", "expires", "shared", "action_log", "search", "search_index", "steps"})  # fmt: skip

_T = TypeVar("_T")
_W = TypeVar("_W", IdleWaiter, DoneWaiter)
_log = logging.getLogger("conveyor.backends.mariadb")
#: The waiters to wake after a commit are to be read then (compared by identity).
_READ_AFTER: list[int] = []
#: InnoDB's "deadlock found, transaction rolled back" error, and how often a
#: transaction it picked as the victim is run again before the error is raised.
_DEADLOCK = 1213
_DEADLOCK_TRIES = 6

_JOB_INSERT = (
    "INSERT INTO jobs (id, task, queue, state, priority, payload, max_attempts, run_at, "
    "created_at, timeout, lease, headers, expires_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_TRANSACTIONS = (
    "the mariadb backend joins no transaction of the application's yet (feature "
    "transactional_enqueue is not declared): enqueue outside the transaction"
)


class MariaDBBackend(MariaDBSearch, SqlOperations, MariaDBActionLog):
    """Backend on a MariaDB/MySQL database. Internal: use ``conveyor.App("mariadb://...")``."""

    name = "mariadb"
    features = FEATURES
    _dialect = MARIADB

    def __init__(self, url: str) -> None:
        self.target = parse_mariadb_url(url)
        self.url = self.target.safe_url
        migrate(self.target)
        self._local = threading.local()
        #: Every connection opened, so close() ends those of every thread.
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        #: Ready-making commits of this process on this database (wake.py), and every
        #: thread's idle waiter, closed with the backend.
        self._generation = generation_for(self.target)
        self._waiters: list[IdleWaiter | DoneWaiter] = []

    # -- plumbing ------------------------------------------------------------------------

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or not conn.open:
            conn = connect(self.target)
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def _tx(self) -> Iterator[Executor]:
        """One transaction on this thread's connection: committed when the block ends,
        rolled back when it raises (a broken connection is dropped, the next call opens
        another)."""
        import pymysql

        conn = self._conn()
        local = self._local
        local.wake = None  # set by a write that made jobs ready: waiters to wake
        local.ring = None  # set by a finish while job.result() waiters are: its job ids
        try:
            yield Executor(conn)
            conn.commit()
        except BaseException as exc:
            try:
                conn.rollback()
            except pymysql.err.Error:
                self._local.conn = None
            if isinstance(exc, pymysql.err.OperationalError) and exc.args[0] in (2006, 2013):
                self._local.conn = None
            raise
        idle, ended = local.wake, local.ring
        if idle is not None:
            self._wake_after_commit(conn, idle)
        if ended:
            self._wake_after_commit(conn, _READ_AFTER, ended)

    def _wake_after_commit(self, conn: Any, idle: list[int], ended: Sequence[str] = ()) -> None:
        """Wake idle waiters after a commit that made jobs ready: this process's by
        its generation, every process's by ``KILL QUERY`` (``idle``: the waiters read
        in the transaction, or :data:`_READ_AFTER`: read them now; ``ended``: a finish's
        jobs, whose ``job.result()`` waiters are read now). A failure here is logged, never
        raised: the write has committed, and a waiter not woken polls."""
        import pymysql

        self._local.wake = None
        if not ended:  # jobs made ready (not a finish's job.result() waiters to ring)
            self._generation.bump()
        try:
            if ended:
                idle = bell.done_waiters(Executor(conn), self.target.database, list(ended))
            elif idle is _READ_AFTER:
                idle = bell.read_clock_and_idle(Executor(conn), self.target.database)[1]
            wake(conn, self.target, idle)
        except pymysql.err.Error as exc:  # a broken connection: _conn() opens another
            _log.debug("waking idle workers failed (%s); they poll", exc)

    def _ops_wake(self, ex: SqlExecutor) -> None:
        # Operations and sends are not the hot path: the idle waiters are read after the
        # commit (its own round trip), so a waiter that went idle meanwhile is woken too.
        self._local.wake = _READ_AFTER

    def _ops_rows(
        self, sql: str, args: Sequence[object] | Mapping[str, object] = ()
    ) -> list[tuple[Any, ...]]:
        with self._tx() as ex:
            return list(ex.execute(sql, args).fetchall())

    def _ops_tx(self) -> AbstractContextManager[Executor]:
        return self._tx()

    def _ops_now(self) -> float:
        with self._tx() as ex:
            return server_now(ex)

    def close(self) -> None:
        with self._all_lock:
            for conn in self._all:
                if conn.open:
                    conn.close()
            self._all.clear()
            for waiter in self._waiters:
                waiter.close()
            self._waiters.clear()

    def backup(self, path: str) -> None:
        """Not this backend's job (feature ``backup`` is not declared)."""
        raise ConfigurationError(
            "backup is only available on the SQLite backend; back MariaDB up with its own "
            f"tools: mariadb-dump --single-transaction {self.target.database}"
        )

    # -- insert --------------------------------------------------------------------------

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        jobs = one_per_job(params)
        if not jobs:
            return []

        def insert(ex: Executor) -> Sequence[str]:
            # The clock read also reads which workers are idle (no new round trip):
            # woken after the commit.
            now, self._local.wake = bell.read_clock_and_idle(ex, self.target.database)
            if not all(p.is_plain for p in jobs):
                return flow.insert_flow(MARIADB, ex, jobs, now)
            ex.executemany(_JOB_INSERT, [_plain_row(p, now) for p in jobs])
            return [p.id for p in jobs]

        return self._retrying_deadlocks(insert)

    def _retrying_deadlocks(self, body: Callable[[Executor], _T]) -> _T:
        """``body`` in one transaction, run again when InnoDB chose it as a deadlock's
        victim (error 1213: two inserts of one unique key at the same instant lock the
        index in opposite orders; a claim's promotion of due jobs and a finish of the
        same rows from the worker's other thread lock them in opposite orders).
        Every write of the worker's hot path goes through here. InnoDB has rolled the
        whole transaction back by then, so running it again is safe, and its manual asks
        every client to."""
        import pymysql

        for attempt in range(_DEADLOCK_TRIES):
            try:
                with self._tx() as ex:
                    return body(ex)
            except pymysql.err.OperationalError as exc:
                if exc.args[0] != _DEADLOCK or attempt == _DEADLOCK_TRIES - 1:
                    raise
                time.sleep(random.uniform(0.0, 0.005 * 2**attempt))  # jitter: not in step
        raise AssertionError("unreachable")

    def job_insert_many_through(self, params: JobInsertThroughParams) -> Sequence[str]:
        raise ConfigurationError(_TRANSACTIONS)

    async def job_insert_many_through_async(self, params: JobInsertThroughParams) -> Sequence[str]:
        raise ConfigurationError(_TRANSACTIONS)

    def job_finish_many_through(self, params: JobFinishThroughParams) -> list[str]:
        raise ConfigurationError(_TRANSACTIONS)

    def transaction_connection(self) -> AbstractContextManager[object]:
        raise ConfigurationError(_TRANSACTIONS)

    # -- claim and finish (the engine's) -------------------------------------------------

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        return self.job_finish_and_claim((), params)[1]

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        # Read before the claim: a write of this process committed after it ends the
        # wait that follows an empty claim at once.
        self._local.claim_generation = self._generation.value

        def finish_and_claim(ex: Executor) -> tuple[list[str], list[ClaimedJob]]:
            now = self._read_clock_and_ring(ex, finishes)
            stale = Finish(MARIADB, ex, finishes, now).result(ex)[0] if finishes else []
            return stale, Claim(MARIADB, ex, claim, now).result(ex)[1]

        stale, claimed = self._retrying_deadlocks(finish_and_claim)
        waiter = getattr(self._local, "waiter", None)
        if claimed and waiter is not None:
            # Busy now: an idle spell ends (a lock still held after work found without a
            # wake, a scheduled job due: given back, one round trip, rare).
            waiter.release()
        return stale, claimed

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        if not params:
            return []
        ring = self._read_clock_and_ring
        return self._retrying_deadlocks(
            lambda ex: Finish(MARIADB, ex, params, ring(ex, params)).result(ex)[0]
        )

    def _read_clock_and_ring(self, ex: Executor, finishes: Sequence[JobFinishParams]) -> float:
        """A finish's clock read, which reads who to ring after its commit too: these jobs'
        ``job.result()`` waiters, and idle workers when one is scheduled (wake.py)."""
        schedules, ids = any(f.run_at is not None for f in finishes), [f.id for f in finishes]
        now, waited, idle = bell.read_clock_and_done(ex, self.target.database, ids, schedules)
        self._local.wake = idle if schedules else None  # the generation moves too
        self._local.ring = ids if waited else None
        return now

    def job_promote_due(self) -> int:
        return self._retrying_deadlocks(lambda ex: promote_due(MARIADB, ex, server_now(ex)))

    # -- leases, release, rescue ---------------------------------------------------------

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]:
        if not params.jobs:
            return []
        return self._retrying_deadlocks(
            lambda ex: leases.extend_leases(MARIADB, ex, params.jobs, server_now(ex))
        )

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        if not params.jobs:
            return []
        return self._retrying_deadlocks(
            lambda ex: leases.release(MARIADB, ex, params.worker_id, params.jobs, server_now(ex))
        )

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        return self._retrying_deadlocks(lambda ex: rescue.rescue(MARIADB, ex, params))

    # -- waiting -------------------------------------------------------------------------

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        """Wait until the job has ended: holding its lock, the finish wakes this waiter
        (wake.py DoneWaiter); else polls (first after POLL_FIRST s, each wait
        POLL_GROWTH times the last, at most POLL_MAX)."""
        deadline = None if params.timeout is None else time.monotonic() + params.timeout
        interval, held = POLL_FIRST, None
        while True:
            found = self.job_get_many([params.id])
            if not found:
                raise JobNotFound(params.id)
            if found[0].state.is_finished:
                return found[0]
            remaining = interval if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                return None
            waiter = self._thread_waiter("done_waiter", DoneWaiter)
            if held is None:  # not ended at the first look: hold its lock (one round trip)
                held = waiter.hold(params.id)
                interval = max(interval, DONE_FIRST) if held else interval
            if held:
                waiter.wait(min(interval, remaining))
            else:
                time.sleep(min(interval, remaining))
            interval = min(interval * POLL_GROWTH, POLL_MAX)

    def _thread_waiter(self, name: str, kind: type[_W]) -> _W:
        """This thread's waiter of ``kind`` (a connection of its own, opened when used)."""
        waiter = getattr(self._local, name, None)
        if waiter is None:
            waiter = kind(self.target)
            setattr(self._local, name, waiter)
            with self._all_lock:
                self._waiters.append(waiter)
        return waiter

    def work_wait(self, timeout: float) -> None:
        """Sleep until a write wakes this worker (wake.py), POLL_MAX s at most: the
        worker claims again then (scheduled jobs coming due are found so)."""
        import pymysql

        seen = getattr(self._local, "claim_generation", None)
        if seen is not None and seen != self._generation.value:
            return  # this process made jobs ready since the last claim
        waiter = self._thread_waiter("waiter", IdleWaiter)
        try:
            waiter.wait(max(0.0, min(timeout, POLL_MAX)))
        except pymysql.err.Error as exc:
            raise BackendUnavailable(f"waiting for work on {self.url} failed: {exc}") from exc

    # -- workers -------------------------------------------------------------------------

    def worker_deregister(self, worker_id: str) -> None:
        with self._tx() as ex:
            workers.deregister(MARIADB, ex, worker_id)

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        self._retrying_deadlocks(lambda ex: workers.heartbeat(MARIADB, ex, params, None))

    # -- flow ----------------------------------------------------------------------------

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        if not params.ids:
            return []
        with self._tx() as ex:
            return flow.dependencies(MARIADB, ex, params.ids)

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        refused = []
        with self._tx() as ex:
            for p in params:
                written = ex.execute(
                    "UPDATE jobs SET progress = %s, progress_message = %s "
                    "WHERE id = %s AND token = %s AND state = 'running'",
                    (p.fraction, p.message, p.id, p.token),
                ).rowcount
                if written != 1:
                    refused.append(p.id)
        return refused

    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        with self._tx() as ex:
            now = server_now(ex)
            return periodic.periodic_fire(
                MARIADB,
                ex,
                params,
                now,
                lambda job: ex.execute(_JOB_INSERT, _plain_row(job, now)),
            )

    def periodic_list(self) -> list[PeriodicRecord]:
        found = self._ops_rows(schedules.LIST)
        return [decoding.periodic_record(r) for r in found]


def _plain_row(p: JobInsertParams, now: float) -> tuple[object, ...]:
    """The parameters of ``_JOB_INSERT`` for one plain job."""
    scheduled = p.run_at is not None and p.run_at > now
    return (
        p.id,
        p.task,
        p.queue,
        "scheduled" if scheduled else "queued",
        p.priority,
        p.payload,
        p.max_attempts,
        now if p.run_at is None else p.run_at,
        now,
        p.timeout,
        p.lease,
        p.headers,
        p.expires_at,
    )


if TYPE_CHECKING:

    def _implements_the_seam(backend: MariaDBBackend) -> Backend:
        return backend  # mypy proves MariaDBBackend has every method of every protocol
