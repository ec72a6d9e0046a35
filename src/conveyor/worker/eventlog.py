"""The worker's event log: one line per thing that happened to a job, and the start lines.

An observer (see ``observers.py``) on every worker. At INFO: a job failed (task, id,
error type and message, attempt n/max, next run time), went dead, was cancelled while
it ran (a cancel honoured), was dropped by its retry hook, was rescued from a dead
worker, was released at shutdown; shutdown progress. At DEBUG: a job succeeded or was
snoozed. At start (written by start_lines.py): the URL (password hidden), queues with
weights, pool, concurrency, the app's tasks with their queues, and a WARNING for each
queue the tasks declare that this worker does not consume, and for each consumed queue
no task declares (a typo).

Lines go to the logger ``conveyor.worker.jobs`` (job events) and ``conveyor.worker``
(start, shutdown); each record carries its fields in ``extra`` for ``--log-format json``
(``event``, ``job_id``, ``task``, ``queue``, ``attempt``, ``max_attempts``, ...).

Cost: the hooks run inline on the worker's threads. Whether DEBUG and INFO are enabled
is read once per claimed batch (``on_claimed``), so a succeeded job at INFO costs one
attribute test; a line that is printed is formatted on the calling thread and handed to
the console's non-blocking handler (``console.py``): it never waits on stderr.

Example::

    worker.observers.append(EventLog())
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import ClaimedJob, JobFinishParams, RescueResult
from conveyor.states import FinishKind, JobState
from conveyor.worker.console import EVENT_FIELDS
from conveyor.worker.observers import BaseObserver
from conveyor.worker.start_lines import (
    DJANGO_WORKER_APP,
    declared_queues,
    default_queue_specs,
    log_started,
    no_tasks_hint,
)

if TYPE_CHECKING:
    from conveyor.worker.outcome import Outcome
    from conveyor.worker.worker import Worker

jobs_log = logging.getLogger("conveyor.worker.jobs")
worker_log = logging.getLogger("conveyor.worker")

#: the start lines' helpers, imported from here by the CLI, contrib/asgi.py and tests
__all__ = [
    "DJANGO_WORKER_APP",
    "MAX_MESSAGE",
    "EventLog",
    "declared_queues",
    "default_queue_specs",
    "no_tasks_hint",
]

#: An error message longer than this is cut in the log line (the store keeps all of it).
MAX_MESSAGE = 300


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).astimezone().isoformat(timespec="milliseconds")


def _error(params: JobFinishParams) -> tuple[str, str]:
    """(type, first line of the message, cut) of a finish's stored error JSON."""
    if not params.error:
        return "", ""
    try:
        doc = json.loads(params.error)
    except ValueError:
        return "Error", params.error[:MAX_MESSAGE]
    message = str(doc.get("message", "")).split("\n", 1)[0]
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "…"
    return str(doc.get("type", "Error")), message


def _because(reason: str | None, message: str) -> str:
    """`` (reason)`` after a dead job's error, or nothing when the reason is the error's
    message again (an unrunnable job: "unknown task 'x': ..." is both).

    >>> _because("attempts exhausted (2/2)", "boom")
    ' (attempts exhausted (2/2))'
    >>> _because("unknown task 'x'", "unknown task 'x'"), _because("attempts exhausted", "a")
    ('', ' (attempts exhausted)')
    """
    reason = reason or "no retry left"
    first = reason.split("\n", 1)[0]
    cut = message.removesuffix("…")  # the message as logged: its first line, maybe cut
    if message and (first == message or (cut != message and first.startswith(cut))):
        return ""
    return f" ({reason})"


def _fields(event: str, job: ClaimedJob, **more: Any) -> dict[str, Any]:
    return {
        EVENT_FIELDS: {
            "event": event,
            "job_id": job.id,
            "task": job.task,
            "queue": job.queue,
            "attempt": job.attempt,
            "max_attempts": job.max_attempts,
            **more,
        }
    }


