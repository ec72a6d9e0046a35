"""Sentry error reporting: ``conveyor.contrib.sentry.instrument(app)``.

Needs the ``sentry`` extra (``pip install 'conveyor[sentry]'``). A middleware
(``conveyor/middleware.py``) whose ``around_execute`` runs each attempt in its own Sentry
isolation scope, tagged with the job, and reports the exception of a failed attempt
where it was raised (thread, asyncio task, or the pool child: with its real traceback):

- tags ``conveyor.job_id``, ``conveyor.task``, ``conveyor.queue``, ``conveyor.attempt``
  (searchable in Sentry);
- a ``conveyor`` context with the same and ``max_attempts`` and ``final_attempt``
  (True when no attempt is left: the job goes dead unless a retry hook says otherwise);
- the event's mechanism is ``conveyor`` (unhandled).

Every failed attempt is reported (a job retried twice then dead: three events, grouped
by Sentry as one issue). A :class:`conveyor.Snooze` and a cancellation
(:class:`conveyor.JobCancelled`) are not errors and are not reported; neither is a job
that cannot run at all (unknown task, undecodable arguments: it goes dead without
running, see ``conveyor jobs --state dead``).

Call ``sentry_sdk.init(...)`` where the app is defined (the module that worker children
import too), then ``instrument(app)``::

    sentry_sdk.init(dsn=os.environ["SENTRY_DSN"])
    app = conveyor.App("sqlite:///jobs.db")
    conveyor.contrib.sentry.instrument(app)
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from conveyor.errors import ConfigurationError, JobCancelled, Snooze

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.context import JobContext


def _sdk() -> Any:
    try:
        return importlib.import_module("sentry_sdk")
    except ImportError:
        raise ConfigurationError(
            "Sentry reporting needs the extra: pip install 'conveyor[sentry]'"
        ) from None


def instrument(app: App) -> None:
    """Report task errors of ``app`` to Sentry (see the module docstring). Calling it
    twice changes nothing.

    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> instrument(app); instrument(app)
    >>> [type(m).__name__ for m in app.middleware]
    ['SentryMiddleware']
    """
    _sdk()  # fail now, not at the first failed job, when the extra is missing
    if not any(isinstance(m, SentryMiddleware) for m in app.middleware):
        app.add_middleware(SentryMiddleware)


def job_context(job: JobContext) -> dict[str, Any]:
    """The ``conveyor`` context of an event."""
    return {
        "job_id": job.id,
        "task": job.task,
        "queue": job.queue,
        "attempt": job.attempt,
        "max_attempts": job.max_attempts,
        "final_attempt": job.attempt >= job.max_attempts,
    }


class SentryMiddleware:
    """The middleware :func:`instrument` adds (no constructor arguments: pool children
    build their own from the class)."""

    def __init__(self) -> None:
        self._sdk = _sdk()

    @contextlib.contextmanager
    def around_execute(self, job: JobContext) -> Iterator[None]:
        sdk = self._sdk
        # One scope per attempt: tags of one job never reach another's events, nor the
        # worker's own (threads and asyncio tasks share nothing here).
        with sdk.isolation_scope() as scope:
            scope.set_tag("conveyor.job_id", job.id)
            scope.set_tag("conveyor.task", job.task)
            scope.set_tag("conveyor.queue", job.queue)
            scope.set_tag("conveyor.attempt", str(job.attempt))
            scope.set_context("conveyor", job_context(job))
            scope.set_transaction_name(job.task)
            try:
                yield
            except (Snooze, JobCancelled):
                raise
            except Exception as exc:
                self._capture(scope, exc)
                raise

    def _capture(self, scope: Any, exc: BaseException) -> None:
        client = self._sdk.get_client()
        utils = importlib.import_module("sentry_sdk.utils")
        event, hint = utils.event_from_exception(
            exc,
            client_options=client.options,
            mechanism={"type": "conveyor", "handled": False},
        )
        scope.capture_event(event, hint=hint)
