"""The backend protocols: the one seam between conveyor and its storage engines.

Internal API, not stable: users talk to :class:`conveyor.App`; backends talk to this.
Shaped after River's ``riverdriver``: batch-first, ``noun_verb`` names, one frozen params
record per method (:mod:`~conveyor.backends.params`), rows handed back as records
(:mod:`~conveyor.backends.records`), methods alphabetical within each concern:

* :class:`HotPath` -- what every worker calls per batch: insert, claim, finish, release,
  extend, heartbeat, rescue, wait for work.
* :class:`Flow` -- flow control beyond the insert (unique keys, workflows and limits
  travel in :class:`~conveyor.backends.params.JobInsertParams`): dependencies, progress,
  periodic slots.
* :class:`Operations` -- handles, listing, filters, bulk actions, import, backup, stats.
* :class:`Durable` -- durable jobs: step records, events, the wait deadlines (feature
  ``steps``; params and records in :mod:`~conveyor.backends.durable_params`).

A :class:`Backend` is all four. What it implements beyond the core is one declared
``features`` set (:data:`FEATURES` names them); callers read it, never ``getattr``.

Decisions above, storage below: where a job goes next is :mod:`conveyor.rules`; a backend
applies it with statements fenced by the claim ``token`` (applied only while the job is
``running`` under that token; a stale worker's write is refused and reported).

Times are epoch seconds (float). A backend with its own clock (Redis ``TIME``) uses it for
leases and due times; ``now`` fields in params are the caller's best guess for logging.

Example (what a worker does, in short)::

    backend.worker_heartbeat(WorkerHeartbeatParams(worker=me))
    jobs = backend.job_claim(JobClaimParams(worker_id=me.id, queues=(("default", 8),), total=8))
    backend.job_finish_many([JobFinishParams(id=j.id, token=j.token, kind=FinishKind.SUCCEEDED,
                                             result="42", started_at=j.claimed_at)])
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from conveyor.backends.durable_protocol import (
    Durable as Durable,  # re-exported: Backend composes it
)
from conveyor.backends.flow_protocol import Flow as Flow  # re-exported: Backend composes it
from conveyor.backends.ops_params import JobKeysParams
from conveyor.backends.params import (
    ActionLogInsertParams,
    ActionLogListParams,
    IntegrityCheckParams,
    JobCancelParams,
    JobClaimParams,
    JobClearResultsParams,
    JobCountParams,
    JobDurationsParams,
    JobExpireDueParams,
    JobExtendLeasesParams,
    JobFinishedHistogramParams,
    JobFinishParams,
    JobFinishThroughParams,
    JobImportParams,
    JobInsertBatchParams,
    JobInsertParams,
    JobInsertThroughParams,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobPurgeParams,
    JobReleaseParams,
    JobRescueParams,
    JobRetryParams,
    JobWaitParams,
    QueuePauseParams,
    QueueResumeParams,
    QueueStatsParams,
    WorkerHeartbeatParams,
)
from conveyor.backends.records import (
    ActionLogRecord,
    AttemptRecord,
    ClaimedJob,
    DurationSample,
    FinishedBucket,
    IntegrityProblem,
    JobFlow,
    JobLogRecord,
    JobRecord,
    LeaseStatus,
    QueueInfo,
    QueueStats,
    RescueResult,
    WorkerInfo,
)
from conveyor.backends.search_params import JobSearchPage, JobSearchParams

#: The most operator actions a store that bounds its log (Redis, memory) keeps.
ACTION_LOG_CAP = 10_000

#: Every feature name a backend may declare, and what it promises.
FEATURES: dict[str, str] = {
    # -- flow control --
    "snooze": "finish kind SNOOZE (conveyor.Snooze)",
    "progress": "job_progress_many (job.progress)",
    "unique": "unique keys in job_insert_many",
    "workflows": "depends_on / pipe in job_insert_many, job_dependencies_many",
    "limits": "concurrency and rate limits in job_insert_many and the claim, limit_list, "
    "limit_override (changed while running)",
    #: pause, resume and "run now" are stored and obeyed inside periodic_fire, so every
    #: worker honours them (``conveyor schedules``, the dashboard's /schedules)
    "periodic": "periodic_fire, periodic_list, periodic_pause, periodic_resume, "
    "periodic_run_request",
    "sequences": "sequence_key in job_insert_many, sequence_release_many, sequence_prune",
    "fair": "fair_key / fair_weight in job_insert_many (round-robin across keys)",
    "aging": "job_age_many (priority aging of a queue's waiting jobs)",
    # -- operations --
    "filters": "JobFilter in job_list / job_count (and the bulk actions built on them)",
    "purge": "job_purge",
    #: an index led by task: the dashboard's sort by task is a walk of its values, each
    #: value's jobs newest first (web/sorting.py)
    "list_keys": "job_keys (distinct tasks in order, from an index)",
    "result_ttl": "job_clear_results (a task's result_ttl)",
    "expires": "expires_at stored and claimed (with_options(expires=)), job_expire_due",
    "queues": "queue_pause, queue_resume, queue_list",
    "logs": "job_log_insert_many, job_log_list",
    "integrity": "integrity_check",
    "backup": "backup (an online copy of the whole store)",
    #: who did what from the dashboard and the CLI (``conveyor audit``); not the
    #: integrity check, which is "integrity"
    "action_log": "action_log_insert, action_log_list (the operator actions log)",
    #: one search language (conveyor.search_query): an index where the store has one
    #: (SQLite: FTS5), else a bounded scan that says so (JobSearchPage.complete)
    "search": "job_search (conveyor jobs --search, app.search)",
    #: a text index filled after the fact (SQLite: FTS5; PostgreSQL: a trigram-indexed
    #: table): the workers run its indexer (worker/services/search_indexer.py)
    "search_index": "search_index_set, search_index_enabled, search_index_catch_up",
    #: durable jobs (@app.step, conveyor.sleep, conveyor.wait_for, job.send)
    "steps": "job_step_list, job_step_save, job_step_save_many, job_event_send, "
    "job_event_wait, job_wake_due, job_join_mark, job_event_list",
    #: concurrent jobs' checkpoints pay to be written in one commit (a store with one
    #: writer at a time, or one round trip for many): the worker groups them
    #: (worker/checkpointer.py). A server that merges concurrent commits' flushes itself
    #: (PostgreSQL, MariaDB) is faster with each job's checkpoint its own commit.
    "step_groups": "job_step_save_many",
    "sql": "the store answers SQL over the jobs (the raw connection is usable)",
    #: every store but the in-process memory store: workers in other processes, the CLI
    #: and a shell (rows written around the API) reach the same jobs
    "shared": "other processes and connections reach the store (the CLI, a shell)",
    # -- hot path --
    #: a one-slot worker should run jobs in its fetcher and write each finish with its
    #: next claim (job_finish_and_claim): where that saves work (SQLite: one commit
    #: instead of two). Without it the completer writes acks, which overlaps the store's
    #: work with the next job (Redis, where merging the two saves nothing).
    "ack_with_claim": "prefer job_finish_and_claim for a one-slot worker",
    #: conveyor.transaction(conn): jobs written through the caller's connection, in its
    #: transaction; visible (and a worker woken) at its commit, gone at its rollback.
    "transactional_enqueue": "job_insert_many_through (and its async twin)",
    #: current_job().transaction(): a task's writes and its success in one commit.
    "transactional_completion": "transaction_connection, job_finish_many_through",
}


class HotPath(Protocol):
    """What every worker calls per batch, and the insert every enqueue calls."""

    #: short engine name ("sqlite", "redis")
    name: str
    #: the URL it was opened with, password removed
    url: str
    #: what it implements beyond the core, from :data:`FEATURES`
    features: frozenset[str]

    def close(self) -> None: ...

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        """Claim up to each queue's limit, then top up to ``total``; due scheduled jobs
        are promoted first. Paused queues are skipped (checked inside the claim, so every
        worker obeys the next time it claims)."""
        ...

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]: ...

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        """``job_finish_many`` then ``job_claim`` in one transaction / round trip (the ack
        of one batch rides with the next claim); returns (refused ids, claimed jobs)."""
        ...

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        """Apply each finish (target state: :data:`conveyor.rules.FINISH`) fenced by its
        token; return the ids that were refused. Dependants move in the same step."""
        ...

    def job_finish_many_through(self, params: JobFinishThroughParams) -> list[str]:
        """``job_finish_many`` through ``params.connection`` (one of
        :meth:`transaction_connection`'s), in its open transaction, no commit (feature
        ``transactional_completion``); returns the refused ids. Wake-ups go with the
        caller's commit."""
        ...

    def job_insert_many(
        self, params: Sequence[JobInsertParams] | JobInsertBatchParams
    ) -> Sequence[str]:
        """Write jobs, all or nothing, in one transaction (or one script); returns the id
        that stands for each job, in order (an existing job's on a unique conflict).

        A :class:`JobInsertBatchParams` is the fast path for plain jobs sharing their
        options. Unique conflicts are settled atomically with the insert; a job whose
        parent already ended is inserted as :func:`conveyor.rules.insert_decision` says.
        Callers check :func:`require_feature` for the flow fields first."""
        ...

    def job_insert_many_through(self, params: JobInsertThroughParams) -> Sequence[str]:
        """``job_insert_many`` through ``params.connection`` (feature
        ``transactional_enqueue``): inside the caller's open transaction, no BEGIN or
        COMMIT of the backend's own; atomic as a whole (a savepoint), so a failure leaves
        the caller's transaction as it was. Wake-ups are delivered at the caller's commit
        only. A backend without the feature raises ConfigurationError."""
        ...

    async def job_insert_many_through_async(self, params: JobInsertThroughParams) -> Sequence[str]:
        """The same through an asyncio driver connection (psycopg ``AsyncConnection``)."""
        ...

    def job_promote_due(self) -> int: ...

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        """Running -> queued, attempt not counted; returns refused ids."""
        ...

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]:
        """Running jobs of lost workers -> :func:`conveyor.rules.rescue_state`; liveness
        is re-checked inside the store's atomic step, so a live claim is never requeued."""
        ...

    def transaction_connection(self) -> AbstractContextManager[object]:
        """A new driver connection to the store for a task's own writes
        (``current_job().transaction()``), closed when the block ends; the caller
        commits or rolls back. The caller's default ``search_path`` on PostgreSQL."""
        ...

    def work_wait(self, timeout: float) -> None:
        """Block until new work may be ready (an insert, a release, a due time) or timeout.
        Spurious wake-ups are allowed; missing a wake-up only costs ``timeout``."""
        ...

    def worker_deregister(self, worker_id: str) -> None: ...

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None: ...


