"""Wake-ups for waiters on one SQLite file, without busy polling.

Two paths. In the same process, every committed write bumps a generation counter and
notifies a condition variable (qler's fix in seed 000: a waiter learns at once, no poll).
Across processes, a waiter reads ``PRAGMA data_version``, which changes when another
connection commits; it costs no disk read, so the waiter polls it on a short interval
that grows while nothing happens (0.2 ms after activity, up to ``MAX_POLL`` when idle) —
low latency under load, a few polls a second when idle.

Example:
    >>> n = notifier_for("/tmp/example.db")
    >>> gen = n.generation
    >>> n.bump()
    >>> n.generation == gen + 1
    True
"""

from __future__ import annotations

import threading

#: First poll interval after activity (seconds): an enqueue -> result round trip takes ~1
#: ms, so a waiter must look again that soon (BENCHMARKS.md#w2-sequential-round-trip-enqueue---worker---result-ms-idle-cpu--of-a-core).
#: 0.2 ms growing 1.3x looks at 0.2, 0.46, 0.8, 1.24 ms where 0.5 ms growing 1.5x looked
#: at 0.5, 1.25, 2.4: W2's p50 fell 1.69-1.72 -> 1.19-1.50 ms (BENCHMARKS.md, quiet-box
#: figures); a data_version read costs microseconds and the interval still reaches
#: MAX_POLL after ~20 idle polls.
MIN_POLL = 0.0002
#: Longest poll interval when idle: ~20 polls/s, well under 1% of a core.
MAX_POLL = 0.05
#: Growth factor of the interval per idle poll.
POLL_GROWTH = 1.3


class Notifier:
    """A generation counter with a condition, shared by every backend on one file."""

    __slots__ = ("_cond", "_waiting", "generation")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self.generation = 0
        #: threads inside wait(), counted under the lock: a commit with nobody waiting
        #: (every single enqueue of a producer) skips notify_all's Python-level work
        self._waiting = 0

    def bump(self) -> None:
        """Record a commit and wake every waiter in this process."""
        with self._cond:
            self.generation += 1
            if self._waiting:
                self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Wait until the generation moves past ``seen`` or ``timeout``; return it."""
        with self._cond:
            if self.generation == seen and timeout > 0:
                self._waiting += 1
                try:
                    self._cond.wait(timeout)
                finally:
                    self._waiting -= 1
            return self.generation


_registry: dict[str, Notifier] = {}
_registry_lock = threading.Lock()


def notifier_for(key: str) -> Notifier:
    """The process-wide notifier of one database (by absolute path or memory name)."""
    with _registry_lock:
        found = _registry.get(key)
        if found is None:
            found = _registry[key] = Notifier()
        return found
