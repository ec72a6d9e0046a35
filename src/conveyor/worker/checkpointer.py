"""The checkpointer: the durable steps of a worker's concurrent jobs, saved together
(group commit, as the completer's finishes: everything handed over since the last
write goes in the next one, at most ``MAX_BATCH``, no timer).

A step call hands its checkpoint over and waits until it is committed (a step never
returns before its result is durable). Checkpoints handed over by other slots while a
write is in flight go together in the next one: one transaction on a SQL store, one
pipelined round trip on Redis (``job_step_save_many``), each still fenced by its own
job's claim token, so the checkpoint of a job whose lease was lost is refused for that
job alone.

Unlike a finish, a checkpoint has a caller waiting for it, so the caller writes: a
thread that finds no write in flight leads (writes its own and what queued meanwhile,
then one batch more if others came, then hands the lead to a waiting thread); the
others wait for the leader's write. No thread hop when idle, and none before a write
under load. Async steps cannot block their event loop: theirs are written by the
leader of the moment, or this checkpointer's own thread when none leads.

Not used where there is nothing to group or the commit is not ours: a one-slot worker,
the process and interpreter pools (the child saves through its own connection, one
commit per step), and transactional steps (``@app.step(transaction=True)``: their commit
is the task's, with its writes).

Example::

    checkpointer = Checkpointer(backend)
    checkpointer.start()
    checkpointer.save(JobStepSaveParams(step, token))             # True once committed
    await asyncio.wrap_future(checkpointer.submit(params))        # from an async step
    checkpointer.stop()
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from conveyor.backends.base import Backend, JobStepSaveParams
from conveyor.errors import BackendUnavailable
from conveyor.worker.completer import MAX_BATCH

if TYPE_CHECKING:
    from concurrent.futures import Future

log = logging.getLogger("conveyor.worker")


class _Pending:
    """One checkpoint handed over: its answer, and how its caller hears it."""

    __slots__ = ("error", "future", "lead", "saved", "wake", "written")

    def __init__(self, future: Future[bool] | None = None) -> None:
        self.saved, self.written, self.lead = False, False, False
        self.error: BaseException | None = None
        #: a thread caller's wake-up (its answer, or the lead handed to it)
        self.wake = threading.Event() if future is None else None
        #: an async caller's answer
        self.future = future

    def answer(self) -> bool:
        if self.error is not None:
            raise self.error
        return self.saved


class Checkpointer:
    """Writes the checkpoints handed to :meth:`save` / :meth:`submit` in groups."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._lock = threading.Lock()
        self._queue: list[tuple[JobStepSaveParams, _Pending]] = []
        self._leading = False  # someone writes, or is about to
        self._turn = threading.Condition(self._lock)  # this checkpointer's thread's turn
        self._thread_due = False
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name="conveyor-checkpointer",
                                        daemon=True)  # fmt: skip
        #: writes made and checkpoints they carried (tests and benchmarks read them)
        self.groups = self.written = 0

    def start(self) -> None:
        self._thread.start()

    def save(self, params: JobStepSaveParams) -> bool:
        """Save ``params`` with whatever else is handed over meanwhile: True once
        committed, False when refused (the attempt lost its job); the store's error when
        it failed."""
        pending = _Pending()
        with self._lock:
            self._queue.append((params, pending))
            lead = not self._leading
            self._leading = True
        if not lead:
            assert pending.wake is not None
            pending.wake.wait()
            if not pending.lead:
                return pending.answer()
        self._lead(pending)
        return pending.answer()

    def submit(self, params: JobStepSaveParams) -> Future[bool]:
        """:meth:`save` for a caller that must not block (an async step): its answer to
        come, written by the leader of the moment or this checkpointer's thread."""
        from concurrent.futures import Future  # here: a first job imports none of it

        future: Future[bool] = Future()
        here = False
        with self._lock:
            self._queue.append((params, _Pending(future)))
            if not self._leading:
                self._leading = True
                if self._stopped:  # a job left running past the shutdown: written here
                    here = True
                else:
                    self._thread_due = True
                    self._turn.notify()
        if here:
            self._lead(None)
        return future

    def stop(self, timeout: float | None = None) -> None:
        """Stop this checkpointer's thread once it wrote what it was due; later
        checkpoints are written by their callers."""
        with self._lock:
            self._stopped = True
            self._turn.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._thread_due and not self._stopped:
                    self._turn.wait()
                if not self._thread_due:
                    return
                self._thread_due = False
            self._lead(None)

    def _lead(self, own: _Pending | None) -> None:
        """Write what is queued, batch after batch: a thread caller until its own is
        written and one batch more, then the lead goes to a waiting thread caller (or
        this checkpointer's thread); this checkpointer's thread until none is left."""
        after = 0
        while True:
            with self._lock:
                if not self._queue:
                    self._leading = False
                    return
                if own is not None and own.written and after >= 1 and self._hand_over():
                    return
                batch = self._queue[:MAX_BATCH]
                del self._queue[:MAX_BATCH]
            self._write(batch)
            if own is not None and own.written:
                after += 1

    def _hand_over(self) -> bool:
        """(Under the lock.) Give the lead to the first waiting thread caller, else to
        this checkpointer's thread; False when stopped (the leader goes on)."""
        for _, pending in self._queue:
            if pending.wake is not None:
                pending.lead = True
                pending.wake.set()
                return True
        if self._stopped:
            return False
        self._thread_due = True
        self._turn.notify()
        return True

    def _write(self, batch: list[tuple[JobStepSaveParams, _Pending]]) -> None:
        errors: list[BaseException | None] = [None] * len(batch)
        try:
            saved = self._backend.job_step_save_many([params for params, _ in batch])
            self.groups += 1
            self.written += len(batch)
        except BackendUnavailable as exc:
            # As each call alone would have: the steps fail, their attempts retry.
            saved, errors = [False] * len(batch), [exc] * len(batch)
        except Exception:
            # One checkpoint the store refuses (a SQL transaction rolled back whole):
            # each alone, so that it fails its own step only.
            log.exception("saving %d checkpoints failed; saving them one by one", len(batch))
            saved = [False] * len(batch)
            for i, (params, _) in enumerate(batch):
                try:
                    saved[i] = self._backend.job_step_save(params)
                except Exception as exc:
                    errors[i] = exc
        for (_, pending), ok, error in zip(batch, saved, errors, strict=False):
            pending.saved, pending.error, pending.written = ok, error, True
            if pending.future is not None:
                if error is None:
                    pending.future.set_result(ok)
                else:
                    pending.future.set_exception(error)
            elif pending.wake is not None:
                pending.wake.set()
