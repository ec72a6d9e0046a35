"""Many equally weighted queues as one claim's queue list, walked in turn.

A worker with a queue per tenant consumes thousands of queues, most of them empty at
any moment. Handing each claim a list of ``(queue, share)`` pairs costs O(queues) per
claim in the worker and, in a store that asks each queue, O(queues) statements or keys
(bench W7: 10,000 queues kept under 6% of one queue's throughput). A :class:`QueueRing`
is built once per worker: a claim's ``JobClaimParams.queues`` is the ring itself, a lazy
view of that list -- every queue's share is one job, in the worker's order, starting
at :attr:`start` and wrapping -- so a store that iterates it claims as before (one job
from each queue in order, then a top-up from the same queues). Stores that know it
(the SQL engine, Redis, memory) instead walk it in :meth:`chunk`\\ s, asking each chunk
for one job per non-empty queue in one statement or script call, until the claim is
full or the ring is walked, and then call :meth:`resume` with the last queue served:
the next claim starts after it, so tenants are served round robin, one job each before
any gets a second, whatever the number of queues.

Example:
    >>> ring = QueueRing(["a", "b", "c"])
    >>> list(ring)
    [('a', 1), ('b', 1), ('c', 1)]
    >>> ring.resume("a")
    >>> list(ring), ring.chunk(0, 2), ring.chunk(2, 5)
    ([('b', 1), ('c', 1), ('a', 1)], ['b', 'c'], ['a'])
    >>> ring.chunk_json(1, 2)
    '["c","a"]'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import overload


class QueueRing(Sequence[tuple[str, int]]):
    """The consumed queues, one job's share each, starting at :attr:`start` (see the
    module docstring). Not thread-safe: one claim at a time uses it (a worker's fetcher)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)
        self._index = {name: i for i, name in enumerate(self.names)}
        # Each name's JSON text with its offset in the array's text, so that a chunk's
        # JSON is a slice (or two) of one string: no per-claim encoding of many names.
        parts = [json.dumps(n, separators=(",", ":")) for n in self.names]
        self._json = ",".join(parts)
        self._offsets = [0] * (len(parts) + 1)
        at = 0
        for i, part in enumerate(parts):
            self._offsets[i] = at
            at += len(part) + 1
        self._offsets[-1] = at  # one past the last comma (which is not there)
        #: Where the next claim starts (an index into :attr:`names`).
        self.start = 0

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, i: int) -> tuple[str, int]: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[str, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[str, int] | Sequence[tuple[str, int]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self.names)
        if not -n <= i < n:
            raise IndexError(i)
        return (self.names[(self.start + i) % n], 1)

    def __iter__(self) -> Iterator[tuple[str, int]]:
        names, start = self.names, self.start
        for k in range(start, start + len(names)):
            yield (names[k % len(names)], 1)

    def resume(self, served: str) -> None:
        """The last queue a claim took a job from: the next claim starts after it."""
        i = self._index.get(served)
        if i is not None:
            self.start = (i + 1) % len(self.names)

    def position(self, queue: str) -> int:
        """``queue``'s place in this claim's order (0 = asked first); -1 if not consumed."""
        i = self._index.get(queue)
        return -1 if i is None else (i - self.start) % len(self.names)

    def chunk(self, at: int, size: int) -> list[str]:
        """The names at places ``at`` .. ``at + size - 1`` of this claim's order, never
        past the end of one turn."""
        n = len(self.names)
        lo, hi = self.start + at, self.start + min(at + size, n)
        if hi <= n:
            return list(self.names[lo:hi])
        return list(self.names[lo:] if lo < n else ()) + list(self.names[max(lo - n, 0) : hi - n])

    def chunk_json(self, at: int, size: int) -> str:
        """:meth:`chunk` as a JSON array's text, cut out of one string built once."""
        n, off, text = len(self.names), self._offsets, self._json
        lo, hi = self.start + at, self.start + min(at + size, n)
        if hi <= n:
            return "[" + text[off[lo] : off[hi] - 1] + "]"
        if lo >= n:
            return "[" + text[off[lo - n] : off[hi - n] - 1] + "]"
        return "[" + text[off[lo] :] + "," + text[: off[hi - n] - 1] + "]"


def ring_of(queues: Sequence[tuple[str, int]]) -> QueueRing | None:
    """``queues`` when a claim was handed a ring, else None."""
    return queues if isinstance(queues, QueueRing) else None


#: The first chunk of a walk: this many names per job the claim wants (at least
#: FIRST_CHUNK_MIN); each further chunk is CHUNK_GROWTH times the one before, so a ring
#: of mostly empty queues is walked in a few statements (10,000 names: about five).
CHUNK_PER_JOB = 4
FIRST_CHUNK_MIN = 64
CHUNK_GROWTH = 4


def chunk_sizes(total: int, ring_len: int) -> Iterator[tuple[int, int]]:
    """The ``(at, size)`` chunks of one walk over a ring of ``ring_len`` names.

    >>> list(chunk_sizes(8, 1000))
    [(0, 64), (64, 256), (320, 680)]
    """
    at, size = 0, max(total * CHUNK_PER_JOB, FIRST_CHUNK_MIN)
    while at < ring_len:
        size = min(size, ring_len - at)
        yield at, size
        at += size
        size *= CHUNK_GROWTH


__all__: Sequence[str] = ("QueueRing", "chunk_sizes", "ring_of")
