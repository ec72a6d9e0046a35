"""The completer: writes attempt outcomes in batches (group commit), fenced by token.

One thread takes everything queued since its last write and writes it in one backend
call, so under load batches grow by themselves and when idle a finish is written at
once (no timer adds latency). Thresholds: at most ``MAX_BATCH`` finishes per write; the
fetcher stops claiming while more than ``MAX_PENDING`` wait (back-pressure, so a slow
store cannot grow this queue without bound). If the store is unreachable the batch is
kept and retried with backoff (a Redis outage, or a SQLite store fault such as a full
disk: ``StoreError``), with one log line when the outage starts and one when it ends:
nothing is dropped while the worker runs. A stale finish (the job was rescued
or released meanwhile) is refused by the store and logged, never forced.

Example::

    completer = Completer(backend)
    completer.start()
    completer.put(finish_params)
    completer.stop()   # flushes everything first
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

from conveyor.backends.base import Backend, JobFinishParams
from conveyor.errors import BackendUnavailable
from conveyor.worker.console import EVENT_FIELDS
from conveyor.worker.outage import Outage, OutageLog
from conveyor.worker.outcome import refused_finish

log = logging.getLogger("conveyor.worker")

MAX_BATCH = 1000
MAX_PENDING = 5000


class Completer:
    """Batches finish writes on one thread."""

    def __init__(
        self,
        backend: Backend,
        on_written: Callable[[list[JobFinishParams], list[str]], None] | None = None,
        outages: OutageLog | None = None,
    ) -> None:
        self._backend = backend
        self._queue: queue.SimpleQueue[JobFinishParams | None] = queue.SimpleQueue()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="conveyor-completer", daemon=True)
        self._on_written = on_written
        self._outage = Outage("completer", outages)
        self._abandon = threading.Event()
        self.stale_total = 0

    @property
    def pending(self) -> int:
        """Finishes queued or being written."""
        return self._pending

    def start(self) -> None:
        self._thread.start()

    def put(self, params: JobFinishParams) -> None:
        with self._lock:
            self._pending += 1
        self._queue.put(params)

    def stop(self, timeout: float | None = None) -> None:
        """Write everything queued, then stop. With ``timeout``, give up on a store that
        is still away by then: the finishes not written are logged, and their jobs, left
        ``running`` under this worker's claim, are rescued and run again."""
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._abandon.set()
            self._thread.join(1.0)

    def _loop(self) -> None:
        stopping = False
        while not stopping:
            item = self._queue.get()
            batch: list[JobFinishParams] = []
            if item is None:
                stopping = True
            else:
                batch.append(item)
            while len(batch) < MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                batch.append(more)
            if batch:
                self._write(batch)

    def _write(self, batch: list[JobFinishParams]) -> None:
        try:
            stale = self._write_retrying(batch)
        except Exception:
            # Not a store fault: a bug, or one finish the store refuses. Write them one by
            # one so that one bad finish does not hold back the others, nor kill this
            # thread (every finish of the worker goes through it).
            log.exception("writing %d finishes failed; writing them one by one", len(batch))
            stale = self.write_one_by_one(batch)
        self.report(batch, stale)
        with self._lock:
            self._pending -= len(batch)

    def write_one_by_one(self, batch: list[JobFinishParams]) -> list[str]:
        """Write each finish of a batch the store refused as a whole; the stale ids. A
        finish it refuses alone (a result over its size limit) is written as ``dead``
        with the refusal as its error (:func:`~conveyor.worker.outcome.refused_finish`):
        left ``running``, the job would be rescued and run again into the same refusal.
        Also used by the one-slot fetch loop, whose finishes go with its next claim."""
        stale: list[str] = []
        for params in batch:
            try:
                stale += self._write_retrying([params])
            except Exception as exc:
                stale += self._write_refused(params, exc)
        return stale

    def _write_refused(self, params: JobFinishParams, refusal: Exception) -> list[str]:
        dead = refused_finish(params, refusal)
        if dead is not None:
            try:
                stale = self._write_retrying([dead])
            except Exception:
                log.exception("job %s: writing it dead failed too", params.id)
            else:
                log.warning(
                    "job %s: the store refused its finish (%s: %s); it ends dead instead, "
                    "not retried",
                    params.id,
                    type(refusal).__name__,
                    refusal,
                    extra={
                        EVENT_FIELDS: {"event": "job.finish_refused_by_store", "job_id": params.id}
                    },
                )
                return stale
        log.error(
            "the finish of job %s cannot be written (%s: %s); the job stays running until "
            "its lease expires, then it is rescued and run again",
            params.id,
            type(refusal).__name__,
            refusal,
        )
        return []

    def _write_retrying(self, batch: list[JobFinishParams]) -> list[str]:
        """Write ``batch``, retrying with back-off while the store is unavailable (a Redis
        outage, a SQLite disk full / I/O error / lock: ``StoreError``); [] if abandoned."""
        delay = 0.05
        while True:
            try:
                stale = self._backend.job_finish_many(batch)
            except BackendUnavailable as exc:
                self._outage.failed(exc, f"{len(batch)} finishes kept and retried")
                if self._abandon.wait(delay):
                    log.error(
                        "gave up writing %d finishes at shutdown (store unavailable: %s); "
                        "their jobs will be rescued and run again",
                        len(batch),
                        exc,
                    )
                    return []
                delay = min(delay * 2, 2.0)
                continue
            self._outage.recovered()
            return stale

    def report(self, batch: list[JobFinishParams], stale: list[str]) -> None:
        """Log refused finishes and tell ``on_written``; also used by the worker's one-slot
        mode, which writes its finishes together with its next claim."""
        for job_id in stale:
            self.stale_total += 1
            # The event and its running total let an operator (and the partition test)
            # count what the fence refused without parsing the message.
            log.warning(
                "stale finish refused for job %s: it was rescued or released meanwhile; "
                "the newer attempt is kept",
                job_id,
                extra={
                    EVENT_FIELDS: {
                        "event": "job.finish_refused",
                        "job_id": job_id,
                        "refused_total": self.stale_total,
                    }
                },
            )
        if self._on_written is not None:
            self._on_written(batch, stale)
