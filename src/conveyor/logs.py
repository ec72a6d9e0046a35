"""Non-blocking logging: a bounded queue and a writer thread between a logger and a sink.

The path from a caller to the sink never blocks the caller (seed 002: a slow sink must
not become job latency, a queue only moves the wait, so measure backlog, drops and drain
time). :class:`BoundedWriter` is that path: ``offer`` does a ``put_nowait`` on a bounded
queue (bounded in items and, optionally, in bytes) and counts a drop when it is full; a
writer thread takes up to ``batch`` items at a time and hands them to the sink; ``stop``
drains with a deadline and counts what it could not write. Two users:

- :class:`LogCapture` (here): records a task logs with :mod:`logging` are stored with
  its job. A handler on the root logger keeps only records emitted inside a job of this
  worker (the ``conveyor.context`` contextvar) and offers them; the sink stores a batch in
  one backend call (bounded per job, truncation marked by the backend). On shutdown
  :meth:`LogCapture.stop` reports, as a warning, how many records could not be written.
- the worker's console (``conveyor.worker.console``): every line the worker prints on
  stderr goes through one, so a slow reader of stderr costs dropped lines, not job time.

Accounting, always: ``emitted == written + truncated + failed + dropped + unwritten +
backlog`` (``backlog`` is what is still queued or being written). Nothing is lost
without being counted.

Thresholds of the job-log capture: ``QUEUE_SIZE`` = 10,000 records (at ~200 bytes each
~2 MB of memory at worst), ``BATCH`` = 500 records per write. Records of loggers with
``propagate=False`` never reach the root logger and are not captured.

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
from typing import Generic, TypeVar

from conveyor.backends.base import JobLogRecord
from conveyor.context import current_or_none

QUEUE_SIZE = 10_000
BATCH = 500

T = TypeVar("T")

#: Stores a batch; returns how many records were kept (the rest hit the per-job bound).
Sink = Callable[[Sequence[JobLogRecord]], int]

log = logging.getLogger("conveyor.logs")
_formatter = logging.Formatter()


class BoundedWriter(Generic[T]):
    """A bounded queue in front of ``sink``, emptied by one writer thread.

    ``sink(batch)`` returns how many items it kept (the rest count as ``truncated``); an
    exception counts the batch as ``failed`` and goes to ``on_error``. ``size`` and
    ``max_bytes`` bound the queue in bytes as well as in items (16 KiB log lines: 10,000
    of them would be 160 MB, and draining them through a slow sink would take minutes).
    ``after_batch`` runs on the writer thread after every batch and at least every 0.1 s
    while idle (the console uses it to report drops without blocking anyone).

    Example::

        w = BoundedWriter(lambda lines: sys.stderr.write("".join(lines)) and len(lines),
                          max_items=1000, batch=100, name="log-writer")
        w.start(); w.offer("hello\\n"); w.stop(timeout=2.0)
    """

    def __init__(
        self,
        sink: Callable[[Sequence[T]], int],
        *,
        max_items: int,
        batch: int,
        name: str,
        max_bytes: int | None = None,
        size: Callable[[T], int] | None = None,
        on_error: Callable[[int, Exception], None] | None = None,
        after_batch: Callable[[], None] | None = None,
    ) -> None:
        self.sink = sink
        self.batch = batch
        self.max_bytes = max_bytes
        self._size = size
        self._on_error = on_error
        self._after_batch = after_batch
        self._queue: queue.Queue[T] = queue.Queue(maxsize=max_items)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._stopping = threading.Event()
        self._abandoned = False
        self._in_flight = 0
        self._bytes = 0  # bytes queued or being written (only counted with ``size``)
        self.emitted = 0
        self.dropped = 0
        self.written = 0
        self.truncated = 0
        self.failed = 0
        self.unwritten = 0

    @property
    def backlog(self) -> int:
        """Items queued or being written right now (a gauge for metrics)."""
        return self._queue.qsize() + self._in_flight

    @property
    def backlog_bytes(self) -> int:
        return self._bytes

    # -- the caller side: never blocks ---------------------------------------------------

    def offer(self, item: T) -> bool:
        """Queue ``item`` for the sink; False (and counted as dropped) when full."""
        n = self._size(item) if self._size is not None else 0
        with self._lock:
            self.emitted += 1
            if self.max_bytes is not None and self._bytes + n > self.max_bytes:
                self.dropped += 1
                return False
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                self.dropped += 1
                return False
            self._bytes += n
            return True

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> int:
        """Drain for at most ``timeout`` seconds; return how many items were not written."""
        self._stopping.set()
        if self._thread.is_alive():
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
        return left

    # -- the writer thread ---------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=0.1)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                if self._after_batch is not None:
                    self._after_batch()
                continue
            batch = [first]
            with self._lock:
                if self._abandoned:  # taken after stop() counted the queue: count it now
                    self.unwritten += 1
                    return
                while len(batch) < self.batch:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                self._in_flight = len(batch)
            self._write(batch)
            if self._after_batch is not None:
                self._after_batch()

    def _write(self, batch: list[T]) -> None:
        try:
            stored, failed = self.sink(batch), 0
        except Exception as exc:  # a store outage or a closed pipe must not kill the writer
            stored, failed = 0, len(batch)
            if self._on_error is not None:
                self._on_error(len(batch), exc)
        size = self._size
        n = sum(size(item) for item in batch) if size is not None else 0
        with self._lock:
            if self._abandoned:
                # stop() counted this batch as unwritten; it made it after all.
                self.unwritten -= len(batch)
            self.written += stored
            self.failed += failed
            self.truncated += len(batch) - stored - failed
            self._in_flight = 0
            self._bytes -= n


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


def _store_failed(count: int, exc: Exception) -> None:
    log.warning("job logs: could not store %d record(s): %s", count, exc)


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
        self.writer: BoundedWriter[JobLogRecord] = BoundedWriter(
            sink, max_items=max_queue, batch=BATCH, name="conveyor-logs", on_error=_store_failed
        )
        self._handler = _Handler(self, self.level)
        self._saved_root: tuple[int, list[logging.Handler]] | None = None

    # Counters of the writer (see the module docstring for how they add up).
    emitted = property(lambda self: self.writer.emitted)
    dropped = property(lambda self: self.writer.dropped)
    written = property(lambda self: self.writer.written)
    truncated = property(lambda self: self.writer.truncated)
    failed = property(lambda self: self.writer.failed)
    unwritten = property(lambda self: self.writer.unwritten)

    @property
    def backlog(self) -> int:
        """Records queued or being written right now (a gauge for metrics)."""
        return self.writer.backlog

    # -- the task side: never blocks -----------------------------------------------------

    def offer(self, record: JobLogRecord) -> None:
        self.writer.offer(record)

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
        self.writer.start()

    def stop(self, timeout: float = 2.0) -> int:
        """Drain for at most ``timeout`` seconds; return (and log) what was not written."""
        left = self.writer.stop(timeout)
        if left or self.dropped:
            log.warning(
                "job logs: %d record(s) could not be written before the %.1f s "
                "deadline; %d dropped earlier because the queue was full",
                left,
                timeout,
                self.dropped,
            )
        return left
