"""Interpreter pool (Python >= 3.13): one subinterpreter per slot, each with its own GIL.

Each slot is a thread of the worker process that owns one isolated subinterpreter
(PEP 684 per-interpreter GIL, PEP 734). At ``start()`` every subinterpreter imports the
app by its ``module:attr`` spec, and so every task module: a module that cannot load in a
subinterpreter (a C extension without multi-phase init / per-interpreter GIL support, such
as ``pydantic_core`` today) fails the worker *at start*, naming the module and suggesting
``--pool process``. A job crosses as its wire tuple (payload still the encoded JSON) and
its outcome comes back through a cross-interpreter queue: shared immutable values, no pickle.

Which API: ``concurrent.interpreters`` where it exists (3.14+; ``Interpreter.call``
returns the outcome tuple), else the 3.13 low-level ``_interpreters`` / ``_interpqueues``
modules (outcome through a one-slot cross-interpreter queue). Only the 3.13 path is
tested here (no 3.14 on these machines).

What is enforced:

- **Timeouts**: as in the thread pool. A watchdog thread inside the subinterpreter raises
  ``JobTimeout`` in the task at the next bytecode after the deadline; a task blocked in a
  C call (a long ``time.sleep``) is interrupted only when that call returns. A
  subinterpreter's thread cannot be killed, so the slot stays busy (and the job stays
  ``running``, lease extended) until the task really returns: the retry never overlaps.
- **Cancellation of a running job** (``job.cancel()``, or release at shutdown): as in the
  thread pool, cooperative. A listener thread inside the subinterpreter sets
  ``current_job().cancel_requested`` within ~50 ms (3.13 only); a task that checks it can
  stop early. A task that ignores it runs to its end; if it fails, the job ends
  ``cancelled``.
- **Shutdown**: a subinterpreter still busy after the shutdown timeout (its job already
  released) can be neither killed nor finalized, and would make the process hang at exit
  until the task returns; the worker logs it and exits with ``os._exit(0)`` instead.
- **Crashes**: a segfault or ``os._exit`` in a task takes down the whole worker (one
  process); its jobs are rescued by another worker. Use ``--pool process`` for untrusted
  or crash-prone code.
- **Recycling**: ``max_jobs_per_child`` replaces the subinterpreter between jobs;
  memory-based recycling is not supported (all interpreters share one process RSS).

Example:
    >>> import conveyor
    >>> InterpreterExecutor.name
    'interpreter'
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext
from conveyor.errors import ConfigurationError
from conveyor.worker.executors.base import DoneCallback, deliver
from conveyor.worker.executors.slots import SlotThreads
from conveyor.worker.executors.wire import failure, job_to_wire, outcome_from_wire
from conveyor.worker.outcome import Outcome

if TYPE_CHECKING:
    from conveyor.app import App

log = logging.getLogger("conveyor.worker")


def check_supported() -> None:
    """Raise a ConfigurationError that says what to do instead, before Python 3.13."""
    if sys.version_info < (3, 13):
        raise ConfigurationError(
            "--pool interpreter needs Python >= 3.13 (per-interpreter GIL); this is "
            f"{sys.version.split()[0]}. Use --pool process for CPU-bound tasks."
        )


def _step() -> None:  # pragma: no cover - runs inside the subinterpreter, as code only
    # Executed by _interpreters.exec: only the code object is used and names resolve in
    # the subinterpreter's __main__, where init put `_conveyor_side` and exec put `_job`.
    _conveyor_side.run(_job)  # type: ignore[name-defined]  # noqa: F821


_INIT = """
import sys
sys.path[:0] = [p for p in {path!r} if p not in sys.path]
from conveyor.worker.executors import interp_side as _conveyor_side
_conveyor_side.init({spec!r}, {path!r}, {qid!r}, {cid!r}, {mw!r}, {inc!r}, {url!r})
"""
_SHUTDOWN = "if '_conveyor_side' in globals(): _conveyor_side.shutdown()"


def _start_failed(app_spec: str, formatted: str) -> ConfigurationError:
    return ConfigurationError(
        f"--pool interpreter: importing the app {app_spec!r} inside a subinterpreter "
        f"failed: {formatted}. A module it imports cannot load in a subinterpreter "
        "(named above; C extensions need per-interpreter GIL support). "
        "Run this app with --pool process instead."
    )


class _Interp313:
    """One subinterpreter (3.13 low-level API) with the app imported, and its queue."""

    def __init__(self, app_spec: str, middleware: list[str], include: list[str], url: str) -> None:
        # Private modules, typed as plain modules (their stubs differ across versions).
        self._i: Any = importlib.import_module("_interpreters")
        self._q: Any = importlib.import_module("_interpqueues")
        self.qid = self._q.create(1, 0, 1)  # maxsize 1: one job at a time per slot
        self.cid = self._q.create(0, 0, 1)  # job ids to cancel, read inside the interpreter
        self.iid = self._i.create("isolated")
        self.jobs = 0
        code = _INIT.format(
            path=list(sys.path),
            spec=app_spec,
            qid=self.qid,
            cid=self.cid,
            mw=middleware,
            inc=include,
            url=url,
        )
        err = self._i.exec(self.iid, code)
        if err is not None:
            self.close()
            raise _start_failed(app_spec, str(err.formatted))

    def run(self, job: ClaimedJob) -> Outcome:
        err = self._i.exec(self.iid, _step, shared={"_job": job_to_wire(job)})
        if err is not None:  # only if conveyor itself broke; the task's errors are data
            return failure("InterpreterError", str(err.formatted))
        wire, _fmt, _unbound = self._q.get(self.qid)
        self.jobs += 1
        return outcome_from_wire(wire)

    def cancel(self, job_id: str) -> None:
        self._q.put(self.cid, job_id, 0, 1)

    def close(self) -> None:
        try:
            self._i.exec(self.iid, _SHUTDOWN)
            self._i.destroy(self.iid)
        finally:
            self._q.destroy(self.qid)
            self._q.destroy(self.cid)


class _Interp314:
    """One subinterpreter through ``concurrent.interpreters`` (3.14+).

    Not exercised by the test suite yet: no 3.14 on the CI machines (see docs/pools.md)."""

    def __init__(self, app_spec: str, middleware: list[str], include: list[str], url: str) -> None:
        interpreters: Any = importlib.import_module("concurrent.interpreters")
        self._mod = interpreters
        self._interp: Any = interpreters.create()
        self.jobs = 0
        try:
            self._interp.exec(
                _INIT.format(
                    path=list(sys.path),
                    spec=app_spec,
                    qid=-1,
                    cid=-1,
                    mw=middleware,
                    inc=include,
                    url=url,
                )
            )
        except interpreters.ExecutionFailed as exc:
            self.close()
            raise _start_failed(app_spec, str(exc.excinfo.formatted)) from None

    def run(self, job: ClaimedJob) -> Outcome:
        from conveyor.worker.executors import interp_side

        try:
            wire = self._interp.call(interp_side.run_return, job_to_wire(job))
        except self._mod.ExecutionFailed as exc:
            return failure("InterpreterError", str(exc.excinfo.formatted))
        self.jobs += 1
        return outcome_from_wire(wire)

    def cancel(self, job_id: str) -> None:
        return None  # not wired on 3.14 yet: the cancel flag is only set on 3.13

    def close(self) -> None:
        try:
            self._interp.exec(_SHUTDOWN)
        finally:
            self._interp.close()


def _exit_now() -> None:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _new_interp(
    app_spec: str, middleware: list[str], include: list[str], url: str
) -> _Interp313 | _Interp314:
    # url: the worker's store, where the subinterpreter's durable steps write
    if sys.version_info >= (3, 14):
        return _Interp314(app_spec, middleware, include, url)
    return _Interp313(app_spec, middleware, include, url)


class InterpreterExecutor:
    """Runs jobs in subinterpreters, one per slot (see the module docstring)."""

    name = "interpreter"

    def __init__(
        self,
        app: App,
        concurrency: int,
        *,
        app_spec: str | None,
        max_jobs_per_child: int | None = None,
    ) -> None:
        check_supported()
        if not app_spec:
            raise ConfigurationError(
                "--pool interpreter needs the app as 'module:attr' so each subinterpreter "
                "can import it: pass app_spec= to Worker (the CLI does this)"
            )
        self._app_spec = app_spec
        #: middleware classes each subinterpreter instantiates (read at each start)
        self._middleware = app.middleware
        self._app = app  # its include: the task modules each subinterpreter imports
        self._concurrency = concurrency
        self._max_jobs = max_jobs_per_child
        self._threads = SlotThreads("interp", concurrency)
        self._done: DoneCallback | None = None
        self._lock = threading.Lock()
        self._running: dict[str, _Interp313 | _Interp314] = {}

    def start(self, done: DoneCallback) -> None:
        self._done = done
        errors = self._threads.start(lambda n, ready, errs: self._slot(ready, errs))
        if errors:
            self.stop(5.0)
            raise ConfigurationError(str(errors[0]))

    def submit(self, job: ClaimedJob, ctx: JobContext) -> None:
        self._threads.submit(job, ctx)

    def cancel(self, job_id: str) -> None:
        with self._lock:
            interp = self._running.get(job_id)
        if interp is not None:
            interp.cancel(job_id)

    def dead_slots(self) -> list[str]:
        return self._threads.dead()

    def stop(self, timeout: float) -> None:
        busy = self._threads.stop(timeout)
        if busy:
            # CPython can neither kill a running subinterpreter nor finalize the process
            # while one runs (exit would hang until the task returns). The jobs were
            # released already; end the process without finalizing at exit.
            log.error(
                "%d subinterpreter(s) still run a task that ignored cancellation; "
                "the process will exit without waiting for them",
                busy,
            )
            atexit.register(_exit_now)

    def _new_interp(self) -> _Interp313 | _Interp314:
        mws, app = list(self._middleware.classes), self._app
        return _new_interp(self._app_spec, mws, list(app.include), app.url)

    def _slot(self, ready: threading.Barrier, errors: list[BaseException]) -> None:
        # The subinterpreter is created, used and destroyed by this one thread.
        interp: _Interp313 | _Interp314 | None = None
        try:
            interp = self._new_interp()
        except BaseException as exc:
            errors.append(exc)
        ready.wait()
        if errors:
            if interp is not None:
                interp.close()
            return
        assert self._done is not None
        while True:
            item = self._threads.next()
            if item is None:
                break
            job, _ctx = item
            if interp is None:
                try:
                    interp = self._new_interp()
                except ConfigurationError as exc:
                    self._done(job, failure("InterpreterStartFailed", str(exc)))
                    continue
            with self._lock:
                self._running[job.id] = interp
            try:
                outcome = interp.run(job)
            except Exception as exc:  # the slot thread must outlive any one job
                outcome = Outcome.failed(exc)
            finally:
                with self._lock:
                    self._running.pop(job.id, None)
            if self._max_jobs is not None and interp.jobs >= self._max_jobs:
                interp.close()
                interp = None
            deliver(self._done, job, outcome)
        if interp is not None:
            interp.close()
