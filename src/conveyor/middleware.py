"""Middleware: the one public hook API. A class whose methods conveyor calls as jobs move.

Register a class (instantiated with no arguments) on the app; every method is optional::

    class Audit:
        def on_enqueue(self, job):             # producer, before the write
            job.headers["requested_by"] = "api"

        @contextlib.contextmanager
        def around_execute(self, job):         # around the task body, where it runs
            yield

    app.add_middleware(Audit)

Where each hook runs:

- ``on_enqueue(job: NewJob)`` -- the enqueueing thread, once per job, before the write
  (in the order the middlewares were added). ``job.headers`` is a dict the middleware
  may change: the ``with_options(headers=...)`` ones first, then each middleware's
  additions (a later middleware sees and may overwrite an earlier one's keys); the
  bounds of :mod:`conveyor.headers` are checked after the last middleware.
- ``around_execute(job: JobContext)`` -- a context manager around the task body, in the
  thread, asyncio task, child process or subinterpreter that runs it (so the class is
  instantiated in every child, by its qualified name). ``job`` is ``current_job()``.
  The first added is the outermost.
- ``on_start(job)``, ``on_finish(job, attempt: Attempt)``, ``on_retry(job, error)``,
  ``on_dead(job, error)`` -- the worker process, as an attempt is handed to the pool and
  as its end is decided (before the finish is written). ``on_retry`` / ``on_dead``
  follow ``on_finish`` for a failed attempt that will run again / that ended the job.
- ``on_rescue(job: RescuedJob)`` -- the worker whose rescuer took a job back from a dead
  worker.

A middleware that raises never loses a job: an exception while entering (or leaving)
``around_execute`` fails that attempt with that error, retried as any failure; an
exception in an ``on_*`` hook is logged (the first of each hook with its traceback,
later ones at DEBUG) and the job goes on as if the hook had returned.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> class Tenant:
    ...     def on_enqueue(self, job):
    ...         job.headers.setdefault("tenant", "acme")
    >>> _ = app.add_middleware(Tenant)
    >>> @app.task
    ... def hello() -> None: ...
    >>> app.job(hello.enqueue().id).headers["tenant"]
    'acme'
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from conveyor.errors import ConfigurationError
from conveyor.records import record

if TYPE_CHECKING:
    from conveyor.context import JobContext

T = TypeVar("T")

#: The hook names, in the order the docs list them.
HOOKS = (
    "on_enqueue",
    "on_start",
    "around_execute",
    "on_finish",
    "on_retry",
    "on_dead",
    "on_rescue",
)


# Records, not dataclasses: ``import conveyor`` imports this module, and a dataclass
# costs ~1 ms to define (see conveyor/records.py).
@record
class NewJob:
    """A job about to be written (``on_enqueue``): its id and options, and its headers,
    a dict the middleware may change in place."""

    id: str
    task: str
    queue: str
    priority: int
    #: epoch seconds it becomes due; None: now
    run_at: float | None
    headers: dict[str, str]


@record
class Attempt:
    """How one attempt ended (``on_finish``).

    ``outcome`` is one of ``succeeded``, ``retry`` (failed, will run again), ``dead``,
    ``cancelled``, ``snooze`` (given back by :class:`conveyor.Snooze`) or ``drop`` (a
    retry hook dropped the job). ``error`` is the exception for a failed attempt: the
    task's own in the thread and async pools, a :class:`RemoteError` carrying the type
    name from a process or interpreter pool
    (``conveyor.worker.outcome.RemoteError``), None for an unrunnable job (see ``reason``).
    """

    outcome: str
    started_at: float | None
    finished_at: float | None
    error: BaseException | None = None
    reason: str | None = None


@record
class RescuedJob:
    """A job the rescuer took back from a dead worker (``on_rescue``): ``state`` is
    ``queued`` (it runs again) or ``dead`` (its worker was lost too often)."""

    id: str
    lost_worker: str | None
    state: str


class Middleware:
    """Optional base class: every hook, doing nothing. Subclassing is not needed (any
    class with some of the methods works); only the methods a class defines itself are
    called, so an empty ``around_execute`` costs nothing."""

    def on_enqueue(self, job: NewJob) -> None:
        """A job is about to be written; ``job.headers`` may be changed."""

    def on_start(self, job: JobContext) -> None:
        """An attempt is handed to the pool (worker process)."""

    def around_execute(self, job: JobContext) -> contextlib.AbstractContextManager[Any]:
        """A context manager around the task body, where the body runs."""
        return contextlib.nullcontext()

    def on_finish(self, job: JobContext, attempt: Attempt) -> None:
        """An attempt ended (worker process, before the finish is written)."""

    def on_retry(self, job: JobContext, error: BaseException) -> None:
        """An attempt failed and the job will run again."""

    def on_dead(self, job: JobContext, error: BaseException | None) -> None:
        """An attempt ended the job dead (attempts spent, unrunnable, retry hook)."""

    def on_rescue(self, job: RescuedJob) -> None:
        """This worker's rescuer took a job back from a dead worker."""


class _AroundExecute(Protocol):
    def __call__(self, job: JobContext, /) -> contextlib.AbstractContextManager[Any]: ...


def qualified_name(cls: type) -> str:
    """``module:QualName``, how a child process finds the class again."""
    return f"{cls.__module__}:{cls.__qualname__}"


def import_class(name: str) -> type:
    """The class named by :func:`qualified_name` (imported now); ConfigurationError
    naming it when it cannot be found."""
    module_name, _, attr = name.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(
            f"cannot import middleware {name!r} here ({exc}); define middleware classes "
            "at the top level of an importable module"
        ) from None
    if not isinstance(found, type):
        raise ConfigurationError(f"middleware {name!r} is not a class")
    return found


