"""``conveyor.current_job()``: what a running task can know about its own job.

Set by the worker around each call (a ``ContextVar``, so it is right in threads and in
asyncio tasks alike). Outside a job it raises ``LookupError``.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def report() -> int:
    ...     job = conveyor.current_job()
    ...     if job.cancel_requested:
    ...         raise conveyor.JobCancelled(job.id)
    ...     return job.attempt
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from conveyor import headers as _headers
from conveyor.errors import ConfigurationError, JobCancelled

if TYPE_CHECKING:
    from conveyor.backends.base import JobFinishParams
    from conveyor.backends.records import ClaimedJob


class JobContext:
    """The running job as seen from inside its task."""

    __slots__ = (
        "_batch",
        "_cancelled",
        "_durable",
        "_event",
        "_headers",
        "_headers_text",
        "_progress",
        "_replay",
        "_secrets",
        "_step_conn",
        "_transaction",
        "attempt",
        "finished_by_transaction",
        "id",
        "max_attempts",
        "queue",
        "run_at",
        "started_at",
        "task",
    )

    def __init__(
        self,
        id: str,
        task: str,
        queue: str,
        attempt: int,
        max_attempts: int,
        headers: str | None = None,
        *,
        run_at: float = 0.0,
        started_at: float = 0.0,
    ) -> None:
        self.id = id
        self.task = task
        self.queue = queue
        self.attempt = attempt
        self.max_attempts = max_attempts
        #: when the job became due, and when this attempt started: its claim, or for a
        #: prefetched job the moment it left the worker's buffer (epoch seconds; 0.0
        #: where unknown): ``started_at - run_at`` is the queue wait
        self.run_at = run_at
        self.started_at = started_at
        # A plain flag, and an Event only if the task waits on it: creating an Event per
        # job cost ~5% of the worker's hot path in profiles.
        self._cancelled = False
        self._event: threading.Event | None = None
        # Latest unsent progress; the worker's progress service takes it (throttled).
        self._progress: tuple[float | None, str | None] | None = None
        # The stored JSON text, decoded on first read: most tasks never look.
        self._headers_text = headers
        self._headers: Mapping[str, str] | None = None
        #: Set by the worker for a task with secret arguments: their opened values.
        self._secrets: tuple[Any, ...] = ()
        #: Set by the worker running the job in its own process (thread, asyncio pools):
        #: opens the block of :meth:`transaction` (conveyor/worker/transactional.py).
        self._transaction: Callable[[JobContext], AbstractContextManager[Any]] | None = None
        #: The success a :meth:`transaction` block committed (the worker writes no
        #: finish of its own then); None otherwise.
        self.finished_by_transaction: JobFinishParams | None = None
        #: Set by the runner: makes this attempt's durable replay (conveyor/durable.py)
        #: on its first step call; the replay is kept in ``_replay``.
        self._durable: Callable[[JobContext], Any] | None = None
        self._replay: Any = None
        #: While a transactional step runs (conveyor/durable_tx.py): its connection,
        #: which :meth:`transaction` yields (the step commits it with its checkpoint).
        self._step_conn: Any = None
        #: Set by the worker on the first job of a gathered batch call (the slot's
        #: holder): the call's members (conveyor/worker/runner.py); None otherwise.
        self._batch: Any = None

    @property
    def headers(self) -> Mapping[str, str]:
        """The job's headers (read-only ``str -> str``; empty when none were set).

        >>> JobContext("j", "t", "q", 1, 3, '{"tenant":"acme"}').headers["tenant"]
        'acme'
        """
        if self._headers is None:
            self._headers = _headers.decode(self._headers_text)
        return self._headers

    @property
    def secret_values(self) -> tuple[Any, ...]:
        """The opened values of this job's secret arguments (``secret=[...]`` or
        ``conveyor.Secret[...]``), empty when it has none: what an integration that
        reports from inside the job (``conveyor.contrib.sentry``) must never send.

        >>> JobContext("j", "t", "q", 1, 3).secret_values
        ()
        """
        return self._secrets

    @property
    def cancel_requested(self) -> bool:
        """True once someone asked to cancel this job (``job.cancel()``) or the worker is
        stopping it (timeout). Long sync tasks should check it and return or raise."""
        return self._cancelled

    def raise_if_cancelled(self) -> None:
        """Raise :class:`conveyor.JobCancelled` when cancellation was requested."""
        if self._cancelled:
            raise JobCancelled(self.id)

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on a cancel request."""
        with _event_lock:
            if self._event is None:
                self._event = threading.Event()
                if self._cancelled:
                    self._event.set()
            event = self._event
        return event.wait(timeout)

    def progress(self, fraction: float | None, message: str | None = None) -> None:
        """Report progress (``fraction`` in 0..1, an optional message). Never blocks:
        the latest value is kept in memory and the worker stores it a few times a
        second at most, so calling this in a tight loop is fine.

        >>> ctx = JobContext("j", "t", "q", 1, 3)
        >>> ctx.progress(0.4, "parsing")
        >>> ctx.take_progress()
        (0.4, 'parsing')
        """
        if fraction is not None:
            fraction = min(1.0, max(0.0, float(fraction)))
        self._progress = (fraction, message)  # one assignment: atomic under the GIL

    def transaction(self) -> AbstractContextManager[Any]:
        """A connection to the store whose transaction also records this job's success:
        ``with current_job().transaction() as conn:`` -- your writes through ``conn`` and
        "succeeded" commit together when the block ends, or not at all (an exception
        rolls both back and the attempt fails as usual; a failed commit fails the
        attempt, which is retried). SQLite (a ``sqlite3`` connection to the store's
        file) and PostgreSQL (psycopg); thread and asyncio pools. See
        docs/transactions.md#transactional-completion.
        """
        if self._step_conn is not None:  # in @app.step(transaction=True): its own
            return contextlib.nullcontext(self._step_conn)
        if self._transaction is None:
            raise ConfigurationError(
                "current_job().transaction() works in a worker's thread or asyncio pool "
                "(the connection lives in the worker's process), not here"
            )
        if self.finished_by_transaction is not None:
            raise ConfigurationError(
                f"job {self.id} already committed its success in a transaction() block"
            )
        return self._transaction(self)

    def publish(self, key: str, value: Any) -> None:
        """Make ``value`` (JSON-encodable) readable outside while the job runs:
        ``app.job(id).read(key)`` / ``await ...aread(key)`` return the last value
        published under ``key``. Saved in the store at once (one fenced write, kept
        with the job's steps: docs/durable.md#publishing-values); where durable steps
        run (every pool of a worker, the testing modes, ``task.execute``).

        >>> # current_job().publish("progress", {"rows": 1200, "of": 5000})
        """
        replay = self._replay
        if replay is None:
            if self._durable is None:
                raise ConfigurationError(
                    f"job {self.id}: publish() works in a job a worker or a testing mode "
                    "runs, not in a job context made by hand"
                )
            replay = self._replay = self._durable(self)
        replay.publish(key, value)

    def take_progress(self) -> tuple[float | None, str | None] | None:
        """Worker side: the progress reported since the last call, or None."""
        value, self._progress = self._progress, None
        return value

    def request_cancel(self) -> None:
        """Worker side: mark cancellation requested."""
        with _event_lock:
            self._cancelled = True
            if self._event is not None:
                self._event.set()

    def __repr__(self) -> str:
        return f"<JobContext {self.task} id={self.id} attempt={self.attempt}>"


def context_of(job: ClaimedJob) -> JobContext:
    """The context of a claimed job (its headers decoded when first read)."""
    return JobContext(
        job.id,
        job.task,
        job.queue,
        job.attempt,
        job.max_attempts,
        job.headers,
        run_at=job.run_at,
        started_at=job.claimed_at,
    )


_event_lock = threading.Lock()
_current: contextvars.ContextVar[JobContext] = contextvars.ContextVar("conveyor_job")


def current_job() -> JobContext:
    """The job the calling code runs in. Raises ``LookupError`` outside a job."""
    try:
        return _current.get()
    except LookupError:
        raise LookupError("conveyor.current_job() called outside a running job") from None


def current_or_none() -> JobContext | None:
    """The running job, or ``None`` outside one (cheap: no exception; for log capture)."""
    return _current.get(None)


def set_current(ctx: JobContext) -> contextvars.Token[JobContext]:
    return _current.set(ctx)


def reset_current(token: contextvars.Token[JobContext]) -> None:
    _current.reset(token)
