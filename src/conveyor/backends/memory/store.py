"""The memory store's data: every table as Python objects behind one lock.

One :class:`MemoryStore` per name (``memory://NAME``) in a process, shared by every
backend object opened on that URL (an app and its worker, an app reopened after
``close``); ``memory://`` alone is a fresh private store. A write holds ``lock``; it
bumps ``generation`` and wakes ``changed`` when it is done, which is how ``work_wait``
and ``job_wait`` hear of work (the stores' notifications, in one process).

Rows are mutable :class:`Row` objects (a job's columns, as the SQL stores' ``jobs`` table
has them); readers hand out frozen :class:`~conveyor.backends.records.JobRecord` copies.
Nothing here decides where a job goes: that is :mod:`conveyor.rules`, applied by
``flow.py`` and the backend.

Example:
    >>> store = store_for("docs-example")
    >>> store is store_for("docs-example"), store is store_for("")
    (True, False)
    >>> forget("docs-example")
"""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager

from conveyor.backends.durable_params import StepRecord
from conveyor.backends.protocols import ACTION_LOG_CAP
from conveyor.backends.records import (
    ActionLogRecord,
    AttemptRecord,
    ClaimedJob,
    JobLogRecord,
    JobRecord,
    WorkerInfo,
)
from conveyor.states import JobState


@dataclasses.dataclass(slots=True)
class Row:
    """One job, mutable, with the columns the other stores keep beyond its record."""

    id: str
    task: str
    queue: str
    state: JobState
    priority: int
    payload: str
    max_attempts: int
    run_at: float
    created_at: float
    timeout: float | None
    lease: float
    attempt: int = 0
    rescues: int = 0
    token: int = 0
    worker_id: str | None = None
    lease_until: float | None = None
    cancel_requested: bool = False
    result: str | None = None
    error: str | None = None
    reason: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    progress: float | None = None
    progress_message: str | None = None
    unique_key: str | None = None
    unique_until: float | None = None
    waiting_on: int = 0
    pipe: int = 0
    limit_key: str | None = None
    headers: str | None = None
    expires_at: float | None = None

    def record(self) -> JobRecord:
        """A frozen copy, as the other stores read a row."""
        return JobRecord(
            self.id,
            self.task,
            self.queue,
            self.state,
            self.priority,
            self.payload,
            self.attempt,
            self.max_attempts,
            self.rescues,
            self.token,
            self.run_at,
            self.created_at,
            self.timeout,
            self.lease,
            self.worker_id,
            self.lease_until,
            self.cancel_requested,
            self.result,
            self.error,
            self.reason,
            self.started_at,
            self.finished_at,
            self.progress,
            self.progress_message,
            self.unique_key,
            self.waiting_on,
            self.headers,
            self.expires_at,
        )

    def claimed(self) -> ClaimedJob:
        """What a claim hands the worker (after the claim's own changes)."""
        return ClaimedJob(
            self.id,
            self.task,
            self.queue,
            self.payload,
            self.attempt,
            self.max_attempts,
            self.token,
            self.timeout,
            self.lease,
            self.run_at,
            self.started_at or 0.0,
            self.rescues,
            self.priority,
            self.headers,
            self.expires_at,
        )


@dataclasses.dataclass(slots=True)
class Worker:
    info: WorkerInfo
    heartbeat_at: float
    last_fetch_at: float | None
    running: int


@dataclasses.dataclass(slots=True)
class Schedule:
    spec: str
    next_slot: float | None
    last_slot: float | None = None
    last_fired_at: float | None = None
    last_job_id: str | None = None
    paused: bool = False  # conveyor schedules pause: periodic_fire skips its slots
    run_requested_at: float | None = None  # a pending "run now"


class MemoryStore:
    """Every table of one store (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        #: bumped by every write: a waiter that saw generation g waits for g + 1
        self.generation = 0
        #: by id, in insertion order (the order a SQL store's rowid gives)
        self.jobs: dict[str, Row] = {}
        #: job id -> (token -> attempt): one attempt per claim token, as the SQL key
        self.attempts: dict[str, dict[int, AttemptRecord]] = {}
        self.logs: dict[str, list[JobLogRecord]] = {}
        #: workflow edges: child -> parents in order, parent -> children
        self.parents: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self.workers: dict[str, Worker] = {}
        #: queue name -> paused flag (a resumed queue keeps its entry, as the SQL row)
        self.queues: dict[str, bool] = {}
        #: limit key -> (concurrency, rate_count, rate_period); key -> recent starts
        self.limits: dict[str, tuple[int | None, int | None, float | None]] = {}
        self.limit_hits: dict[str, list[float]] = {}
        #: sequence key -> the last job enqueued with it (its next job waits on it)
        self.sequences: dict[str, str] = {}
        #: (queue, fair key) -> the key's last place in the queue's round (a run_at)
        self.fair: dict[tuple[str, str], float] = {}
        #: limit key -> an operator's (concurrency, rate_count, rate_period), over the code's
        self.limit_overrides: dict[str, tuple[int | None, int | None, float | None]] = {}
        self.schedules: dict[str, Schedule] = {}
        #: (schedule name, slot) -> job id: each slot fired once
        self.slots: dict[tuple[str, float], str] = {}
        #: operator actions, oldest first, the newest ACTION_LOG_CAP kept (as on Redis);
        #: ``action_seq`` numbers them (ids never reused, as a SQL identity)
        self.actions: deque[ActionLogRecord] = deque(maxlen=ACTION_LOG_CAP)
        self.action_seq = 0
        #: durable jobs: job id -> position -> step; job id -> events [name, payload,
        #: consumed] oldest first
        self.steps: dict[str, dict[int, StepRecord]] = {}
        self.events: dict[str, list[list[object]]] = {}

    def forget_steps(self, job_id: str) -> None:
        """Drop a deleted job's step records and events."""
        self.steps.pop(job_id, None)
        self.events.pop(job_id, None)

    @contextmanager
    def write(self) -> Iterator[MemoryStore]:
        """Hold the lock for one atomic change, then wake the waiters."""
        with self.lock:
            try:
                yield self
            finally:
                self.generation += 1
                self.changed.notify_all()

    def wait(self, generation: int, timeout: float) -> None:
        """Return once a write after ``generation`` is done, or after ``timeout``."""
        with self.lock:
            if self.generation == generation and timeout > 0:
                self.changed.wait(timeout)


_STORES: dict[str, MemoryStore] = {}
_STORES_LOCK = threading.Lock()


def store_for(name: str) -> MemoryStore:
    """The store called ``name`` in this process (made on first use); ``""``: a new
    private store each time."""
    if not name:
        return MemoryStore()
    with _STORES_LOCK:
        found = _STORES.get(name)
        if found is None:
            found = _STORES[name] = MemoryStore()
        return found


def forget(name: str) -> None:
    """Drop the store called ``name`` (its jobs are gone; a later open starts empty)."""
    with _STORES_LOCK:
        _STORES.pop(name, None)
