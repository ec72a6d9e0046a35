"""The half of the interpreter pool that runs *inside* each subinterpreter.

Imported once per subinterpreter at start-up; its module globals are that interpreter's
own (every subinterpreter has its own ``sys.modules``). The worker thread of the slot
calls :func:`run` through ``_interpreters.exec`` and reads the outcome tuple from the
slot's cross-interpreter queue.

Two helper threads live in each subinterpreter (they must: ``PyThreadState_SetAsyncExc``
and ``JobContext`` only reach the calling interpreter's own threads and objects):

- a watchdog that raises ``JobTimeout`` in the task's thread at its deadline, as in the
  thread pool;
- a cancel listener that polls the slot's cancel queue (every ``CANCEL_POLL`` s) and sets
  ``current_job().cancel_requested`` for the running job, as in the thread pool.

Example (what the executor runs in a new interpreter)::

    from conveyor.worker.executors import interp_side
    interp_side.init("tasks:app", sys_path, outcome_queue_id, cancel_queue_id)
    interp_side.run(job_wire)     # puts (status, result, error, reason, rss) on the queue
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any

from conveyor.worker.executors.wire import (
    JobWire,
    OutcomeWire,
    context_for,
    failure,
    outcome_to_wire,
)

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.context import JobContext
    from conveyor.worker.executors.thread import _Watchdog

#: Seconds between looks at the cancel queue: a cancel reaches the task within this.
CANCEL_POLL = 0.05

_app: App | None = None
_queue_id: int = -1
_cancel_id: int = -1
_watchdog: _Watchdog | None = None
_current: JobContext | None = None
_stopped = threading.Event()
_listener: threading.Thread | None = None

# _interpqueues.put(qid, obj, fmt, unboundop): fmt 0 = share the value itself (no pickle);
# unboundop 1 = drop items left by a destroyed interpreter.
_FMT_SHARED, _UNBOUND_REMOVE = 0, 1


def init(
    app_spec: str,
    path: list[str],
    queue_id: int,
    cancel_id: int = -1,
    middleware: list[str] | None = None,
    include: list[str] | None = None,
    url: str | None = None,
) -> None:
    """Import the app (and so its task modules, and the parent's ``include``) in this
    interpreter, and instantiate the parent's middleware classes."""
    global _app, _queue_id, _cancel_id, _watchdog, _listener
    from conveyor.worker.executors.thread import _Watchdog
    from conveyor.worker.executors.wire import load_for_child

    _app = load_for_child(app_spec, path, middleware, include, url)
    _queue_id, _cancel_id = queue_id, cancel_id
    _watchdog = _Watchdog(daemon=False)  # daemon threads are not allowed in here
    if cancel_id >= 0:
        _listener = threading.Thread(target=_listen, name="conveyor-cancel")
        _listener.start()


def _listen() -> None:
    queues: Any = importlib.import_module("_interpqueues")
    while not _stopped.wait(CANCEL_POLL):
        while queues.get_count(_cancel_id):
            job_id = queues.get(_cancel_id)[0]
            current = _current
            if current is not None and current.id == job_id:
                current.request_cancel()


def run(wire: JobWire) -> None:
    """Run one job and put its outcome tuple on this slot's queue (3.13)."""
    _interpqueues: Any = importlib.import_module("_interpqueues")
    _interpqueues.put(_queue_id, run_return(wire), _FMT_SHARED, _UNBOUND_REMOVE)


def run_return(wire: JobWire) -> OutcomeWire:
    """Run one job and return its outcome tuple (3.14: ``Interpreter.call`` returns it)."""
    global _current
    from conveyor.worker.executors.wire import run_wire
    from conveyor.worker.runner import JobTimeout

    assert _app is not None and _watchdog is not None
    job_id, timeout = wire[0], wire[7]
    result: Any = None
    _current = ctx = context_for(wire)
    try:
        if timeout:
            _watchdog.arm(job_id, timeout)
        result = run_wire(_app, wire, ctx)
    except JobTimeout as exc:  # delivered just outside the task's own frames
        result = result or outcome_to_wire(failure("JobTimeout", str(exc) or "timed out"))
    finally:
        if timeout:
            _disarm(job_id)
        _current = None
    out: OutcomeWire = result
    return out


def _disarm(job_id: str) -> None:
    from conveyor.worker.runner import JobTimeout

    assert _watchdog is not None
    while True:
        try:
            _watchdog.disarm(job_id)
            return
        except JobTimeout:  # a late delivery; once disarmed no other can come
            continue


def shutdown() -> None:
    """Stop the helper threads: an interpreter with running threads cannot be destroyed."""
    _stopped.set()
    if _listener is not None:
        _listener.join(2.0)
    if _watchdog is not None:
        _watchdog.stop()
        _watchdog._thread.join(2.0)
