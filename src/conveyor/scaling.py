"""The autoscaling signal: how much work each queue has against the capacity of the
live workers that consume it, for KEDA, an HPA or a plain script to size a worker pool.

Per queue:

- ``ready``: jobs that could run now (``queued``; a paused queue's count as 0: no
  worker could take them), ``running``: jobs running now;
- ``demand``: ``ready + running``, the slots the queue could use at once;
- ``workers`` and ``capacity``: the live workers (heartbeat within ``heartbeat_ttl``)
  that consume the queue, and the sum of their concurrency;
- ``load``: ``demand / capacity`` (``None`` when no live worker consumes the queue: the
  ratio is unbounded, so a scaler should read ``demand``, which is always a number);
- ``oldest_ready_age``: seconds the oldest ready job has waited.

Sizing a pool from it: ``workers = ceil(demand / concurrency per worker)`` (KEDA's
``AverageValue`` target does exactly this); ``load > 1`` means jobs wait for a slot.
Jobs due later (``scheduled``) and jobs waiting on workflow parents are not demand yet.

Example:
    >>> import conveyor
    >>> app = conveyor.App("memory://scaling-doctest")
    >>> @app.task(queue="mail")
    ... def send(to: str) -> None: ...
    >>> ids = [send.enqueue(f"u{i}@example.com") for i in range(3)]
    >>> [(q.queue, q.ready, q.demand, q.capacity, q.load) for q in queue_load(app)]
    [('mail', 3, 3, 0, None)]
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conveyor.backends.records import QueueInfo, WorkerInfo
from conveyor.states import JobState

if TYPE_CHECKING:
    from conveyor.app import App


@dataclass(frozen=True)
class QueueLoad:
    """One queue's demand against the capacity of the live workers consuming it."""

    queue: str
    paused: bool
    ready: int
    running: int
    workers: int
    capacity: int
    oldest_ready_age: float | None

    @property
    def demand(self) -> int:
        """Slots the queue could use at once: ready jobs plus running ones."""
        return self.ready + self.running

    @property
    def load(self) -> float | None:
        """``demand / capacity``; None when no live worker consumes the queue."""
        return self.demand / self.capacity if self.capacity else None

    def as_json(self) -> dict[str, Any]:
        """The queue's entry in the JSON document (``/load`` and ``queues --json``)."""
        return {
            "queue": self.queue,
            "paused": self.paused,
            "ready": self.ready,
            "running": self.running,
            "demand": self.demand,
            "workers": self.workers,
            "capacity": self.capacity,
            "load": None if self.load is None else round(self.load, 4),
            "oldest_ready_age": self.oldest_ready_age,
        }


@dataclass(frozen=True)
class Signal:
    """Every queue's load, and the live workers in all (a worker consuming two queues
    counts once here, in each queue's entry there)."""

    queues: list[QueueLoad]
    workers: int
    capacity: int
    at: float

    def as_json(self) -> dict[str, Any]:
        """The JSON document served at the metrics server's ``/load``: the entries by
        queue name (for KEDA's ``valueLocation``, e.g. ``queues.mail.demand``) and the
        totals.

        >>> s = Signal([QueueLoad("mail", False, 3, 1, 1, 2, 4.0)], workers=1, capacity=2, at=0.0)
        >>> doc = s.as_json()
        >>> doc["queues"]["mail"]["demand"], doc["queues"]["mail"]["load"], doc["total"]
        (4, 2.0, {'ready': 3, 'running': 1, 'demand': 4, 'workers': 1, 'capacity': 2})
        """
        return {
            "at": self.at,
            "queues": {q.queue: q.as_json() for q in self.queues},
            "total": {
                "ready": sum(q.ready for q in self.queues),
                "running": sum(q.running for q in self.queues),
                "demand": sum(q.demand for q in self.queues),
                "workers": self.workers,
                "capacity": self.capacity,
            },
        }


def queue_load(app: App, now: float | None = None) -> list[QueueLoad]:
    """The load of every queue with jobs or a pause flag, by name."""
    return scaling_signal(app, now).queues


def scaling_signal(app: App, now: float | None = None) -> Signal:
    """The signal from two reads of the store (``queue_list`` and ``worker_list``)."""
    now = time.time() if now is None else now
    backend = app.backend
    return signal_of(backend.queue_list(), backend.worker_list(), now, app.settings.heartbeat_ttl)


def signal_of(queues: list[QueueInfo], workers: list[WorkerInfo], now: float, ttl: float) -> Signal:
    """The signal from what the two reads returned (the metrics refresher makes them
    itself, for its depth gauges too)."""
    live = live_workers(workers, now, ttl)
    return Signal(
        loads_of(queues, live),
        workers=len(live),
        capacity=sum(max(w.concurrency, 0) for w in live),
        at=now,
    )


def live_workers(workers: list[WorkerInfo], now: float, ttl: float) -> list[WorkerInfo]:
    """The workers whose heartbeat is within ``ttl`` seconds of ``now`` (a crashed
    worker's row stays until it is rescued: it is no capacity).

    >>> w = WorkerInfo("w1", "h", 1, None, 0.0, ("default",), 4, "thread", heartbeat_at=95.0)
    >>> [x.id for x in live_workers([w], now=100.0, ttl=30.0)], live_workers([w], 200.0, 30.0)
    (['w1'], [])
    """
    return [w for w in workers if now - w.heartbeat_at <= ttl]


def loads_of(queues: list[QueueInfo], live: list[WorkerInfo]) -> list[QueueLoad]:
    """Each queue's load from its counts and the live workers' queues and concurrency.

    >>> q = QueueInfo("default", False, {"queued": 6, "running": 2}, 1.5)
    >>> w = WorkerInfo("w1", "h", 1, None, 0.0, ("default",), 4, "thread", heartbeat_at=1.0)
    >>> [(x.demand, x.capacity, x.load) for x in loads_of([q], [w, w])]
    [(8, 8, 1.0)]
    """
    result = []
    for q in queues:
        consumers = [w for w in live if q.queue in w.queues]
        result.append(
            QueueLoad(
                queue=q.queue,
                paused=q.paused,
                ready=0 if q.paused else q.counts.get(str(JobState.QUEUED), 0),
                running=q.counts.get(str(JobState.RUNNING), 0),
                workers=len(consumers),
                capacity=sum(max(w.concurrency, 0) for w in consumers),
                oldest_ready_age=None if q.paused else q.oldest_ready_age,
            )
        )
    return result
