"""What crosses a process or interpreter boundary: plain tuples of str/int/float/None.

A claimed job goes across as the tuple of its fields (the payload stays the encoded JSON
string) and comes back as ``(status, result_json, error_json, reason, rss_bytes, durable)``,
``durable`` being ``(snooze_seconds, parked_deadline, steps_run, steps_replayed, replays)``.
No user object is ever pickled, so nothing the task returns can break the pipe, and a
subinterpreter (which shares only simple immutable values in 3.13) can receive it as is.

Durable jobs in a child (docs/durable.md#pools): the child writes its job's checkpoints
itself, through its own connection to the store (the app it imported, pointed at the
worker's URL), each write fenced by the claim token the job carries across; the worker
keeps the lease and reads back only what the store did: a ``wait_for`` that parked the
job (the deadline: the worker writes no finish) and the counts its metrics show. Its own
connection, not a channel to the worker, so a transactional step commits its writes with
its checkpoint in the child, and a step costs one round trip to the store, not two hops.

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
    >>> outcome_from_wire(("snoozed", None, None, None, 0, (5.0, None, 1, 0, 0))).snooze
    5.0
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
#: (snooze seconds, deadline of a wait that parked the job, steps run, replayed, replays)
DurableWire = tuple[float | None, float | None, int, int, int]
#: (status, result JSON, error JSON, reason, resident memory of the child in bytes, durable)
OutcomeWire = tuple[Any, ...]


def job_to_wire(job: ClaimedJob) -> JobWire:
    return records.astuple(job)


def job_from_wire(wire: JobWire) -> ClaimedJob:
    return ClaimedJob(*wire)


def outcome_to_wire(outcome: Outcome) -> OutcomeWire:
    run, replayed, replays = outcome.steps or (0, 0, 0)
    durable: DurableWire = (outcome.snooze, outcome.parked, run, replayed, replays)
    return (outcome.status, outcome.result, outcome.error_json, outcome.reason, rss_bytes(),
            durable)  # fmt: skip


def outcome_from_wire(wire: OutcomeWire) -> Outcome:
    """Rebuild an Outcome; an error comes back as a RemoteError carrying the type name
    (retry hooks see ``error.type_name``, never the original class)."""
    status, result, error_json, reason = wire[:4]
    error: BaseException | None = None
    if error_json is not None and status in (ERROR, REFUSED):
        data = json.loads(error_json)
        error = RemoteError(str(data.get("type", "Error")), str(data.get("message", "")))
    out = Outcome(status, result=result, error=error, error_json=error_json, reason=reason)
    if len(wire) > 5:
        snooze, parked, run, replayed, replays = wire[5]
        out.snooze, out.parked = snooze, parked
        out.steps = (run, replayed, replays) if run or replayed or replays else None
    return out


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
    url: str | None = None,
) -> App:
    """Import the app by its spec in a fresh process or interpreter, and instantiate
    the parent's middleware classes (by qualified name) that importing it did not add;
    ``include``: the parent's task modules (``--include`` as well as ``App(include=)``);
    ``url``: the worker's store (its ``--url``), which the child's steps and enqueues use."""
    from conveyor.app import load_app

    for entry in reversed(path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    app = load_app(app_spec)
    if url and url != app.url and app._backend is None:  # opened while imported: kept
        app.override_url(url, "the worker's store")
    if include:
        app.import_includes(include)
    if middleware:
        app.middleware.ensure(middleware)
    return app


def context_for(wire: JobWire) -> JobContext:
    return context_of(job_from_wire(wire))


def run_wire(app: App, wire: JobWire, ctx: JobContext | None = None) -> OutcomeWire:
    """Run one job from its wire tuple; every failure becomes outcome data. Its durable
    steps write through this child's own store connection (see the module docstring)."""
    from conveyor.durable import StepTally
    from conveyor.states import FinishKind
    from conveyor.worker.runner import run_sync

    job = job_from_wire(wire)
    ctx = ctx or context_for(wire)
    tally = StepTally()
    ctx._durable = lambda c: child_replay(app, job, tally)
    outcome = run_sync(app, job, ctx)
    parked = ctx.finished_by_transaction  # a wait_for parked the job: the store ended it
    if parked is not None and parked.kind is FinishKind.SNOOZE:
        outcome.parked = parked.run_at
    if tally.run or tally.replayed:
        outcome.steps = (tally.run, tally.replayed, tally.replays)
    return outcome_to_wire(outcome)


def child_replay(app: App, job: ClaimedJob, tally: Any) -> Any:
    """The durable replay of ``job`` in a child, on the child's own store connection;
    refused where the child cannot reach the worker's store (``memory://``)."""
    from conveyor.durable import Replay
    from conveyor.errors import ConfigurationError

    if app.url.startswith("memory:"):
        raise ConfigurationError(
            f"job {job.id}: durable steps in a process or interpreter pool write through "
            "the child's own store connection; a memory:// store lives in the worker's "
            "process only (use the thread or asyncio pool, or a shared store)"
        )
    return Replay(app.backend, job, "child", tally=tally)
