"""The parameters of the backend methods: one frozen record per method.

Internal like the rest of the seam (:mod:`conveyor.backends.protocols`). A write that
takes a job out of ``running`` carries the claim ``token`` it is fenced by.

Example:
    >>> JobInsertParams(id="j1", task="t", queue="q", payload="{}").is_plain
    True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from conveyor.backends.ops_params import (
    IMPORTABLE,
    MAX_HISTOGRAM_BUCKETS,
    OPERATOR_COUNT_CAP,
    OPERATOR_EXACT_UP_TO,
    TRUNCATED_LOGGER,
    TRUNCATED_MESSAGE,
    ArgSlot,
    IntegrityCheckParams,
    JobCancelParams,
    JobClearResultsParams,
    JobCountParams,
    JobDurationsParams,
    JobExpireDueParams,
    JobFilter,
    JobFinishedHistogramParams,
    JobImport,
    JobImportParams,
    JobListParams,
    JobLogInsertParams,
    JobLogListParams,
    JobPurgeParams,
    JobRetryParams,
    QueuePauseParams,
    QueueResumeParams,
    QueueStatsParams,
    WhereCondition,
    check_histogram,
    check_importable,
)
from conveyor.backends.records import WorkerInfo
from conveyor.records import record
from conveyor.states import FinishKind

#: the hot path's and flow's records (here) and the operations' (ops_params.py)
__all__ = [
    "IMPORTABLE",
    "MAX_ACTION_IDS",
    "MAX_HISTOGRAM_BUCKETS",
    "OPERATOR_COUNT_CAP",
    "OPERATOR_EXACT_UP_TO",
    "TRUNCATED_LOGGER",
    "TRUNCATED_MESSAGE",
    "ActionLogInsertParams",
    "ActionLogListParams",
    "ArgSlot",
    "IntegrityCheckParams",
    "JobCancelParams",
    "JobClaimParams",
    "JobClearResultsParams",
    "JobCountParams",
    "JobDependenciesParams",
    "JobDurationsParams",
    "JobExpireDueParams",
    "JobExtendLeasesParams",
    "JobFilter",
    "JobFinishParams",
    "JobFinishThroughParams",
    "JobFinishedHistogramParams",
    "JobImport",
    "JobImportParams",
    "JobInsertBatchParams",
    "JobInsertParams",
    "JobInsertThroughParams",
    "JobListParams",
    "JobLogInsertParams",
    "JobLogListParams",
    "JobProgressParams",
    "JobPurgeParams",
    "JobReleaseParams",
    "JobRescueParams",
    "JobRetryParams",
    "JobWaitParams",
    "LimitSpec",
    "PeriodicFireParams",
    "PeriodicPauseParams",
    "PeriodicResumeParams",
    "PeriodicRunParams",
    "QueuePauseParams",
    "QueueResumeParams",
    "QueueStatsParams",
    "WhereCondition",
    "WorkerHeartbeatParams",
    "action_log_entry",
    "check_histogram",
    "check_importable",
    "one_per_job",
]


@record
class JobClaimParams:
    """Claim up to ``limit`` jobs from each queue in order, then top up to ``total`` from
    the same queues in the same order. Due scheduled jobs are promoted first."""

    worker_id: str
    queues: Sequence[tuple[str, int]]
    total: int


@record
class JobExtendLeasesParams:
    worker_id: str
    jobs: Sequence[tuple[str, int]]  # (id, token) of every job the worker still runs


@record
class JobFinishParams:
    """End one attempt. ``kind`` picks the target state; the write is fenced by token."""

    id: str
    token: int
    kind: FinishKind
    worker_id: str | None = None
    attempt: int = 0
    result: str | None = None  # JSON, for SUCCEEDED
    error: str | None = None  # JSON {"type","message","traceback"}
    reason: str | None = None
    run_at: float | None = None  # for RETRY
    started_at: float | None = None
    finished_at: float | None = None


@record
class LimitSpec:
    """A limit a job counts against while it runs: at most ``concurrency`` running jobs
    with this ``key``, and at most ``rate_count`` starts per ``rate_period`` seconds."""

    key: str
    concurrency: int | None = None
    rate_count: int | None = None
    rate_period: float | None = None


@record
class JobInsertParams:
    """One job to write. The fields after ``lease`` are flow control (unique keys,
    workflows, limits): a backend takes its plain path only while ``is_plain``."""

    id: str
    task: str
    queue: str
    payload: str
    priority: int = 0
    run_at: float | None = None  # None: ready now; in the future: scheduled
    max_attempts: int = 5
    timeout: float | None = None
    lease: float = 30.0
    #: at most one job per (task, unique_key) while active, and until unique_until after
    unique_key: str | None = None
    unique_until: float | None = None
    #: "keep": the existing job stands; "replace": its payload and run_at are replaced
    #: (only while it is not running)
    on_conflict: str = "keep"
    #: with "replace" (a debounce): the replaced run_at is at most the holder's
    #: created_at + max_wait (seconds), so a stream of enqueues cannot delay it forever
    max_wait: float | None = None
    #: parent ids (earlier params of the same batch may be named); waits until all succeed
    depends_on: tuple[str, ...] = ()
    #: 0: parent results not passed; 1: the one parent's result is the first argument;
    #: 2: the list of the parents' results (in depends_on order) is the first argument;
    #: 3: an on_failure handler of its one parent: ready when the parent ends dead /
    #: cancelled (with {"job_id","state","reason","error"} first), cancelled if it succeeds
    #: 4 / 5: the next job of a sequence (rules.PIPE_SEQUENCE / _SKIP), with sequence_key
    pipe: int = 0
    limit: LimitSpec | None = None
    #: the sequence it joins: it waits on the job enqueued before it with this key (the
    #: store keeps each key's last job), ``pipe`` saying what that job's failure does
    sequence_key: str | None = None
    #: fair queues: ready jobs of a queue are served round-robin across these keys (a
    #: job ready now is placed by rules.fair_place); its key's weight (2: twice the turns)
    fair_key: str | None = None
    fair_weight: float = 1.0
    #: the job's headers as stored: a JSON object of strings (conveyor/headers.py), None
    #: for none. Not a flow field: a plain job may carry headers.
    headers: str | None = None
    #: epoch seconds after which the job is no longer started: it ends ``expired``
    #: (None: never). Not a flow field.
    expires_at: float | None = None

    @property
    def is_plain(self) -> bool:
        return (
            self.unique_key is None
            and not self.depends_on
            and self.limit is None
            and self.sequence_key is None
            and self.fair_key is None
        )


@record
class JobInsertBatchParams:
    """Many plain jobs of one task sharing every option (``enqueue_many``'s fast path):
    job ``ids[i]`` gets ``payloads[i]``. Same meaning as that many plain
    :class:`JobInsertParams`, without building one object per job."""

    task: str
    queue: str
    ids: Sequence[str]
    payloads: Sequence[str]
    priority: int = 0
    run_at: float | None = None  # None: ready now; in the future: scheduled
    max_attempts: int = 5
    timeout: float | None = None
    lease: float = 30.0
    #: job ``ids[i]`` gets ``headers[i]`` (JSON text as in JobInsertParams.headers, or
    #: None); ``None`` here: no job of the batch has headers. Per job, not shared:
    #: middlewares add per-job values (a trace context per job).
    headers: Sequence[str | None] | None = None
    #: shared by the batch, as in JobInsertParams.expires_at
    expires_at: float | None = None


def insert_by_kind(
    params: Sequence[JobInsertParams] | JobInsertBatchParams,
    batch: Callable[[JobInsertBatchParams], object],
    flow: Callable[[Sequence[JobInsertParams]], Sequence[str]],
    plain: Callable[[Sequence[JobInsertParams]], Sequence[str]],
) -> Sequence[str]:
    """``job_insert_many`` for a store with one path per kind of insert: plain jobs that
    share their options (``batch``), any with a unique key, parents or a limit (``flow``),
    plain jobs each with its own (``plain``); the ids inserted.

    >>> plain = lambda jobs: [p.id for p in jobs]
    >>> insert_by_kind([JobInsertParams("a", "t", "q", "{}")], print, print, plain)
    ['a']
    >>> insert_by_kind(JobInsertBatchParams("t", "q", ["b"], ["{}"]), id, print, plain)
    ['b']
    """
    if isinstance(params, JobInsertBatchParams):
        batch(params)
        return params.ids
    if not params:
        return []
    if not all(p.is_plain for p in params):
        return flow(params)
    return plain(params)


def one_per_job(jobs: Sequence[JobInsertParams] | JobInsertBatchParams) -> list[JobInsertParams]:
    """An insert as one :class:`JobInsertParams` per job (a batch's shared options copied
    to each), for a store that writes job by job (the memory store, the testing modes).

    >>> batch = JobInsertBatchParams("t", "q", ["a", "b"], ["{}", "[]"], headers=[None, "{}"])
    >>> [(p.id, p.payload, p.headers) for p in one_per_job(batch)]
    [('a', '{}', None), ('b', '[]', '{}')]
    """
    if not isinstance(jobs, JobInsertBatchParams):
        return list(jobs)
    return [
        JobInsertParams(
            id=job_id,
            task=jobs.task,
            queue=jobs.queue,
            payload=payload,
            priority=jobs.priority,
            run_at=jobs.run_at,
            max_attempts=jobs.max_attempts,
            timeout=jobs.timeout,
            lease=jobs.lease,
            headers=None if jobs.headers is None else jobs.headers[n],
            expires_at=jobs.expires_at,
        )
        for n, (job_id, payload) in enumerate(zip(jobs.ids, jobs.payloads, strict=True))
    ]


@record
class JobInsertThroughParams:
    """Jobs to write through the caller's own database connection, inside its open
    transaction (feature ``transactional_enqueue``, ``conveyor.transaction(conn)``).

    ``connection`` is the driver's connection (``sqlite3.Connection``, a psycopg
    ``Connection`` or ``AsyncConnection``), already unwrapped from an ORM by
    :mod:`conveyor.transaction_adapters`; ``jobs`` is what ``job_insert_many`` takes.
    The backend neither begins nor commits: the caller's commit makes the jobs visible
    (and wakes workers), the caller's rollback leaves none."""

    connection: object
    jobs: Sequence[JobInsertParams] | JobInsertBatchParams


