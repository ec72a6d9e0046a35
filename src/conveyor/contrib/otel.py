"""OpenTelemetry tracing: ``conveyor.contrib.otel.instrument(app)``.

Needs the ``otel`` extra (``pip install 'conveyor[otel]'``: opentelemetry-api; bring your
SDK and exporter). A middleware (``conveyor/middleware.py``) that makes:

- a **producer** span ``send <queue>`` at each enqueue (child of the caller's current
  span), ended at once, whose context is injected into the job's headers with the global
  propagator (W3C ``traceparent`` / ``tracestate`` by default);
- a **consumer** span ``process <queue>`` around each attempt (``around_execute``: in the
  thread, asyncio task or pool child that runs the task), parented to the producer's
  context taken from the headers and linked to it; the task's own spans are its
  children. A failed attempt records the exception and sets the status to ERROR (a
  :class:`conveyor.Snooze` is not an error).

Attributes follow the OpenTelemetry messaging conventions: ``messaging.system`` =
``conveyor``, ``messaging.destination.name`` = the queue, ``messaging.message.id`` =
the job id, ``messaging.operation.type`` = ``send`` / ``process``, and
``conveyor.task``, ``conveyor.attempt``, ``conveyor.max_attempts``.

Spans use the global tracer provider, looked up at each span: configure it where the app
is defined (the module worker children import), so that process and interpreter pool
children export too.

Example::

    app = conveyor.App("sqlite:///jobs.db")
    conveyor.contrib.otel.instrument(app)
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conveyor.errors import ConfigurationError, Snooze
from conveyor.middleware import NewJob

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.context import JobContext

#: The instrumentation scope of every span.
SCOPE = "conveyor"
SYSTEM = "conveyor"


def _api() -> tuple[Any, Any]:
    """The ``opentelemetry.trace`` and ``opentelemetry.propagate`` modules, imported now."""
    try:
        trace = importlib.import_module("opentelemetry.trace")
        propagate = importlib.import_module("opentelemetry.propagate")
    except ImportError:
        raise ConfigurationError(
            "OpenTelemetry tracing needs the extra: pip install 'conveyor[otel]'"
        ) from None
    return trace, propagate


def instrument(app: App) -> None:
    """Trace every job of ``app``: producer spans at enqueue, consumer spans around each
    attempt (see the module docstring). Calling it twice changes nothing.

    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> instrument(app); instrument(app)
    >>> [type(m).__name__ for m in app.middleware]
    ['TracingMiddleware']
    """
    _api()  # fail now, not at the first job, when the extra is missing
    if not any(isinstance(m, TracingMiddleware) for m in app.middleware):
        app.add_middleware(TracingMiddleware)


class TracingMiddleware:
    """The middleware :func:`instrument` adds (no constructor arguments: pool children
    build their own from the class)."""

    def __init__(self) -> None:
        self._trace, self._propagate = _api()

    def _tracer(self) -> Any:
        # At each span: a provider set after instrument() (in a child, after the import)
        # is the one used.
        return self._trace.get_tracer(SCOPE)

    def on_enqueue(self, job: NewJob) -> None:
        trace = self._trace
        attributes = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "send",
            "messaging.operation.name": "enqueue",
            "messaging.destination.name": job.queue,
            "messaging.message.id": job.id,
            "conveyor.task": job.task,
        }
        with self._tracer().start_as_current_span(
            f"send {job.queue}", kind=trace.SpanKind.PRODUCER, attributes=attributes
        ):
            self._propagate.inject(job.headers)

    @contextlib.contextmanager
    def around_execute(self, job: JobContext) -> Iterator[None]:
        trace = self._trace
        parent = self._propagate.extract(dict(job.headers))
        producer = trace.get_current_span(parent).get_span_context()
        links = [trace.Link(producer)] if producer.is_valid else []
        attributes = {
            "messaging.system": SYSTEM,
            "messaging.operation.type": "process",
            "messaging.operation.name": "execute",
            "messaging.destination.name": job.queue,
            "messaging.message.id": job.id,
            "conveyor.task": job.task,
            "conveyor.attempt": job.attempt,
            "conveyor.max_attempts": job.max_attempts,
        }
        with self._tracer().start_as_current_span(
            f"process {job.queue}",
            context=parent,
            kind=trace.SpanKind.CONSUMER,
            attributes=attributes,
            links=links,
            record_exception=False,  # done below: a Snooze is not an error
            set_status_on_exception=False,
        ) as span:
            try:
                yield
            except Snooze as snooze:
                span.set_attribute("conveyor.snoozed_for", snooze.seconds)
                raise
            except BaseException as exc:
                span.record_exception(exc)
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"{type(exc).__name__}"))
                raise
