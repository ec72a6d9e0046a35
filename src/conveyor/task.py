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

import dataclasses
import datetime
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Never, ParamSpec, TypeVar

from conveyor import headers as job_headers
from conveyor import limits, options, transactions, unique
from conveyor.aio import to_thread
from conveyor.arity import arity_checker, type_checker
from conveyor.backends.base import (
    JobInsertBatchParams,
    JobInsertParams,
    flow_features_of,
    require_feature,
)
from conveyor.classtask import TaskMarker
from conveyor.codec import Decoder, encode_payload
from conveyor.ids import new_id, new_ids
from conveyor.limits import LimitKey
from conveyor.middleware import NewJob
from conveyor.retry import Backoff, RetryDelayHook
from conveyor.secrets import Sealer, secret_parameters
from conveyor.unique import UniqueKey

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.compose import Signature
    from conveyor.job import Job

P = ParamSpec("P")
R = TypeVar("R")

Delay = float | int | datetime.timedelta
When = datetime.datetime | float | int


@dataclasses.dataclass(frozen=True, slots=True)
class TaskOptions:
    """Options of a task; every job copies queue, priority, attempts, timeout and lease."""

    name: str
    queue: str = "default"
    priority: int = 0
    max_attempts: int = 5
    timeout: float | None = None
    retry: Backoff = dataclasses.field(default_factory=Backoff)
    retry_delay: RetryDelayHook | None = None
    lease: float = 30.0
    # -- flow control (see unique.py and limits.py) --
    unique_key: UniqueKey = None
    unique_for: unique.Seconds | None = None
    on_conflict: str = "keep"
    concurrency: int | None = None
    rate: str | None = None
    limit_key: LimitKey = None
    #: parameters encrypted at rest (plus those annotated ``conveyor.Secret[...]``)
    secret: tuple[str, ...] = ()
    # -- results (docs/tasks.md) --
    #: False: a job succeeds without its result being encoded or stored
    store_result: bool = True
    #: seconds a stored result is kept after the job finished (then cleared; the job's
    #: row stays until the app's ``retention``); None: as long as the job
    result_ttl: unique.Seconds | None = None
    #: seconds (or a timedelta) after each enqueue by which a job must have started;
    #: one not started by then ends ``expired``, never run. None: never expires.
    expires: unique.Seconds | None = None

    def __post_init__(self) -> None:
        # Types and ranges first (options.py), so the checks below compare numbers.
        options.check_options({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})
        if isinstance(self.expires, datetime.datetime):  # one instant for every job: no
            raise options.OptionTypeError(
                "a task's expires must be seconds or a timedelta (from each enqueue); give "
                "an aware datetime per job with with_options(expires=...)"
            )
        unique.check_options(self.on_conflict, self.unique_for)
        limits.check_options(self.concurrency, self.rate)


class Args(Generic[P]):
    """Arguments for one job of ``enqueue_many``: ``Args(1, 2, key="v")``.

    Plain tuples/lists (positional) and dicts (keywords) work too. Type checkers check
    ``Args(...)`` items against the task's parameters (mypy everywhere; pyright when the
    ``Args(...)`` is written in the call, as in ``enqueue_many(Args(i) for i in ids)``);
    tuples and dicts are checked only when enqueued.
    """

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: P.args, **kwargs: P.kwargs) -> None:
        self.args = args
        self.kwargs = kwargs


_NO_KWARGS: Mapping[str, Any] = {}


def _call_of(
    item: Args[Any] | Sequence[Any] | Mapping[str, Any],
) -> tuple[Sequence[Any], Mapping[str, Any]]:
    """(args, kwargs) of one ``enqueue_many`` item."""
    if type(item) is tuple or type(item) is list:  # the common case, checked first
        return item, _NO_KWARGS
    if isinstance(item, Args):
        return item.args, item.kwargs
    if isinstance(item, Mapping):
        return (), item
    if isinstance(item, (list, tuple)):
        return item, _NO_KWARGS
    raise TypeError(
        "enqueue_many items must be Args(...), a tuple/list of positional "
        f"arguments or a dict of keyword arguments, got {type(item).__name__}"
    )


def _seconds(delay: Delay) -> float:
    return options.check_seconds("delay", delay, allow_zero=True)


