"""Throughput over time: a small in-memory ring of queue samples, one ring per app.

Backends keep counts, not history, so the dashboard samples ``queue_stats`` every few
seconds and derives throughput from the change in finished jobs between two samples.
Deletes and retention can make a finished count go down; a negative change is read as
zero rather than as negative throughput. History starts when the dashboard starts and
is lost on restart, which is fine for "is it moving right now" and why nothing is stored.

Example:
    >>> ring = SampleRing(maxlen=3)
    >>> ring.add(Sample(at=0.0, depth={"q": {"queued": 4}}, finished={"q": 10}))
    >>> ring.add(Sample(at=5.0, depth={"q": {"queued": 1}}, finished={"q": 13}))
    >>> ring.throughput("q")
    [0.6]
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import threading

from conveyor.backends.base import QueueStats
from conveyor.states import FINISHED_STATES


@dataclasses.dataclass(frozen=True, slots=True)
class Sample:
    at: float
    depth: dict[str, dict[str, int]]  # queue -> state -> count
    finished: dict[str, int]  # queue -> succeeded + dead + cancelled

    @classmethod
    def from_stats(cls, at: float, stats: list[QueueStats]) -> Sample:
        return cls(
            at=at,
            depth={s.queue: dict(s.counts) for s in stats},
            finished={
                s.queue: sum(s.counts.get(st.value, 0) for st in FINISHED_STATES) for s in stats
            },
        )


class SampleRing:
    """The last ``maxlen`` samples; thread-safe (the sampler and requests share it)."""

    def __init__(self, maxlen: int = 120) -> None:
        self._samples: collections.deque[Sample] = collections.deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def add(self, sample: Sample) -> None:
        with self._lock:
            self._samples.append(sample)

    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._samples)

    def throughput(self, queue: str) -> list[float]:
        """Finished jobs per second of ``queue`` between consecutive samples."""
        points = self.samples()
        rates = []
        for before, after in itertools.pairwise(points):
            elapsed = after.at - before.at
            delta = after.finished.get(queue, 0) - before.finished.get(queue, 0)
            rates.append(round(max(0, delta) / elapsed, 3) if elapsed > 0 else 0.0)
        return rates

    def total_throughput(self) -> list[float]:
        """Finished jobs per second over every queue."""
        queues = {q for s in self.samples() for q in s.finished}
        series = [self.throughput(q) for q in sorted(queues)]
        return [round(sum(vals), 3) for vals in zip(*series, strict=True)] if series else []
