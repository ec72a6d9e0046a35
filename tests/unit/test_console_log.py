"""The worker's console handler never waits on its stream; the event log's lines."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Iterator

import pytest

import conveyor
from conveyor.backends.base import ClaimedJob, JobFinishParams
from conveyor.context import JobContext, reset_current, set_current
from conveyor.states import FinishKind
from conveyor.worker.console import (
    SUMMARY_TIMEOUT,
    JsonFormatter,
    QueuedStreamHandler,
    TextFormatter,
)
from conveyor.worker.eventlog import EventLog, declared_queues, default_queue_specs


class GatedStream(io.StringIO):
    """A stream whose writes wait until ``gate`` is set (a reader that stopped reading)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def write(self, s: str) -> int:
        self.gate.wait()
        return super().write(s)


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    lg = logging.getLogger("tests.console")
    lg.propagate = False
    lg.setLevel(logging.DEBUG)
    yield lg
    lg.handlers.clear()
    lg.propagate = True


def _attach(lg: logging.Logger, handler: QueuedStreamHandler) -> QueuedStreamHandler:
    handler.start()
    lg.addHandler(handler)
    return handler


def test_a_stuck_stream_costs_drops_not_time_and_every_line_is_counted(
    logger: logging.Logger,
) -> None:
    stream = GatedStream()
    handler = _attach(logger, QueuedStreamHandler(stream, TextFormatter(), max_bytes=64 * 1024))
    line = "y" * 1024
    started = time.perf_counter()
    for _ in range(500):  # 500 KiB into a 64 KiB queue, nobody reading
        logger.info(line)
    took = time.perf_counter() - started
    assert took < 1.0  # a blocking handler would never return while the gate is shut
    assert handler.writer.dropped > 0
    stream.gate.set()
    logger.removeHandler(handler)
    assert handler.drain(timeout=5.0) == 0
    w = handler.writer
    assert w.emitted == 500 == w.written + w.dropped
    text = stream.getvalue()
    assert text.count(line) == w.written
    assert f"log lines: emitted=500 written={w.written} dropped={w.dropped}" in text
    assert "log line(s) dropped in the last" in text  # the drop report, not counted


def test_the_drain_has_a_deadline_and_counts_what_it_left(logger: logging.Logger) -> None:
    stream = GatedStream()  # never opened: the writer is stuck in its first write
    handler = _attach(logger, QueuedStreamHandler(stream, TextFormatter()))
    for i in range(50):
        logger.info("line %d", i)
    logger.removeHandler(handler)
    started = time.monotonic()
    left = handler.drain(timeout=0.3)
    # The drain's deadline, then at most SUMMARY_TIMEOUT for the (stuck) summary line.
    assert time.monotonic() - started < 0.3 + SUMMARY_TIMEOUT + 0.5
    w = handler.writer
    assert left > 0 and w.unwritten == left
    assert w.emitted == 50 == w.written + w.dropped + w.unwritten + w.failed
    stream.gate.set()


def test_text_lines_show_control_characters_escaped() -> None:
    # One rule with the CLI (conveyor.text.literal): newlines kept, every other control
    # character (tab, ESC, C1, bidi overrides) escaped.
    message = "red \x1b[31m\ttab\x9b2J\u202enext\nline"
    record = logging.LogRecord("x", logging.INFO, "", 0, message, (), None)
    assert TextFormatter().format(record).endswith("x: red \\x1b[31m\\ttab\\x9b2J\\u202enext\nline")


def test_json_lines_carry_event_fields_the_job_and_the_traceback() -> None:
    try:
        raise KeyError("k")
    except KeyError:
        import sys

        exc_info = sys.exc_info()
    record = logging.LogRecord("tests", logging.ERROR, "", 0, "oops %s", ("now",), exc_info)
    record.conveyor_event = {"event": "demo", "n": 3}
    token = set_current(JobContext("job-9", "tasks.t", "q", 1, 3))
    try:
        doc = json.loads(JsonFormatter().format(record))
    finally:
        reset_current(token)
    assert doc["message"] == "oops now" and doc["level"] == "ERROR"
    assert doc["event"] == "demo" and doc["n"] == 3
    assert (doc["job_id"], doc["task"]) == ("job-9", "tasks.t")
    assert doc["ts"].endswith("Z") and "KeyError" in doc["exc"]


def _job(attempt: int = 1) -> ClaimedJob:
    return ClaimedJob("J1", "tasks.t", "default", "{}", attempt, 3, 7, None, 30.0, 0.0, 0.0, 0, 0)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def events() -> Iterator[Records]:
    lg = logging.getLogger("conveyor.worker.jobs")
    before = lg.level
    handler = Records()
    lg.addHandler(handler)
    yield handler
    lg.removeHandler(handler)
    lg.setLevel(before)


def test_a_failure_line_names_task_id_error_attempt_and_next_run(events: Records) -> None:
    logging.getLogger("conveyor.worker.jobs").setLevel(logging.INFO)
    log = EventLog()
    log.on_claimed([_job()])
    error = json.dumps({"type": "ValueError", "message": "boom\nsecond line", "traceback": ""})
    params = JobFinishParams(
        "J1", 7, FinishKind.RETRY, attempt=1, error=error, run_at=1000.5, finished_at=1000.0
    )
    log.on_finished(_job(), params)
    (record,) = events.records
    message = record.getMessage()
    assert message.startswith("job J1 (tasks.t) failed, attempt 1/3: ValueError: boom; next run")
    assert message.endswith("(in 0.50 s)") and "second line" not in message
    assert record.conveyor_event["error_type"] == "ValueError"  # type: ignore[attr-defined]


def test_the_level_is_read_once_per_batch_and_filtered_lines_cost_no_record(
    events: Records,
) -> None:
    lg = logging.getLogger("conveyor.worker.jobs")
    lg.setLevel(logging.INFO)
    log = EventLog()
    log.on_claimed([_job()])
    ok = JobFinishParams("J1", 7, FinishKind.SUCCEEDED, started_at=1.0, finished_at=1.5)
    log.on_finished(_job(), ok)
    assert events.records == []  # succeeded is DEBUG
    lg.setLevel(logging.DEBUG)
    log.on_finished(_job(), ok)
    assert events.records == []  # not re-read per job...
    log.on_claimed([_job()])
    log.on_finished(_job(), ok)  # ...but at the next batch
    assert [r.getMessage() for r in events.records] == [
        "job J1 (tasks.t) succeeded in 0.500 s, attempt 1/3"
    ]


def test_default_queues_are_the_declared_ones_plus_default() -> None:
    app = conveyor.App("sqlite:///:memory:")

    @app.task(queue="mail")
    def send() -> None: ...

    @app.task(queue="mail")
    def bounce() -> None: ...

    assert declared_queues(app) == {"mail": [send.name, bounce.name]}
    assert default_queue_specs(app) == ["mail", "default"]
