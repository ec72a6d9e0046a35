"""The worker's own log output on stderr, as text or JSON lines, that never waits on stderr.

``conveyor worker`` prints through one :class:`QueuedStreamHandler` on the root logger.
Its ``emit`` formats the record on the caller's thread (cheap) and offers the line to a
:class:`~conveyor.logs.BoundedWriter` (``put_nowait``); a writer thread writes batches to
the stream. When the reader of stderr is slower than the worker logs (a pipe read at
256 KiB/s, a stuck terminal, a log shipper that fell behind), lines are dropped and
counted instead of the job threads waiting: seed 002 measured that a synchronous handler
turns a slow sink into latency, and that a queue only moves the wait, so the backlog is
bounded (``MAX_BYTES``), drops are reported (at once, then at most every
``REPORT_EVERY`` seconds, as "N log line(s) dropped"), and the drain at shutdown has a
deadline and ends with one accounting line::

    ... INFO conveyor.console: log lines: emitted=212 written=51 dropped=161 failed=0
    unwritten=0 (drained in 0.21 s)

``emitted == written + dropped + failed + unwritten`` always holds for that line (the
report lines themselves are not counted).

Formats: ``text`` (``2026-12-01 18:00:00,123 INFO conveyor.worker: message``; control
characters other than newline and tab shown escaped, so a job's error message cannot
drive the terminal) and ``json`` (one object per line: ``ts`` (UTC, ISO 8601), ``level``,
``logger``, ``message``, the event's fields, ``job_id``/``task`` for lines a task logged,
``exc`` for a traceback).

Example::

    console = QueuedStreamHandler(sys.stderr, TextFormatter(), level=logging.INFO)
    console.start(); logging.getLogger().addHandler(console)
    ...
    logging.getLogger().removeHandler(console); console.drain(timeout=5.0)
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

from conveyor.context import current_or_none
from conveyor.logs import BoundedWriter
from conveyor.text import literal

#: Bytes of formatted lines that may wait for stderr: at 256 KiB/s a full queue drains
#: in 1 s, so the drain at shutdown stays short while a burst of big lines still fits.
MAX_BYTES = 256 * 1024
#: Lines that may wait (bounds the memory of many short lines).
MAX_LINES = 10_000
#: Lines per write to the stream.
BATCH = 200
#: Seconds between two "N log line(s) dropped" reports (the first one is immediate).
REPORT_EVERY = 10.0
#: Attribute of a LogRecord holding an event's fields (``extra={EVENT_FIELDS: {...}}``).
EVENT_FIELDS = "conveyor_event"

#: Seconds the drain at shutdown may take (a full queue read at 256 KiB/s takes ~1 s).
DRAIN_TIMEOUT = 5.0

#: Seconds the accounting line at shutdown may take to write.
SUMMARY_TIMEOUT = 1.0

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class TextFormatter(logging.Formatter):
    """The classic one-line format, with control characters shown escaped."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return literal(text, multiline=True)


class JsonFormatter(logging.Formatter):
    """One JSON object per record (for log shippers).

    Example:
        >>> r = logging.LogRecord("conveyor.worker", logging.INFO, "", 0, "hi %s", ("x",), None)
        >>> doc = json.loads(JsonFormatter().format(r))
        >>> doc["level"], doc["logger"], doc["message"]
        ('INFO', 'conveyor.worker', 'hi x')
    """

    def format(self, record: logging.LogRecord) -> str:
        ts = dt.datetime.fromtimestamp(record.created, dt.UTC)
        doc: dict[str, Any] = {
            "ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, EVENT_FIELDS, None)
        if fields:
            doc.update(fields)
        ctx = current_or_none()
        if ctx is not None and "job_id" not in doc:
            doc["job_id"], doc["task"] = ctx.id, ctx.task
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str, ensure_ascii=False)


def make_formatter(fmt: str) -> logging.Formatter:
    """The formatter for ``--log-format``: ``text`` or ``json``."""
    if fmt == "json":
        return JsonFormatter()
    if fmt == "text":
        return TextFormatter()
    raise ValueError(f"unknown log format {fmt!r}; use one of {', '.join(FORMATS)}")


