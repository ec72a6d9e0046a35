"""Seed 002's experiment on a real worker: a slow reader of stderr must not slow jobs.

200 jobs each log one 16 KiB line (three such batches per worker; the fastest counts). With stderr read at 256 KiB/s (3.2 MB would take
12.5 s to read), a synchronous console handler made the batch take 13.1 s against 0.19 s
with a fast reader. The worker's handler queues lines (bounded, ``put_nowait``) and
drops what does not fit, so the batch time (enqueue -> all succeeded in the store) stays
within 1.5x of the fast-reader run, and the shutdown line accounts for every line:
``emitted == written + dropped`` (nothing unwritten or failed), ``written`` being the
number of lines the reader actually received.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import conveyor
from conveyor.task import Args
from tests.integration import log_tasks
from tests.integration.conftest import ROOT, wait_for, worker_env

pytestmark = pytest.mark.slow

JOBS = 200
LINE = 16 * 1024
SLOW = 256 * 1024  # bytes per second
CHUNK = 4096  # the seed's reader waited after every 4096 bytes
BATCHES = 3  # per worker; a batch takes ~0.1 s with either reader


class Reader:
    """Reads a pipe to EOF, at most ``rate`` bytes per second (None: as fast as it can)."""

    def __init__(self, fd: int, rate: int | None) -> None:
        self.fd = fd
        self.rate = rate
        self.data = bytearray()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        started = time.monotonic()
        while True:
            chunk = os.read(self.fd, CHUNK if self.rate else 1 << 16)
            if not chunk:
                return
            self.data += chunk
            if self.rate:  # never ahead of rate * elapsed
                ahead = len(self.data) / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)

    def has(self, needle: bytes) -> bool:
        return needle in self.data

    def finish(self, timeout: float) -> str:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "stderr was not closed"
        return self.data.decode()


def _wait_succeeded(app: conveyor.App, n: int, timeout: float = 60.0) -> None:
    """Poll the store every 5 ms until ``n`` jobs have succeeded."""
    deadline = time.monotonic() + timeout
    while sum(s.counts.get("succeeded", 0) for s in app.backend.queue_stats()) < n:
        assert time.monotonic() < deadline, f"fewer than {n} jobs succeeded in {timeout} s"
        time.sleep(0.005)


@pytest.fixture
def app() -> Iterator[conveyor.App]:
    yield log_tasks.app
    log_tasks.app.close()


def _run(app: conveyor.App, url: str, rate: int | None) -> tuple[float, dict[str, int], str]:
    """One worker on a store of its own, ``BATCHES`` batches: (seconds from enqueue to
    all succeeded of the fastest batch, counts, stderr)."""
    app.close()
    app.url = url
    proc = subprocess.Popen(
        [sys.executable, "-m", "conveyor.cli", "worker", f"{log_tasks.__name__}:app"],
        cwd=ROOT,
        env=worker_env(url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        reader = Reader(proc.stderr.fileno(), rate)
        wait_for(lambda: reader.has(b" ready: "), what="the worker to start")
        times = []
        for batch in range(1, BATCHES + 1):
            started = time.monotonic()
            log_tasks.chatty.enqueue_many([Args(LINE) for _ in range(JOBS)])
            _wait_succeeded(app, batch * JOBS)
            times.append(time.monotonic() - started)
        took = min(times)  # the least disturbed batch: the box is shared
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        text = reader.finish(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
    summary = re.search(
        r"log lines: emitted=(\d+) written=(\d+) dropped=(\d+) failed=(\d+) unwritten=(\d+)",
        text,
    )
    assert summary, text[-2000:]
    names = ("emitted", "written", "dropped", "failed", "unwritten")
    counts = dict(zip(names, map(int, summary.groups()), strict=True))
    # Lines received that went through the queue (the console's own reports do not).
    counts["received"] = sum(
        1 for line in text.splitlines() if line and " conveyor.console: " not in line
    )
    counts["chatty_received"] = text.count("x" * LINE)
    return took, counts, text


def test_a_slow_stderr_reader_costs_dropped_lines_not_job_time(
    app: conveyor.App, tmp_path: Path
) -> None:
    fast_time, fast, _ = _run(app, f"sqlite:///{tmp_path / 'fast.db'}", rate=None)
    slow_time, slow, text = _run(app, f"sqlite:///{tmp_path / 'slow.db'}", rate=SLOW)
    for counts in (fast, slow):
        assert counts["emitted"] == counts["written"] + counts["dropped"], counts
        assert counts["failed"] == counts["unwritten"] == 0, counts
        assert counts["received"] == counts["written"], counts  # what it said it wrote
    assert fast["chatty_received"] + fast["dropped"] >= BATCHES * JOBS
    # The slow reader really was too slow (lines were dropped, and said so)...
    assert slow["dropped"] > fast["dropped"], (fast, slow)
    assert re.search(r"WARNING conveyor\.console: \d+ log line\(s\) dropped", text)
    # ...and the jobs did not wait for it.
    assert slow_time <= 1.5 * fast_time, (fast_time, slow_time)
