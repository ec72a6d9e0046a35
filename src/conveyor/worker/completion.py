"""How a worker writes the finishes of its jobs: the completion strategies.

* :class:`GroupCommit` -- every finish goes to the :class:`~conveyor.worker.completer.
  Completer` thread, which writes them in batches (one transaction / script per batch).
* :class:`RideOnClaim` -- a one-slot worker's finishes wait for its next claim and are
  written with it (``job_finish_and_claim``: one transaction per job instead of two, on a
  store that declares ``ack_with_claim``). Finishes that wait too long (a slow job behind
  them in a prefetched batch) go to the completer instead (:class:`Flusher`).

Chosen once, when the worker is built (``Worker._wire``, by
``conveyor.worker.fetching.inline_executor``).

Example::

    completion = RideOnClaim(completer)
    completion.put(params)            # from Attempts.end
    batch = completion.take()         # the fetcher, just before its claim
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

from conveyor.backends.base import JobFinishParams
from conveyor.worker.completer import Completer
from conveyor.worker.services.base import Looper

#: One-slot worker with prefetch: a finish held for the next claim for longer than this
#: (seconds) is written by the completer instead.
FLUSH_AFTER = 0.05


class CompletionStrategy(Protocol):
    def put(self, params: JobFinishParams) -> None:
        """Take one finish to be written (never blocks on the store)."""
        ...


class GroupCommit:
    """Finishes go to the completer thread, written in batches."""

    __slots__ = ("put",)

    def __init__(self, completer: Completer) -> None:
        self.put = completer.put


class RideOnClaim:
    """Finishes held for the fetcher's next claim. Guarded by a lock: with prefetch, the
    flusher may take them first."""

    def __init__(self, completer: Completer) -> None:
        self._completer = completer
        self._held: list[JobFinishParams] = []
        self._lock = threading.Lock()

    def put(self, params: JobFinishParams) -> None:
        with self._lock:
            self._held.append(params)

    def take(self) -> list[JobFinishParams]:
        """Every held finish, to write with the claim being made now."""
        with self._lock:
            batch, self._held = self._held, []
        return batch

    def give_back(self, batch: list[JobFinishParams]) -> None:
        """The claim failed: keep the finishes, first in line, for the next one."""
        with self._lock:
            self._held[:0] = batch

    def flush(self, older_than: float | None = None) -> None:
        """Hand held finishes to the completer: all of them (stopping, quiet), or all
        once the oldest finished ``older_than`` seconds ago (the flusher)."""
        with self._lock:
            if not self._held:
                return
            oldest = self._held[0].finished_at or 0.0
            if older_than is not None and time.time() - oldest < older_than:
                return
            batch, self._held = self._held, []
        for params in batch:
            self._completer.put(params)


class Flusher(Looper):
    """Hands a one-slot worker's held finishes to the completer once they are old: a slow
    job later in a prefetched batch must not hold back the results of the ones before."""

    name = "flusher"

    def __init__(self, completion: RideOnClaim) -> None:
        super().__init__(FLUSH_AFTER / 2)
        self.completion = completion

    def tick(self) -> None:
        self.completion.flush(older_than=FLUSH_AFTER)
