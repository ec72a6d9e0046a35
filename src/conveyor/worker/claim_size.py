"""How many jobs a worker may claim beyond its free slots (prefetch), fixed or sized from
the job durations it observes.

``prefetch="auto"`` (the default): short jobs are claimed in batches, long jobs are not
hoarded. The allowance is the number of jobs this worker's slots would start within
:data:`HORIZON` seconds at the mean run time seen so far, capped at :data:`AUTO_MAX`; it
is 0 until the first job finished (the first claim is strict) and whenever jobs take
longer than ``HORIZON * concurrency`` each. So a job enqueued now, of any priority,
waits behind at most ``AUTO_MAX`` prefetched jobs of one worker, which by the estimate
take about ``HORIZON`` to get through, and one worker holds at most ``concurrency +
AUTO_MAX`` jobs. ``prefetch=N`` fixes the allowance at N; ``prefetch=0`` claims strictly
for free slots. docs/guarantees.md, "Prefetch", says what a prefetched job is.

Example:
    >>> claims = ClaimAllowance("auto", concurrency=10)
    >>> claims.extra()
    0
    >>> claims.observe(0.001)        # a 1 ms job: 10 slots start 100 of them in 10 ms
    >>> claims.extra()
    32
    >>> for _ in range(50):
    ...     claims.observe(1.0)      # 1 s jobs: nothing beyond the free slots
    >>> claims.extra()
    0
    >>> ClaimAllowance(16, concurrency=1).extra()
    16
    >>> ClaimAllowance(0, concurrency=1, floor=100).extra()   # serves Batch(size=100)
    100

A worker that serves a batch task (``Batch(size=N)``, worker/batching.py) claims at
least ``N`` beyond its free slots whatever the setting: a call gathers up to ``N`` of
its claimed jobs, and the next call's jobs wait claimed while one runs.
"""

from __future__ import annotations

# Re-exported: the values a prefetch setting may take are defined below the config files.
from conveyor.worker_options import AUTO as AUTO
from conveyor.worker_options import Prefetch as Prefetch
from conveyor.worker_options import parse_prefetch as parse_prefetch

#: Auto: prefetch what the slots would start within this many seconds.
HORIZON = 0.01
#: Auto: never more than this many jobs beyond the free slots (the hoarding bound).
AUTO_MAX = 32
#: Weight of the newest duration in the running mean: a long job after many short ones
#: shrinks the allowance at once (1 s after 0.1 ms jobs: mean ~0.1 s, allowance <= 1).
WEIGHT = 0.2


class ClaimAllowance:
    """The prefetch allowance of one worker; ``observe`` is called as each job finishes."""

    __slots__ = ("_budget", "_extra", "_mean", "fixed", "floor")

    def __init__(self, prefetch: Prefetch, concurrency: int, floor: int = 0) -> None:
        #: The allowance when set by hand (``None``: auto).
        self.fixed: int | None = None if prefetch == AUTO else int(prefetch)
        self._budget = HORIZON * concurrency  # slot-seconds of work the buffer may hold
        self._mean: float | None = None
        #: the least allowance: the largest batch size of the tasks served (0: none)
        self.floor = floor
        self._extra = max(self.fixed or 0, floor)

    @property
    def auto(self) -> bool:
        return self.fixed is None

    def observe(self, seconds: float) -> None:
        """One job ran ``seconds`` (start to finish). Called from the slots' threads
        without a lock: an update lost to a race drops one sample of a running mean."""
        if self.fixed is not None:
            return
        mean = self._mean
        mean = seconds if mean is None else mean + WEIGHT * (seconds - mean)
        self._mean = mean
        extra = AUTO_MAX if mean <= 0 else min(AUTO_MAX, int(self._budget / mean))
        self._extra = max(extra, self.floor)

    def extra(self) -> int:
        """Jobs to claim beyond the free slots now."""
        return self._extra
