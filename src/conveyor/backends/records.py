"""What the backends hand back: rows of jobs, attempts, logs, workers and queues.

Internal like the rest of the seam (:mod:`conveyor.backends.protocols`); frozen records
(:func:`conveyor.records.record`), cheap to define. Times are epoch seconds.

Example:
    >>> LeaseStatus("j1", held=True, cancel_requested=False).held
    True
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from conveyor.records import record
from conveyor.states import JobState


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
    #: The job's headers as stored (a JSON object of strings; None: none), decoded by
    #: ``current_job().headers`` (see conveyor/headers.py).
    headers: str | None = None
    #: Epoch seconds after which it may not start (``with_options(expires=)``; None:
    #: never): the worker ends it ``expired`` without running it (rules.is_expired).
    expires_at: float | None = None
    #: Why this row cannot run, found while decoding it (a BLOB or non-UTF-8 payload, a
    #: column that is not a number); the worker finishes it dead with this reason.
    problem: str | None = None


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
    # -- flow control: progress, unique jobs, workflows --
    progress: float | None = None
    progress_message: str | None = None
    unique_key: str | None = None
    waiting_on: int = 0  # parents not yet succeeded (state ``waiting`` while > 0)
    #: headers as stored (JSON object of strings, None: none); conveyor.headers.decode
    headers: str | None = None
    #: epoch seconds after which it is no longer started (None: never); see ClaimedJob
    expires_at: float | None = None
    # -- a row written outside the API, as decoding found it --
    #: what decoding had to repair ("payload is a BLOB (12 bytes)", "unknown state ...")
    problems: tuple[str, ...] = ()
    #: the stored state when it is none of JobState (``state`` then reads ``dead``: such a
    #: row is never claimed, promoted or rescued)
    stored_state: str | None = None


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
    """A queue as operators see it: paused flag, counts by state, oldest ready age;
    ``capped`` as :attr:`QueueStats.capped`."""

    queue: str
    paused: bool
    counts: dict[str, int]
    oldest_ready_age: float | None
    capped: frozenset[str] = frozenset()


@record
class QueueStats:
    """Counts of one queue by state, and how long its oldest ready job has waited.
    ``capped``: the states whose count is a lower bound (a read with a cap stopped
    counting there; shown as "10,000+")."""

    queue: str
    counts: dict[str, int]
    oldest_ready_age: float | None  # seconds, None when nothing is ready
    capped: frozenset[str] = frozenset()


def count_text(counts: dict[str, int], capped: frozenset[str], state: str) -> str:
    """A count as the operator reads it: ``"1000+"`` where a capped read stopped there
    (a lower bound), else the number.

    >>> count_text({"queued": 1000, "dead": 3}, frozenset({"queued"}), "queued")
    '1000+'
    >>> count_text({"queued": 1000, "dead": 3}, frozenset({"queued"}), "running")
    '0'
    """
    return f"{counts.get(state, 0)}{'+' if state in capped else ''}"


def queue_list_of(
    stats: Sequence[QueueStats], paused: Collection[str], flagged: Collection[str] = ()
) -> list[QueueInfo]:
    """``queue_list`` from ``queue_stats`` and the paused queue names, the same on every
    backend: every queue with jobs or a pause flag (``flagged``: names whose flag the
    store keeps while resumed), by name.

    >>> queue_list_of([QueueStats("a", {"queued": 1}, 2.0)], {"b"})  # doctest: +NORMALIZE_WHITESPACE
    [QueueInfo(queue='a', paused=False, counts={'queued': 1}, oldest_ready_age=2.0,
               capped=frozenset()),
     QueueInfo(queue='b', paused=True, counts={}, oldest_ready_age=None, capped=frozenset())]
    """
    by_name = {s.queue: s for s in stats}
    return [
        QueueInfo(
            name,
            name in paused,
            by_name[name].counts if name in by_name else {},
            by_name[name].oldest_ready_age if name in by_name else None,
            by_name[name].capped if name in by_name else frozenset(),
        )
        for name in sorted(set(by_name) | set(paused) | set(flagged))
    ]


#: The states of a queue's backlog: every state a job has not ended in.
BACKLOG = tuple(s.value for s in JobState if not s.is_finished)


def by_backlog(stats: Sequence[QueueStats]) -> list[QueueStats]:
    """Largest backlog (waiting, scheduled, queued and running jobs) first, then by
    name: the order of the dashboard's queue tables and of ``status``' top queues.

    >>> [q.queue for q in by_backlog([QueueStats("a", {"dead": 9}, None),
    ...                               QueueStats("b", {"queued": 2}, 1.0)])]
    ['b', 'a']
    """
    return sorted(stats, key=lambda q: (-sum(q.counts.get(s, 0) for s in BACKLOG), q.queue))


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
    #: what is wrong with a stored row written around the API (a ``queues`` that is not
    #: JSON, a text ``heartbeat_at``), repaired to be shown; empty for a normal row
    problems: tuple[str, ...] = ()


# -- params, one per method --------------------------------------------------------------


@record
class LeaseStatus:
    """Answer of a lease extension for one job."""

    id: str
    held: bool  # False: the claim was lost (rescued or released); stop caring about it
    cancel_requested: bool


@record
class Dependency:
    child_id: str
    parent_id: str
    position: int


@record
class JobFlow:
    """A job's workflow fields beyond its row (``job_flow_many``): what ``conveyor
    migrate`` carries so a waiting job still waits, and is piped, on the other store."""

    id: str
    #: how parent results become arguments (JobInsertParams.pipe)
    pipe: int = 0
    #: the parents, in depends_on order
    parents: tuple[str, ...] = ()
    #: the unique key holds until then after the job finished (None: only while active)
    unique_until: float | None = None


@record
class PeriodicRecord:
    name: str
    spec: str
    last_slot: float | None
    last_fired_at: float | None
    last_job_id: str | None
    next_slot: float | None
    #: paused by an operator (``conveyor schedules pause``): workers skip its slots
    paused: bool = False
    #: when "run now" was asked and no worker has enqueued that run yet (else None)
    run_requested_at: float | None = None


@record
class LimitRecord:
    """A declared limit key (``conveyor limits``): the code's values (as the last job
    enqueued under the key declared them), an operator's override (None: none; a part
    left None keeps the code's), the values in force, and its jobs running now."""

    key: str
    concurrency: int | None
    rate_count: int | None
    rate_period: float | None
    override: LimitValues | None
    running: int

    @property
    def in_force(self) -> LimitValues:
        """(concurrency, rate_count, rate_period) the claim applies."""
        return merged_limit((self.concurrency, self.rate_count, self.rate_period), self.override)


