"""Search indexer: indexes the jobs written since the store's search index last caught
up (SQLite's FTS5, PostgreSQL's search table: ``search_index_catch_up``), so the writes
themselves never index (docs/search.md, "Indexed after the fact").

Every worker of a store whose index is on runs one; several at once are harmless (each
batch is one short transaction over the oldest pending writes; an idle tick is one
read and takes no lock). A search indexes a batch itself before it reads, and matches
what is still pending row by row, so answers never wait for this service: it keeps that
tail short.

Example::

    SearchIndexer(worker, interval=1.0).start()
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from conveyor.worker.services.base import Looper

if TYPE_CHECKING:
    from conveyor.worker.worker import Worker

log = logging.getLogger("conveyor.worker")

#: At most this many batches per tick, so one tick never monopolises the store.
MAX_BATCHES = 20


class CatchesUp(Protocol):
    def search_index_catch_up(self) -> int: ...


class SearchIndexer(Looper):
    name = "search-indexer"

    def __init__(self, worker: Worker, interval: float = 1.0) -> None:
        super().__init__(interval)
        self.worker = worker
        #: pending writes indexed so far
        self.indexed = 0

    def tick(self) -> None:
        backend: CatchesUp = self.worker.app.backend  # type: ignore[assignment]
        for _ in range(MAX_BATCHES):
            if self._stop.is_set():
                return
            n = backend.search_index_catch_up()
            self.indexed += n
            if n == 0:
                return
