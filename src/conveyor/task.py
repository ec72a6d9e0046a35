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
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from conveyor import limits, unique
from conveyor.aio import to_thread
from conveyor.arity import arity_checker
from conveyor.backends.base import JobInsertBatchParams, JobInsertParams, require_feature
from conveyor.codec import Decoder, encode_payload
from conveyor.errors import ConfigurationError
from conveyor.ids import new_id, new_ids
from conveyor.limits import LimitKey
from conveyor.retry import Backoff, RetryDelayHook
from conveyor.unique import UniqueKey

if TYPE_CHECKING:
    from conveyor.app import App
    from conveyor.job import Job
    from conveyor.workflow import Signature

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

    def __post_init__(self) -> None:
        unique.check_options(self.on_conflict, self.unique_for)
        limits.check_options(self.concurrency, self.rate)
        if self.max_attempts < 1:
            raise ConfigurationError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigurationError(f"timeout must be > 0 seconds, got {self.timeout}")
        if self.lease <= 0:
            raise ConfigurationError(f"lease must be > 0 seconds, got {self.lease}")
        if not self.queue:
            raise ConfigurationError("queue name must not be empty")


class Args:
    """Arguments for one job of ``enqueue_many``: ``Args(1, 2, key="v")``.

    Plain tuples/lists (positional) and dicts (keywords) work too.
    """

    __slots__ = ("args", "kwargs")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs


_NO_KWARGS: Mapping[str, Any] = {}