#: (concurrency, rate_count, rate_period), each None when unset.
LimitValues = tuple[int | None, int | None, float | None]


def merged_limit(code: LimitValues, override: LimitValues | None) -> LimitValues:
    """The values in force: each part of an override wins over the code's.

    >>> merged_limit((3, 10, 1.0), (None, 5, 1.0))
    (3, 5, 1.0)
    """
    if override is None:
        return code
    return (
        code[0] if override[0] is None else override[0],
        code[1] if override[1] is None else override[1],
        code[2] if override[2] is None else override[2],
    )


@record
class RescueResult:
    job_id: str
    worker_id: str | None
    state: JobState  # queued (rescued) or dead (worker lost too often / attempts spent)


@record
class FinishedBucket:
    """How many jobs of one queue reached one finished state within one time bucket."""

    start: float  # the bucket's first second: ``since + n * bucket_s``
    queue: str
    state: JobState  # succeeded, dead or cancelled
    count: int


@record
class DurationSample:
    """One finished job's times: ``wait`` from due (``run_at``) to start, ``run`` from
    start to finish, in seconds (``job_durations``; conveyor/durations.py sums them up)."""

    task: str
    wait: float
    run: float
    finished_at: float


@record
class ActionLogRecord:
    """One operator action as the store recorded it (``conveyor audit``, ``/audit``).

    Not the integrity check of ``conveyor check``: this is who did what to the jobs."""

    #: the store's own id for the entry; ids order entries (a later one sorts after)
    id: str
    at: float  # when the action was done (the caller's clock, epoch seconds)
    actor: str  # the dashboard token's name, or the OS user who ran the CLI
    source: str  # "cli" or "dashboard"
    action: str  # retry, cancel, delete, purge, queue_pause, queue_resume, migrate, ...
    count: int  # how many jobs it changed
    job_ids: tuple[str, ...]  # the jobs it acted on (at most MAX_ACTION_IDS of them)
    detail: str  # filters, a queue, a file or a store URL (password removed)
    host: str  # where from: the client's address (dashboard) or the host name (CLI)
