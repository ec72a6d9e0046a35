"""An instrumented app for the OpenTelemetry test, imported by a worker subprocess and
its pool children as ``tests.integration.otel_tasks:app`` (cwd = repo root).

With ``$CONVEYOR_TEST_SPANS`` set (the worker's environment only), every process that
imports this module installs an SDK tracer provider whose spans are written as JSON
lines to that file: the channel the test reads the workers' spans back through.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import conveyor
from conveyor.contrib.otel import instrument

app = conveyor.App(
    os.environ.get("CONVEYOR_URL", "sqlite:///:memory:"),
    max_attempts=2,
    retry=conveyor.Backoff(base=0.0, jitter=0.0),  # the retry is due at once
)
instrument(app)


@app.task(name="otel.ok")
def ok(n: int) -> int:
    from opentelemetry import trace

    with trace.get_tracer("shop").start_as_current_span("add one"):  # the task's own span
        return n + 1


@app.task(name="otel.fails")
def fails() -> None:
    raise ValueError("card declined")


def _install_file_exporter(path: str) -> None:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class JsonLinesExporter(SpanExporter):
        """One JSON object per finished span, appended (one write per span, O_APPEND:
        several children can share the file)."""

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            for span in spans:
                ctx, parent = span.context, span.parent
                line = json.dumps(
                    {
                        "name": span.name,
                        "kind": span.kind.name,
                        "trace_id": f"{ctx.trace_id:032x}",
                        "span_id": f"{ctx.span_id:016x}",
                        "parent_id": None if parent is None else f"{parent.span_id:016x}",
                        "links": [f"{link.context.span_id:016x}" for link in span.links],
                        "attributes": dict(span.attributes or {}),
                        "status": span.status.status_code.name,
                        "events": [
                            {"name": e.name, "attributes": dict(e.attributes or {})}
                            for e in span.events
                        ],
                        "pid": os.getpid(),
                    }
                )
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, (line + "\n").encode())
                finally:
                    os.close(fd)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter()))
    trace.set_tracer_provider(provider)


if os.environ.get("CONVEYOR_TEST_SPANS"):
    _install_file_exporter(os.environ["CONVEYOR_TEST_SPANS"])
