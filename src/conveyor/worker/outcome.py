"""What one attempt produced, and the pure mapping from that to the job's next state.

The executor produces an :class:`Outcome`; :func:`finish_params` turns it into the
completer's :class:`~conveyor.backends.base.JobFinishParams` using the task's retry
policy. No I/O here, so every branch is unit-tested directly.

Example:
    >>> from conveyor.backends.base import ClaimedJob
    >>> job = ClaimedJob("j", "t", "q", "{}", 1, 3, 7, None, 30.0, 0.0, 0.0, 0, 0)
    >>> finish_params(Outcome.ok("42"), job, None, "w1").kind
    <FinishKind.SUCCEEDED: 'succeeded'>
    >>> from conveyor.errors import EncodeError
    >>> refused = Outcome.refused(EncodeError("cannot encode result: {1} is a set"))
    >>> finish_params(refused, job, None, "w1").kind   # attempt 1 of 3: dead, not retried
    <FinishKind.DEAD: 'dead'>
"""

from __future__ import annotations

import json
import time
import traceback
from typing import TYPE_CHECKING, Any

from conveyor import records
from conveyor.backends.base import ClaimedJob, JobFinishParams
from conveyor.errors import JobCancelled, NonDeterministic, Snooze
from conveyor.retry import Backoff, next_step
from conveyor.rules import REFUSED_REASON
from conveyor.states import FinishKind

if TYPE_CHECKING:
    from conveyor.task import Task

OK, ERROR, CANCELLED, UNRUNNABLE, SNOOZED = "ok", "error", "cancelled", "unrunnable", "snoozed"
EXPIRED, REFUSED = "expired", "refused"


class RemoteError(Exception):
    """An error raised in another process or interpreter, rebuilt by type name."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


class Outcome:
    """The result of running one attempt (plain data: it can cross process boundaries)."""

    __slots__ = (
        "error", "error_json", "finished_at", "parked", "reason", "result", "snooze", "status",
        "steps",
    )  # fmt: skip

    def __init__(
        self,
        status: str,
        result: str | None = None,
        error: BaseException | None = None,
        error_json: str | None = None,
        reason: str | None = None,
        snooze: float | None = None,
    ) -> None:
        self.snooze = snooze  # seconds, for SNOOZED
        #: a child's wait_for parked the job (the store ended the attempt): its deadline
        self.parked: float | None = None
        #: a child's durable steps (run, replayed, replays), for the worker's metrics
        self.steps: tuple[int, int, int] | None = None
        self.status = status
        self.result = result
        self.error = error
        self.error_json = error_json
        self.reason = reason
        self.finished_at = time.time()

    @classmethod
    def ok(cls, result: str | None) -> Outcome:
        """Success; ``result`` is the encoded value, None when the task stores none."""
        return cls(OK, result=result)

    @classmethod
    def failed(cls, error: BaseException) -> Outcome:
        return cls(ERROR, error=error, error_json=error_to_json(error))

    @classmethod
    def cancelled(cls, reason: str = "cancelled while running") -> Outcome:
        return cls(CANCELLED, reason=reason)

    @classmethod
    def snoozed(cls, seconds: float) -> Outcome:
        """The task raised :class:`conveyor.Snooze`: run again later, attempt given back."""
        return cls(SNOOZED, snooze=seconds)

    @classmethod
    def expired(cls, reason: str) -> Outcome:
        """The job was not started before its ``expires_at``: it ends ``expired``, unrun."""
        return cls(EXPIRED, reason=reason)

    @classmethod
    def unrunnable(cls, reason: str, error: BaseException | None = None) -> Outcome:
        """The job can never run here (unknown task, undecodable payload): dead now."""
        err = (
            error_to_json(error)
            if error
            else json.dumps({"type": "Unrunnable", "message": reason, "traceback": ""})
        )
        return cls(UNRUNNABLE, error=error, error_json=err, reason=reason)

    @classmethod
    def refused(cls, error: BaseException) -> Outcome:
        """The task ran, but conveyor refuses what it produced (a result that cannot be
        encoded): running it again gives the same refusal, so the job is not retried and
        ends dead now, ``error`` saying what was refused. An exception the task raises
        itself is never this, it is retried as the task's policy says."""
        return cls(REFUSED, error=error, error_json=error_to_json(error), reason=REFUSED_REASON)


def error_to_json(error: BaseException) -> str:
    """Type, message and traceback text of an exception, as stored JSON."""
    tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    name = getattr(error, "type_name", None) or type(error).__qualname__
    return json.dumps({"type": name, "message": str(error), "traceback": tb})