@record
class JobFinishThroughParams:
    """Finishes to apply through a connection of the backend's own
    (``transaction_connection``) inside the transaction a task's writes are in (feature
    ``transactional_completion``, ``current_job().transaction()``): fenced by token as
    every finish, committed by the caller with those writes."""

    connection: object
    finishes: Sequence[JobFinishParams]


@record
class JobDependenciesParams:
    ids: Sequence[str]


@record
class JobProgressParams:
    """Progress of a running job, fenced by its claim token (a stale worker's is ignored)."""

    id: str
    token: int
    fraction: float | None
    message: str | None


@record
class PeriodicFireParams:
    """Fire ``slots`` of schedule ``name``: each (slot, job) is enqueued only if no worker
    fired that slot before (exactly once per slot). ``next_slot`` is for status only."""

    name: str
    spec: str
    slots: Sequence[tuple[float, JobInsertParams]]
    next_slot: float | None
    #: (the ``run_requested_at`` the caller read, the job): enqueued once if that
    #: "run now" request is still pending, whether or not the schedule is paused
    run: tuple[float, JobInsertParams] | None = None


@record
class PeriodicPauseParams:
    """Pause schedule ``name`` (stored): every worker skips its slots until it is
    resumed, and does not catch them up after (they are recorded as skipped)."""

    name: str