class Operations(Protocol):
    """Handles, listing, bulk actions, import, backup, audit and statistics."""

    def action_log_insert(self, params: ActionLogInsertParams) -> str:
        """Keep one operator action (feature ``action_log``); returns its id. Redis and
        the memory store keep the newest :data:`ACTION_LOG_CAP` entries; SQL stores all."""
        ...

    def action_log_list(self, params: ActionLogListParams) -> list[ActionLogRecord]:
        """Operator actions newest first, at most ``params.limit``, older than
        ``params.before_id`` when given."""
        ...

    def backup(self, path: str) -> None:
        """An online, consistent copy of the store into ``path`` (feature ``backup``)."""
        ...

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        """Impossible states, claims without a live worker, orphaned rows. Read-only."""
        ...

    def job_attempts(self, job_id: str) -> list[AttemptRecord]: ...

    def job_cancel_many(self, params: JobCancelParams) -> list[JobRecord]:
        """Queued/scheduled/waiting -> cancelled at once; running -> cancel requested (the
        worker ends it). Returns the rows after the change; unknown ids are skipped."""
        ...

    def job_count(self, params: JobCountParams) -> int: ...

    def job_delete_many(self, ids: Sequence[str]) -> int: ...

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        """Jobs finished since ``params.since`` counted per time bucket, queue and state
        (the dashboard's throughput history). Read-only; empty buckets are left out."""
        ...

    def job_durations(self, params: JobDurationsParams) -> list[DurationSample]:
        """Wait and run times of the jobs that ran and finished since ``params.since``,
        newest finish first, at most ``params.limit`` (conveyor/durations.py)."""
        ...

    def job_flow_many(self, ids: Sequence[str]) -> list[JobFlow]:
        """Workflow fields of each job found (parents in order, pipe, unique window),
        for ``conveyor migrate``; unknown ids are skipped."""
        ...

    def job_get_many(self, ids: Sequence[str]) -> list[JobRecord]: ...

    def job_import_many(self, params: JobImportParams) -> list[str]:
        """Insert whole jobs (state, attempts, errors, history and logs kept) in one
        transaction or script; ids already present are skipped, which makes a rerun of
        ``conveyor migrate`` idempotent. A job's ``flow`` (parents, pipe) is written with
        it: its workflow edges, and the dependant's place among a parent's children.
        Returns the ids inserted."""
        ...

    def job_keys(self, params: JobKeysParams) -> list[str]:
        """The distinct values of the task column in order (feature
        ``list_keys``): each one index step, so a sort by that column pages by keyset
        (one ``job_list`` per value) instead of sorting rows."""
        ...

    def job_list(self, params: JobListParams) -> list[JobRecord]: ...

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        """Store records (bounded per job); returns how many were stored, marker excluded."""
        ...

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        """Records of one job in the order they were stored."""
        ...

    def job_purge(self, params: JobPurgeParams) -> int:
        """Delete up to ``limit`` matching finished jobs; returns how many went."""
        ...

    def job_clear_results(self, params: JobClearResultsParams) -> int:
        """Set the result of up to ``limit`` matching succeeded jobs to NULL (absent);
        returns how many had one. Nothing else of the job changes."""
        ...

    def job_expire_due(self, params: JobExpireDueParams) -> int:
        """``queued``/``scheduled``/``waiting`` jobs whose ``expires_at`` passed (store
        clock) -> ``expired`` with reason :data:`conveyor.rules.EXPIRED_REASON`, their
        dependants settled (``WAS_EXPIRED``); returns how many, at most ``limit``."""
        ...

    def job_retry_many(self, params: JobRetryParams) -> list[JobRecord]: ...

    def job_search(self, params: JobSearchParams) -> JobSearchPage:
        """One page of the jobs matching a parsed search, newest first (feature
        ``search``): from the store's text index, or a scan bounded by ``max_scan``."""
        ...

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        """Block until the job is finished; ``None`` on timeout. Raises JobNotFound."""
        ...

    def queue_list(self, params: QueueStatsParams | None = None) -> list[QueueInfo]:
        """Every queue that has jobs or a pause flag, by name, with its pause flag
        (counts as ``queue_stats``' with the same params)."""
        ...

    def queue_pause(self, params: QueuePauseParams) -> None: ...

    def queue_resume(self, params: QueueResumeParams) -> None: ...

    def queue_stats(self, params: QueueStatsParams | None = None) -> list[QueueStats]:
        """Counts of every queue that has jobs (cheap: the dashboard samples it); exact
        unless ``params.cap`` lets a store stop counting (:class:`QueueStatsParams`)."""
        ...

    def worker_list(self) -> list[WorkerInfo]: ...


