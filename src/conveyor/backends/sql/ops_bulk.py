"""Bulk actions on any SQL store: cancel, manual retry, delete, purge, the expiry sweep,
clearing a task's old results (``result_ttl``) and pausing queues, each one transaction
of the store's (``_ops_tx``).

Target states come from :mod:`conveyor.rules` (``CANCEL_AT_ONCE``, ``RETRY_BY_HAND``,
``EXPIRE_UNCLAIMED``; ``WAS_CANCELLED`` / ``WAS_DELETED`` / ``WAS_EXPIRED`` for the
dependants, settled by :func:`conveyor.backends.sql.flow.settle` in the same commit);
the statements only apply them. Id lists go through ``Dialect.in_list`` (an array where
the store has them, chunks of ``IN`` where its parameters are capped); rows a sweep
takes are picked with ``Dialect.skip_locked``, so a purge never waits on a row another
transaction holds (the next sweep takes it). Times are the store's clock.

Example (any SQL store)::

    backend.job_cancel_many(JobCancelParams(["01J..."]))   # queued -> cancelled at once
    backend.job_purge(JobPurgeParams(finished_before=time.time() - 7 * 86400))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from conveyor.backends.base import (
    JobAgeParams,
    JobCancelParams,
    JobClearResultsParams,
    JobExpireDueParams,
    JobPurgeParams,
    JobRecord,
    JobRetryParams,
    QueuePauseParams,
    QueueResumeParams,
    SequencePruneParams,
    SequenceReleaseParams,
)
from conveyor.backends.sql import flow
from conveyor.backends.sql.dialect import Dialect, Executor
from conveyor.backends.sql.store import SqlStore
from conveyor.rules import (
    CANCEL_AT_ONCE,
    EXPIRE_UNCLAIMED,
    EXPIRED_REASON,
    RETRY_BY_HAND,
    WAS_CANCELLED,
    WAS_DELETED,
    WAS_EXPIRED,
    sql_states,
)


def update_returning(
    d: Dialect,
    ex: Executor,
    assign: tuple[str, Sequence[object]],
    where: str,
    args: Sequence[object],
) -> list[str]:
    """``UPDATE jobs SET <assign> WHERE <where>``, and the ids it wrote. Without
    ``UPDATE ... RETURNING`` (MariaDB) the ids are selected locked first, then updated
    (the lock keeps them matching ``where`` until commit)."""
    text, values = assign
    if d.returning:
        sql = d.sql(f"UPDATE jobs SET {text} WHERE {where} RETURNING id")
        return [str(r[0]) for r in ex.execute(sql, [*values, *args]).fetchall()]
    found = ex.execute(d.sql(f"SELECT id FROM jobs WHERE {where}{d.lock}"), list(args))
    ids = [str(r[0]) for r in found.fetchall()]
    for chunk, chunk_args in d.in_list("id", ids):
        ex.execute(d.sql(f"UPDATE jobs SET {text} WHERE {chunk}"), [*values, *chunk_args])
    return ids


def settle_ended(d: Dialect, ex: Executor, ended: Mapping[str, str]) -> int:
    """Move the dependants of parents that ended without succeeding (``{id: why}``) as
    the rules say, in the caller's transaction; how many became ready (an on_failure
    handler). Only parents with dependants are settled: the others change nothing, and
    would cost statements each (a purge of 1000 dead jobs)."""
    parents: dict[str, str] = {}
    for where, args in d.in_list("parent_id", list(ended)):
        query = d.sql(f"SELECT DISTINCT parent_id FROM job_deps WHERE {where}")
        parents.update((str(r[0]), ended[str(r[0])]) for r in ex.execute(query, args).fetchall())
    if not parents:
        return 0
    return flow.settle(d, ex, (), parents, d.clock(ex))


def delete_in(d: Dialect, ex: Executor, ids: Sequence[str]) -> tuple[int, int]:
    """Delete jobs with their attempts, logs and workflow edges, in the caller's
    transaction: (how many, how many dependants became ready). Dependants of a parent
    deleted before it succeeded are settled first: it can never release them."""
    unfinished: dict[str, str] = {}
    for where, args in d.in_list("id", ids):
        query = d.sql(f"SELECT id FROM jobs WHERE {where} AND state != 'succeeded'")
        unfinished.update((str(r[0]), WAS_DELETED) for r in ex.execute(query, args).fetchall())
    readied = settle_ended(d, ex, unfinished)
    deleted = 0
    for where, args in d.in_list("id", ids):
        deleted += ex.execute(d.sql(f"DELETE FROM jobs WHERE {where}"), args).rowcount
    for table, column in _OWNED:
        for where, args in d.in_list(column, ids):
            ex.execute(d.sql(f"DELETE FROM {table} WHERE {where}"), args)
    return deleted, readied


#: The rows that go with a job: (table, the column naming it).
_OWNED = (
    ("attempts", "job_id"),
    ("job_logs", "job_id"),
    ("job_steps", "job_id"),
    ("job_events", "job_id"),
    ("job_deps", "child_id"),
    ("job_deps", "parent_id"),
)


def _marks(n: int) -> str:
    return ", ".join("?" * n)


class SqlBulkOps(SqlStore):
    """The bulk actions of the Operations protocol, on any SQL store."""

    job_get_many: Callable[[Sequence[str]], list[JobRecord]]  # SqlReads'

    def job_cancel_many(self, params: JobCancelParams) -> list[JobRecord]:
        d, ids = self._dialect, list(params.ids)
        with self._ops_tx() as ex:
            now, readied = d.clock(ex), 0
            for where, args in d.in_list("id", ids):
                cancelled = update_returning(
                    d, ex, ("state = 'cancelled', reason = ?, finished_at = ?", (params.reason, now)),
                    f"{where} AND state IN ({sql_states(CANCEL_AT_ONCE)})", args,
                )  # fmt: skip
                readied += settle_ended(d, ex, dict.fromkeys(cancelled, WAS_CANCELLED))
                # Running jobs: the worker sees the request on its next lease extension.
                ex.execute(
                    d.sql(
                        "UPDATE jobs SET cancel_requested = 1, reason = ? "
                        f"WHERE {where} AND state = 'running'"
                    ),
                    [params.reason, *args],
                )
            if readied:
                self._ops_wake(ex)
        return self.job_get_many(ids)

    def job_retry_many(self, params: JobRetryParams) -> list[JobRecord]:
        d, ids = self._dialect, list(params.ids)
        with self._ops_tx() as ex:
            now, moved = d.clock(ex), 0
            for where, args in d.in_list("id", ids):
                moved += ex.execute(
                    d.sql(
                        "UPDATE jobs SET state = 'queued', attempt = 0, rescues = 0, run_at = ?, "
                        "cancel_requested = 0, finished_at = NULL, result = NULL, reason = NULL "
                        f"WHERE {where} AND state IN ({sql_states(RETRY_BY_HAND)})"
                    ),
                    [now, *args],
                ).rowcount
            if moved:
                self._ops_wake(ex)  # they are ready now: wake a worker
        return self.job_get_many(ids)

    def job_age_many(self, params: JobAgeParams) -> int:
        """See :meth:`conveyor.backends.protocols.Flow.job_age_many`."""
        d = self._dialect
        with self._ops_tx() as ex:
            return int(
                ex.execute(
                    d.sql(
                        "UPDATE jobs SET priority = priority + 1, run_at = run_at + ? "
                        "WHERE state = 'queued' AND queue = ? AND run_at <= ? AND priority < ?"
                    ),
                    (params.step, params.queue, d.clock(ex) - params.step, params.ceiling),
                ).rowcount
            )

    def sequence_release_many(self, params: SequenceReleaseParams) -> list[str]:
        """See :meth:`conveyor.backends.protocols.Flow.sequence_release_many`."""
        d = self._dialect
        with self._ops_tx() as ex:
            released = flow.sequence_release(d, ex, list(params.ids), d.clock(ex))
            if released:
                self._ops_wake(ex)  # they are ready now: wake a worker
        return released

    def sequence_prune(self, params: SequencePruneParams) -> int:
        """See :meth:`conveyor.backends.protocols.Flow.sequence_prune`."""
        with self._ops_tx() as ex:
            return flow.sequence_prune(self._dialect, ex, params.limit)

    def job_delete_many(self, ids: Sequence[str]) -> int:
        with self._ops_tx() as ex:
            deleted, readied = delete_in(self._dialect, ex, list(ids))
            if readied:
                self._ops_wake(ex)
        return deleted

    def job_purge(self, params: JobPurgeParams) -> int:
        d, states = self._dialect, [str(s) for s in params.states]
        if not states:
            return 0
        # Old finished jobs (reads the jobs_finished partial index).
        query = d.sql(
            f"SELECT id FROM jobs WHERE state IN ({_marks(len(states))}) "
            f"AND finished_at IS NOT NULL AND finished_at < ? LIMIT ?{d.skip_locked}"
        )
        with self._ops_tx() as ex:
            found = ex.execute(query, [*states, params.finished_before, params.limit])
            deleted, readied = delete_in(d, ex, [str(r[0]) for r in found.fetchall()])
            if readied:
                self._ops_wake(ex)
        return deleted

    def job_expire_due(self, params: JobExpireDueParams) -> int:
        d, states = self._dialect, sql_states(EXPIRE_UNCLAIMED)
        # Unstarted jobs past their expires_at, over the jobs_expiring partial index.
        query = d.sql(
            f"SELECT id FROM jobs WHERE expires_at <= ? AND state IN ({states}) "
            f"ORDER BY expires_at LIMIT ?{d.skip_locked}"
        )
        with self._ops_tx() as ex:
            now = d.clock(ex)
            ids = [str(r[0]) for r in ex.execute(query, (now, params.limit)).fetchall()]
            for where, args in d.in_list("id", ids):
                ex.execute(
                    d.sql(
                        "UPDATE jobs SET state = 'expired', reason = ?, finished_at = ?, "
                        f"waiting_on = 0 WHERE {where} AND state IN ({states})"
                    ),
                    [EXPIRED_REASON, now, *args],
                )
            # Dependants move in the same commit, as behind a dead parent.
            if settle_ended(d, ex, dict.fromkeys(ids, WAS_EXPIRED)):
                self._ops_wake(ex)
        return len(ids)

    def job_clear_results(self, params: JobClearResultsParams) -> int:
        """A task's result_ttl: drop the results of its succeeded jobs that finished in
        the window (reads the jobs_finished index); the rows stay."""
        d = self._dialect
        after = "" if params.finished_after is None else "finished_at >= ? AND "
        query = d.sql(
            f"SELECT id FROM jobs WHERE state = 'succeeded' AND {after}finished_at < ? "
            f"AND task = ? AND result IS NOT NULL LIMIT ?{d.skip_locked}"
        )
        bounds = [params.finished_before, params.task, params.limit]
        if params.finished_after is not None:
            bounds.insert(0, params.finished_after)
        cleared = 0
        with self._ops_tx() as ex:
            ids = [str(r[0]) for r in ex.execute(query, bounds).fetchall()]
            for where, args in d.in_list("id", ids):
                sql = d.sql(f"UPDATE jobs SET result = NULL WHERE {where}")
                cleared += ex.execute(sql, args).rowcount
        return cleared

    def queue_pause(self, params: QueuePauseParams) -> None:
        self._set_paused(params.queue, True)

    def queue_resume(self, params: QueueResumeParams) -> None:
        self._set_paused(params.queue, False)

    def _set_paused(self, queue: str, paused: bool) -> None:
        d = self._dialect
        with self._ops_tx() as ex:
            args = {"queue": queue, "paused": int(paused), "now": d.clock(ex)}
            ex.execute(d.queries["queue_pause"], args)  # an upsert: the store's own
            if not paused:
                self._ops_wake(ex)  # idle workers claim from it at once
