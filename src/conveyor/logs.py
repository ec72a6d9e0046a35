"""Per-job logs: records a task logs with :mod:`logging` are stored with its job.

The path from the task to storage never blocks the task (seed 002: a slow sink must not
become job latency). A :class:`logging.Handler` on the root logger keeps only records
emitted inside a job of this worker (the ``conveyor.context`` contextvar), formats them
and ``put_nowait``\\ s them on a bounded queue; when the queue is full the record is
dropped and counted. A writer thread takes up to ``BATCH`` records at a time and stores
them in one backend call (bounded per job, truncation marked by the backend). On
shutdown :meth:`LogCapture.stop` drains with a deadline and reports, as a warning, how
many records could not be written.

Accounting, always: ``emitted == written + truncated + failed + dropped + unwritten +
backlog`` (``backlog`` is what is still queued or being written). Nothing is lost
without being counted.

Thresholds: ``QUEUE_SIZE`` = 10,000 records (at ~200 bytes each ~2 MB of memory at
worst), ``BATCH`` = 500 records per write. Records of loggers with ``propagate=False``
never reach the root logger and are not captured.

Example::

    capture = LogCapture(lambda recs: backend.job_log_insert_many(JobLogInsertParams(recs)))
    capture.start(); capture.install()
    ...                      # tasks log as usual: logging.getLogger(__name__).info("hi")
    capture.uninstall(); capture.stop(timeout=2.0)
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence

from conveyor.backends.base import JobLogRecord
from conveyor.context import current_or_none

QUEUE_SIZE = 10_000
BATCH = 500

#: Stores a batch; returns how many records were kept (the rest hit the per-job bound).
Sink = Callable[[Sequence[JobLogRecord]], int]

log = logging.getLogger("conveyor.logs")
_formatter = logging.Formatter()


class _Handler(logging.Handler):
    def __init__(self, capture: LogCapture, level: int) -> None:
        super().__init__(level)
        self.capture = capture

    def emit(self, record: logging.LogRecord) -> None:
        ctx = current_or_none()
        if ctx is None or not self.capture.owns(ctx.id):
            return
        message = record.getMessage()
        if record.exc_info:
            message = f"{message}\n{_formatter.formatException(record.exc_info)}"
        self.capture.offer(
            JobLogRecord(
                ctx.id, ctx.attempt, record.created, record.levelname, record.name, message
            )
        )

    # The base class takes a lock around emit; offer() is thread-safe already.
    def handle(self, record: logging.LogRecord) -> bool:
        if self.filter(record):
            self.emit(record)
        return True


class LogCapture:
    """Bounded, non-blocking capture of task log records into a sink."""

    def __init__(
        self,
        sink: Sink,
        *,
        level: int | str = logging.INFO,
        max_queue: int = QUEUE_SIZE,
        owns: Callable[[str], bool] = lambda job_id: True,
    ) -> None:
        self.sink = sink
        self.owns = owns
        self.level = logging.getLevelName(level) if isinstance(level, str) else level
        self._queue: queue.Queue[JobLogRecord] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._handler = _Handler(self, self.level)
        self._thread = threading.Thread(target=self._loop, name="conveyor-logs", daemon=True)
        self._stopping = threading.Event()
        self._abandoned = False
        self._in_flight = 0
        self._saved_root: tuple[int, list[logging.Handler]] | None = None
        self.emitted = 0
        self.dropped = 0
        self.written = 0
        self.truncated = 0
        self.failed = 0
        self.unwritten = 0

    @property
    def backlog(self) -> int:
        """Records queued or being written right now (a gauge for metrics)."""
        return self._queue.qsize() + self._in_flight

    # -- the task side: never blocks -----------------------------------------------------

    def offer(self, record: JobLogRecord) -> None:
        try:
            self._queue.put_nowait(record)
            full = False
        except queue.Full:
            full = True
        with self._lock:
            self.emitted += 1
            if full:
                self.dropped += 1

    # -- lifecycle -----------------------------------------------------------------------

    def install(self) -> None:
        """Attach to the root logger, lowering its level to ours if needed. Handlers
        already on the root keep what they printed before (their level is pinned)."""
        root = logging.getLogger()
        if root.getEffectiveLevel() > self.level:
            pinned = [h for h in root.handlers if h.level == logging.NOTSET]
            self._saved_root = (root.level, pinned)
            for h in pinned:
                h.setLevel(root.level)
            root.setLevel(self.level)
        root.addHandler(self._handler)

    def uninstall(self) -> None:
        root = logging.getLogger()
        root.removeHandler(self._handler)
        if self._saved_root is not None:
            level, pinned = self._saved_root
            root.setLevel(level)
            for h in pinned:
                h.setLevel(logging.NOTSET)
            self._saved_root = None

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> int:
        """Drain for at most ``timeout`` seconds; return (and log) what was not written."""
        self._stopping.set()
        self._thread.join(timeout)
        with self._lock:
            self._abandoned = True
            left = self._queue.qsize() + self._in_flight
            while True:  # what stays queued is counted once, here, and discarded
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    break
            self.unwritten += left
        if left or self.dropped:
            log.warning(
                "job logs: %d record(s) could not be written before the %.1f s "
                "deadline; %d dropped earlier because the queue was full",
                left,
                timeout,
                self.dropped,
            )
        return left

    # -- the writer thread ---------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            batch = [first]
            with self._lock:
                if self._abandoned:  # taken after stop() counted the queue: count it now
                    self.unwritten += 1
                    return
                while len(batch) < BATCH:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                self._in_flight = len(batch)
            self._write(batch)

    def _write(self, batch: list[JobLogRecord]) -> None:
        try:
            stored, failed = self.sink(batch), 0
        except Exception as exc:  # a store outage must not kill the writer
            stored, failed = 0, len(batch)
            log.warning("job logs: could not store %d record(s): %s", len(batch), exc)
        with self._lock:
            if self._abandoned:
                # stop() counted this batch as unwritten; it made it after all.
                self.unwritten -= len(batch)
            self.written += stored
            self.failed += failed
            self.truncated += len(batch) - stored - failed
            self._in_flight = 0