class Backend(HotPath, Flow, Operations, Durable, Protocol):
    """What every storage engine implements. Internal; see the module docstring."""


def require_feature(backend: HotPath, feature: str) -> None:
    """Raise ConfigurationError when ``backend`` does not declare ``feature``.

    >>> class Bare:
    ...     name, features = "bare", frozenset()
    >>> require_feature(Bare(), "unique")  # type: ignore[arg-type]
    Traceback (most recent call last):
    conveyor.errors.ConfigurationError: the bare backend does not support unique yet
    """
    if feature not in backend.features:
        from conveyor.errors import ConfigurationError

        raise ConfigurationError(f"the {backend.name} backend does not support {feature} yet")


def require_transactional(backend: HotPath | type[HotPath]) -> None:
    """Raise ConfigurationError (one line) unless ``backend`` can write jobs through the
    caller's connection (feature ``transactional_enqueue``).

    >>> class Broker:
    ...     name, features = "redis", frozenset()
    >>> require_transactional(Broker())  # type: ignore[arg-type]
    Traceback (most recent call last):
    conveyor.errors.ConfigurationError: conveyor.transaction() needs a SQL store (sqlite:// or postgresql://): the redis backend cannot join a database transaction
    """
    if "transactional_enqueue" not in backend.features:
        from conveyor.errors import ConfigurationError

        raise ConfigurationError(
            "conveyor.transaction() needs a SQL store (sqlite:// or postgresql://): "
            f"the {backend.name} backend cannot join a database transaction"
        )


def flow_features_of(params: Sequence[JobInsertParams]) -> list[str]:
    """The features a batch of jobs needs (for :func:`require_feature`).

    >>> flow_features_of([JobInsertParams(id="j", task="t", queue="q", payload="{}",
    ...                                   unique_key="k")])
    ['unique']
    """
    needed: list[str] = []
    for p in params:
        if p.unique_key is not None and "unique" not in needed:
            needed.append("unique")
        if p.depends_on and "workflows" not in needed:
            needed.append("workflows")
        if p.limit is not None and "limits" not in needed:
            needed.append("limits")
        if p.sequence_key is not None and "sequences" not in needed:
            needed.append("sequences")
        if p.fair_key is not None and "fair" not in needed:
            needed.append("fair")
    return needed
