"""The checkpointer: the durable steps of a worker's concurrent jobs, saved together
(group commit: the completer's :class:`~conveyor.worker.completer.GroupWriter`).

A step call hands its checkpoint over and waits until it is committed (a step never
returns before its result is durable). Checkpoints handed over by other slots while a
write is in flight go together in the next one: one transaction on a SQL store, one
pipelined round trip on Redis (``job_step_save_many``), each still fenced by its own
job's claim token, so the checkpoint of a job whose lease was lost is refused for that
job alone. When idle a checkpoint is written at once (no timer adds latency).

Not used where there is nothing to group or the commit is not ours: a one-slot worker,
the process and interpreter pools (the child saves through its own connection, one
commit per step), and transactional steps (``@app.step(transaction=True)``: their commit
is the task's, with its writes).

Example::

    checkpointer = Checkpointer(backend)
    checkpointer.start()
    saved = checkpointer.submit(JobStepSaveParams(step, token)).result()  # committed
    checkpointer.stop()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

from conveyor.backends.base import Backend, JobStepSaveParams
from conveyor.errors import BackendUnavailable
from conveyor.worker.completer import GroupWriter

log = logging.getLogger("conveyor.worker")

_Checkpoint = tuple[JobStepSaveParams, "Future[bool]"]


class Checkpointer(GroupWriter[_Checkpoint]):
    """Writes the checkpoints handed to :meth:`submit` in groups, on one thread."""

    def __init__(self, backend: Backend) -> None:
        super().__init__("checkpointer")
        self._backend = backend
        self._lock = threading.Lock()
        self._stopped = False
        #: writes made and checkpoints they carried (tests and benchmarks read them)
        self.groups = self.written = 0

    def submit(self, params: JobStepSaveParams) -> Future[bool]:
        """The checkpoint's answer to come: True once committed, False when refused (the
        attempt lost its job); the store's error when it failed."""
        future: Future[bool] = Future()
        with self._lock:  # against stop(): queued before its end mark, or written here
            if not self._stopped:
                self._queue.put((params, future))
                return future
        # After the stop (a job left running past the shutdown timeout): alone, here.
        _settle(future, lambda: self._backend.job_step_save(params))
        return future

    def stop(self, timeout: float | None = None) -> None:
        """Write what is queued, then stop; later checkpoints are written one by one by
        their callers."""
        with self._lock:
            self._stopped = True
            self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _write(self, batch: list[_Checkpoint]) -> None:
        try:
            saved = self._backend.job_step_save_many([params for params, _ in batch])
        except BackendUnavailable as exc:
            # As each call alone would have: the steps fail, their attempts retry.
            for _, future in batch:
                future.set_exception(exc)
            return
        except Exception:
            # One checkpoint the store refuses (a SQL transaction rolled back whole):
            # each alone, so that it fails its own step only.
            log.exception("saving %d checkpoints failed; saving them one by one", len(batch))
            for params, future in batch:
                _settle(future, lambda p=params: self._backend.job_step_save(p))  # type: ignore[misc]
            return
        self.groups += 1
        self.written += len(batch)
        for (_, future), ok in zip(batch, saved, strict=True):
            future.set_result(ok)


def _settle(future: Future[bool], save: Callable[[], bool]) -> None:
    try:
        future.set_result(save())
    except Exception as exc:
        future.set_exception(exc)