class QueuedStreamHandler(logging.Handler):
    """A handler whose ``emit`` never waits on the stream (see the module docstring)."""

    def __init__(
        self,
        stream: TextIO,
        formatter: logging.Formatter,
        *,
        level: int = logging.NOTSET,
        max_bytes: int = MAX_BYTES,
        max_lines: int = MAX_LINES,
        report_every: float = REPORT_EVERY,
    ) -> None:
        super().__init__(level)
        self.setFormatter(formatter)
        self.stream = stream
        self.report_every = report_every
        self.writer: BoundedWriter[str] = BoundedWriter(
            self._write,
            max_items=max_lines,
            batch=BATCH,
            name="conveyor-console",
            max_bytes=max_bytes,
            size=len,
            after_batch=self._report_drops,
        )
        self._reported = 0
        self._reported_at = -float("inf")
        self._window_start = time.monotonic()

    # -- the caller side -----------------------------------------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
        except Exception:
            self.handleError(record)
            return
        self.writer.offer(line)

    # The base class takes a lock around emit; formatting and offer() need none, and a
    # lock here would make every logging thread wait for the others' formatting.
    def handle(self, record: logging.LogRecord) -> bool:
        if self.filter(record):
            self.emit(record)
        return True

    # -- the writer thread ---------------------------------------------------------------

    def _write(self, lines: Sequence[str]) -> int:
        self.stream.write("".join(lines))
        self.stream.flush()
        return len(lines)

    def _report_drops(self) -> None:
        dropped = self.writer.dropped
        now = time.monotonic()
        if dropped == self._reported or now - self._reported_at < self.report_every:
            return
        new, since = dropped - self._reported, now - self._window_start
        self._reported, self._reported_at, self._window_start = dropped, now, now
        self._print(
            logging.WARNING,
            "%d log line(s) dropped in the last %.1f s: stderr is read more slowly than "
            "the worker logs (%d dropped so far)",
            new,
            since,
            dropped,
            fields={"event": "log.dropped", "dropped": new, "dropped_total": dropped},
        )

    def _print(self, level: int, msg: str, *args: object, fields: dict[str, Any]) -> None:
        """Write one line of our own straight to the stream (never counted, never queued)."""
        record = logging.LogRecord("conveyor.console", level, __file__, 0, msg, args, None)
        setattr(record, EVENT_FIELDS, fields)
        try:
            self.stream.write(self.format(record) + "\n")
            self.stream.flush()
        except Exception:  # a closed stderr: nothing left to tell
            pass

    def _print_within(
        self, timeout: float, level: int, msg: str, *args: object, fields: dict[str, Any]
    ) -> None:
        thread = threading.Thread(
            target=lambda: self._print(level, msg, *args, fields=fields),
            name="conveyor-console-summary",
            daemon=True,
        )
        thread.start()
        thread.join(timeout)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.writer.start()

    def drain(self, timeout: float) -> int:
        """Write what is queued for at most ``timeout`` seconds, then print the accounting
        line; returns the number of lines that could not be written."""
        started = time.monotonic()
        left = self.writer.stop(timeout)
        w = self.writer
        lost = w.dropped + w.failed + left
        if w.emitted == 0 or (not lost and self.level > logging.INFO):
            return left  # nothing was logged (a start-up error) or the level hides it
        # Written by a thread of its own with a deadline too: a reader that stopped for
        # good must not keep the process from exiting.
        self._print_within(
            SUMMARY_TIMEOUT,
            logging.WARNING if lost else logging.INFO,
            "log lines: emitted=%d written=%d dropped=%d failed=%d unwritten=%d "
            "(drained in %.2f s)",
            w.emitted,
            w.written,
            w.dropped,
            w.failed,
            left,
            time.monotonic() - started,
            fields={
                "event": "log.summary",
                "emitted": w.emitted,
                "written": w.written,
                "dropped": w.dropped,
                "failed": w.failed,
                "unwritten": left,
            },
        )
        return left


def install(level: int, fmt: str = "text", stream: TextIO | None = None) -> QueuedStreamHandler:
    """Print the root logger's records at ``level`` and above on ``stream`` (stderr)."""
    handler = QueuedStreamHandler(stream or sys.stderr, make_formatter(fmt), level=level)
    handler.start()
    root = logging.getLogger()
    root.setLevel(level)
    root.addHandler(handler)
    return handler


def uninstall(handler: QueuedStreamHandler, timeout: float = DRAIN_TIMEOUT) -> int:
    """Drain ``handler`` (with a deadline) and put a plain synchronous handler in its
    place, so a line logged while the process exits still reaches stderr."""
    root = logging.getLogger()
    root.removeHandler(handler)
    left = handler.drain(timeout)
    fallback = logging.StreamHandler(handler.stream)
    fallback.setFormatter(handler.formatter)
    fallback.setLevel(handler.level)
    root.addHandler(fallback)
    return left