def _call_of(
    item: Args | Sequence[Any] | Mapping[str, Any],
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
    if isinstance(delay, datetime.timedelta):
        return delay.total_seconds()
    if isinstance(delay, (int, float)) and not isinstance(delay, bool):
        return float(delay)
    raise TypeError(f"delay must be seconds or a timedelta, got {type(delay).__name__}")


def _epoch(when: When) -> float:
    if isinstance(when, datetime.datetime):
        if when.tzinfo is None:
            raise ValueError("schedule_at needs an aware datetime (with tzinfo) or epoch seconds")
        return when.timestamp()
    if isinstance(when, (int, float)) and not isinstance(when, bool):
        return float(when)
    raise TypeError(f"when must be an aware datetime or epoch seconds, got {type(when).__name__}")


class Enqueuer(Generic[P, R]):
    """The enqueue methods, bound to a task and a set of per-call overrides."""

    def __init__(self, task: Task[P, R], overrides: Mapping[str, Any]) -> None:
        self._task = task
        self._overrides = dict(overrides)
        self._plain: bool | None = None  # no flow fields: the batch fast path applies

    def _is_plain(self) -> bool:
        """True when no job of this enqueuer can carry a unique key, parents or a limit
        (decided by options alone, so once): ``_flow_fields`` would always be empty."""
        if self._plain is None:
            o, opts = self._overrides, self._task.options
            self._plain = (
                o.get("unique_key", opts.unique_key) is None
                and not o.get("depends_on")
                and not o.get("pipe")
                and opts.concurrency is None
                and opts.rate is None
            )
        return self._plain

    def _insert_plain(
        self, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]], run_at: float | None
    ) -> list[Job[R]]:
        """Check, encode and write plain jobs in one ``job_insert_batch``: one shared
        params object instead of one per job (``enqueue_many`` spends its time per item,
        so everything not per item is hoisted here; measured in BENCHMARKS.md)."""
        from conveyor.job import Job

        task, o = self._task, self._overrides
        app, opts = task.app, task.options
        check, limit = task.check_arguments, app.max_payload_bytes
        payloads = []
        for args, kwargs in calls:
            check(*args, **kwargs)
            payloads.append(encode_payload(args, kwargs, max_bytes=limit))
        if run_at is None:
            if o.get("at") is not None:
                run_at = _epoch(o["at"])
            elif o.get("delay") is not None:
                run_at = time.time() + _seconds(o["delay"])
        ids = new_ids(len(payloads))
        params = JobInsertBatchParams(
            task=opts.name,
            queue=o.get("queue") or opts.queue,
            ids=ids,
            payloads=payloads,
            priority=o.get("priority", opts.priority),
            run_at=run_at,
            max_attempts=o.get("max_attempts", opts.max_attempts),
            timeout=o.get("timeout", opts.timeout),
            lease=opts.lease,
        )
        backend = app.backend
        insert_batch = getattr(backend, "job_insert_batch", None)
        if insert_batch is not None:
            insert_batch(params)
        else:  # a backend without the fast path
            backend.job_insert_many(params.expand())
        hooks = app.enqueue_hooks
        if hooks:
            for _ in ids:
                for hook in hooks:
                    hook(params.queue, params.task)
        return [Job(app, i, task) for i in ids]

    # -- building jobs -------------------------------------------------------------------

    def _params(
        self, args: Sequence[Any], kwargs: Mapping[str, Any], run_at: float | None
    ) -> JobInsertParams:
        task = self._task
        # A workflow step gets its parents' result(s) first: check with a stand-in.
        piped = (None,) if self._overrides.get("pipe") else ()
        task.check_arguments(*piped, *args, **kwargs)
        payload = encode_payload(args, kwargs, max_bytes=task.app.max_payload_bytes)
        o, opts = self._overrides, task.options
        if run_at is None:
            if o.get("at") is not None:
                run_at = _epoch(o["at"])
            elif o.get("delay") is not None:
                run_at = time.time() + _seconds(o["delay"])
        return JobInsertParams(
            id=new_id(),
            task=opts.name,
            queue=o.get("queue") or opts.queue,
            payload=payload,
            priority=o.get("priority", opts.priority),
            run_at=run_at,
            max_attempts=o.get("max_attempts", opts.max_attempts),
            timeout=o.get("timeout", opts.timeout),
            lease=opts.lease,
            **self._flow_fields(args, kwargs),
        )

    def _flow_fields(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Unique key, parents and limit of one job; empty (and cheap) for plain tasks."""
        o, opts = self._overrides, self._task.options
        fields: dict[str, Any] = {}
        unique_key = o.get("unique_key", opts.unique_key)
        if unique_key is not None:
            key = unique.key_for(unique_key, args, kwargs)
            if key is not None:
                window = o.get("unique_for", opts.unique_for)
                fields["unique_key"] = key
                fields["on_conflict"] = o.get("on_conflict", opts.on_conflict)
                fields["unique_until"] = (
                    None if window is None else time.time() + unique.seconds(window)
                )
        if o.get("depends_on"):
            fields["depends_on"] = tuple(getattr(d, "id", d) for d in o["depends_on"])
            fields["pipe"] = o.get("pipe", 0)
        if opts.concurrency is not None or opts.rate is not None:
            fields["limit"] = limits.limit_for(
                opts.name, opts.concurrency, opts.rate, opts.limit_key, args, kwargs
            )
        return fields

    def _insert(self, params: list[JobInsertParams]) -> list[Job[R]]:
        from conveyor.job import Job

        backend = self._task.app.backend
        if all(p.is_plain for p in params):
            backend.job_insert_many(params)
            ids = [p.id for p in params]
        else:
            for p in params:
                if p.unique_key is not None:
                    require_feature(backend, "unique")
                if p.depends_on:
                    require_feature(backend, "workflows")
                if p.limit is not None:
                    require_feature(backend, "limits")
            ids = [r.id for r in backend.job_insert_flow_many(params)]
        hooks = self._task.app.enqueue_hooks
        if hooks:
            for p in params:
                for hook in hooks:
                    hook(p.queue, p.task)
        return [Job(self._task.app, i, self._task) for i in ids]

    def s(self, *args: Any, **kwargs: Any) -> Signature:
        """A signature: this task with these arguments, to compose into workflows
        (``conveyor.chain``, ``conveyor.group``, ``job.then``). Nothing is enqueued."""
        from conveyor.workflow import Signature

        return Signature(self, args, kwargs)

    # -- blocking ------------------------------------------------------------------------

    def enqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue one job now (or per ``with_options(delay=, at=)``)."""
        if self._is_plain():
            return self._insert_plain([(args, kwargs)], None)[0]
        return self._insert([self._params(args, kwargs, None)])[0]

    def enqueue_many(
        self, items: Iterable[Args | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]:
        """Enqueue many jobs in one transaction: all are written or none."""
        if self._is_plain():
            calls = [_call_of(item) for item in items]
            return self._insert_plain(calls, None) if calls else []
        params = []
        for item in items:
            if isinstance(item, Args):
                params.append(self._params(item.args, item.kwargs, None))
            elif isinstance(item, Mapping):
                params.append(self._params((), item, None))
            elif isinstance(item, (list, tuple)):
                params.append(self._params(item, {}, None))
            else:
                raise TypeError(
                    "enqueue_many items must be Args(...), a tuple/list of positional "
                    f"arguments or a dict of keyword arguments, got {type(item).__name__}"
                )
        return self._insert(params) if params else []

    def enqueue_after(self, delay: Delay, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue to run after ``delay`` (seconds or a timedelta)."""
        return self._insert([self._params(args, kwargs, time.time() + _seconds(delay))])[0]

    def schedule_at(self, when: When, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Enqueue to run at ``when`` (an aware datetime or epoch seconds)."""
        return self._insert([self._params(args, kwargs, _epoch(when))])[0]

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
    ) -> Enqueuer[P, R]:
        """The same enqueue methods with per-call options. ``unique_key``/``unique_for``/
        ``on_conflict`` as on the task; ``depends_on``: jobs (or ids) that must all
        succeed first (the job waits in ``waiting``; cancelled if one ends dead)."""
        given = {
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
        }
        if max_attempts is not None and max_attempts < 1:
            raise ConfigurationError(f"max_attempts must be >= 1, got {max_attempts}")
        unique.check_options(on_conflict or "keep", unique_for)
        merged = {**self._overrides, **{k: v for k, v in given.items() if v is not None}}
        return Enqueuer(self._task, merged)

    # -- asyncio twins (the store calls run in a thread, the loop never blocks) ----------

    async def aenqueue(self, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`enqueue`."""
        params = self._params(args, kwargs, None)
        return (await to_thread(self._insert, [params]))[0]

    async def aenqueue_many(
        self, items: Iterable[Args | Sequence[Any] | Mapping[str, Any]]
    ) -> list[Job[R]]:
        """Asyncio twin of :meth:`enqueue_many`."""
        materialised = list(items)
        return await to_thread(self.enqueue_many, materialised)

    async def aenqueue_after(self, delay: Delay, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`enqueue_after`."""
        params = self._params(args, kwargs, time.time() + _seconds(delay))
        return (await to_thread(self._insert, [params]))[0]

    async def aschedule_at(self, when: When, *args: P.args, **kwargs: P.kwargs) -> Job[R]:
        """Asyncio twin of :meth:`schedule_at`."""
        params = self._params(args, kwargs, _epoch(when))
        return (await to_thread(self._insert, [params]))[0]


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
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", options.name)
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Task {self.name} queue={self.options.queue}>"


AsyncFn = Callable[..., Awaitable[Any]]
