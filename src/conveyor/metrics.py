"""Prometheus metrics of a worker: ``conveyor worker APP --metrics-port 9108``.

Needs the ``metrics`` extra (``pip install 'conveyor[metrics]'``); ``prometheus_client``
is imported only when a :class:`WorkerMetrics` is built, never by ``import conveyor``.
Each worker serves its own registry (no global state), fed by a middleware on the
worker's app (the public hooks of ``conveyor/middleware.py``: cheap counter/histogram
updates inline, in the worker process) and by a small refresher that reads
``queue_stats`` every ``refresh`` seconds for the gauges. ``jobs_enqueued_total`` counts
in ``on_enqueue``, just before the write (a write that then fails was counted).

Names (all prefixed ``conveyor_``), as Prometheus names them: counters end in
``_total`` -- ``jobs_enqueued_total`` (by this process), ``jobs_started_total``,
``jobs_succeeded_total``, ``jobs_failed_total`` (an attempt raised),
``jobs_retried_total``, ``jobs_dead_total``, ``jobs_cancelled_total``,
``jobs_expired_total``, ``jobs_rescued_total``, ``log_dropped_total``; histograms
``job_queue_wait_seconds`` and ``job_run_seconds``; gauges ``queue_depth{queue,state}``
(work waiting to run: :data:`DEPTH_STATES`, never finished jobs), ``queue_running{queue}``,
``queue_oldest_ready_age_seconds{queue}``, ``log_backlog``.
Labels: ``queue`` and (on counters of finished jobs) ``task``.

Example::

    metrics = WorkerMetrics(worker)
    metrics.serve(9108)          # logs and returns http://127.0.0.1:9108/metrics
    worker.run()
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from conveyor.middleware import Attempt, Middleware, NewJob, RescuedJob
from conveyor.states import FinishKind, JobState
from conveyor.worker.console import EVENT_FIELDS
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.context import JobContext
    from conveyor.worker.worker import Worker

#: The states ``conveyor_queue_depth`` counts: jobs waiting to run (ready, due later,
#: waiting on workflow parents). Running jobs are ``conveyor_queue_running``; finished
#: ones are history, not depth (they would only grow until pruned).
DEPTH_STATES = (JobState.QUEUED, JobState.SCHEDULED, JobState.WAITING)

#: Buckets in seconds: from sub-millisecond jobs to hour-long waits.
BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)

_FINISH_COUNTER = {
    FinishKind.SUCCEEDED.value: "succeeded",
    FinishKind.RETRY.value: "retried",
    FinishKind.DEAD.value: "dead",
    FinishKind.CANCELLED.value: "cancelled",
    FinishKind.EXPIRED.value: "expired",
}
_FAILED = (FinishKind.RETRY.value, FinishKind.DEAD.value)


def _prometheus() -> Any:
    try:
        return importlib.import_module("prometheus_client")
    except ImportError:
        from conveyor.errors import ConfigurationError

        raise ConfigurationError(
            "metrics need the extra: pip install 'conveyor[metrics]'"
        ) from None


class WorkerMetrics(Middleware):
    """A registry of one worker's metrics, the middleware feeding it (added to the
    worker's app as an instance: its hooks all run in the worker process), and a
    refresher."""

    def __init__(self, worker: Worker, refresh: float = 2.0) -> None:
        pc = _prometheus()
        self.worker = worker
        self.registry = pc.CollectorRegistry()
        r = self.registry

        def counter(name: str, doc: str, labels: Sequence[str] = ("queue", "task")) -> Any:
            return pc.Counter(f"conveyor_jobs_{name}_total", doc, list(labels), registry=r)

        self.counters = {
            "enqueued": counter("enqueued", "Jobs enqueued by this process."),
            "started": counter("started", "Attempts started (jobs claimed)."),
            "succeeded": counter("succeeded", "Attempts that succeeded."),
            "failed": counter("failed", "Attempts that raised (retried or dead)."),
            "retried": counter("retried", "Failed attempts scheduled for a retry."),
            "dead": counter("dead", "Jobs that went to dead."),
            "cancelled": counter("cancelled", "Jobs cancelled while running."),
            "expired": counter("expired", "Jobs claimed past their expiry, never run."),
            "rescued": counter("rescued", "Jobs taken back from dead workers.", ("state",)),
        }
        self.queue_wait = pc.Histogram(
            "conveyor_job_queue_wait_seconds",
            "Time from due to claimed.",
            ["queue"],
            buckets=BUCKETS,
            registry=r,
        )
        self.run_time = pc.Histogram(
            "conveyor_job_run_seconds",
            "Run time of one attempt.",
            ["queue", "task"],
            buckets=BUCKETS,
            registry=r,
        )
        self.depth = pc.Gauge(
            "conveyor_queue_depth",
            "Jobs waiting to run, per queue and state (queued, scheduled, waiting).",
            ["queue", "state"],
            registry=r,
        )
        self.running = pc.Gauge(
            "conveyor_queue_running", "Jobs running now, per queue.", ["queue"], registry=r
        )
        self.oldest = pc.Gauge(
            "conveyor_queue_oldest_ready_age_seconds",
            "Age of the oldest ready job (0 when none).",
            ["queue"],
            registry=r,
        )
        capture = worker.log_capture
        backlog = pc.Gauge("conveyor_log_backlog", "Log records waiting to be stored.", registry=r)
        backlog.set_function(lambda: capture.backlog if capture else 0)
        r.register(_LogDropped(lambda: capture.dropped if capture else 0))
        self.refresher = _Refresher(self, refresh)
        self._server: Any = None
        worker.app.add_middleware(self)

    # -- middleware hooks ----------------------------------------------------------------

    def on_enqueue(self, job: NewJob) -> None:
        self.counters["enqueued"].labels(job.queue, job.task).inc()

    def on_start(self, job: JobContext) -> None:
        self.counters["started"].labels(job.queue, job.task).inc()
        self.queue_wait.labels(job.queue).observe(max(0.0, job.started_at - job.run_at))

    def on_finish(self, job: JobContext, attempt: Attempt) -> None:
        if attempt.started_at is not None and attempt.finished_at is not None:
            self.run_time.labels(job.queue, job.task).observe(
                max(0.0, attempt.finished_at - attempt.started_at)
            )
        if attempt.outcome in _FAILED and attempt.error is not None:
            self.counters["failed"].labels(job.queue, job.task).inc()
        name = _FINISH_COUNTER.get(attempt.outcome)
        if name is not None:
            self.counters[name].labels(job.queue, job.task).inc()

    def on_rescue(self, job: RescuedJob) -> None:
        self.counters["rescued"].labels(job.state).inc()
        if job.state == JobState.DEAD.value:
            # A rescue names no queue or task; empty labels keep the total right.
            self.counters["dead"].labels("", "").inc()

    # -- gauges and serving --------------------------------------------------------------

    def refresh(self) -> None:
        """Read queue_stats once and set the depth and oldest-ready gauges."""
        for s in self.worker.app.backend.queue_stats():
            for state in DEPTH_STATES:
                self.depth.labels(s.queue, str(state)).set(s.counts.get(str(state), 0))
            self.running.labels(s.queue).set(s.counts.get(str(JobState.RUNNING), 0))
            self.oldest.labels(s.queue).set(s.oldest_ready_age or 0.0)

    def serve(self, port: int, addr: str = "127.0.0.1") -> str:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread, start the refresher,
        and log (INFO, ``conveyor.worker``) and return the URL it is served at."""
        pc = _prometheus()
        self._server = pc.start_http_server(port, addr=addr, registry=self.registry)
        self.refresher.start()
        if isinstance(self._server, tuple):  # prometheus_client >= 0.17: the port bound
            port = int(self._server[0].server_port)
        url = metrics_url(addr, port)
        logging.getLogger("conveyor.worker").info(
            "metrics: serving %s",
            url,
            extra={EVENT_FIELDS: {"event": "worker.metrics", "url": url}},
        )
        return url

    def close(self) -> None:
        self.refresher.stop()
        self.worker.app.middleware.remove(self)
        if isinstance(self._server, tuple):  # prometheus_client >= 0.17: (server, thread)
            self._server[0].shutdown()

    def text(self) -> str:
        """The exposition text, as a scrape would see it."""
        return str(_prometheus().generate_latest(self.registry).decode())


def metrics_url(addr: str, port: int) -> str:
    """The URL a scrape config names for ``/metrics`` served on ``addr:port``.

    >>> metrics_url("127.0.0.1", 9108), metrics_url("::1", 9108)
    ('http://127.0.0.1:9108/metrics', 'http://[::1]:9108/metrics')
    """
    host = f"[{addr}]" if ":" in addr else addr
    return f"http://{host}:{port}/metrics"


class _LogDropped:
    """``conveyor_log_dropped_total``: log records dropped (the capture's queue full),
    a count that only grows, so a counter, read from the capture at each scrape
    (prometheus_client's ``Counter`` cannot be set from a function)."""

    def __init__(self, read: Callable[[], int]) -> None:
        self.read = read

    def collect(self) -> Iterator[Any]:
        core = importlib.import_module("prometheus_client.core")
        yield core.CounterMetricFamily(
            "conveyor_log_dropped", "Log records dropped (queue full).", value=self.read()
        )


class _Refresher(Looper):
    name = "metrics"

    def __init__(self, metrics: WorkerMetrics, interval: float) -> None:
        super().__init__(interval)
        self.metrics = metrics

    def tick(self) -> None:
        self.metrics.refresh()
