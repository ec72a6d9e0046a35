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
``jobs_expired_total``, ``jobs_rescued_total``, ``log_dropped_total``, and for durable
jobs ``steps_run_total``, ``steps_replayed_total``, ``jobs_replayed_total``; histograms
``job_queue_wait_seconds`` and ``job_run_seconds``; gauges ``queue_depth{queue,state}``
(work waiting to run: :data:`DEPTH_STATES`, never finished jobs), ``queue_running{queue}``,
``queue_oldest_ready_age_seconds{queue}``, ``log_backlog``.
Labels: ``queue`` and (on counters of finished jobs) ``task``. Per flow-control key
(limits, sequences; bounded labels): :mod:`conveyor.metrics_flow`.

Example::

    metrics = WorkerMetrics(worker)
    metrics.serve(9108)          # logs and returns http://127.0.0.1:9108/metrics
    worker.run()
"""

from __future__ import annotations

import importlib
import json
import logging
import math
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Any, cast
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from conveyor.ids import id_time
from conveyor.metrics_flow import FlowMetrics
from conveyor.middleware import Attempt, Middleware, NewJob, RescuedJob
from conveyor.scaling import Signal, signal_of
from conveyor.states import FinishKind, JobState
from conveyor.worker.console import EVENT_FIELDS
from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from conveyor.context import JobContext
    from conveyor.durable import StepTally
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
        """Declare every metric. Over 60 lines: one declaration per metric, read as the
        list of what is exported; split up, the list would be scattered."""
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
        self.demand = pc.Gauge(
            "conveyor_queue_demand",
            "Slots a queue could use at once: ready jobs plus running ones.",
            ["queue"],
            registry=r,
        )
        self.capacity = pc.Gauge(
            "conveyor_queue_capacity",
            "Concurrency of the live workers consuming a queue.",
            ["queue"],
            registry=r,
        )
        self.load = pc.Gauge(
            "conveyor_queue_load",
            "Demand over capacity (+Inf: demand and no live worker; 0: no demand).",
            ["queue"],
            registry=r,
        )
        #: The autoscaling signal of the last refresh (served at ``/load``).
        self.signal: Signal | None = None
        capture = worker.log_capture
        backlog = pc.Gauge("conveyor_log_backlog", "Log records waiting to be stored.", registry=r)
        backlog.set_function(lambda: capture.backlog if capture else 0)
        r.register(_LogDropped(lambda: capture.dropped if capture else 0))
        r.register(_StepCounts(worker.attempts.steps))
        self.flow = FlowMetrics(pc, r, worker.app)  # per-key: limits and sequences
        self.refresher = _Refresher(self, refresh)
        self._server: WSGIServer | None = None
        worker.app.add_middleware(self)

    # -- middleware hooks ----------------------------------------------------------------

    def on_enqueue(self, job: NewJob) -> None:
        self.counters["enqueued"].labels(job.queue, job.task).inc()

    def on_start(self, job: JobContext) -> None:
        self.counters["started"].labels(job.queue, job.task).inc()
        self.queue_wait.labels(job.queue).observe(max(0.0, job.started_at - job.run_at))
        self.flow.on_start(job.task, job.queue, max(0.0, job.started_at - id_time(job.id)))

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
        """Read the queues and the workers once; set the depth, oldest-ready and
        autoscaling gauges and keep the signal for ``/load``."""
        app = self.worker.app
        queues = app.backend.queue_list()
        for q in queues:
            for state in DEPTH_STATES:
                self.depth.labels(q.queue, str(state)).set(q.counts.get(str(state), 0))
            self.running.labels(q.queue).set(q.counts.get(str(JobState.RUNNING), 0))
            self.oldest.labels(q.queue).set(q.oldest_ready_age or 0.0)
        workers = app.backend.worker_list()
        signal = signal_of(queues, workers, time.time(), app.settings.heartbeat_ttl)
        for load in signal.queues:
            self.demand.labels(load.queue).set(load.demand)
            self.capacity.labels(load.queue).set(load.capacity)
            ratio = load.load
            self.load.labels(load.queue).set(
                ratio if ratio is not None else (math.inf if load.demand else 0.0)
            )
        self.signal = signal
        self.flow.refresh()

    def load_json(self) -> bytes:
        """The ``/load`` document: the last refresh's signal (read now if none yet)."""
        if self.signal is None:
            self.refresh()
        assert self.signal is not None
        return json.dumps(self.signal.as_json()).encode()

    def serve(self, port: int, addr: str = "127.0.0.1") -> str:
        """Serve ``/metrics`` on ``addr:port`` from a daemon thread, start the refresher,
        and log (INFO, ``conveyor.worker``) and return the URL it is served at."""
        self._server = serve_wsgi(addr, port, self._wsgi())
        self.refresher.start()
        url = metrics_url(addr, self._server.server_port)
        logging.getLogger("conveyor.worker").info(
            "metrics: serving %s",
            url,
            extra={EVENT_FIELDS: {"event": "worker.metrics", "url": url}},
        )
        return url

    def close(self) -> None:
        self.refresher.stop()
        self.worker.app.middleware.remove(self)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _wsgi(self) -> WSGIApplication:
        """``/load`` as JSON; every other path is prometheus_client's exposition."""
        exposition = _prometheus().make_wsgi_app(self.registry)

        def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            if environ.get("PATH_INFO") != "/load":
                return cast("Iterable[bytes]", exposition(environ, start_response))
            body = self.load_json()
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            start_response("200 OK", headers)
            return [body]

        return app

    def text(self) -> str:
        """The exposition text, as a scrape would see it."""
        return str(_prometheus().generate_latest(self.registry).decode())


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape on the worker's stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def serve_wsgi(addr: str, port: int, app: WSGIApplication) -> WSGIServer:
    """Serve ``app`` on ``addr:port`` (0: any free port) from a daemon thread, as
    prometheus_client's ``start_http_server`` does, with room for ``/load`` beside it."""
    server_class: type[WSGIServer] = _ThreadingServer
    if ":" in addr:
        server_class = type(
            "_ThreadingServer6", (_ThreadingServer,), {"address_family": socket.AF_INET6}
        )
    server = make_server(addr, port, app, server_class, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="conveyor-metrics", daemon=True).start()
    return server


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


class _StepCounts:
    """The durable-job counters, read from the worker's tally at each scrape:
    ``conveyor_steps_run_total`` (steps run and checkpointed),
    ``conveyor_steps_replayed_total`` (saved steps served without running) and
    ``conveyor_jobs_replayed_total`` (attempts that resumed a job by replay)."""

    def __init__(self, tally: StepTally) -> None:
        self.tally = tally

    def collect(self) -> Iterator[Any]:
        core = importlib.import_module("prometheus_client.core")
        t = self.tally
        yield core.CounterMetricFamily(
            "conveyor_steps_run", "Durable steps run and checkpointed.", value=t.run
        )
        yield core.CounterMetricFamily(
            "conveyor_steps_replayed",
            "Saved durable steps served on replay without running.",
            value=t.replayed,
        )
        yield core.CounterMetricFamily(
            "conveyor_jobs_replayed",
            "Attempts that resumed a durable job by replaying saved steps.",
            value=t.replays,
        )


class _Refresher(Looper):
    name = "metrics"

    def __init__(self, metrics: WorkerMetrics, interval: float) -> None:
        super().__init__(interval)
        self.metrics = metrics

    def tick(self) -> None:
        self.metrics.refresh()