def _defines(obj: object, hook: str) -> bool:
    """True when ``obj``'s class has ``hook`` and it is not :class:`Middleware`'s no-op."""
    found = getattr(type(obj), hook, None)
    return callable(found) and found is not getattr(Middleware, hook, None)


class Middlewares:
    """The app's middlewares (``app.middleware``), with one list per hook so a hook no
    middleware defines costs one truthiness test."""

    def __init__(self) -> None:
        self.instances: list[object] = []
        #: qualified names of the classes added: instantiated again in pool children
        self.classes: list[str] = []
        self.enqueue: list[Callable[[NewJob], None]] = []
        self.start: list[Callable[[JobContext], None]] = []
        self.around: list[_AroundExecute] = []
        self.finish: list[Callable[[JobContext, Attempt], None]] = []
        self.retry: list[Callable[[JobContext, BaseException], None]] = []
        self.dead: list[Callable[[JobContext, BaseException | None], None]] = []
        self.rescue: list[Callable[[RescuedJob], None]] = []
        self._failed: set[tuple[str, str]] = set()

    def __bool__(self) -> bool:
        return bool(self.instances)

    def __iter__(self) -> Iterator[object]:
        return iter(self.instances)

    @overload
    def add(self, middleware: type[T]) -> T: ...

    @overload
    def add(self, middleware: T) -> T: ...

    def add(self, middleware: Any) -> Any:
        """Add a middleware class (instantiated here with no arguments, and in each pool
        child by its qualified name) or an instance (this process only: an instance
        that defines ``around_execute`` is refused, children could not rebuild it).
        Returns the instance."""
        if isinstance(middleware, type):
            try:
                instance: Any = middleware()
            except TypeError as exc:
                raise ConfigurationError(
                    f"middleware {middleware.__qualname__} must be a class that takes no "
                    f"constructor arguments ({exc})"
                ) from None
            self.classes.append(qualified_name(middleware))
        else:
            instance = middleware
            if _defines(instance, "around_execute"):
                raise ConfigurationError(
                    f"add the middleware class {type(instance).__qualname__}, not an "
                    "instance: around_execute runs in pool children, which build their "
                    "own from the class"
                )
        self.instances.append(instance)
        for hook, hooks in self._lists().items():
            if _defines(instance, hook):
                hooks.append(getattr(instance, hook))
        return instance

    def remove(self, instance: object) -> None:
        """Take an instance out again (a no-op when it is not registered)."""
        if instance not in self.instances:
            return
        index = self.instances.index(instance)
        self.instances.pop(index)
        name = qualified_name(type(instance))
        if name in self.classes and not any(
            qualified_name(type(i)) == name for i in self.instances
        ):
            self.classes.remove(name)
        for hooks in self._lists().values():
            hooks[:] = [h for h in hooks if getattr(h, "__self__", None) is not instance]

    def ensure(self, names: list[str]) -> None:
        """Child side: add each named class that importing the app did not add already
        (a parent that added middleware after loading the app)."""
        have = set(self.classes)
        for name in names:
            if name not in have:
                self.add(import_class(name))
                have.add(name)

    def _lists(self) -> dict[str, list[Any]]:
        return {
            "on_enqueue": self.enqueue,
            "on_start": self.start,
            "around_execute": self.around,
            "on_finish": self.finish,
            "on_retry": self.retry,
            "on_dead": self.dead,
            "on_rescue": self.rescue,
        }

    # -- calling ---------------------------------------------------------------------------

    def call(self, hooks: list[Callable[..., None]], *args: Any) -> None:
        """Call each hook; an exception is logged (the first per hook with its traceback)
        and never reaches the job."""
        for hook in hooks:
            try:
                hook(*args)
            except Exception:
                self._log_failure(hook)

    def _log_failure(self, hook: Callable[..., None]) -> None:
        import logging  # only once a hook failed: ``import conveyor`` stays without it

        log = logging.getLogger("conveyor.middleware")
        owner = getattr(hook, "__self__", None)
        key = (type(owner).__qualname__, getattr(hook, "__name__", "?"))
        if key in self._failed:
            log.debug("middleware %s.%s raised again", *key, exc_info=True)
            return
        self._failed.add(key)
        log.error(
            "middleware %s.%s raised; the job is not affected (later errors of this hook "
            "are logged at DEBUG)",
            *key,
            exc_info=True,
        )

    def execute(self, ctx: JobContext, body: Callable[[], T]) -> T:
        """Run ``body`` inside every ``around_execute`` (first added outermost). An
        exception entering or leaving one fails the attempt; one that swallows the
        body's exception does not turn a failure into a success."""
        if not self.around:
            return body()
        failure: BaseException | None = None
        with contextlib.ExitStack() as stack:
            for around in self.around:
                stack.enter_context(around(ctx))
            try:
                value = body()
            except BaseException as exc:
                failure = exc
                raise
        if failure is not None:  # a context manager swallowed it: still a failure
            raise failure
        return value

    async def execute_async(self, ctx: JobContext, body: Callable[[], Awaitable[T]]) -> T:
        """:meth:`execute` around an awaited body: the context managers are entered in
        the asyncio task that awaits it (context variables reach the task's code)."""
        if not self.around:
            return await body()
        failure: BaseException | None = None
        with contextlib.ExitStack() as stack:
            for around in self.around:
                stack.enter_context(around(ctx))
            try:
                value = await body()
            except BaseException as exc:
                failure = exc
                raise
        if failure is not None:
            raise failure
        return value
