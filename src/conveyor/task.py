"""Tasks: a registered function plus its options, and every way to enqueue it.

Calling a task runs the function inline, unchanged. ``enqueue`` checks the arguments
against the signature (``TypeError`` at once), encodes them (``EncodeError`` naming the
argument, ``PayloadTooLarge``) and writes the job; on any error nothing is written.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task(queue="mail", max_attempts=3)
    ... def send(to: str, subject: str = "hi") -> None: ...
    >>> job = send.enqueue("a@example.com")
    >>> job.status
    <JobState.QUEUED: 'queued'>
    >>> send.enqueue(1, 2, 3)
    Traceback (most recent call last):
    TypeError: send() takes from 1 to 2 positional arguments but 3 were given
"""

from __future__ import annotations

import datetime
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Never, ParamSpec, TypeVar

from conveyor import headers as job_headers
from conveyor import options, transactions, unique
from conveyor.aio import to_thread
from conveyor.arity import arity_checker, type_checker
from conveyor.backends.base import JobInsertBatchParams
from conveyor.celery_spellings import celery_args, celery_kwargs, celery_run_at, refusal
from conveyor.classtask import TaskMarker
from conveyor.codec import Decoder, encode_payload
from conveyor.enqueue_plan import Args, Calls, Plan, Planner, call_of, job_class
from conveyor.ids import new_id
from conveyor.secrets import Sealer, secret_parameters
from conveyor.task_options import Delay, Resolved, TaskOptions, When, delay_seconds, epoch_of
from conveyor.unique import UniqueKey

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.compose import Signature
    from conveyor.job import Job

#: the names this module has always offered (``from conveyor.task import Args``)
__all__ = [
    "Args",
    "AsyncFn",
    "AsyncTask",
    "Calls",
    "Delay",
    "Enqueuer",
    "Plan",
    "Task",
    "TaskOptions",
    "When",
]

P = ParamSpec("P")
R = TypeVar("R")


