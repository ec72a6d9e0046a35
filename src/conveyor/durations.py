"""Run and wait times per task over a recent window (the dashboard's "Durations" and
``conveyor status --json``'s ``durations``), from the store's ``job_durations``: the
jobs that ran and finished since then (succeeded, dead, cancelled after a start), at
most :data:`SAMPLE` of them, newest first. Wait is from when the job was due
(``run_at``: its enqueue, delay or retry backoff) to its start; run is from start to
finish. Percentiles are nearest-rank over those jobs.

Example:
    >>> from conveyor.backends.base import DurationSample
    >>> rows = [DurationSample("t", wait=w / 10, run=float(w), finished_at=0.0) for w in range(1, 101)]
    >>> d = summarize(rows)[0]
    >>> d.task, d.jobs, d.run, d.wait
    ('t', 100, (50.0, 95.0, 99.0), (5.0, 9.5, 9.9))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from conveyor.backends.base import Backend, DurationSample, JobDurationsParams
from conveyor.records import record

#: The window's jobs read at most (the newest finishes): a busy hour stays one small read.
SAMPLE = 10_000
#: The percentiles shown, in order.
PERCENTILES = (50, 95, 99)


@record
class TaskDurations:
    """One task's percentiles (p50, p95, p99) in seconds, over ``jobs`` jobs."""

    task: str
    jobs: int
    run: tuple[float, ...]
    wait: tuple[float, ...]

    def as_json(self) -> dict[str, Any]:
        def named(values: tuple[float, ...]) -> dict[str, float]:
            return {f"p{p}": v for p, v in zip(PERCENTILES, values, strict=True)}

        return {"task": self.task, "jobs": self.jobs, "run": named(self.run),
                "wait": named(self.wait)}  # fmt: skip


def percentiles(values: Sequence[float]) -> tuple[float, ...]:
    """Nearest-rank p50, p95, p99 of ``values`` (not empty)."""
    ordered = sorted(values)
    return tuple(ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] for p in PERCENTILES)


def summarize(samples: Sequence[DurationSample]) -> list[TaskDurations]:
    """Per task, most jobs first (then by name). Negative waits (a job started before its
    ``run_at``: an operator's "run now", or clocks apart) count as 0."""
    by_task: dict[str, list[DurationSample]] = {}
    for s in samples:
        by_task.setdefault(s.task, []).append(s)
    out = [
        TaskDurations(
            task,
            len(rows),
            percentiles([max(0.0, r.run) for r in rows]),
            percentiles([max(0.0, r.wait) for r in rows]),
        )
        for task, rows in by_task.items()
    ]
    return sorted(out, key=lambda d: (-d.jobs, d.task))


def recent(backend: Backend, now: float, window: float = 3600.0) -> tuple[list[TaskDurations], int]:
    """The summaries of the last ``window`` seconds, and how many jobs they cover (equal
    to :data:`SAMPLE` when the window held more: then they are its newest jobs)."""
    samples = backend.job_durations(JobDurationsParams(since=now - window, limit=SAMPLE))
    return summarize(samples), len(samples)
