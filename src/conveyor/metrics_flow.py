"""Per-key flow-control metrics of a worker (issue 24): limits and sequences.

Served with the worker's other metrics (:mod:`conveyor.metrics`), all prefixed
``conveyor_``:

- ``limit_running{limit_key}`` (gauge): jobs running now under each limit key;
- ``limit_concurrency{limit_key}`` (gauge): the concurrency in force (an operator's
  override included; keys without one are left out);
- ``limit_wait_seconds{limit_key}`` (histogram): enqueue to start of each job under a
  limit (a job held back by its key's concurrency or rate waits here, deferrals and all);
- ``sequence_wait_seconds{sequence_key}`` (histogram): enqueue to start of each job of
  a sequence (its wait behind the key's earlier jobs);
- ``sequence_held_jobs`` (gauge): jobs held behind a failed job of a blocking sequence
  (``conveyor release`` lets them go on).

Label cardinality is bounded by the code, not by the data: a key is its declared name
(a task's name, a ``limit_key`` or ``sequence_key`` string, ``queue:<name>``), and every
answer of a key *function* is folded into ``<task>:*`` (the gauges sum over them); a key
the worker's app does not declare is ``other``. So a tenant-per-key limit is one series
per task, whatever the number of tenants.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:", queue_concurrency={"reports": 2})
    >>> @app.task(name="call_api", concurrency=2, limit_key=lambda account: account)
    ... def call_api(account: str) -> None: ...
    >>> labels = FlowLabels(app)
    >>> labels.limit_label("call_api:acme"), labels.limit_label("queue:reports")
    ('call_api:*', 'queue:reports')
    >>> labels.start_limit("call_api", "default")
    'call_api:*'
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import JobListParams
from conveyor.rules import is_sequence_blocked
from conveyor.states import JobState

if TYPE_CHECKING:
    from conveyor.app import App

#: Waiting jobs read per refresh to count held ones (one page: the gauge saturates there).
HELD_PAGE = 1000
#: Buckets in seconds: waits behind a key are longer than queue waits.
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)


class FlowLabels:
    """Bounded labels for the keys of an app's tasks (see the module docstring)."""

    def __init__(self, app: App) -> None:
        self.app = app

    def _tasks(self) -> list[Any]:
        return list(self.app.tasks.values())

    def limit_label(self, key: str) -> str:
        """The label of a stored limit key."""
        caps = self.app.settings.queue_concurrency or {}
        if key.startswith("queue:") and key[6:] in caps:
            return key
        for task in self._tasks():
            o = task.options
            if o.concurrency is None and o.rate is None:
                continue
            if o.limit_key is None and key == task.name:
                return key
            if isinstance(o.limit_key, str) and key == o.limit_key:
                return key
            if callable(o.limit_key) and key.startswith(f"{task.name}:"):
                return f"{task.name}:*"
        return "other"

    def start_limit(self, task_name: str, queue: str) -> str | None:
        """The label of the limit a job of ``task_name`` counts against (None: none),
        from the task's options alone (a function key's answer is not needed)."""
        task = self.app.tasks.get(task_name)
        if task is None:
            return None
        o = task.options
        if o.concurrency is not None or o.rate is not None:
            if o.limit_key is None:
                return task_name
            return f"{task_name}:*" if callable(o.limit_key) else str(o.limit_key)
        caps = self.app.settings.queue_concurrency or {}
        return f"queue:{queue}" if queue in caps else None

    def start_sequence(self, task_name: str) -> str | None:
        """The label of the sequence a job of ``task_name`` is in (None: none)."""
        task = self.app.tasks.get(task_name)
        key = None if task is None else task.options.sequence_key
        if key is None:
            return None
        return f"{task_name}:*" if callable(key) else str(key)

    def has_sequences(self) -> bool:
        return any(t.options.sequence_key is not None for t in self._tasks())


class FlowMetrics:
    """The per-key metrics, declared on a worker's registry; fed by ``on_start`` and by
    ``refresh`` (one ``limit_list`` and, where the app has sequences, one page of
    waiting jobs)."""

    def __init__(self, pc: Any, registry: Any, app: App) -> None:
        self.app = app
        self.labels = FlowLabels(app)
        self.running = pc.Gauge(
            "conveyor_limit_running",
            "Jobs running now under each limit key.",
            ["limit_key"],
            registry=registry,
        )
        self.concurrency = pc.Gauge(
            "conveyor_limit_concurrency",
            "Concurrency in force for each limit key (override included).",
            ["limit_key"],
            registry=registry,
        )
        self.limit_wait = pc.Histogram(
            "conveyor_limit_wait_seconds",
            "Enqueue to start of jobs under a limit key.",
            ["limit_key"],
            buckets=WAIT_BUCKETS,
            registry=registry,
        )
        self.sequence_wait = pc.Histogram(
            "conveyor_sequence_wait_seconds",
            "Enqueue to start of jobs of a sequence.",
            ["sequence_key"],
            buckets=WAIT_BUCKETS,
            registry=registry,
        )
        self.held = pc.Gauge(
            "conveyor_sequence_held_jobs",
            "Jobs held behind a failed job of a blocking sequence (first page of waiting).",
            registry=registry,
        )

    def on_start(self, task: str, queue: str, waited: float) -> None:
        limit = self.labels.start_limit(task, queue)
        if limit is not None:
            self.limit_wait.labels(limit).observe(waited)
        sequence = self.labels.start_sequence(task)
        if sequence is not None:
            self.sequence_wait.labels(sequence).observe(waited)

    def refresh(self) -> None:
        backend = self.app.backend
        if "limits" in backend.features:
            running: dict[str, int] = defaultdict(int)
            concurrency: dict[str, int] = defaultdict(int)
            for record in backend.limit_list():
                label = self.labels.limit_label(record.key)
                running[label] += record.running
                cap = record.in_force[0]
                if cap is not None:
                    concurrency[label] = max(concurrency[label], cap)
            for label, n in running.items():
                self.running.labels(label).set(n)
            for label, n in concurrency.items():
                self.concurrency.labels(label).set(n)
        if "sequences" in backend.features and self.labels.has_sequences():
            page = backend.job_list(JobListParams(state=JobState.WAITING, limit=HELD_PAGE))
            self.held.set(sum(1 for r in page if is_sequence_blocked(r.reason)))
