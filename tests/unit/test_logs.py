"""Log capture never blocks a task: a slow sink costs drops (counted), not latency."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from conveyor.backends.base import JobLogRecord
from conveyor.context import JobContext, reset_current, set_current
from conveyor.logs import LogCapture


class SlowSink:
    """Stores records after a fixed delay per batch; can be held back entirely."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.stored: list[JobLogRecord] = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, records: Sequence[JobLogRecord]) -> int:
        self.gate.wait()
        time.sleep(self.delay)
        self.stored.extend(records)
        return len(records)


def _log_in_job(n: int, job_id: str = "job-1") -> float:
    """Emit n records inside a job context; return the seconds it took the task."""
    token = set_current(JobContext(job_id, "t", "q", 1, 3))
    logger = logging.getLogger("tests.task")
    try:
        started = time.perf_counter()
        for i in range(n):
            logger.info("record %d", i)
        return time.perf_counter() - started
    finally:
        reset_current(token)


def test_only_records_inside_a_job_are_captured() -> None:
    sink = SlowSink(0.0)
    capture = LogCapture(sink, max_queue=100)
    capture.start()
    capture.install()
    try:
        logging.getLogger("tests.outside").warning("not in a job")
        _log_in_job(3)
    finally:
        capture.uninstall()
        assert capture.stop(timeout=2.0) == 0
    assert [r.message for r in sink.stored] == ["record 0", "record 1", "record 2"]
    assert {r.job_id for r in sink.stored} == {"job-1"} and capture.emitted == 3


def test_slow_sink_does_not_slow_the_task_and_every_record_is_counted() -> None:
    fast_sink = SlowSink(0.0)
    baseline = LogCapture(fast_sink, max_queue=50)
    baseline.start()
    baseline.install()
    try:
        base_time = _log_in_job(2000)
    finally:
        baseline.uninstall()
        baseline.stop(timeout=2.0)

    slow = SlowSink(0.5)  # half a second per batch: far slower than the task logs
    capture = LogCapture(slow, max_queue=50)
    capture.start()
    capture.install()
    try:
        slow_time = _log_in_job(2000)
        assert capture.dropped > 0  # the queue filled up and records were dropped...
        assert capture.backlog > 0  # ...and the backlog is visible meanwhile
    finally:
        capture.uninstall()
        left = capture.stop(timeout=0.2)  # the deadline expires mid-drain
    # Job latency unchanged: the task never waited for the sink (generous bound vs. 0.5 s
    # per batch; a blocking path would take minutes).
    assert slow_time < max(10 * base_time, 0.3)
    assert left > 0 and capture.unwritten == left
    time.sleep(0.7)  # let the in-flight batch land; the accounting must still close
    total = (
        capture.written + capture.truncated + capture.failed + capture.dropped + capture.unwritten
    )
    assert total == capture.emitted == 2000
    assert capture.written == len(slow.stored)


def test_drain_within_deadline_writes_everything() -> None:
    sink = SlowSink(0.01)
    capture = LogCapture(sink, max_queue=10_000)
    capture.start()
    capture.install()
    try:
        _log_in_job(1500)
    finally:
        capture.uninstall()
        assert capture.stop(timeout=5.0) == 0
    assert capture.written == len(sink.stored) == 1500 and capture.dropped == 0


def test_failing_sink_is_counted_not_silent() -> None:
    def broken(records: Sequence[JobLogRecord]) -> int:
        raise OSError("disk full")

    capture = LogCapture(broken, max_queue=100)
    capture.start()
    capture.install()
    try:
        _log_in_job(5)
    finally:
        capture.uninstall()
        capture.stop(timeout=2.0)
    assert capture.failed == 5 and capture.emitted == 5


def test_root_level_restored_after_uninstall() -> None:
    root = logging.getLogger()
    before = root.level
    capture = LogCapture(SlowSink(0.0), level="DEBUG")
    capture.install()
    assert root.getEffectiveLevel() == logging.DEBUG
    capture.uninstall()
    assert root.level == before
