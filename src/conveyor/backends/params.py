"""The parameters of the backend methods: one frozen record per method.

Internal like the rest of the seam (:mod:`conveyor.backends.protocols`). A write that
takes a job out of ``running`` carries the claim ``token`` it is fenced by.

Example:
    >>> JobInsertParams(id="j1", task="t", queue="q", payload="{}").is_plain
    True
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from conveyor.backends.records import AttemptRecord, JobFlow, JobLogRecord, JobRecord, WorkerInfo
from conveyor.records import record
from conveyor.states import FINISHED_STATES, FinishKind, JobState


@record
class JobCancelParams:
    ids: Sequence[str]
    reason: str = "cancelled by user"


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
    #: parent ids (earlier params of the same batch may be named); waits until all succeed
    depends_on: tuple[str, ...] = ()
    #: 0: parent results not passed; 1: the one parent's result is the first argument;
    #: 2: the list of the parents' results (in depends_on order) is the first argument;
    #: 3: an on_failure handler of its one parent: ready when the parent ends dead /
    #: cancelled (with {"job_id","state","reason","error"} first), cancelled if it succeeds
    pipe: int = 0
    limit: LimitSpec | None = None
    #: the job's headers as stored: a JSON object of strings (conveyor/headers.py), None
    #: for none. Not a flow field: a plain job may carry headers.
    headers: str | None = None
    #: epoch seconds after which the job is no longer started: it ends ``expired``
    #: (None: never). Not a flow field.
    expires_at: float | None = None

    @property
    def is_plain(self) -> bool:
        return self.unique_key is None and not self.depends_on and self.limit is None


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


@record
class ArgSlot:
    """Where jobs of ``tasks`` hold an argument when it was passed the other way: ``root``
    ``args`` with ``key`` its position, or ``kwargs`` with ``key`` its parameter name
    (from the tasks' signatures: :func:`conveyor.query.bind_filter`)."""

    tasks: tuple[str, ...]
    root: str
    key: str | int


@record
class WhereCondition:
    """``<root>.<path> = value`` on a job's JSON: root is ``args``, ``kwargs`` or
    ``result``; ``path`` holds object keys (identifiers) and list indexes (ints).
    Build it with :func:`conveyor.query.parse_where`, which validates the path.

    ``bound``: the same argument's other slot for the tasks whose signature is known
    (``kwargs.user_id`` is ``args.0`` of ``send_welcome(user_id)``); a job of one of
    those tasks matches when either slot does, so a filter by parameter name matches
    however the argument was passed. Empty: the path as written, nothing else."""

    root: str
    path: tuple[str | int, ...]
    value: object  # a decoded JSON value (str, int, float, bool, None, list, dict)
    bound: tuple[ArgSlot, ...] = ()

    def slot_conditions(self) -> list[tuple[tuple[str, ...], WhereCondition]]:
        """Each bound slot as (its tasks, the condition on that slot)."""
        return [
            (slot.tasks, WhereCondition(slot.root, (slot.key, *self.path[1:]), self.value))
            for slot in self.bound
        ]


@record
class JobFilter:
    """Which jobs an ops command acts on; every field narrows (AND). Empty = all jobs."""

    queue: str | None = None
    states: tuple[JobState, ...] = ()
    task: str | None = None
    created_after: float | None = None
    created_before: float | None = None
    finished_after: float | None = None
    finished_before: float | None = None
    where: tuple[WhereCondition, ...] = ()


@record
class JobCountParams:
    filter: JobFilter


@record
class JobListParams:
    """A page of jobs in id order. ``queue``/``state``/``task`` are shortcuts for the
    common one-field filters; ``filter`` adds the rest (both apply)."""

    queue: str | None = None
    state: JobState | None = None
    task: str | None = None
    after_id: str | None = None  # paging: ids strictly greater (strictly less if descending)
    limit: int = 100
    filter: JobFilter | None = None
    #: newest first (descending id, which is creation order); ``after_id`` pages downwards
    descending: bool = False


#: The record stored in place of the first record past a job's log bound
#: (``JobLogInsertParams.max_per_job``), the same on every backend.
TRUNCATED_MESSAGE = "log truncated: this job reached its limit of {limit} records"
TRUNCATED_LOGGER = "conveyor.logs"


@record
class JobLogInsertParams:
    """Store captured log records. At most ``max_per_job`` records are kept per job; the
    first record past it is replaced by one truncation marker, the rest are skipped."""

    records: Sequence[JobLogRecord]
    max_per_job: int = 1000


@record
class JobImport:
    """One job copied whole from another store: its row, attempt history and logs."""

    job: JobRecord
    attempts: Sequence[AttemptRecord] = ()
    logs: Sequence[JobLogRecord] = ()
    #: its workflow fields (``job_flow_many``): parents, pipe, unique window; a
    #: ``waiting`` job is importable only with parents
    flow: JobFlow | None = None


#: States a job may be imported in: the work still to do and finished history (a running
#: claim belongs to a worker of the other store); ``waiting`` only with its parents.
IMPORTABLE = frozenset(
    {JobState.QUEUED, JobState.SCHEDULED, JobState.WAITING, *FINISHED_STATES}
)  # fmt: skip


def check_importable(item: JobImport) -> None:
    """Raise ConveyorError for a job no store may import (checked before any write).

    >>> from conveyor import records
    >>> job = JobRecord("j", "t", "q", JobState.RUNNING, 0, "{}", 1, 1, 0, 1, 0.0, 0.0,
    ...                 None, 30.0, "w", 9.0, False, None, None, None, 0.0, None)
    >>> check_importable(JobImport(job))
    Traceback (most recent call last):
    conveyor.errors.ConveyorError: cannot import job j in state running
    >>> check_importable(JobImport(records.replace(job, state=JobState.WAITING)))
    Traceback (most recent call last):
    conveyor.errors.ConveyorError: cannot import job j in state waiting without its parents
    """
    from conveyor.errors import ConveyorError

    j = item.job
    if j.state not in IMPORTABLE:
        raise ConveyorError(f"cannot import job {j.id} in state {j.state}")
    if j.state is JobState.WAITING and not (item.flow and item.flow.parents):
        raise ConveyorError(f"cannot import job {j.id} in state waiting without its parents")


@record
class JobImportParams:
    """Jobs to insert under their own ids (``conveyor migrate``). Only queued, scheduled
    and finished jobs: a running claim belongs to a worker of the other store."""

    jobs: Sequence[JobImport]


@record
class JobLogListParams:
    job_id: str
    limit: int = 10_000


@record
class JobPurgeParams:
    """Delete finished jobs (with their attempts and logs) finished before a time."""

    finished_before: float
    states: tuple[JobState, ...] = (
        JobState.SUCCEEDED,
        JobState.DEAD,
        JobState.CANCELLED,
        JobState.EXPIRED,
    )
    limit: int = 1000  # per call, so one purge never holds the write lock for long


@record
class JobExpireDueParams:
    """End up to ``limit`` jobs nobody started before their ``expires_at`` (states
    :data:`conveyor.rules.EXPIRE_UNCLAIMED`) as ``expired``, their dependants settled as
    behind a dead parent (the sweep; the claim-time rule is the worker's)."""

    limit: int = 1000  # per call, as for job_purge


@record
class JobClearResultsParams:
    """Drop the stored results of one task's succeeded jobs that finished in
    ``[finished_after, finished_before)`` (a task's ``result_ttl``). The jobs stay,
    ``succeeded`` with no result, until the retention purges them."""

    task: str
    finished_before: float
    #: None: from the oldest (the pruner passes where its previous pass ended)
    finished_after: float | None = None
    limit: int = 1000  # per call, as for job_purge


@record
class IntegrityCheckParams:
    heartbeat_ttl: float  # a worker silent for longer than this is not live


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


@record
class JobRetryParams:
    """Manual retry of finished jobs: dead/cancelled (or succeeded) -> queued."""

    ids: Sequence[str]


@record
class QueuePauseParams:
    """Pause a queue: persisted; claims skip it until it is resumed."""

    queue: str


@record
class QueueResumeParams:
    queue: str


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


#: Bound on ``job_finished_histogram``'s buckets (a week by the minute): one call stays small.
MAX_HISTOGRAM_BUCKETS = 10_080


@record
class JobFinishedHistogramParams:
    """Count jobs finished at or after ``since`` in buckets of ``bucket_s`` seconds:
    bucket ``n`` holds ``since + n * bucket_s <= finished_at < since + (n + 1) * bucket_s``.
    At most :data:`MAX_HISTOGRAM_BUCKETS` buckets up to now (a ValueError beyond)."""

    since: float
    bucket_s: int = 60


def check_histogram(params: JobFinishedHistogramParams, now: float) -> None:
    """Refuse a histogram request no backend should answer (shared by the backends).

    >>> check_histogram(JobFinishedHistogramParams(since=0.0, bucket_s=60), now=3600.0)
    >>> check_histogram(JobFinishedHistogramParams(since=0.0, bucket_s=0), now=1.0)
    Traceback (most recent call last):
    ValueError: bucket_s must be a positive number of seconds, not 0
    """
    if params.bucket_s <= 0:
        raise ValueError(f"bucket_s must be a positive number of seconds, not {params.bucket_s}")
    if (now - params.since) / params.bucket_s > MAX_HISTOGRAM_BUCKETS:
        raise ValueError(f"more than {MAX_HISTOGRAM_BUCKETS} buckets: raise since or bucket_s")
