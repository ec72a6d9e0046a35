"""The embedded backend: one SQLite file in WAL mode, no server.

Every write is one ``BEGIN IMMEDIATE`` transaction on one connection per backend object,
guarded by a lock (inside a process a lock hands the file over faster than SQLite's busy
handler; across processes ``busy_timeout`` queues writers, so no "database is locked").
The hot path's algorithms (claim, finish, leases, rescue, heartbeat) are the SQL engine's
(:mod:`conveyor.backends.sql`) spelled by :data:`~conveyor.backends.sqlite.dialect.SQLITE`;
this module wires them to the connection, its lock and the wake-up notifier. Claims are
one ``UPDATE ... RETURNING`` per queue over a partial index; completions of a batch
share one transaction (group commit). SQLite's own statements live in ``queries/*.sql``.

Weaker than Redis in one way: one machine only (the file must be local; SQLite over a
network filesystem breaks WAL's locking). Stronger in another: every row is queryable
with SQL (feature ``sql``), and it can be copied online (``backup``). Ops methods
(filters, purge, pause, logs, audit) live in ``ops.py``.

Example:
    >>> from conveyor.backends.base import JobInsertParams
    >>> b = SQLiteBackend("sqlite:///:memory:")
    >>> b.job_insert_many([JobInsertParams(id="j1", task="t", queue="q", payload="{}")])
    ['j1']
    >>> b.job_get_many(["j1"])[0].state
    <JobState.QUEUED: 'queued'>
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from conveyor.backends import decoding
from conveyor.backends.base import (
    Backend,
    ClaimedJob,
    JobClaimParams,
    JobExtendLeasesParams,
    JobFinishParams,
    JobFinishThroughParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobInsertThroughParams,
    JobRecord,
    JobReleaseParams,
    JobRescueParams,
    JobWaitParams,
    LeaseStatus,
    RescueResult,
    WorkerHeartbeatParams,
)
from conveyor.backends.params import insert_by_kind
from conveyor.backends.sql import leases, rescue, workers
from conveyor.backends.sql.claim import Claim, promote_due
from conveyor.backends.sql.dialect import Executor
from conveyor.backends.sql.finish import Finish
from conveyor.backends.sqlite import rows
from conveyor.backends.sqlite.action_log import SQLiteActionLog
from conveyor.backends.sqlite.connection import (
    load_query,
    memory_key,
    open_connection,
    parse_sqlite_url,
)
from conveyor.backends.sqlite.counts import SQLiteCounts
from conveyor.backends.sqlite.dialect import SQLITE
from conveyor.backends.sqlite.faults import (
    check_same_file,
    file_identity,
    store_error,
    translate_store_errors,
)
from conveyor.backends.sqlite.flow_methods import FlowMixin
from conveyor.backends.sqlite.inserts import batch_rows, insert_values
from conveyor.backends.sqlite.notify import MAX_POLL, MIN_POLL, POLL_GROWTH, notifier_for
from conveyor.backends.sqlite.ops import SQLiteOpsMixin
from conveyor.backends.sqlite.search import SQLiteSearch
from conveyor.backends.sqlite.transactional import (
    ASYNC_REFUSED,
    begin_as_the_driver_would,
    insert_through,
    joined_connection,
    task_connection,
)
from conveyor.errors import ConfigurationError, JobNotFound

_QUERY_NAMES = (
    "job_insert",
    "job_insert_batch",
)
_DATA_VERSION = "PRAGMA data_version"
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
        *("filters", "purge", "result_ttl", "queues", "logs", "integrity", "backup", "sql"),
        "list_keys",
        "ack_with_claim",
        "expires",
        "transactional_enqueue",
        "transactional_completion",
        "shared",
        "action_log",
        "search",
        "search_index",
        "steps",
        "step_groups",
    }
)


def rollback(conn: sqlite3.Connection) -> None:
    """Roll back what is left of a failed transaction. SQLite may already have rolled it
    back itself (disk full, I/O error): then there is nothing to do, and the original
    error, not "no transaction is active", is what the caller must see."""
    if conn.in_transaction:
        # A failing ROLLBACK leaves SQLite to reset the connection; the caller re-raises
        # the cause.
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


@translate_store_errors
class SQLiteBackend(SQLiteCounts, SQLiteSearch, SQLiteOpsMixin, FlowMixin, SQLiteActionLog):
    """Backend on one SQLite file. Internal: use ``conveyor.App("sqlite:///file.db")``."""

    name = "sqlite"
    #: "ack_with_claim": a one-slot worker saves one commit per job by writing each
    #: finish with its next claim (BENCHMARKS.md#hot-path-benchquickpy).
    features = FEATURES

    def __init__(self, url: str) -> None:
        self.url = url
        self.target = parse_sqlite_url(url)
        try:
            self._conn = open_connection(self.target)
        except sqlite3.Error as exc:  # disk full, read-only... at open: named, not raw
            error = store_error(exc, self.target.path)
            if error is None:
                raise
            raise error from exc
        #: (device, inode) of the file opened: the heartbeat notices it deleted or replaced.
        self._identity = file_identity(self.target.path)
        self._lock = threading.RLock()
        key = memory_key() if self.target.is_memory else self.target.path
        self._notifier = notifier_for(key)
        self._sql = {name: load_query(name) for name in _QUERY_NAMES}
        # Generation and data_version seen just before the last empty claim, so a write
        # that lands between that claim and work_wait() is never missed.
        self._claim_snapshot = (self._notifier.generation, self._data_version())

    # -- plumbing ------------------------------------------------------------------------

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection, for SQL queries by ops tools. Hold ``lock`` while using it."""
        return self._conn

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                rollback(self._conn)
                raise
        self._notifier.bump()

    def _read(self, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                if not rows.is_undecodable_text(exc):
                    raise
            # A row written outside the API holds text that is not UTF-8: read it again
            # with the bad bytes escaped (rows.job_record notes them) rather than fail.
            self._conn.text_factory = rows.lossy_text
            try:
                return self._conn.execute(sql, args).fetchall()
            finally:
                self._conn.text_factory = str

    def _data_version(self) -> int:
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def _wait_change(self, snapshot: tuple[int, int], timeout: float) -> None:
        """Return when this process or another commits after ``snapshot``, or at timeout."""
        generation, version = snapshot
        deadline = time.monotonic() + timeout
        interval = MIN_POLL
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self._notifier.wait(generation, min(interval, remaining)) != generation:
                return
            if self._data_version() != version:
                return
            interval = min(interval * POLL_GROWTH, MAX_POLL)

    def _snapshot(self) -> tuple[int, int]:
        return (self._notifier.generation, self._data_version())

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- jobs ----------------------------------------------------------------------------

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        return self.job_finish_and_claim((), params)[1]

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        """``job_finish_many(finishes)`` then ``job_claim(claim)`` in one transaction: the
        ack of one batch rides with the next claim, one commit instead of two.
        Returns (refused finish ids, claimed jobs)."""
        now = time.time()
        with self._lock:
            generation = self._notifier.generation
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                stale = self._finish_in(self._conn, finishes, now) if finishes else []
                promoted, claimed = Claim(SQLITE, self._conn, claim, now).result(self._conn)
                # work_wait() after an empty claim must see any commit made after it.
                # data_version is read inside the write transaction (no other connection
                # can commit until ours does) and only when a wait can follow: outside a
                # transaction the PRAGMA opens a read snapshot, 8-10% of a one-slot
                # fetcher's wall time (profiled with py-spy). -1 never matches, so a wait
                # right after a non-empty claim returns at once (one extra claim at most).
                version = -1 if claimed else int(self._conn.execute(_DATA_VERSION).fetchone()[0])
                self._claim_snapshot = (generation, version)
                self._conn.execute("COMMIT")
            except BaseException:
                rollback(self._conn)
                raise
        if promoted or finishes:
            self._notifier.bump()
        return stale, claimed

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]:
        if not params.jobs:
            return []
        with self._write() as conn:
            return leases.extend_leases(SQLITE, conn, params.jobs, time.time())

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        now = time.time()
        with self._write() as conn:
            return self._finish_in(conn, params, now)

    @staticmethod
    def _finish_in(
        conn: sqlite3.Connection, params: Sequence[JobFinishParams], now: float
    ) -> list[str]:
        # Dependants move in the same commit as their parent's finish.
        return Finish(SQLITE, conn, params, now).result(conn)[0]

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        return insert_by_kind(params, self._insert_batch, self._insert_flow, self._insert_each)

    def _insert_each(self, params: Sequence[JobInsertParams]) -> list[str]:
        """Plain jobs, each with its own options."""
        now = time.time()
        values = [insert_values(p, now) for p in params]
        with self._write() as conn:
            conn.executemany(self._sql["job_insert"], values)
        return [p.id for p in params]

    def _insert_batch(self, params: JobInsertBatchParams) -> None:
        sql = self._sql["job_insert_batch"]
        rows = batch_rows(params, time.time())
        # The transaction is written out rather than through _write(): a single enqueue
        # is one call of this, and the generator context manager plus executemany's
        # set-up were ~3 µs of its ~50
        # (BENCHMARKS.md#e1-enqueue-one-at-a-time-jobss-higher-is-better).
        conn = self._conn
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if len(rows) == 1:
                    conn.execute(sql, rows[0])
                else:
                    conn.executemany(sql, rows)
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
        self._notifier.bump()

    def job_insert_many_through(self, params: JobInsertThroughParams) -> Sequence[str]:
        """Through the caller's ``sqlite3.Connection`` to this store's file, in its
        transaction (``transactional.py``)."""
        return insert_through(params, self.target.path)

    def transaction_connection(self) -> AbstractContextManager[object]:
        """A new connection to the store's file for a task's own writes."""
        return task_connection(self.target)

    @contextmanager
    def _steps_through(self, connection: object) -> Iterator[Executor]:
        """A transactional step's checkpoint on the task's connection (sql/steps.py)."""
        conn = joined_connection(connection, self.target.path)
        begin_as_the_driver_would(conn)  # the step's writes and its checkpoint: one tx
        yield conn

    def job_finish_many_through(self, params: JobFinishThroughParams) -> list[str]:
        """The finishes on the task's connection, in its transaction (no commit)."""
        conn = joined_connection(params.connection, self.target.path)
        return self._finish_in(conn, params.finishes, time.time())

    async def job_insert_many_through_async(self, params: JobInsertThroughParams) -> Sequence[str]:
        """No asyncio driver joins a SQLite transaction here: use the sync methods."""
        raise ConfigurationError(ASYNC_REFUSED)

    def _insert_plain(self, conn: sqlite3.Connection, p: JobInsertParams, now: float) -> None:
        conn.execute(self._sql["job_insert"], insert_values(p, now))

    def job_promote_due(self) -> int:
        with self._write() as conn:
            return promote_due(SQLITE, conn, time.time())

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        with self._write() as conn:
            return leases.release(SQLITE, conn, params.worker_id, params.jobs, time.time())

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        with self._write() as conn:
            return rescue.rescue(SQLITE, conn, params)

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        deadline = None if params.timeout is None else time.monotonic() + params.timeout
        while True:
            snapshot = self._snapshot()
            found = self.job_get_many([params.id])
            if not found:
                raise JobNotFound(params.id)
            if found[0].state.is_finished:
                return found[0]
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._wait_change(snapshot, min(remaining, 1.0))

    # -- queues and workers --------------------------------------------------------------

    def work_wait(self, timeout: float) -> None:
        due = self._read("SELECT MIN(run_at) FROM jobs WHERE state = 'scheduled'")[0][0]
        due = decoding.number_or_none(due)  # text or a BLOB (a row written around the API)
        if due is not None:
            timeout = min(timeout, max(0.0, due - time.time()))
        self._wait_change(self._claim_snapshot, timeout)

    def worker_deregister(self, worker_id: str) -> None:
        with self._write() as conn:
            workers.deregister(SQLITE, conn, worker_id)

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        # A worker must not go on serving a file deleted or replaced under it (nobody
        # else sees its jobs; new jobs in the new file would never run): StoreReplaced.
        check_same_file(self.target.path, self._identity)
        with self._write() as conn:
            workers.heartbeat(SQLITE, conn, params, time.time())


if TYPE_CHECKING:

    def _implements_the_seam(backend: SQLiteBackend) -> Backend:
        return backend  # mypy proves SQLiteBackend has every method of every protocol
