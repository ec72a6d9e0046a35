"""The half of the interpreter pool that runs *inside* each subinterpreter.

Imported once per subinterpreter at start-up; its module globals are that interpreter's
own (every subinterpreter has its own ``sys.modules``). The worker thread of the slot
calls :func:`run` through ``_interpreters.exec`` and reads the outcome tuple from the
slot's cross-interpreter queue.

Timeouts work as in the thread pool: a watchdog thread *inside this interpreter* raises
``JobTimeout`` in the task's thread at its deadline (``PyThreadState_SetAsyncExc`` only
reaches thread states of the calling interpreter, so the watchdog must live here).

Example (what the executor runs in a new interpreter)::

    from conveyor.worker.executors import interp_side
    interp_side.init("tasks:app", sys_path, queue_id)
    interp_side.run(job_wire)     # puts (status, result, error, reason, rss) on the queue
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from conveyor.worker.executors.wire import JobWire, OutcomeWire, failure, outcome_to_wire

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.worker.executors.thread import _Watchdog

_app: App | None = None
_queue_id: int = -1
_watchdog: _Watchdog | None = None

# _interpqueues.put(qid, obj, fmt, unboundop): fmt 0 = share the value itself (no pickle);
# unboundop 1 = drop items left by a destroyed interpreter.
_FMT_SHARED, _UNBOUND_REMOVE = 0, 1


def init(app_spec: str, path: list[str], queue_id: int) -> None:
    """Import the app (and so its task modules) in this interpreter."""
    global _app, _queue_id, _watchdog
    from conveyor.worker.executors.thread import _Watchdog
    from conveyor.worker.executors.wire import load_for_child

    _app = load_for_child(app_spec, path)
    _queue_id = queue_id
    _watchdog = _Watchdog(daemon=False)


def run(wire: JobWire) -> None:
    """Run one job and put its outcome tuple on this slot's queue (3.13)."""
    _interpqueues: Any = importlib.import_module("_interpqueues")
    _interpqueues.put(_queue_id, run_return(wire), _FMT_SHARED, _UNBOUND_REMOVE)


def run_return(wire: JobWire) -> OutcomeWire:
    """Run one job and return its outcome tuple (3.14: ``Interpreter.call`` returns it)."""
    from conveyor.worker.executors.wire import run_wire
    from conveyor.worker.runner import JobTimeout

    assert _app is not None and _watchdog is not None
    job_id, timeout = wire[0], wire[7]
    result: Any = None
    try:
        if timeout:
            _watchdog.arm(job_id, timeout)
        result = run_wire(_app, wire)
    except JobTimeout as exc:  # delivered just outside the task's own frames
        result = result or outcome_to_wire(failure("JobTimeout", str(exc) or "timed out"))
    finally:
        if timeout:
            _disarm(job_id)
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
    """Stop the watchdog thread: an interpreter with running threads cannot be destroyed."""
    if _watchdog is not None:
        _watchdog.stop()
        _watchdog._thread.join(2.0)
