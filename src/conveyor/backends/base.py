"""The backend protocol: the one seam between conveyor and its storage engines.

Internal API, not stable: users talk to :class:`conveyor.App`; backends talk to this.
Shaped after River's ``riverdriver``: batch-first (singular calls are wrappers over the
``_many`` ones), ``noun_verb`` names, one frozen params dataclass per method, methods in
alphabetical order, preconditions in the name. Capabilities are attributes
(``supports_sql``, ``name``), never ``isinstance`` checks.

Every write that takes a job out of ``running`` is fenced by the claim ``token``: the
backend applies it only when the job is still ``running`` under that token, and reports
the ones it refused (a stale worker) instead of overwriting the newer attempt.

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
from typing import Protocol

from conveyor.records import record
from conveyor.states import FinishKind, JobState


@record
class AttemptRecord:
    """One attempt of a job: who ran it, when, and how it ended."""

    job_id: str
    attempt: int
    token: int
    worker_id: str | None
    started_at: float | None
    finished_at: float | None
    #: succeeded, failed (retried), dead, cancelled, dropped, lost (worker died), released
    outcome: str
    error: str | None  # JSON {"type","message","traceback"} or None


@record
class ClaimedJob:
    """What a claim hands the worker: just enough to run and finish one attempt."""

    id: str
    task: str
    queue: str
    payload: str
    attempt: int  # 1-based number of this attempt (already counted by the claim)
    max_attempts: int
    token: int  # fencing token of this claim
    timeout: float | None
    lease: float
    run_at: float  # when it became due (queue wait = claimed_at - run_at)
    claimed_at: float
    rescues: int
    priority: int


@record
class JobRecord:
    """The full stored row of a job, for handles, the CLI and tests."""

    id: str
    task: str
    queue: str
    state: JobState
    priority: int
    payload: str
    attempt: int
    max_attempts: int
    rescues: int
    token: int
    run_at: float
    created_at: float
    timeout: float | None
    lease: float
    worker_id: str | None
    lease_until: float | None
    cancel_requested: bool
    result: str | None
    error: str | None
    reason: str | None
    started_at: float | None
    finished_at: float | None
    # -- flow control (schema v2); defaults keep older backends constructing records --
    progress: float | None = None
    progress_message: str | None = None
    unique_key: str | None = None
    waiting_on: int = 0  # parents not yet succeeded (state ``waiting`` while > 0)


@record
class IntegrityProblem:
    """One thing ``conveyor check`` found wrong (``kind`` is a short stable slug)."""

    kind: str
    job_id: str | None
    detail: str


@record
class JobLogRecord:
    """One log record a task emitted during one attempt of its job."""

    job_id: str
    attempt: int
    ts: float
    level: str
    logger: str
    message: str


@record
class QueueInfo:
    """A queue as operators see it: paused flag, counts by state, oldest ready age."""

    queue: str
    paused: bool
    counts: dict[str, int]
    oldest_ready_age: float | None


@record
class QueueStats:
    """Counts of one queue by state, and how long its oldest ready job has waited."""

    queue: str
    counts: dict[str, int]
    oldest_ready_age: float | None  # seconds, None when nothing is ready


@record
class WorkerInfo:
    """A worker as it describes itself in its heartbeat."""

    id: str
    host: str
    pid: int
    pid_started: float | None  # the OS start time of the pid, to survive PID reuse
    started_at: float
    queues: tuple[str, ...]
    concurrency: int
    pool: str
    heartbeat_at: float = 0.0
    last_fetch_at: float | None = None
    running: int = 0


# -- params, one per method --------------------------------------------------------------


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
class LeaseStatus:
    """Answer of a lease extension for one job."""

    id: str
    held: bool  # False: the claim was lost (rescued or released); stop caring about it
    cancel_requested: bool


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
    """One job to write. The fields after ``lease`` are flow control: a job that uses any
    of them (``is_plain`` False) goes through ``job_insert_flow_many``."""

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

    def expand(self) -> list[JobInsertParams]:
        """The same jobs as :class:`JobInsertParams` (for backends without a fast path)."""
        return [
            JobInsertParams(
                id=job_id,
                task=self.task,
                queue=self.queue,
                payload=payload,
                priority=self.priority,
                run_at=self.run_at,
                max_attempts=self.max_attempts,
                timeout=self.timeout,
                lease=self.lease,
            )
            for job_id, payload in zip(self.ids, self.payloads, strict=True)
        ]


@record
class InsertResult:
    """What ``job_insert_flow_many`` did with one job: ``id`` is the job that stands (the
    existing one on a unique conflict)."""

    id: str
    inserted: bool
    replaced: bool = False


@record
class JobDependenciesParams:
    ids: Sequence[str]


@record
class Dependency:
    child_id: str
    parent_id: str
    position: int


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
class PeriodicRecord:
    name: str
    spec: str
    last_slot: float | None
    last_fired_at: float | None
    last_job_id: str | None
    next_slot: float | None


@record
class WhereCondition:
    """``<root>.<path> = value`` on a job's JSON: root is ``args``, ``kwargs`` or
    ``result``; ``path`` holds object keys (identifiers) and list indexes (ints).
    Build it with :func:`conveyor.query.parse_where`, which validates the path."""

    root: str
    path: tuple[str | int, ...]
    value: object  # a decoded JSON value (str, int, float, bool, None, list, dict)


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
    """A page of jobs in id order. ``queue``/``state``/``task`` are kept for callers of
    the first version; ``filter`` adds the rest (both apply)."""

    queue: str | None = None
    state: JobState | None = None
    task: str | None = None
    after_id: str | None = None  # paging: ids strictly greater (strictly less if descending)
    limit: int = 100
    filter: JobFilter | None = None
    #: newest first (descending id, which is creation order); ``after_id`` pages downwards
    descending: bool = False


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
    states: tuple[JobState, ...] = (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED)
    limit: int = 1000  # per call, so one purge never holds the write lock for long


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
class RescueResult:
    job_id: str
    worker_id: str | None
    state: JobState  # queued (rescued) or dead (worker lost too often / attempts spent)


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


@record
class FinishedBucket:
    """How many jobs of one queue reached one finished state within one time bucket."""

    start: float  # the bucket's first second: ``since + n * bucket_s``
    queue: str
    state: JobState  # succeeded, dead or cancelled
    count: int


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


def require_feature(backend: object, feature: str) -> None:
    """Raise ConfigurationError when ``backend`` does not implement a flow feature.

    >>> require_feature(object(), "unique")
    Traceback (most recent call last):
    conveyor.errors.ConfigurationError: the ? backend does not support unique yet
    """
    if feature not in getattr(backend, "flow_features", frozenset()):
        from conveyor.errors import ConfigurationError

        name = getattr(backend, "name", "?")
        raise ConfigurationError(f"the {name} backend does not support {feature} yet")


class Backend(Protocol):
    """What every storage engine implements. Internal; see the module docstring."""

    #: short engine name ("sqlite", "redis")
    name: str
    #: the store answers SQL (``conveyor jobs --where`` can use json_extract)
    supports_sql: bool
    #: a one-slot worker should run jobs in its fetcher and write each finish with its next
    #: claim (``job_finish_and_claim``): True where that saves work (SQLite: one commit
    #: instead of two), False where the store does the same work either way and writing
    #: the ack from the completer overlaps it with the next job (Redis)
    ack_with_claim: bool
    #: the URL it was opened with, password removed
    url: str
    #: flow-control features implemented: "snooze", "progress", "unique", "workflows",
    #: "limits", "periodic" (the contract suite skips the others with this reason)
    flow_features: frozenset[str]

    def close(self) -> None: ...

    def integrity_check(self, params: IntegrityCheckParams) -> list[IntegrityProblem]:
        """Impossible states, claims without a live worker, orphaned rows. Read-only."""
        ...

    def job_attempts(self, job_id: str) -> list[AttemptRecord]: ...

    def job_cancel_many(self, params: JobCancelParams) -> list[JobRecord]:
        """Queued/scheduled -> cancelled at once; running -> cancel requested (the worker
        ends it). Returns the rows after the change; unknown ids are skipped."""
        ...

    def job_claim(self, params: JobClaimParams) -> list[ClaimedJob]:
        """Paused queues are skipped (checked inside the claim, so every worker obeys
        the next time it claims)."""
        ...

    def job_count(self, params: JobCountParams) -> int: ...

    def job_delete_many(self, ids: Sequence[str]) -> int: ...

    def job_dependencies_many(self, params: JobDependenciesParams) -> list[Dependency]:
        """The parents of each job in ``ids`` (workflows)."""
        ...

    def job_extend_leases(self, params: JobExtendLeasesParams) -> list[LeaseStatus]: ...

    def job_finish_many(self, params: Sequence[JobFinishParams]) -> list[str]:
        """Apply each finish fenced by its token; return the ids that were refused."""
        ...

    def job_finish_and_claim(
        self, finishes: Sequence[JobFinishParams], claim: JobClaimParams
    ) -> tuple[list[str], list[ClaimedJob]]:
        """``job_finish_many`` then ``job_claim`` in one transaction / round trip (the ack
        of one batch rides with the next claim); returns (refused ids, claimed jobs)."""
        ...

    def job_finished_histogram(self, params: JobFinishedHistogramParams) -> list[FinishedBucket]:
        """Jobs finished since ``params.since`` counted per time bucket, queue and state
        (the dashboard's throughput history). Read-only; empty buckets are left out."""
        ...

    def job_get_many(self, ids: Sequence[str]) -> list[JobRecord]: ...

    def job_insert_many(self, params: Sequence[JobInsertParams]) -> None:
        """All or nothing, in one transaction (or one script)."""
        ...

    def job_import_many(self, params: JobImportParams) -> list[str]:
        """Insert whole jobs (state, attempts, errors, history and logs kept) in one
        transaction or script; ids already present are skipped, which makes a rerun of
        ``conveyor migrate`` idempotent. Returns the ids inserted."""

    def job_insert_batch(self, params: JobInsertBatchParams) -> None:
        """``job_insert_many`` for plain jobs sharing their options: all or nothing."""
        ...

    def job_insert_flow_many(self, params: Sequence[JobInsertParams]) -> list[InsertResult]:
        """Like ``job_insert_many`` (all or nothing) for jobs with unique keys, parents or
        limits. Unique conflicts are settled atomically with the insert; a job whose
        parent already ended dead/cancelled is inserted ``cancelled``."""
        ...

    def job_list(self, params: JobListParams) -> list[JobRecord]: ...

    def job_log_insert_many(self, params: JobLogInsertParams) -> int:
        """Store records (bounded per job); returns how many were stored, marker excluded."""
        ...

    def job_log_list(self, params: JobLogListParams) -> list[JobLogRecord]:
        """Records of one job in the order they were stored."""

    def job_progress_many(self, params: Sequence[JobProgressParams]) -> list[str]:
        """Store progress of running jobs; returns ids refused (not running under token)."""
        ...

    def job_promote_due(self) -> int: ...

    def job_purge(self, params: JobPurgeParams) -> int:
        """Delete up to ``limit`` matching finished jobs; returns how many went."""
        ...

    def job_release_many(self, params: JobReleaseParams) -> list[str]:
        """Running -> queued, attempt not counted; returns refused ids."""
        ...

    def job_rescue(self, params: JobRescueParams) -> list[RescueResult]: ...

    def job_retry_many(self, params: JobRetryParams) -> list[JobRecord]: ...

    def job_wait(self, params: JobWaitParams) -> JobRecord | None:
        """Block until the job is finished; ``None`` on timeout. Raises JobNotFound."""
        ...

    def queue_list(self) -> list[QueueInfo]:
        """Every queue that has jobs or a pause flag, by name."""
        ...

    def queue_pause(self, params: QueuePauseParams) -> None: ...

    def queue_resume(self, params: QueueResumeParams) -> None: ...
    def periodic_fire(self, params: PeriodicFireParams) -> list[float]:
        """Enqueue the slots nobody fired yet, in one transaction; returns those fired."""
        ...

    def periodic_list(self) -> list[PeriodicRecord]: ...

    def queue_stats(self) -> list[QueueStats]: ...

    def work_wait(self, timeout: float) -> None:
        """Block until new work may be ready (an insert, a release, a due time) or timeout.
        Spurious wake-ups are allowed; missing a wake-up only costs ``timeout``."""
        ...

    def worker_deregister(self, worker_id: str) -> None: ...

    def worker_heartbeat(self, params: WorkerHeartbeatParams) -> None: ...

    def worker_list(self) -> list[WorkerInfo]: ...
