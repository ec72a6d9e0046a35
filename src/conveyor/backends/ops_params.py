"""The parameters of the operations methods (``Operations``): filters, listing, import,
logs, purge, bulk actions, queues and the throughput histogram.

One frozen record per method, as for the hot path (params.py, which re-exports these:
``from conveyor.backends.params import JobFilter`` keeps working).

Example:
    >>> JobListParams(queue="mail", limit=10).limit
    10
    >>> JobFilter(queue="mail").queue
    'mail'
"""

from __future__ import annotations

from collections.abc import Sequence

from conveyor.backends.durable_params import JobEventSendParams, StepRecord, parked_event
from conveyor.backends.records import AttemptRecord, JobFlow, JobLogRecord, JobRecord
from conveyor.records import record
from conveyor.states import FINISHED_STATES, JobState


@record
class JobCancelParams:
    ids: Sequence[str]
    reason: str = "cancelled by user"


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
    """How many jobs match ``filter``; with ``limit``, counting stops there (the answer
    is then at most ``limit``: a bulk confirmation's "1000+" reads ``limit`` + 1)."""

    filter: JobFilter
    limit: int | None = None


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


#: The columns ``job_keys`` walks: each has an index led by it on every SQL store
#: (``jobs_task``: SQLite 12, PostgreSQL 8, MariaDB 6), so the next value is one step.
KEY_COLUMNS = ("task",)


@record
class JobKeysParams:
    """The distinct values of ``column`` (one of :data:`KEY_COLUMNS`) that jobs have,
    in order (descending: the other way), strictly after ``after``; at most ``limit``.
    The dashboard's sort by task walks them, one ``job_list`` per value."""

    column: str
    after: str | None = None
    descending: bool = False
    limit: int = 20


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
    """One job copied whole from another store: its row, attempt history, logs and
    durable steps."""

    job: JobRecord
    attempts: Sequence[AttemptRecord] = ()
    logs: Sequence[JobLogRecord] = ()
    #: its workflow fields (``job_flow_many``): parents, pipe, unique window; a
    #: ``waiting`` job is importable only with parents
    flow: JobFlow | None = None
    #: its durable steps (``job_step_list``), written where the store keeps them
    steps: Sequence[StepRecord] = ()
    #: events sent to it and not consumed yet (``job_event_list``), oldest first
    events: Sequence[JobEventSendParams] = ()


#: States a job may be imported in: the work still to do and finished history (a running
#: claim belongs to a worker of the other store); ``waiting`` only with its parents or
#: parked by a ``conveyor.wait_for`` (its ``waiting`` step says for which event).
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
    conveyor.errors.ConveyorError: cannot import job j in state waiting without its parents or the wait_for step that parked it
    """
    from conveyor.errors import ConveyorError

    j = item.job
    if j.state not in IMPORTABLE:
        raise ConveyorError(f"cannot import job {j.id} in state {j.state}")
    parked = parked_event(item.steps) is not None
    if j.state is JobState.WAITING and not (item.flow and item.flow.parents) and not parked:
        raise ConveyorError(
            f"cannot import job {j.id} in state waiting without its parents or the "
            "wait_for step that parked it"
        )


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


#: The cap the operator's reads (``conveyor status``, ``conveyor queues``, the
#: dashboard) pass to ``queue_stats``: a count past it reads as "1,000+". Not 10,000:
#: that cost 0.4 s on SQLite at a million jobs (its partial indexes do not cover the
#: state column, so each entry read is a row lookup; BENCHMARKS.md).
OPERATOR_COUNT_CAP = 1_000
#: The operator's reads count every job exactly on a store of at most this many jobs
#: (a scan of 50,000 is ~45 ms on SQLite): "1,000+" only where counting would be slow.
OPERATOR_EXACT_UP_TO = 50_000


@record
class QueueStatsParams:
    """``cap``: None counts every job (exact; metrics and the autoscaling signal read
    this); a number lets a SQL store without kept counts stop counting a (queue, state)
    past ``cap`` jobs and name it in :attr:`QueueStats.capped` (a lower bound). Stores
    that keep their counts (Redis, memory, SQLite with ``queue-counts on``) are exact
    either way. ``exact_up_to``: a store of at most this many jobs (or ``cap``, if
    larger) is counted exactly whatever ``cap`` says (the operator's reads pass
    :data:`OPERATOR_EXACT_UP_TO`: small stores never read "1,000+")."""

    cap: int | None = None
    exact_up_to: int = 0


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


@record
class JobDurationsParams:
    """The jobs that ran and finished at or after ``since`` (succeeded, dead, cancelled
    with a start), newest finish first, at most ``limit`` of them (a busy hour is
    sampled by its latest jobs: one call stays small)."""

    since: float
    limit: int = 10_000
