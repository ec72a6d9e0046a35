"""The overview's "Durations" section: run and wait time percentiles per task over the
last hour, from the store (conveyor/durations.py), the tasks with most jobs first and at
most :data:`TASKS` of them, so the page stays small whatever the number of tasks.

Example:
    >>> from conveyor.durations import TaskDurations
    >>> html = durations_section([TaskDurations("mail.send", 3, (0.2, 1.5, 2.0), (0.0, 4.0, 9.0))], 3)
    >>> "mail.send" in html and "1.50 s" in html
    True
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from conveyor import durations
from conveyor.backends.base import Backend
from conveyor.durations import PERCENTILES, SAMPLE, TaskDurations
from conveyor.web.html import duration, esc, table, url

#: Tasks shown (the busiest).
TASKS = 20


class RecentDurations:
    """The last hour's durations, read from the store at most every ``every`` seconds
    (the overview refreshes every 5 s, in as many tabs as are open; the read is up to
    :data:`~conveyor.durations.SAMPLE` rows a state). Thread-safe, like the throughput
    cache: page requests run in a thread pool and share one instance. With
    ``background=True`` (the dashboard's) only the first read is made by a request; later
    ones run in a thread while pages get the last answer (the read took 0.25-2.6 s with
    500,000 jobs finished in the hour; BENCHMARKS.md)."""

    def __init__(self, every: float = 30.0, *, background: bool = False) -> None:
        self.every = every
        self.background = background
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._refreshing = False
        self._found: tuple[list[TaskDurations], int] = ([], 0)

    def read(self, backend: Backend, now: float) -> tuple[list[TaskDurations], int]:
        with self._lock:
            at = self._read_at
            if at is None or not at <= now < at + self.every:
                if at is None or not self.background:
                    self._found, self._read_at = durations.recent(backend, now), now
                elif not self._refreshing:
                    self._refreshing = True
                    threading.Thread(
                        target=self._refresh, args=(backend, now), name="durations", daemon=True
                    ).start()
            return self._found

    def _refresh(self, backend: Backend, now: float) -> None:
        try:
            found = durations.recent(backend, now)
        except Exception:  # a store closed or gone under it: the next page tries again
            found = None
        with self._lock:
            if found is not None:
                self._found, self._read_at = found, now
            self._refreshing = False


def durations_section(found: Sequence[TaskDurations], jobs: int) -> str:
    """A table: task, jobs, run p50/p95/p99, wait p50/p95/p99."""
    headers = ["task", "jobs", *(f"run p{p}" for p in PERCENTILES),
               *(f"wait p{p}" for p in PERCENTILES)]  # fmt: skip
    rows = [
        [
            f'<a href="{url("/jobs", {"task": d.task})}">{esc(d.task)}</a>',
            str(d.jobs),
            *(duration(0.0, v) for v in d.run),
            *(duration(0.0, v) for v in d.wait),
        ]
        for d in found[:TASKS]
    ]
    of = f"the newest {jobs:,} jobs of the last hour" if jobs >= SAMPLE else f"{jobs:,} jobs"
    more = f", the {TASKS} busiest of {len(found)} tasks" if len(found) > TASKS else ""
    return (
        f'<h2>Durations <span class="muted">(last hour, from the store: {of} that ran and '
        f"finished{more}; wait is from due to start)</span></h2>"
        + table(headers, rows, empty="No job finished in the last hour.", cls="durations")
    )
