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

Secret arguments (``secret=[...]``, ``conveyor.Secret[...]``, docs/secrets.md) never
reach an event: Sentry records the local variables of every frame by default, the
task's own (``card='4111...'``) and conveyor's (the argument list) among them, so each
event captured in an attempt's scope (the job's error, and anything the task reports
itself) is scrubbed before it is sent: every string, local variable and breadcrumb that
holds a secret value shows ``•••`` instead.

Works with sentry-sdk 2.x and 3.x.

Call ``sentry_sdk.init(...)`` where the app is defined (the module that worker children
import too), then ``instrument(app)``::

    sentry_sdk.init(dsn=os.environ["SENTRY_DSN"])
    app = conveyor.App("sqlite:///jobs.db")
    conveyor.contrib.sentry.instrument(app)
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from conveyor.contrib.scrub import Scrubber
from conveyor.errors import ConfigurationError, JobCancelled, Snooze

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.context import JobContext

log = logging.getLogger("conveyor.sentry")


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
        self._event_from_exception = _event_builder(self._sdk)
        self._failed_once = False

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
            if job.secret_values:
                scope.add_event_processor(_scrubber(Scrubber(job.secret_values)))
            try:
                yield
            except (Snooze, JobCancelled):
                raise
            except Exception as exc:
                self._capture(scope, exc)
                raise

    def _capture(self, scope: Any, exc: BaseException) -> None:
        # A reporting failure (an SDK whose API moved, a full queue) is logged once and
        # never replaces the task's own error: the job's outcome is the task's.
        try:
            event, hint = self._event_from_exception(exc)
            scope.capture_event(event, hint=hint)
        except Exception as failure:
            if not self._failed_once:
                self._failed_once = True
                log.warning("Sentry reporting failed (%s: %s)", type(failure).__name__, failure)


def _event_builder(sdk: Any) -> Callable[[BaseException], tuple[dict[str, Any], Any]]:
    """``sentry_sdk.utils.event_from_exception`` with conveyor's mechanism, whichever
    major: 2.x takes ``client_options``, 3.x reads them from the current client."""
    utils = importlib.import_module("sentry_sdk.utils")
    build = utils.event_from_exception
    mechanism = {"type": "conveyor", "handled": False}
    if "client_options" in inspect.signature(build).parameters:  # sentry-sdk 2.x

        def build_2(exc: BaseException) -> tuple[dict[str, Any], Any]:
            options = sdk.get_client().options
            event, hint = build(exc, client_options=options, mechanism=mechanism)
            return event, hint

        return build_2

    def build_3(exc: BaseException) -> tuple[dict[str, Any], Any]:
        event, hint = build(exc, mechanism=mechanism)
        return event, hint

    return build_3


def _scrubber(scrubber: Scrubber) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """A Sentry event processor: the event with every secret value masked (it runs
    before the SDK serialises the event, so frames' variables are still objects)."""
    sdk = _sdk()
    utils = importlib.import_module("sentry_sdk.utils")

    def scrub(event: dict[str, Any], hint: Any) -> dict[str, Any]:
        options = sdk.get_client().options
        if options.get("attach_stacktrace") and not (
            "exception" in event or "stacktrace" in event or "threads" in event
        ):
            # The client attaches the current stack to a message *after* the event
            # processors ran (sentry-sdk 3 does so by default): attach it here, as the
            # client would, so that its frames' variables are scrubbed too.
            stack = utils.current_stacktrace(max_value_length=options.get("max_value_length"))
            event["threads"] = {
                "values": [{"stacktrace": stack, "crashed": False, "current": True}]
            }
        scrubbed: dict[str, Any] = scrubber.scrub(event)
        return scrubbed

    return scrub
