"""Throughput history for the overview chart, read from the store (never sampled).

The store answers "jobs finished per minute since T" (``job_finished_histogram``, from
the jobs' own finish times), so the chart shows the last hour as soon as the dashboard
starts, and every dashboard on one store shows the same numbers. Deleted or purged jobs
leave the history; a manual retry takes a job out of it until it finishes again.

Complete minutes rarely change, so a :class:`ThroughputHistory` re-reads the whole hour
only every ``full_every`` seconds (or 100 times as long as that read took, if longer)
and otherwise just the minutes since its last read: an overview open in several tabs,
refreshing every 5 s, stays cheap on a busy store. With ``background=True`` (the
dashboard's) that re-read runs in a thread of its own after the first: no page waits for
it (2.5 s with 500,000 jobs finished in the hour; BENCHMARKS.md), each is served the
hour as last read plus its newest minutes.

Example:
    >>> import time
    >>> from conveyor.backends.sqlite.backend import SQLiteBackend
    >>> history = ThroughputHistory(minutes=3).read(SQLiteBackend("sqlite:///:memory:"), time.time())
    >>> len(history.starts), history.starts[1] - history.starts[0], history.totals()
    (3, 60.0, [0, 0, 0])
"""

from __future__ import annotations

import dataclasses
import threading
import time

from conveyor.backends.base import Backend, FinishedBucket, JobFinishedHistogramParams
from conveyor.states import JobState

#: A full read of the window is at least this many times its own duration apart.
FULL_SPACING = 100
#: The states the chart stacks, bottom up (the finished states of :mod:`conveyor.states`).
CHART_STATES = (JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED, JobState.EXPIRED)


@dataclasses.dataclass(frozen=True, slots=True)
class History:
    """Finished jobs per bucket: ``starts[i]`` is bucket i's first second (UTC epoch)."""

    starts: list[float]
    bucket_s: int
    buckets: list[FinishedBucket]

    def _series(self, keep: set[JobState] | None, queue: str | None) -> list[int]:
        index = {start: i for i, start in enumerate(self.starts)}
        out = [0] * len(self.starts)
        for b in self.buckets:
            i = index.get(b.start)
            wanted = (keep is None or b.state in keep) and (queue is None or b.queue == queue)
            if i is not None and wanted:
                out[i] += b.count
        return out

    def by_state(self) -> dict[JobState, list[int]]:
        """Counts per bucket for each chart state (every state present, zeros included)."""
        return {s: self._series({s}, None) for s in CHART_STATES}

    def totals(self, queue: str | None = None) -> list[int]:
        """All finished jobs per bucket, of one queue or of all."""
        return self._series(None, queue)

    def by_queue(self, queues: set[str]) -> dict[str, list[int]]:
        """``totals`` of each of ``queues`` in one pass over the buckets (a page of 100
        queues on a store of 10,000 busy ones reads them once, not 100 times)."""
        index = {start: i for i, start in enumerate(self.starts)}
        out = {q: [0] * len(self.starts) for q in queues}
        for b in self.buckets:
            i, series = index.get(b.start), out.get(b.queue)
            if i is not None and series is not None:
                series[i] += b.count
        return out


class ThroughputHistory:
    """The last ``minutes`` buckets of ``bucket_s`` seconds, the current one last.

    Thread-safe: page requests run in a thread pool and share one instance.
    """

    def __init__(
        self,
        minutes: int = 60,
        bucket_s: int = 60,
        full_every: float = 60.0,
        *,
        background: bool = False,
    ) -> None:
        self.minutes = minutes
        self.bucket_s = bucket_s
        self.full_every = full_every
        self.background = background
        self._refreshing = False  # a background full read is under way
        self._lock = threading.Lock()
        self._buckets: list[FinishedBucket] = []
        self._full_at: float | None = None  # when the whole window was last read
        self._full_cost = 0.0  # how long that read took (s)
        self._fresh_from: float = 0.0  # buckets from here on are re-read every time

    def read(self, backend: Backend, now: float) -> History:
        current = now // self.bucket_s * self.bucket_s
        first = current - (self.minutes - 1) * self.bucket_s
        starts = [first + i * self.bucket_s for i in range(self.minutes)]
        with self._lock:
            # A full read that takes long (500,000 jobs finished in the hour: seconds) is
            # spaced out so that it stays about 1% of the time: the request that pays
            # for it is then rarer than one in a hundred (BENCHMARKS.md).
            spacing = max(self.full_every, FULL_SPACING * self._full_cost)
            full = self._full_at is None or not self._full_at <= now < self._full_at + spacing
            if full and self.background and self._full_at is not None:
                full = False  # this page gets the hour as last read; a thread re-reads it
                if not self._refreshing:
                    self._refreshing = True
                    threading.Thread(
                        target=self._refresh, args=(backend, now), name="throughput", daemon=True
                    ).start()
            if full:
                since, self._full_at = first, now
                kept: list[FinishedBucket] = []
            else:
                # The bucket that was current at the last read may have grown since.
                since = max(first, self._fresh_from)
                kept = [b for b in self._buckets if first <= b.start < since]
            started = time.perf_counter()
            fresh = backend.job_finished_histogram(
                JobFinishedHistogramParams(since=since, bucket_s=self.bucket_s)
            )
            if full:
                self._full_cost = time.perf_counter() - started
            self._buckets = kept + [b for b in fresh if b.start <= current]
            self._fresh_from = current
            return History(starts, self.bucket_s, list(self._buckets))

    def _refresh(self, backend: Backend, now: float) -> None:
        """The whole window re-read off the request path; the minutes from ``now``'s on
        stay as the requests since have read them (each request re-reads those)."""
        current = now // self.bucket_s * self.bucket_s
        first = current - (self.minutes - 1) * self.bucket_s
        started = time.perf_counter()
        try:
            fresh = backend.job_finished_histogram(
                JobFinishedHistogramParams(since=first, bucket_s=self.bucket_s)
            )
        except Exception:  # a store closed or gone under it: the next page tries again
            with self._lock:
                self._refreshing = False
            return
        with self._lock:
            newer = [b for b in self._buckets if b.start >= current]
            self._buckets = [b for b in fresh if b.start < current] + newer
            self._full_at, self._full_cost = now, time.perf_counter() - started
            self._refreshing = False
