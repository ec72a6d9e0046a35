"""OpenTelemetry (conveyor.contrib.otel) across a real worker process: producer spans are
exported in this process by the SDK's InMemorySpanExporter; the worker subprocess runs
the jobs in a process-pool child, whose consumer spans come back as JSON lines through
the file exporter of tests/integration/otel_tasks.py. The two sides must form one trace:
consumer parented to (and linked to) the producer, the producer to the caller's span."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The dev extra brings the SDK: missing, this module fails to import (never a skip).
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from conveyor.states import JobState
from tests.integration import otel_tasks as t
from tests.integration.conftest import ROOT, worker_env


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """This process's spans, in memory (one SDK provider per process: set once)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    memory = InMemorySpanExporter()
    processor = SimpleSpanProcessor(memory)
    provider.add_span_processor(processor)
    yield memory
    processor.shutdown()  # later tests' spans no longer reach this exporter


def _spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_trace_crosses_the_worker_process(tmp_path: Path, exporter: InMemorySpanExporter) -> None:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    t.app.close()
    t.app.url = url
    with trace.get_tracer("test").start_as_current_span("POST /checkout") as request:
        ok = t.ok.enqueue(41)
        bad = t.fails.enqueue()
    request_ctx = request.get_span_context()

    producers = {s.attributes["messaging.message.id"]: s for s in exporter.get_finished_spans()
                 if s.kind is trace.SpanKind.PRODUCER}  # fmt: skip
    assert set(producers) == {ok.id, bad.id}
    for job in (ok, bad):
        span = producers[job.id]
        assert span.name == "send default"
        assert span.parent is not None and span.parent.span_id == request_ctx.span_id
        assert span.context.trace_id == request_ctx.trace_id
        assert dict(span.attributes or {})["messaging.system"] == "conveyor"
        assert dict(span.attributes or {})["messaging.destination.name"] == "default"
        # W3C trace context in the stored headers, naming the producer span
        traceparent = job.headers["traceparent"]
        assert traceparent.startswith(
            f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-"
        )

    spans_file = tmp_path / "spans.jsonl"
    env = {**worker_env(url), "CONVEYOR_TEST_SPANS": str(spans_file)}
    done = subprocess.run(
        [sys.executable, "-m", "conveyor", "worker", "tests.integration.otel_tasks:app",
         "--burst", "--pool", "process", "-c", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ok.result(timeout=5) == 42
    assert bad.refresh().state is JobState.DEAD

    consumers = [s for s in _spans(spans_file) if s["kind"] == "CONSUMER"]
    by_job: dict[str, list[dict[str, Any]]] = {}
    for s in consumers:
        by_job.setdefault(s["attributes"]["messaging.message.id"], []).append(s)
    assert sorted(len(v) for v in by_job.values()) == [1, 2]  # one span per attempt
    for job in (ok, bad):
        producer = producers[job.id].context
        attempts = sorted(by_job[job.id], key=lambda s: s["attributes"]["conveyor.attempt"])
        for attempt, got in enumerate(attempts, 1):
            assert got["name"] == "process default"
            assert got["trace_id"] == f"{request_ctx.trace_id:032x}"
            assert got["parent_id"] == f"{producer.span_id:016x}"
            assert got["links"] == [f"{producer.span_id:016x}"]
            assert got["pid"] != os.getpid()  # exported by the worker's pool child
            attrs = got["attributes"]
            assert attrs["messaging.system"] == "conveyor"
            assert attrs["messaging.operation.type"] == "process"
            assert attrs["messaging.destination.name"] == "default"
            assert attrs["conveyor.task"] == job.refresh().task
            assert attrs["conveyor.attempt"] == attempt
    (ok_span,) = by_job[ok.id]
    assert ok_span["status"] == "UNSET" and ok_span["events"] == []
    (own,) = [s for s in _spans(spans_file) if s["name"] == "add one"]
    assert own["parent_id"] == ok_span["span_id"]  # the task's spans are the job's children
    assert own["trace_id"] == ok_span["trace_id"]
    for failed in by_job[bad.id]:
        assert failed["status"] == "ERROR"
        (event,) = failed["events"]
        assert event["name"] == "exception"
        assert event["attributes"]["exception.type"] == "ValueError"
        assert event["attributes"]["exception.message"] == "card declined"