class Enqueuer(TaskMarker, Planner[P, R]):
    """The enqueue methods, bound to a task and a set of per-call overrides.

    Every method goes through one plan (enqueue_plan.py): :meth:`_plan` checks and
    encodes the calls and builds what to write, and :meth:`_write` writes it with the
    backend's one ``job_insert_many``.
    """

    def _overridden(self, overrides: Mapping[str, Any]) -> Enqueuer[P, R]:
        """This task with ``overrides`` in place of this enqueuer's (a workflow's steps)."""
        return Enqueuer(self._task, overrides)

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A signature: this task with these arguments, to compose into workflows
        (``conveyor.chain``, ``conveyor.group``, ``job.then``). Nothing is enqueued."""
        from conveyor.compose import Signature  # a workflow's module: not on the enqueue path

        return Signature(self, args, kwargs)

    # -- blocking ------------------------------------------------------------------------

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue one job now (or per ``with_options(delay=, at=)``)."""
        r = self._options or self._resolved()
        task = self._task
        app = task.app
        if (
            r.simple
            and task.sealer is None
            and not app.middleware.enqueue
            and transactions.active() is None
        ):
            return self._enqueue_simple(r, args, kwargs)
        return self._enqueue([(args, kwargs)], None)[0]

    def _enqueue_simple(self, r: Resolved, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Job[R]:
        """One plain job, ready now, written by the store itself: what ``_plan`` and
        ``_write`` do for it, in the same order (arguments checked, encoded, types
        checked, one batch of one written), without the lists, hooks and checks that
        cannot apply. The common ``task.enqueue(...)``; E1 in BENCHMARKS.md measures it."""
        task = self._task
        app = task.app
        task.check_arguments(*args, **kwargs)
        payload = encode_payload(args, kwargs, max_bytes=app.settings.max_payload_bytes)
        if task.check_types is not None:
            task.check_types(args, kwargs, 0)
        job_id = new_id()
        opts = task.options
        app.backend.job_insert_many(
            JobInsertBatchParams(
                opts.name,
                r.queue,
                (job_id,),
                (payload,),
                r.priority,
                None,
                r.max_attempts,
                r.timeout,
                opts.lease,
            )
        )
        return job_class()(app, job_id, task)

    def enqueue_many(
        self, items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]:
        """Enqueue many jobs in one transaction: all are written or none."""
        return self._enqueue([call_of(item) for item in items], None)

    def enqueue_after(self, delay: Delay, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue to run after ``delay`` (seconds or a timedelta)."""
        return self._enqueue([(args, kwargs)], time.time() + delay_seconds(delay))[0]

    def schedule_at(self, when: When, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue to run at ``when`` (an aware datetime or epoch seconds)."""
        return self._enqueue([(args, kwargs)], epoch_of(when))[0]

    def with_options(
        self,
        *,
        queue: str | None = None,
        priority: int | None = None,
        delay: Delay | None = None,
        at: When | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        unique_key: UniqueKey = None,
        unique_for: unique.Seconds | None = None,
        on_conflict: str | None = None,
        depends_on: Sequence[Job[Any] | str] | None = None,
        headers: Mapping[str, str] | None = None,
        expires: float | datetime.timedelta | datetime.datetime | None = None,
    ) -> Enqueuer[P, R]:
        """The same enqueue methods with per-call options. ``unique_key``/``unique_for``/
        ``on_conflict`` as on the task; ``depends_on``: jobs (or ids) that must all
        succeed first (the job waits in ``waiting``; cancelled if one ends dead);
        ``headers``: ``str -> str`` stored with each job (``current_job().headers``;
        bounded, see conveyor/headers.py), merged over earlier ``with_options``;
        ``expires``: seconds or a timedelta from now, or an aware datetime: a job not
        started by then ends ``expired`` without running (docs/tasks.md)."""
        given: dict[str, Any] = {
            "queue": queue,
            "priority": priority,
            "delay": delay,
            "at": at,
            "max_attempts": max_attempts,
            "timeout": timeout,
            "unique_key": unique_key,
            "unique_for": unique_for,
            "on_conflict": on_conflict,
            "depends_on": tuple(depends_on) if depends_on else None,
            "expires": expires,
        }
        options.check_options(given)
        if headers is not None:
            merged_headers = {**self._overrides.get("headers", {}), **job_headers.check(headers)}
            given["headers"] = job_headers.check(merged_headers)
        if at is not None:
            epoch_of(at)
        unique.check_options(on_conflict or "keep", unique_for)
        merged = {**self._overrides, **{k: v for k, v in given.items() if v is not None}}
        return Enqueuer(self._task, merged)

    # -- Celery's spellings (docs/migrating.md) --------------------------------------------

    def delay(self, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Celery's name for :meth:`enqueue`: the same job, the same checks, the same
        ``Job[R]`` handle (typed with the task's own parameters).

        >>> import conveyor
        >>> app = conveyor.App("sqlite:///:memory:")
        >>> @app.task
        ... def add(a: int, b: int) -> int:
        ...     return a + b
        >>> add.delay(1, 2).status
        <JobState.QUEUED: 'queued'>
        """
        return self.enqueue(*args, **kwargs)

    def apply_async(
        self,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        *,
        countdown: Delay | None = None,
        eta: When | None = None,
        expires: float | datetime.timedelta | datetime.datetime | None = None,
        queue: str | None = None,
        priority: int | None = None,
        **unsupported: Never,
    ) -> Job[R]:
        """Celery's ``apply_async``, mapped onto conveyor: ``countdown`` is
        :meth:`enqueue_after`, ``eta`` :meth:`schedule_at` (an aware datetime or epoch
        seconds), ``queue``/``priority``/``expires`` are :meth:`with_options`' (higher
        ``priority`` runs first). Any other Celery option is refused with a ``TypeError``
        saying what conveyor offers instead (``retry_policy``, which retries Celery's
        publishing: an enqueue raises ``BackendUnavailable``). Returns the job's handle, as
        ``enqueue`` does.

        >>> import conveyor
        >>> app = conveyor.App("sqlite:///:memory:")
        >>> @app.task
        ... def add(a: int, b: int) -> int:
        ...     return a + b
        >>> add.apply_async((1,), {"b": 2}, countdown=60, queue="math").status
        <JobState.SCHEDULED: 'scheduled'>
        >>> add.apply_async((1, 2), retry_policy={"max_retries": 3})
        Traceback (most recent call last):
        ...
        TypeError: apply_async() does not take retry_policy: an enqueue is one write to the store, and raises conveyor.BackendUnavailable when the store is unreachable (catch it to try again); a job's retries are the task's options, @app.task(max_attempts=5, retry=conveyor.Backoff(...))
        """
        if unsupported:
            raise TypeError(refusal(sorted(unsupported)))
        if countdown is not None and eta is not None:
            raise ValueError("apply_async() takes countdown or eta, not both")
        call = (celery_args(args), celery_kwargs(kwargs))
        given = {"queue": queue, "priority": priority, "expires": expires}
        enqueuer = self
        if any(v is not None for v in given.values()):
            enqueuer = self.with_options(queue=queue, priority=priority, expires=expires)
        run_at = celery_run_at(countdown, eta)
        return enqueuer._enqueue([call], run_at)[0]

    # -- asyncio twins (checked and encoded here, written in a thread: the loop never
    # blocks on the store) ----------------------------------------------------------------

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`enqueue`."""
        plan = self._plan([(args, kwargs)], None)
        return (await self._awrite(plan))[0]

    async def aenqueue_many(
        self, items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]:
        """Asyncio twin of :meth:`enqueue_many`."""
        calls = [call_of(item) for item in items]
        if transactions.active() is not None:
            return await self._awrite(self._plan(calls, None)) if calls else []
        return await to_thread(self._enqueue, calls, None)

    async def aenqueue_after(self, delay: Delay, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`enqueue_after`."""
        plan = self._plan([(args, kwargs)], time.time() + delay_seconds(delay))
        return (await self._awrite(plan))[0]

    async def aschedule_at(self, when: When, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`schedule_at`."""
        plan = self._plan([(args, kwargs)], epoch_of(when))
        return (await self._awrite(plan))[0]


class Task(Enqueuer[P, R]):
    """A function registered with an app. Call it to run inline; enqueue it to run later."""

    def __init__(self, app: App, fn: Callable[P, R], options: TaskOptions) -> None:
        super().__init__(self, {})
        self.app = app
        self.fn = fn
        self.options = options
        self.name = options.name
        self.is_async = inspect.iscoroutinefunction(fn)
        #: a batch task's jobs take one item's arguments, not the body's list (batch.py)
        signature: Callable[..., Any] = fn
        if options.batch is not None:  # imported only for batch tasks (cold start)
            from conveyor.batch import item_signature

            signature = item_signature(fn)
        self.decoder = Decoder(signature)
        #: raises TypeError exactly when ``fn`` could not be called with the arguments
        self.check_arguments = arity_checker(signature)
        #: raises TypeError naming the parameter when an argument does not match a
        #: primitive annotation; None when nothing is checked (App(check_types=False))
        self.check_types = type_checker(signature) if app.settings.check_types else None
        secret = secret_parameters(fn, options.secret)
        #: seals the secret arguments at enqueue, opens them in the worker (secrets.py)
        self.sealer = Sealer(options.name, fn, secret) if secret else None
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", options.name)
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Task {self.name} queue={self.options.queue}>"

    def execute(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run the task body now, as a worker would, on a memory store of its own (the
        app's is not touched): the arguments go through the codec round trip, ``current_job()`` is set, an ``async def`` task
        runs to completion, and the result comes back decoded. One attempt, no retries:
        a failure raises the task's own exception (a job that cannot run at all,
        :class:`~conveyor.errors.JobFailed`). See docs/testing.md.

        >>> import conveyor
        >>> app = conveyor.App("sqlite:///:memory:")
        >>> @app.task
        ... def double(x: int) -> int:
        ...     return 2 * x
        >>> double.execute(21)
        42
        """
        from conveyor.extensions import provided  # the testing package, never imported here

        self.app.import_includes()  # the modules a worker would have imported
        value: R = provided("execute")(self, args, kwargs)
        return value


class AsyncTask(Task[P, R]):
    """A task of an ``async def`` function: ``Task[P, R]`` with ``R`` the awaited result
    (its jobs are ``Job[R]``); calling it directly still gives the coroutine."""

    def __call__(  # type: ignore[override]  # calling gives the coroutine, jobs give R
        self, *args: P.args, **kwargs: P.kwargs
    ) -> Coroutine[Any, Any, R]:
        value: Coroutine[Any, Any, R] = self.fn(*args, **kwargs)  # type: ignore[assignment]
        return value


AsyncFn = Callable[..., Awaitable[Any]]