def finish_params(
    outcome: Outcome,
    job: ClaimedJob,
    task: Task[Any, Any] | None,
    worker_id: str,
    cancel_requested: bool = False,
    started_at: float | None = None,
) -> JobFinishParams:
    """The finish write for an outcome: success, retry with backoff, dead, cancelled or
    dropped. A cancel request turns a failure into ``cancelled`` (never retried).
    ``started_at``: when the attempt started, if not at its claim (a prefetched job)."""
    started = job.claimed_at if started_at is None else started_at
    if outcome.status == OK:  # one per job: built positionally, no keyword dict
        return JobFinishParams(
            job.id,
            job.token,
            FinishKind.SUCCEEDED,
            worker_id,
            job.attempt,
            outcome.result,
            None,
            None,
            None,
            started,
            outcome.finished_at,
        )
    common: dict[str, Any] = {
        "id": job.id,
        "token": job.token,
        "worker_id": worker_id,
        "attempt": job.attempt,
        "started_at": started,
        "finished_at": outcome.finished_at,
    }
    if outcome.status == UNRUNNABLE or outcome.status == REFUSED:
        return JobFinishParams(
            kind=FinishKind.DEAD, error=outcome.error_json, reason=outcome.reason, **common
        )
    if isinstance(outcome.error, NonDeterministic):  # a replay gone astray: never retried
        return JobFinishParams(
            kind=FinishKind.DEAD,
            error=outcome.error_json,
            reason="non-deterministic replay",
            **common,
        )
    if outcome.status == EXPIRED:
        return JobFinishParams(kind=FinishKind.EXPIRED, reason=outcome.reason, **common)
    if outcome.status == CANCELLED or cancel_requested or isinstance(outcome.error, JobCancelled):
        return JobFinishParams(
            kind=FinishKind.CANCELLED,
            error=outcome.error_json,
            reason=outcome.reason or "cancelled while running",
            **common,
        )
    if outcome.status == SNOOZED or isinstance(outcome.error, Snooze):
        seconds = (
            outcome.snooze if outcome.snooze is not None else getattr(outcome.error, "seconds", 0.0)
        )
        return JobFinishParams(
            kind=FinishKind.SNOOZE,
            run_at=outcome.finished_at + seconds,
            reason=f"snoozed for {seconds:g} s",
            **common,
        )
    return _failed_params(outcome, job, task, common)


def _failed_params(
    outcome: Outcome, job: ClaimedJob, task: Task[Any, Any] | None, common: dict[str, Any]
) -> JobFinishParams:
    """A failed attempt: retried with the task's backoff, dead, or dropped by its hook."""
    error = outcome.error or RemoteError("Error", "unknown error")
    backoff = task.options.retry if task else Backoff()
    hook = task.options.retry_delay if task else None
    kind, delay, reason = next_step(
        attempt=job.attempt,
        max_attempts=job.max_attempts,
        error=error,
        job=job,
        backoff=backoff,
        hook=hook,
    )
    run_at = outcome.finished_at + delay if delay is not None else None
    return JobFinishParams(
        kind=kind, error=outcome.error_json, reason=reason, run_at=run_at, **common
    )


#: Finish kinds whose write carries the attempt's output (a result, an error text).
_CARRIES_OUTPUT = (FinishKind.SUCCEEDED, FinishKind.RETRY, FinishKind.DEAD, FinishKind.CANCELLED)


def too_large_for_store(refusal: BaseException) -> bool:
    """True when a store refused a write for its size, by the drivers' own signs (on the
    error or what it wraps): SQLite's ``SQLITE_TOOBIG`` (code 18), a PostgreSQL error of
    SQLSTATE class 54 ("program limit exceeded"), Redis' "invalid bulk length" (a value
    over ``proto-max-bulk-len``) or "exceeds maximum allowed size". Anything else (a
    Redis ``OOM``, ``READONLY``: conditions that pass) is not taken for one.

    >>> import sqlite3
    >>> exc = sqlite3.DataError("string or blob too big")
    >>> exc.sqlite_errorcode = 18
    >>> too_large_for_store(exc), too_large_for_store(RuntimeError("OOM command not allowed"))
    (True, False)
    """
    seen: set[int] = set()
    error: BaseException | None = refusal
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if getattr(error, "sqlite_errorcode", None) == 18:  # SQLITE_TOOBIG
            return True
        sqlstate = getattr(error, "sqlstate", None)
        if isinstance(sqlstate, str) and sqlstate.startswith("54"):
            return True
        if type(error).__name__ == "ResponseError" and any(
            sign in str(error) for sign in ("invalid bulk length", "exceeds maximum allowed size")
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def refused_finish(params: JobFinishParams, refusal: BaseException) -> JobFinishParams | None:
    """The finish written instead of one the store refused for its size
    (:func:`too_large_for_store`); None for any other refusal (the job then stays
    ``running`` and is rescued). A result over the store's limit: running the job again
    returns the same, so it ends ``DEAD`` now, its error saying what was refused. An
    error text over it (a task's exception with a huge message): the same finish with a
    short error in its place, so a failure is still retried as the task's policy says.

    >>> import sqlite3
    >>> from conveyor.backends.base import JobFinishParams
    >>> done = JobFinishParams("j", 1, FinishKind.SUCCEEDED, "w1", 1, '"xxxxxx"')
    >>> too_big = sqlite3.DataError("string or blob too big")
    >>> too_big.sqlite_errorcode = 18
    >>> dead = refused_finish(done, too_big)
    >>> dead.kind, dead.result, json.loads(dead.error)["message"]
    (<FinishKind.DEAD: 'dead'>, None, 'the store refused to write the result (8 characters): \
DataError: string or blob too big')
    """
    if params.kind not in _CARRIES_OUTPUT or not too_large_for_store(refusal):
        return None
    why = f"{type(refusal).__name__}: {refusal}"
    if params.result is not None:
        message = (
            f"the store refused to write the result ({len(params.result):,} characters): {why}"
        )
        error = json.dumps({"type": "FinishRefused", "message": message, "traceback": ""})
        return records.replace(
            params,
            kind=FinishKind.DEAD,
            result=None,
            error=error,
            reason=REFUSED_REASON,
            run_at=None,
        )
    if params.error is not None:
        message = (
            f"the store refused to write this attempt's error ({len(params.error):,} "
            f"characters): {why}"
        )
        error = json.dumps({"type": "FinishRefused", "message": message, "traceback": ""})
        return records.replace(params, error=error)
    return None
