"""Every exception conveyor raises on purpose.

All derive from :class:`ConveyorError`, so ``except conveyor.ConveyorError`` catches
conveyor's own failures and nothing else.

Example:
    >>> try:
    ...     raise JobFailed("j1", "ValueError", "bad", "Traceback ...")
    ... except ConveyorError as exc:
    ...     exc.error_type
    'ValueError'
"""

from __future__ import annotations


class ConveyorError(Exception):
    """Base class of conveyor's errors."""


class ConfigurationError(ConveyorError, ValueError):
    """A URL, option or argument that conveyor cannot work with."""


class EncodeError(ConveyorError, TypeError):
    """An argument or result that cannot be encoded as JSON; the message names it."""


class DecodeError(ConveyorError, ValueError):
    """A stored payload that cannot be decoded for the task's signature."""


class PayloadTooLarge(ConveyorError, ValueError):
    """The encoded arguments exceed the app's ``max_payload_bytes``."""


class BackendUnavailable(ConveyorError):
    """The storage backend cannot be reached (for example Redis is down)."""


class StoreError(BackendUnavailable):
    """The store is there but cannot serve now: disk full, I/O error, locked beyond its
    busy timeout, read-only. The message names the cause; a worker backs off and retries
    as for an outage, a producer gets this error.

    Example:
        >>> isinstance(StoreError("SQLite store /tmp/x.db: database or disk is full"),
        ...            BackendUnavailable)
        True
    """


class StoreReplaced(ConveyorError):
    """The store a worker opened was deleted or replaced under it (a SQLite file deleted
    or replaced; a PostgreSQL schema whose tables were dropped): it stops (non-zero exit)
    rather than serve a store nobody else can see."""


class WorkerFailed(ConveyorError):
    """A worker stopped for a reason other than a requested stop or the end of a burst
    (a dead executor thread or event loop, its store file replaced, a fetch loop that
    crashed). ``conveyor worker`` exits with status 1."""


class StoreNotFound(ConveyorError, LookupError):
    """A read-only tool was pointed at a store that does not exist (it never creates one)."""


class JobNotFound(ConveyorError, LookupError):
    """No job with that id (never enqueued, or already pruned or deleted)."""


class JobFailed(ConveyorError):
    """The job ended ``dead``: carries the remote error's type, message and traceback."""

    def __init__(
        self,
        job_id: str,
        error_type: str,
        message: str,
        traceback: str = "",
        reason: str | None = None,
    ) -> None:
        self.job_id = job_id
        self.error_type = error_type
        self.message = message
        self.traceback = traceback
        self.reason = reason
        detail = f"{error_type}: {message}" if error_type else message
        if reason and reason != message:
            detail = f"{detail} ({reason})"
        super().__init__(f"job {job_id} failed: {detail}")


class JobCancelled(ConveyorError):
    """The job ended ``cancelled``. Raised by ``result()``; tasks may raise it to stop."""

    def __init__(self, job_id: str = "", reason: str | None = None) -> None:
        self.job_id = job_id
        self.reason = reason
        super().__init__(f"job {job_id} was cancelled" + (f": {reason}" if reason else ""))


class ResultNotStored(ConveyorError, LookupError):
    """``job.result()`` of a job that succeeded but has no stored result: its task has
    ``store_result=False``, or the result was cleared after the task's ``result_ttl``."""

    def __init__(self, job_id: str = "", why: str = "") -> None:
        super().__init__(f"job {job_id} succeeded but its result is not stored: {why}")
        self.job_id = job_id
        self.why = why


class Snooze(ConveyorError):
    """Raise inside a task to run it again after ``seconds`` without using an attempt.

    The attempt counter is given back and the attempt is recorded as ``snoozed``; the
    job goes to ``scheduled`` (not an error, no backoff, no retry budget spent).

    Example::

        @app.task
        def poll(order_id: str) -> None:
            if not ready(order_id):
                raise conveyor.Snooze(30)
    """

    def __init__(self, seconds: float = 0.0) -> None:
        if seconds < 0:
            raise ValueError(f"Snooze needs seconds >= 0, got {seconds}")
        self.seconds = float(seconds)
        super().__init__(f"snoozed for {self.seconds:g} s")


class NonDeterministic(ConveyorError):
    """A durable job's replay called a different step at a position than the run that
    saved it (the job's code changed, or it branches on something that is not a step's
    result). The job ends ``dead`` at once: replaying further could run steps twice.

    >>> NonDeterministic("01J", 2, "charge", "refund").args[0]
    "job 01J: step 2 is 'refund' now but 'charge' was saved there"
    """

    def __init__(self, job_id: str, position: int, saved: str, called: str) -> None:
        super().__init__(
            f"job {job_id}: step {position} is {called!r} now but {saved!r} was saved there"
        )
        self.job_id, self.position, self.saved, self.called = job_id, position, saved, called