def _epoch(when: When) -> float:
    if isinstance(when, datetime.datetime):
        if when.tzinfo is None:
            raise ValueError("schedule_at needs an aware datetime (with tzinfo) or epoch seconds")
        return when.timestamp()
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        seconds = float(when) if isinstance(when, float) or abs(when) < 2**53 else math.inf
        if not math.isfinite(seconds):
            raise options.OptionValueError(f"when must be finite epoch seconds, got {when!r}")
        return seconds
    raise TypeError(f"when must be an aware datetime or epoch seconds, got {type(when).__name__}")


#: Celery ``apply_async`` options conveyor does not take -> what it offers instead.
_RETRIES = (
    "a job's retries are the task's options, @app.task(max_attempts=5, retry=conveyor.Backoff(...))"
)
#: Celery's retry/retry_policy retry the *publishing* of the message to the broker.
_PUBLISH = (
    "an enqueue is one write to the store, and raises conveyor.BackendUnavailable when "
    "the store is unreachable (catch it to try again); " + _RETRIES
)
_CELERY_INSTEAD = {
    "retry": _PUBLISH,
    "retry_policy": _PUBLISH,
    "max_retries": _RETRIES,
    "link": "chain steps with a.s(...) | b.s(...), or job.then(b.s()) after an enqueue",
    "link_error": "run a handler on failure with job.on_failure(handler.s())",
    "task_id": "conveyor makes the job id (job.id); for one job per key use "
    "with_options(unique_key=...)",
    "time_limit": "limit a run with @app.task(timeout=seconds) or with_options(timeout=...)",
    "soft_time_limit": "limit a run with @app.task(timeout=seconds) or with_options(timeout=...)",
    "headers": "use with_options(headers={...}).enqueue(...) (str -> str)",
    "ignore_result": "use @app.task(store_result=False)",
    "routing_key": "jobs are routed by queue=",
    "exchange": "jobs are routed by queue=",
    "serializer": "arguments are stored as JSON by conveyor's codec; there is nothing to choose",
    "compression": "arguments are stored as JSON by conveyor's codec; there is nothing to choose",
}
_APPLY_ASYNC_TAKES = "args, kwargs, countdown, eta, expires, queue and priority"


def _refusal(names: Sequence[str]) -> str:
    """The one-line error for Celery options ``apply_async`` does not take."""
    name = names[0]
    instead = _CELERY_INSTEAD.get(
        name,
        f"it takes {_APPLY_ASYNC_TAKES}; other options are task.with_options(...)'s "
        "(docs/migrating.md)",
    )
    more = f" (nor {', '.join(names[1:])})" if len(names) > 1 else ""
    return f"apply_async() does not take {name}{more}: {instead}"


def _celery_args(args: Sequence[Any] | None) -> Sequence[Any]:
    if args is None:
        return ()
    if not isinstance(args, (tuple, list)):
        raise TypeError(
            "apply_async(args=...) takes a tuple or list of positional arguments, got "
            f"{type(args).__name__} (task.delay(x) passes arguments directly)"
        )
    return args