@record
class PeriodicResumeParams:
    name: str


@record
class PeriodicRunParams:
    """Ask for one run of schedule ``name`` now: the next worker's scheduler tick
    enqueues its job once (a paused schedule too), without moving its slots."""

    name: str


@record
class JobReleaseParams:
    """Give running jobs back to ``queued`` without counting an attempt (shutdown)."""

    worker_id: str
    jobs: Sequence[tuple[str, int]]  # (id, token)


@record
class JobRescueParams:
    """Rescue running jobs whose worker is gone.

    ``dead_worker_ids``: workers the caller proved dead (same host, PID gone).
    ``stale_before``: also every worker whose heartbeat is older than this (re-checked
    inside the backend's transaction or script, so a live claim is never requeued).
    Running jobs whose lease expired before ``stale_before`` are rescued too.
    """

    dead_worker_ids: Sequence[str]
    stale_before: float
    max_rescues: int = 3


#: The most job ids one action-log entry keeps (``count`` says how many were acted on).
MAX_ACTION_IDS = 100


@record
class ActionLogInsertParams:
    """Record one operator action (feature ``action_log``); the caller fills every
    field, the store only keeps it. ``job_ids`` is cut to :data:`MAX_ACTION_IDS` by
    the caller (:func:`action_log_entry`)."""

    at: float
    actor: str
    source: str  # "cli" or "dashboard"
    action: str
    count: int = 0
    job_ids: Sequence[str] = ()
    detail: str = ""
    host: str = ""


def action_log_entry(
    actor: str,
    source: str,
    action: str,
    *,
    count: int = 0,
    job_ids: Sequence[str] = (),
    detail: str = "",
    host: str = "",
    at: float | None = None,
) -> ActionLogInsertParams:
    """An entry for ``action`` now, its ids cut to :data:`MAX_ACTION_IDS`.

    >>> e = action_log_entry("ada", "cli", "retry", count=150, job_ids=[str(i) for i in range(150)])
    >>> len(e.job_ids), e.count
    (100, 150)
    """
    return ActionLogInsertParams(
        at=time.time() if at is None else at,
        actor=actor,
        source=source,
        action=action,
        count=count,
        job_ids=tuple(job_ids[:MAX_ACTION_IDS]),
        detail=detail,
        host=host,
    )


@record
class ActionLogListParams:
    """Entries newest first; ``before_id``: only those older than that entry (the last
    id of the previous page). An id the store cannot have made gives no entries."""

    limit: int = 100
    before_id: str | None = None


@record
class JobWaitParams:
    id: str
    timeout: float | None


@record
class WorkerHeartbeatParams:
    worker: WorkerInfo
    last_fetch_at: float | None = None
    running: int = 0
