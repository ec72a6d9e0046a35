"""The embedded backend: one SQLite file in WAL mode, no server.

Every write is one ``BEGIN IMMEDIATE`` transaction on one connection per backend object,
guarded by a lock (inside a process a lock hands the file over faster than SQLite's busy
handler; across processes ``busy_timeout`` queues writers, so no "database is locked").
Claims are one ``UPDATE ... RETURNING`` per queue over a partial index; completions of a
batch share one transaction (group commit). SQL lives in ``queries/*.sql``.

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
import json
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
from conveyor.backends.sql.claim import Claim, promote_due
from conveyor.backends.sql.finish import Finish
from conveyor.backends.sqlite import flow_writes, rows
from conveyor.backends.sqlite.connection import (
    load_query,
    memory_key,
    open_connection,
    parse_sqlite_url,
)
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
from conveyor.backends.sqlite.transactional import (
    ASYNC_REFUSED,
    insert_through,
    joined_connection,
    task_connection,
)
from conveyor.errors import ConfigurationError, JobNotFound
from conveyor.rules import (
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

_QUERY_NAMES = (
    "attempt_insert",
    "job_extend_lease",
    "job_insert",
    "job_insert_batch",
    "job_release",
    "job_rescue_candidates",
    "worker_heartbeat",
)
_DATA_VERSION = "PRAGMA data_version"
#: Everything this backend implements (names: conveyor.backends.protocols.FEATURES).
FEATURES = frozenset(
    {
        *("snooze", "progress", "unique", "workflows", "limits", "periodic"),
        *("filters", "purge", "result_ttl", "queues", "logs", "integrity", "backup", "sql"),
        "ack_with_claim",
        "expires",
        "transactional_enqueue",
        "transactional_completion",
        "shared",
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
class SQLiteBackend(SQLiteOpsMixin, FlowMixin):
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
                promoted, claimed = self._claim_in(self._conn, claim, now)
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

    @staticmethod
    def _claim_in(
        conn: sqlite3.Connection, params: JobClaimParams, now: float
    ) -> tuple[int, list[ClaimedJob]]:
        return Claim(SQLITE, conn, params, now).result(conn)

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]:
        if not params.jobs:
            return []
        now = time.time()
        tokens = dict(params.jobs)
        with self._write() as conn:
            conn.executemany(
                self._sql["job_extend_lease"],
                [{"id": i, "token": t, "now": now} for i, t in params.jobs],
            )
            found: list[tuple[object, ...]] = []
            for chunk in rows.chunks(list(tokens)):
                found += conn.execute(
                    "SELECT id, token, state, cancel_requested FROM jobs "
                    f"WHERE id IN ({rows.placeholders(len(chunk))})",
                    chunk,
                ).fetchall()
        seen = {r[0]: r for r in found}
        answer = []
        for job_id, token in params.jobs:
            row = seen.get(job_id)
            held = row is not None and row[1] == token and row[2] == "running"
            answer.append(LeaseStatus(job_id, held, bool(row and row[3])))
        return answer

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
        if isinstance(params, JobInsertBatchParams):
            self._insert_batch(params)
            return params.ids
        if not all(p.is_plain for p in params):
            return self._insert_flow(params)
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
        now = time.time()
        refused = []
        with self._write() as conn:
            for job_id, token in params.jobs:
                row = conn.execute(
                    self._sql["job_release"], {"id": job_id, "token": token}
                ).fetchone()
                if row is None:
                    refused.append(job_id)
                    continue
                conn.execute(
                    self._sql["attempt_insert"],
                    {
                        "id": job_id,
                        "token": token,
                        "attempt": row[0],
                        "worker_id": params.worker_id,
                        "started_at": row[1],
                        "finished_at": now,
                        "outcome": RELEASED,
                        "error": None,
                    },
                )
        return refused

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        now = time.time()
        results: list[RescueResult] = []
        with self._write() as conn:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS dead_workers (id TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM dead_workers")
            conn.executemany(
                "INSERT OR IGNORE INTO dead_workers VALUES (?)",
                [(w,) for w in params.dead_worker_ids],
            )
            candidates = conn.execute(
                self._sql["job_rescue_candidates"], {"stale_before": params.stale_before}
            ).fetchall()
            # Poison isolation: was each the one job its dead worker held? (rules.py)
            alone_flags = held_alone([c[5] for c in candidates])
            for candidate, alone in zip(candidates, alone_flags, strict=True):
                job_id, token, *counts, worker_id, started = candidate
                # A row written around the API may hold anything in its counts: an odd
                # one ends dead with the problem as its reason, never fails the rescue.
                attempt, max_attempts, rescues, problem = decoding.rescue_counts(*counts)
                state = rescue_state(
                    attempt=attempt,
                    max_attempts=max_attempts,
                    rescues=rescues,
                    max_rescues=params.max_rescues,
                    alone=alone,
                    odd=problem is not None,
                )
                give_back = int(rescue_gives_back_attempt(alone=alone))
                lost = state is JobState.DEAD
                if lost:
                    conn.execute(
                        "UPDATE jobs SET state = 'dead', reason = ?, error = ?, "
                        "finished_at = ?, worker_id = NULL, lease_until = NULL "
                        "WHERE id = ? AND token = ? AND state = 'running'",
                        (problem or WORKER_LOST_REASON, WORKER_LOST_ERROR, now, job_id, token),
                    )
                else:
                    conn.execute(
                        "UPDATE jobs SET state = 'queued', rescues = rescues + 1, "
                        "attempt = attempt - ?, worker_id = NULL, lease_until = NULL "
                        "WHERE id = ? AND token = ? AND state = 'running'",
                        (give_back, job_id, token),
                    )
                conn.execute(
                    self._sql["attempt_insert"],
                    {
                        "id": job_id,
                        "token": token,
                        "attempt": attempt,
                        "worker_id": worker_id,
                        "started_at": started,
                        "finished_at": now,
                        "outcome": LOST,
                        "error": WORKER_LOST_ERROR,
                    },
                )
                if lost:
                    flow_writes.settle(conn, (), {str(job_id): LOST_PARENT_FAILED}, now)
                results.append(RescueResult(str(job_id), worker_id, state))
            conn.execute(
                "DELETE FROM workers WHERE (heartbeat_at < ? OR id IN (SELECT id FROM dead_workers)) "
                "AND id NOT IN (SELECT worker_id FROM jobs WHERE state = 'running' "
                "AND worker_id IS NOT NULL)",
                (params.stale_before,),
            )
        return results

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
            conn.execute("DELETE FROM workers WHERE id = ?", (worker_id,))

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None:
        # A worker must not go on serving a file deleted or replaced under it (nobody
        # else sees its jobs; new jobs in the new file would never run): StoreReplaced.
        check_same_file(self.target.path, self._identity)
        w = params.worker
        with self._write() as conn:
            conn.execute(
                self._sql["worker_heartbeat"],
                {
                    "id": w.id,
                    "host": w.host,
                    "pid": w.pid,
                    "pid_started": w.pid_started,
                    "started_at": w.started_at,
                    "now": time.time(),
                    "last_fetch_at": params.last_fetch_at,
                    "queues": json.dumps(list(w.queues)),
                    "concurrency": w.concurrency,
                    "pool": w.pool,
                    "running": params.running,
                },
            )


if TYPE_CHECKING:

    def _implements_the_seam(backend: SQLiteBackend) -> Backend:
        return backend  # mypy proves SQLiteBackend has every method of every protocol