def _celery_kwargs(kwargs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if kwargs is None:
        return _NO_KWARGS
    if not isinstance(kwargs, Mapping):
        raise TypeError(
            f"apply_async(kwargs=...) takes a dict of keyword arguments, got {type(kwargs).__name__}"
        )
    return kwargs


class _Resolved:
    """The options of one :class:`Enqueuer` resolved once (task options, then per-call
    overrides): everything a job needs except its arguments and its id."""

    __slots__ = (
        "at",
        "delay",
        "depends_on",
        "expires",
        "headers",
        "limit",
        "max_attempts",
        "on_conflict",
        "pipe",
        "plain",
        "priority",
        "queue",
        "simple",
        "timeout",
        "unique_for",
        "unique_key",
    )

    def __init__(self, opts: TaskOptions, o: Mapping[str, Any]) -> None:
        self.queue: str = o.get("queue") or opts.queue
        self.priority: int = o.get("priority", opts.priority)
        self.max_attempts: int = o.get("max_attempts", opts.max_attempts)
        self.timeout: float | None = o.get("timeout", opts.timeout)
        self.at: When | None = o.get("at")
        self.delay: Delay | None = o.get("delay")
        self.unique_key: UniqueKey = o.get("unique_key", opts.unique_key)
        self.unique_for: unique.Seconds | None = o.get("unique_for", opts.unique_for)
        self.on_conflict: str = o.get("on_conflict", opts.on_conflict)
        depends_on = o.get("depends_on") or ()
        self.depends_on: tuple[str, ...] = tuple(getattr(d, "id", d) for d in depends_on)
        self.pipe: int = o.get("pipe", 0) if self.depends_on else 0
        #: checked by with_options; None: none given
        self.headers: dict[str, str] | None = o.get("headers")
        #: checked (options.check_expires); made an instant per enqueue by expires_at()
        self.expires: float | datetime.timedelta | datetime.datetime | None = o.get(
            "expires", opts.expires
        )
        self.limit = opts.concurrency is not None or opts.rate is not None
        #: no job can carry a unique key, parents or a limit: the batch fast path applies
        self.plain = (
            self.unique_key is None and not self.depends_on and not o.get("pipe") and not self.limit
        )
        #: plain, ready now, no headers, never expires: a single enqueue needs nothing
        #: but its arguments and an id (``Enqueuer.enqueue``, when no hook applies)
        self.simple = (
            self.plain
            and not self.headers
            and self.at is None
            and self.delay is None
            and self.expires is None
        )

    def expires_at(self) -> float | None:
        """When a job enqueued now expires by these options (``None``: never)."""
        if self.expires is None:
            return None
        return options.expiry_time(self.expires, time.time())

    def run_at(self) -> float | None:
        """When a job enqueued now runs by these options (``None``: ready now)."""
        if self.at is not None:
            return _epoch(self.at)
        if self.delay is not None:
            return time.time() + _seconds(self.delay)
        return None


Calls = Sequence[tuple[Sequence[Any], Mapping[str, Any]]]
#: What ``_write`` writes: one batch of plain jobs, or one params record per job.
Plan = JobInsertBatchParams | list[JobInsertParams]


_JOB: list[type[Job[Any]]] = []


def _job_class() -> type[Job[Any]]:
    """:class:`~conveyor.job.Job`, imported on first use (job.py imports this module)
    and then kept: an ``import`` statement per enqueue costs more than the lookup."""
    if not _JOB:
        from conveyor.job import Job

        _JOB.append(Job)
    return _JOB[0]


class Enqueuer(TaskMarker, Generic[P, R]):
    """The enqueue methods, bound to a task and a set of per-call overrides.

    Every method goes through one plan: :meth:`_plan` checks and encodes the calls and
    builds what to write (one shared :class:`JobInsertBatchParams` for plain jobs, the
    fast path; one :class:`JobInsertParams` each when a job has flow fields), and
    :meth:`_write` writes it with the backend's one ``job_insert_many``.
    """

    def __init__(self, task: Task[P, R], overrides: Mapping[str, Any]) -> None:
        self._task = task
        self._overrides = dict(overrides)
        self._options: _Resolved | None = None  # resolved on first use (Task sets options late)

    def _overridden(self, overrides: Mapping[str, Any]) -> Enqueuer[P, R]:
        """This task with ``overrides`` in place of this enqueuer's (a workflow's steps)."""
        return Enqueuer(self._task, overrides)

    @staticmethod
    def _job(app: App, job_id: str, task: Task[Any, Any] | None) -> Job[Any]:
        """A handle on a job just written (a workflow's steps get theirs here too)."""
        return _job_class()(app, job_id, task)

    def _resolved(self) -> _Resolved:
        if self._options is None:
            self._options = _Resolved(self._task.options, self._overrides)
        return self._options

    # -- the plan ------------------------------------------------------------------------

    def _plan(
        self, calls: Calls, run_at: float | None
    ) -> JobInsertBatchParams | list[JobInsertParams]:
        """Check and encode ``calls`` (``TypeError`` / ``EncodeError`` before anything is
        written) and build the insert. Everything not per call is hoisted out of the loop
        (``enqueue_many`` spends its time per item; measured in BENCHMARKS.md)."""
        task, r = self._task, self._resolved()
        check, max_bytes = task.check_arguments, task.app.max_payload_bytes
        check_types = task.check_types
        if run_at is None:
            run_at = r.run_at()
        stamping = bool(r.headers) or bool(task.app.middleware.enqueue)
        if r.plain:
            payloads = []
            sealer = task.sealer
            for args, kwargs in calls:
                check(*args, **kwargs)
                if sealer is not None:
                    if check_types is not None:
                        check_types(args, kwargs, 0)
                    args, kwargs = sealer.seal(args, kwargs)
                payloads.append(encode_payload(args, kwargs, max_bytes=max_bytes))
                if check_types is not None and sealer is None:  # after encoding: what
                    check_types(args, kwargs, 0)  # cannot be stored says so first
            ids = new_ids(len(payloads))
            return JobInsertBatchParams(
                task=task.options.name,
                queue=r.queue,
                ids=ids,
                payloads=payloads,
                priority=r.priority,
                run_at=run_at,
                max_attempts=r.max_attempts,
                timeout=r.timeout,
                lease=task.options.lease,
                headers=[self._headers(r, i, run_at) for i in ids] if stamping else None,
                expires_at=r.expires_at(),
            )
        return [self._job_params(r, args, kwargs, run_at) for args, kwargs in calls]

    def _headers(self, r: _Resolved, job_id: str, run_at: float | None) -> str | None:
        """The stored headers of one job: ``with_options(headers=)`` first, then each
        middleware's ``on_enqueue`` (in the order added) may change them; the bounds
        are checked on the result (conveyor/headers.py)."""
        hooks = self._task.app.middleware.enqueue
        given = dict(r.headers) if r.headers else {}
        if not hooks:
            return job_headers.encode(given)
        job = NewJob(job_id, self._task.options.name, r.queue, r.priority, run_at, given)
        self._task.app.middleware.call(hooks, job)
        return job_headers.encode(job_headers.check(job.headers))

    def _job_params(
        self, r: _Resolved, args: Sequence[Any], kwargs: Mapping[str, Any], run_at: float | None
    ) -> JobInsertParams:
        """One job as its own params record (flow fields, workflow steps, periodic slots)."""
        task = self._task
        # A workflow step gets its parents' result(s) first: check with a stand-in.
        task.check_arguments(*((None,) if r.pipe else ()), *args, **kwargs)
        if task.check_types is not None:  # the stand-in is not checked
            task.check_types((None, *args) if r.pipe else args, kwargs, 1 if r.pipe else 0)
        stored_args, stored_kwargs = (
            (args, kwargs) if task.sealer is None else task.sealer.seal(args, kwargs)
        )
        payload = encode_payload(stored_args, stored_kwargs, max_bytes=task.app.max_payload_bytes)
        job_id = new_id()
        stamping = bool(r.headers) or bool(task.app.middleware.enqueue)
        return JobInsertParams(
            id=job_id,
            task=task.options.name,
            queue=r.queue,
            payload=payload,
            priority=r.priority,
            run_at=run_at,
            max_attempts=r.max_attempts,
            timeout=r.timeout,
            lease=task.options.lease,
            headers=self._headers(r, job_id, run_at) if stamping else None,
            expires_at=r.expires_at(),
            **self._flow_fields(r, args, kwargs),
        )

    def _one(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> JobInsertParams:
        """The params of one job enqueued now with these options (workflows, periodic)."""
        r = self._resolved()
        return self._job_params(r, args, kwargs, r.run_at())

    def _flow_fields(
        self, r: _Resolved, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Unique key, parents and limit of one job (the parts that depend on its args)."""
        opts = self._task.options
        fields: dict[str, Any] = {}
        if r.unique_key is not None:
            key = unique.key_for(r.unique_key, args, kwargs)
            if key is not None:
                options.check_name("unique key", key)  # a function's answer, per job
                fields["unique_key"] = key
                fields["on_conflict"] = r.on_conflict
                fields["unique_until"] = (
                    None if r.unique_for is None else time.time() + unique.seconds(r.unique_for)
                )
        if r.depends_on:
            fields["depends_on"] = r.depends_on
            fields["pipe"] = r.pipe
        if r.limit:
            fields["limit"] = limits.limit_for(
                opts.name, opts.concurrency, opts.rate, opts.limit_key, args, kwargs
            )
        return fields

    def _write(self, plan: Plan) -> list[Job[R]]:
        """Write a plan in one ``job_insert_many`` (all or nothing) and hand back Jobs.

        The one place every enqueue passes after its plan: inside
        ``conveyor.transaction(conn)`` it goes through the caller's connection, unless
        the app runs on a store put in place of its own (``App.on_store``: a testing
        mode's), which takes every write."""
        app = self._task.app
        joined = transactions.active() if app.substitute is None else None
        if joined is not None:
            transactions.store_of(app)  # opened first, with the reason if it cannot be
        if not self._checked(plan):
            return []
        if joined is not None:
            return self._written(plan, transactions.insert(app, joined, plan))
        return self._written(plan, app.backend.job_insert_many(plan))

    async def _awrite(self, plan: Plan) -> list[Job[R]]:
        """:meth:`_write` for the asyncio twins: the store's own insert in a thread (the
        loop never blocks on it); the caller's connection on the caller's terms."""
        app = self._task.app
        joined = transactions.active() if app.substitute is None else None
        if joined is None:
            return await to_thread(self._write, plan)
        transactions.store_of(app)
        if not self._checked(plan):
            return []
        return self._written(plan, await transactions.insert_async(app, joined, plan))

    def _checked(self, plan: Plan) -> bool:
        """False for an empty plan; raises when the store lacks a feature the plan uses."""
        if not isinstance(plan, JobInsertBatchParams):
            if not plan:
                return False
            backend = self._task.app.backend
            for feature in flow_features_of(plan):
                require_feature(backend, feature)
            if any(p.expires_at is not None for p in plan):
                require_feature(backend, "expires")
        elif plan.expires_at is not None:
            require_feature(self._task.app.backend, "expires")
        return True

    def _written(self, plan: Plan, ids: Sequence[str]) -> list[Job[R]]:
        """The handles of a written plan, after the enqueue hooks (metrics) saw it."""
        job = _job_class()
        task = self._task
        app = task.app
        return [job(app, i, task) for i in ids]

    def _enqueue(self, calls: Calls, run_at: float | None) -> list[Job[R]]:
        return self._write(self._plan(calls, run_at)) if calls else []

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

    def _enqueue_simple(
        self, r: _Resolved, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Job[R]:
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
        return _job_class()(app, job_id, task)

    def enqueue_many(
        self, items: Iterable[Args[P] | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]:
        """Enqueue many jobs in one transaction: all are written or none."""
        return self._enqueue([_call_of(item) for item in items], None)

    def enqueue_after(self, delay: Delay, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue to run after ``delay`` (seconds or a timedelta)."""
        return self._enqueue([(args, kwargs)], time.time() + _seconds(delay))[0]

    def schedule_at(self, when: When, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue to run at ``when`` (an aware datetime or epoch seconds)."""
        return self._enqueue([(args, kwargs)], _epoch(when))[0]

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
            _epoch(at)
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
            raise TypeError(_refusal(sorted(unsupported)))
        if countdown is not None and eta is not None:
            raise ValueError("apply_async() takes countdown or eta, not both")
        call = (_celery_args(args), _celery_kwargs(kwargs))
        given = {"queue": queue, "priority": priority, "expires": expires}
        enqueuer = self
        if any(v is not None for v in given.values()):
            enqueuer = self.with_options(queue=queue, priority=priority, expires=expires)
        run_at = None
        if countdown is not None:
            run_at = time.time() + options.check_seconds("countdown", countdown, allow_zero=True)
        elif eta is not None:
            if isinstance(eta, datetime.datetime) and eta.tzinfo is None:
                raise ValueError(
                    "apply_async(eta=...) needs an aware datetime (with tzinfo, e.g. "
                    "datetime.now(timezone.utc)) or epoch seconds; conveyor does not guess "
                    "a naive one's zone"
                )
            run_at = _epoch(eta)
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
        calls = [_call_of(item) for item in items]
        if transactions.active() is not None:
            return await self._awrite(self._plan(calls, None)) if calls else []
        return await to_thread(self._enqueue, calls, None)

    async def aenqueue_after(self, delay: Delay, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`enqueue_after`."""
        plan = self._plan([(args, kwargs)], time.time() + _seconds(delay))
        return (await self._awrite(plan))[0]

    async def aschedule_at(self, when: When, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`schedule_at`."""
        plan = self._plan([(args, kwargs)], _epoch(when))
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
        self.decoder = Decoder(fn)
        #: raises TypeError exactly when ``fn`` could not be called with the arguments
        self.check_arguments = arity_checker(fn)
        #: raises TypeError naming the parameter when an argument does not match a
        #: primitive annotation; None when nothing is checked (App(check_types=False))
        self.check_types = type_checker(fn) if app.settings.check_types else None
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
