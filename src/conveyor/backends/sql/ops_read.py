"""Reads of the operations on any SQL store: jobs by id and by filter, attempts,
workflow fields, queues and their statistics, workers, the throughput history and the
integrity audit. Each is one or two statements through the store's ``_ops_rows``.

Example (any SQL store)::

    backend.job_count(JobCountParams(JobFilter(states=(JobState.DEAD,))))
    [(q.queue, q.paused) for q in backend.queue_list()]     # [('mail', True)]
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from conveyor.backends import decoding
from conveyor.backends.base import (
    AttemptRecord,
    DurationSample,
    FinishedBucket,
    IntegrityCheckParams,
    IntegrityProblem,
    JobCountParams,
    JobDurationsParams,
    JobFinishedHistogramParams,
    JobFlow,
    JobKeysParams,
    JobListParams,
    JobRecord,
    QueueInfo,
    QueueStats,
    QueueStatsParams,
    WorkerInfo,
    check_histogram,
)
from conveyor.backends.records import queue_list_of
from conveyor.backends.sql import counts_capped
from conveyor.backends.sql.filters import FEW, few_probe_sql, filter_sql, job_list_sql
from conveyor.backends.sql.store import SqlStore
from conveyor.states import RAN_STATES, JobState

#: Column order of JobRecord: the columns are named as its fields.
JOB_COLUMNS = ", ".join(decoding.JOB_NAMES)
ATTEMPT_COLUMNS = "job_id, attempt, token, worker_id, started_at, finished_at, outcome, error"
WORKER_COLUMNS = (
    "id, host, pid, pid_started, started_at, queues, concurrency, pool, heartbeat_at, "
    "last_fetch_at, running"
)


class SqlReads(SqlStore):
    """The reading half of the Operations protocol, on any SQL store."""

    def job_get_many(self, ids: Sequence[str]) -> list[JobRecord]:
        d = self._dialect
        found: dict[str, JobRecord] = {}
        for where, args in d.in_list("id", ids):
            sql = d.sql(f"SELECT {JOB_COLUMNS} FROM jobs WHERE {where}")
            found.update((r.id, r) for r in map(decoding.job_record, self._ops_rows(sql, args)))
        return [found[i] for i in ids if i in found]

    def job_list(self, params: JobListParams) -> list[JobRecord]:
        few = None
        if params.state not in (None, JobState.RUNNING):
            # one probe of the state's own index (at most FEW + 1 entries): a state few
            # jobs have is then read from that index, not found by walking every job
            assert params.state is not None
            probe = self._ops_rows(few_probe_sql(params.state))
            few = params.state if int(str(probe[0][0])) <= FEW else None
        sql, args = job_list_sql(self._dialect, params, JOB_COLUMNS, few=few)
        return [decoding.job_record(r) for r in self._ops_rows(sql, args)]

    def job_keys(self, params: JobKeysParams) -> list[str]:
        # One MIN/MAX a value: an index led by the column (jobs_task) makes each an
        # index step (a loose index scan), whatever the number of jobs.
        column = {"task": "task"}[params.column]
        pick, past = ("MAX", "<") if params.descending else ("MIN", ">")
        first = self._dialect.sql(f"SELECT {pick}({column}) FROM jobs")
        step = self._dialect.sql(f"SELECT {pick}({column}) FROM jobs WHERE {column} {past} ?")
        found: list[str] = []
        after = params.after
        while len(found) < params.limit:
            rows = self._ops_rows(first) if after is None else self._ops_rows(step, (after,))
            if not rows or rows[0][0] is None:
                break
            after = str(rows[0][0])
            found.append(after)
        return found

    def job_count(self, params: JobCountParams) -> int:
        where, args = filter_sql(self._dialect, params.filter)
        if params.limit is None:
            sql = f"SELECT COUNT(*) FROM jobs WHERE {where}"
        else:  # stops reading at the limit (the rows' indexes as for job_list)
            sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE {where} LIMIT {int(params.limit)}) AS t"
        return int(str(self._ops_rows(sql, args)[0][0]))

    def job_attempts(self, job_id: str) -> list[AttemptRecord]:
        sql = f"SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE job_id = ? ORDER BY token"
        return [AttemptRecord(*r) for r in self._ops_rows(self._dialect.sql(sql), (job_id,))]

    def job_flow_many(self, ids: Sequence[str]) -> list[JobFlow]:
        d = self._dialect
        parents: dict[str, list[str]] = {}
        fields: list[tuple[object, ...]] = []
        for where, args in d.in_list("child_id", ids):
            edges = d.sql(
                f"SELECT child_id, parent_id FROM job_deps WHERE {where} "
                "ORDER BY child_id, position"
            )
            for child, parent in self._ops_rows(edges, args):
                parents.setdefault(str(child), []).append(str(parent))
        for where, args in d.in_list("id", ids):
            sql = d.sql(f"SELECT id, pipe, unique_until FROM jobs WHERE {where}")
            fields += self._ops_rows(sql, args)
        found = {
            str(i): JobFlow(
                str(i), int(str(pipe)), tuple(parents.get(str(i), ())),
                decoding.number_or_none(until),
            )
            for i, pipe, until in fields
        }  # fmt: skip
        return [found[i] for i in ids if i in found]

    def queue_stats(self, params: QueueStatsParams | None = None) -> list[QueueStats]:
        found, capped = (
            self._queue_stats_rows(None)
            if params is None
            else self._queue_stats_rows(params.cap, params.exact_up_to)
        )
        now = self._ops_now()
        counts: dict[str, dict[str, int]] = {}
        oldest: dict[str, float] = {}
        for queue, state, count, run_at in found:
            counts.setdefault(str(queue), {})[str(state)] = int(str(count))
            # a row written around the API (text, NaN, inf): no age (inf is no JSON)
            if str(state) == "queued" and (at := decoding.finite_or_none(run_at)) is not None:
                oldest[str(queue)] = now - at
        return [
            QueueStats(q, counts[q], oldest.get(q), frozenset(s for n, s in capped if n == q))
            for q in sorted(counts)
        ]

    def _queue_stats_rows(self, cap: int | None, exact_up_to: int = 0) -> counts_capped.Counted:
        """(queue, state, count, oldest run_at) rows, and the (queue, state) pairs whose
        count stopped at ``cap``: one scan of jobs by the store's statement, or with a cap
        on a store of more jobs than it, the capped reads (counts_capped.py). SQLite reads
        its kept counts instead when they are on (counts.py)."""
        queries = self._dialect.queries
        if (
            cap is not None
            and counts_capped.has_capped_counts(queries)
            and counts_capped.over_cap(self._ops_rows, queries, max(cap, exact_up_to))
        ):
            return counts_capped.capped_rows(self._ops_rows, queries, cap)
        return self._ops_rows(queries["queue_stats"]), set()

    def queue_list(self, params: QueueStatsParams | None = None) -> list[QueueInfo]:
        flags = self._ops_rows("SELECT name, paused FROM queues")
        paused = {str(n) for n, p in flags if p}
        stats = self.queue_stats(params)
        return queue_list_of(stats, paused, flagged=[str(n) for n, _ in flags])

    def worker_list(self) -> list[WorkerInfo]:
        found = self._ops_rows(f"SELECT {WORKER_COLUMNS} FROM workers ORDER BY started_at")
        return [decoding.worker_info(r) for r in found]  # an odd row is noted, not raised

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        check_histogram(params, time.time())
        found = self._ops_rows(
            self._dialect.queries["job_finished_histogram"],
            {"since": params.since, "bucket_s": params.bucket_s},
        )
        return [
            FinishedBucket(
                params.since + int(str(b)) * params.bucket_s, str(q), JobState(str(s)), int(str(n))
            )
            for b, q, s, n in found
        ]

    def job_durations(self, params: JobDurationsParams) -> list[DurationSample]:
        # One newest-first range of jobs_finished (state, finished_at) per state, each
        # stopped at the limit, then merged: never the whole hour sorted in the store.
        d = self._dialect
        one = (
            "SELECT task, started_at - run_at, finished_at - started_at, finished_at FROM jobs "
            "WHERE state = ? AND finished_at >= ? AND started_at IS NOT NULL "
            "ORDER BY finished_at DESC LIMIT ?"
        )
        found: list[DurationSample] = []
        for state in sorted(RAN_STATES):
            rows = self._ops_rows(d.sql(one), (state.value, params.since, params.limit))
            for task, *times in rows:
                wait, run, at = (decoding.finite_or_none(v) for v in times)
                # a row written around the API (text, NaN) is left out
                if wait is not None and run is not None and at is not None:
                    found.append(DurationSample(str(task), wait, run, at))
        found.sort(key=lambda s: -s.finished_at)
        return found[: params.limit]

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        # Each store's audit reads the one it needs: a cut-off on this clock, or the TTL
        # against the server's.
        args = {
            "stale_before": self._ops_now() - params.heartbeat_ttl,
            "heartbeat_ttl": params.heartbeat_ttl,
        }
        found = self._ops_rows(self._dialect.queries["integrity_check"], args)
        problems = [
            IntegrityProblem(str(k), None if j is None else str(j), str(d)) for k, j, d in found
        ]
        return problems + self._ops_integrity_extra()
