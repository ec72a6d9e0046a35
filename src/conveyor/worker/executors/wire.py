"""What crosses a process or interpreter boundary: plain tuples of str/int/float/None.

A claimed job goes across as the tuple of its fields (the payload stays the encoded JSON
string) and comes back as ``(status, result_json, error_json, reason, rss_bytes)``. No user
object is ever pickled, so nothing the task returns can break the pipe, and a subinterpreter
(which shares only simple immutable values in 3.13) can receive it as is.

The child side (:func:`load_for_child`, :func:`run_wire`) runs inside the child process or
subinterpreter; the parent side (:func:`job_to_wire`, :func:`outcome_from_wire`) in the
worker.

Example:
    >>> from conveyor.backends.base import ClaimedJob
    >>> job = ClaimedJob("j", "t", "q", "{}", 1, 3, 7, None, 30.0, 0.0, 0.0, 0, 0)
    >>> job_from_wire(job_to_wire(job)) == job
    True
    >>> outcome_from_wire(("ok", "42", None, None, 0)).result
    '42'
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from conveyor import records
from conveyor.backends.base import ClaimedJob
from conveyor.context import JobContext, context_of
from conveyor.worker.outcome import ERROR, REFUSED, Outcome, RemoteError

if TYPE_CHECKING:
    from conveyor.app import App

JobWire = tuple[Any, ...]
#: (status, result JSON, error JSON, reason, resident memory of the child in bytes)
OutcomeWire = tuple[str, str | None, str | None, str | None, int]


def job_to_wire(job: ClaimedJob) -> JobWire:
    return records.astuple(job)


def job_from_wire(wire: JobWire) -> ClaimedJob:
    return ClaimedJob(*wire)


def outcome_to_wire(outcome: Outcome) -> OutcomeWire:
    return (outcome.status, outcome.result, outcome.error_json, outcome.reason, rss_bytes())


def outcome_from_wire(wire: OutcomeWire) -> Outcome:
    """Rebuild an Outcome; an error comes back as a RemoteError carrying the type name
    (retry hooks see ``error.type_name``, never the original class)."""
    status, result, error_json, reason, _rss = wire
    error: BaseException | None = None
    if error_json is not None and status in (ERROR, REFUSED):
        data = json.loads(error_json)
        error = RemoteError(str(data.get("type", "Error")), str(data.get("message", "")))
    return Outcome(status, result=result, error=error, error_json=error_json, reason=reason)


def failure(type_name: str, message: str) -> Outcome:
    """A failed Outcome for something that happened outside the task (timeout, crash)."""
    error = RemoteError(type_name, message)
    error_json = json.dumps({"type": type_name, "message": message, "traceback": ""})
    return Outcome(ERROR, error=error, error_json=error_json, reason=message)


def rss_bytes() -> int:
    """Current resident set size of this process (0 when unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource

        # ru_maxrss is the peak, in KiB on Linux and bytes on macOS: good enough to recycle.
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    except (ImportError, OSError):
        return 0


def load_for_child(
    app_spec: str,
    path: list[str],
    middleware: list[str] | None = None,
    include: list[str] | None = None,
) -> App:
    """Import the app by its spec in a fresh process or interpreter, and instantiate
    the parent's middleware classes (by qualified name) that importing it did not add;
    ``include``: the parent's task modules (``--include`` as well as ``App(include=)``)."""
    from conveyor.app import load_app

    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    app = load_app(app_spec)
    if include:
        app.import_includes(include)
    if middleware:
        app.middleware.ensure(middleware)
    return app


def context_for(wire: JobWire) -> JobContext:
    return context_of(job_from_wire(wire))


def run_wire(app: App, wire: JobWire, ctx: JobContext | None = None) -> OutcomeWire:
    """Run one job from its wire tuple; every failure becomes outcome data."""
    from conveyor.worker.runner import run_sync

    return outcome_to_wire(run_sync(app, job_from_wire(wire), ctx or context_for(wire)))