class EventLog(BaseObserver):
    """Logs job events and the worker's start and shutdown (see the module docstring)."""

    def __init__(self, queues_defaulted: bool = False) -> None:
        #: True when the worker was given no ``--queue`` and consumes the declared ones.
        self.queues_defaulted = queues_defaulted
        # A worker that failed before it was ready says only why (one Error: line from
        # the CLI); "stopping" would be noise around that cause.
        self._ready = False
        self._info = jobs_log.isEnabledFor(logging.INFO)
        self._debug = jobs_log.isEnabledFor(logging.DEBUG)

    # -- start ---------------------------------------------------------------------------

    def on_started(self, worker: Worker) -> None:
        self._ready = True
        self._refresh()
        log_started(worker, self.queues_defaulted)

    def _refresh(self) -> None:
        self._info = jobs_log.isEnabledFor(logging.INFO)
        self._debug = jobs_log.isEnabledFor(logging.DEBUG)

    # -- jobs ----------------------------------------------------------------------------

    def on_claimed(self, jobs: Sequence[ClaimedJob]) -> None:
        # Once per batch, not per job: the level can change at run time (tests, a
        # debugger), and this keeps on_finished to one attribute test when filtered out.
        self._refresh()

    def on_finished(
        self, job: ClaimedJob, params: JobFinishParams, outcome: Outcome | None = None
    ) -> None:
        kind = params.kind
        if kind is FinishKind.SUCCEEDED:
            if self._debug:
                took = (params.finished_at or 0.0) - (params.started_at or 0.0)
                jobs_log.debug(
                    "job %s (%s) succeeded in %.3f s, attempt %d/%d",
                    job.id,
                    job.task,
                    took,
                    job.attempt,
                    job.max_attempts,
                    extra=_fields("job.succeeded", job, seconds=round(took, 6)),
                )
            return
        if kind is FinishKind.SNOOZE:
            if self._debug and params.run_at is not None:
                jobs_log.debug(
                    "job %s (%s) snoozed: runs again at %s",
                    job.id,
                    job.task,
                    _when(params.run_at),
                    extra=_fields("job.snoozed", job, run_at=_when(params.run_at)),
                )
            return
        if self._info:
            self._log_unsuccessful(job, params, kind)

    def _log_unsuccessful(self, job: ClaimedJob, params: JobFinishParams, kind: FinishKind) -> None:
        """One INFO line for a job that failed, died, was cancelled, dropped or expired
        (successes and snoozes are DEBUG lines, written by ``on_finished`` itself). Over
        60 lines on purpose: one log call per kind, each with its fields, read as one
        table of messages; split up, the messages would be scattered."""
        etype, message = _error(params)
        if kind is FinishKind.RETRY:
            run_at = params.run_at or 0.0
            jobs_log.info(
                "job %s (%s) failed, attempt %d/%d: %s: %s; next run at %s (in %.2f s)",
                job.id,
                job.task,
                job.attempt,
                job.max_attempts,
                etype,
                message,
                _when(run_at),
                max(0.0, run_at - (params.finished_at or run_at)),
                extra=_fields(
                    "job.failed", job, error_type=etype, error=message, run_at=_when(run_at)
                ),
            )
        elif kind is FinishKind.DEAD:
            jobs_log.info(
                "job %s (%s) dead after attempt %d/%d: %s: %s%s",
                job.id,
                job.task,
                job.attempt,
                job.max_attempts,
                etype,
                message,
                _because(params.reason, message),
                extra=_fields(
                    "job.dead", job, error_type=etype, error=message, reason=params.reason
                ),
            )
        elif kind is FinishKind.CANCELLED:
            jobs_log.info(
                "job %s (%s) cancelled, attempt %d/%d: %s",
                job.id,
                job.task,
                job.attempt,
                job.max_attempts,
                params.reason or "cancelled",
                extra=_fields("job.cancelled", job, reason=params.reason),
            )
        elif kind is FinishKind.DROP:
            jobs_log.info(
                "job %s (%s) failed, attempt %d/%d: %s: %s; dropped by its retry hook",
                job.id,
                job.task,
                job.attempt,
                job.max_attempts,
                etype,
                message,
                extra=_fields("job.dropped", job, error_type=etype, error=message),
            )
        elif kind is FinishKind.EXPIRED:
            jobs_log.info(
                "job %s (%s) expired: %s (expires_at %s)",
                job.id,
                job.task,
                params.reason or "expired",
                _when(job.expires_at or 0.0),
                extra=_fields("job.expired", job, reason=params.reason),
            )

    def on_rescued(self, results: Sequence[RescueResult]) -> None:
        for r in results:
            fields = {
                EVENT_FIELDS: {
                    "event": "job.rescued",
                    "job_id": r.job_id,
                    "from_worker": r.worker_id,
                    "state": str(r.state),
                }
            }
            if r.state is JobState.DEAD:
                jobs_log.info(
                    "job %s rescued from lost worker %s: dead (worker lost too often)",
                    r.job_id,
                    r.worker_id,
                    extra=fields,
                )
            else:
                jobs_log.info(
                    "job %s rescued from lost worker %s: queued again",
                    r.job_id,
                    r.worker_id,
                    extra=fields,
                )

    # -- shutdown ------------------------------------------------------------------------

    def on_stopping(self, running: int, timeout: float, hard: bool) -> None:
        if not self._ready:
            return
        fields = {
            EVENT_FIELDS: {
                "event": "worker.stopping",
                "running": running,
                "timeout": timeout,
                "hard": hard,
            }
        }
        if hard:
            worker_log.info("stopping now: releasing %d running job(s)", running, extra=fields)
        elif running:
            worker_log.info(
                "stopping: waiting up to %.1f s for %d running job(s) to finish, then "
                "releasing the rest (a second Ctrl-C releases them at once)",
                timeout,
                running,
                extra=fields,
            )
        else:
            worker_log.info("stopping: no job running", extra=fields)

    def on_released(self, jobs: Sequence[ClaimedJob], started: bool) -> None:
        if not jobs:  # every release was refused (already rescued): said by the worker
            return
        what = "running" if started else "prefetched"
        for job in jobs:
            jobs_log.info(
                "job %s (%s) released back to queue %s (%s; attempt not counted)",
                job.id,
                job.task,
                job.queue,
                what,
                extra=_fields("job.released", job, started=started),
            )
        (worker_log.warning if started else worker_log.info)(
            "released %d %s job(s) back to the queue",
            len(jobs),
            what,
            extra={
                EVENT_FIELDS: {
                    "event": "worker.released",
                    "released": len(jobs),
                    "started": started,
                }
            },
        )
