"""``App``: a URL, a task registry and defaults. The entry point of every program.

The backend is opened lazily on first use, so importing a module that defines an app
touches no file and no network.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:", queue="reports", max_attempts=2)
    >>> @app.task
    ... def build(day: str) -> str:
    ...     return f"report for {day}"
    >>> build.options.queue, build.options.max_attempts
    ('reports', 2)
    >>> build("monday")  # a plain call runs inline
    'report for monday'
"""

from __future__ import annotations

import datetime
import inspect
import threading
import types
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, Protocol, TypeVar, overload

from conveyor.app_import import default_task_name, import_app
from conveyor.app_settings import SETTINGS, TASK_DEFAULTS, TASK_ONLY, AppSettings
from conveyor.app_spec import parse_app_spec as parse_app_spec
from conveyor.classtask import ClassTask
from conveyor.errors import ConfigurationError
from conveyor.fair import FairKey, FairWeights
from conveyor.limits import LimitKey, check_queue_settings
from conveyor.middleware import Middlewares
from conveyor.redaction import redacted
from conveyor.retry import Backoff, RetryDelayHook
from conveyor.sequences import SequenceKey

# Re-exported: they were defined here, and callers import them from conveyor.app.
from conveyor.stores import BACKENDS as BACKENDS
from conveyor.stores import STORE_CHECKS as STORE_CHECKS
from conveyor.stores import URL_CHECKS as URL_CHECKS
from conveyor.stores import backend_class as backend_class
from conveyor.stores import check_url as check_url
from conveyor.stores import open_backend as open_backend
from conveyor.stores import require_store as require_store
from conveyor.task import AsyncTask, Task, TaskOptions
from conveyor.unique import UniqueKey

if TYPE_CHECKING:
    from conveyor.backends.base import Backend
    from conveyor.batch import Batch, BatchTaskDecorator
    from conveyor.job import Job
    from conveyor.periodic import Schedule
    from conveyor.testing import Captured, Inline

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

DEFAULT_URL = "sqlite:///conveyor.db"


class TaskDecorator(Protocol):
    """What ``@app.task(...)`` with options returns: an ``async def`` function becomes an
    :class:`AsyncTask` (its jobs give the awaited result), any other a :class:`Task`."""

    @overload
    def __call__(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> AsyncTask[P, R]: ...

    @overload
    def __call__(self, fn: Callable[P, R], /) -> Task[P, R]: ...


class App:
    """A conveyor application: where jobs are stored and which tasks exist.

    ``url`` defaults to ``$CONVEYOR_URL``, else the ``url`` of ./conveyor.toml, else of
    ``[tool.conveyor]`` in ./pyproject.toml, else ``sqlite:///conveyor.db`` (the rule of
    every ``conveyor`` command: :mod:`conveyor.url_rule`); an explicit ``url`` wins over
    all of them here and in ``conveyor worker`` (only the command's ``--url`` overrides
    it). ``url_source`` says where the URL came from. Keyword
    arguments are task defaults (``queue``, ``priority``, ``max_attempts``, ``timeout``,
    ``retry``, ``retry_delay``, ``lease``, ``store_result``, ``result_ttl``, ``expires``) or app settings (``max_payload_bytes``,
    ``max_rescues``, ``heartbeat_interval``, ``heartbeat_ttl``, ``rescue_interval``,
    ``retention``, ``prune_interval``, ``capture_logs``, ``log_level``,
    ``log_max_per_job``, ``log_drain_timeout``, ``check_types``, ``queue_concurrency``,
    ``priority_aging``). Task defaults are checked here, as on ``@app.task`` and ``with_options`` (:mod:`conveyor.options`).
    ``middleware``: classes to add, as with :meth:`add_middleware`. ``include``: names of
    modules that define tasks, imported (after the app's own module) when a worker
    starts, by :func:`load_app` and by ``task.execute`` (:mod:`conveyor.include`).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        middleware: Sequence[Any] = (),
        include: Sequence[str] = (),
        **defaults: Any,
    ) -> None:
        #: Where ``url`` came from: "App(url)", "$CONVEYOR_URL", a file ("conveyor.toml",
        #: "pyproject.toml [tool.conveyor]"), "default", or "--url" (set by the CLI).
        #: One rule everywhere: --url > App(url) > $CONVEYOR_URL > the files > default.
        self.url_source: str = "App(url)"
        self.url: str = url or ""
        if not url:
            from conveyor.url_rule import implicit_url  # conveyor.toml, pyproject.toml

            self.url, self.url_source = implicit_url(DEFAULT_URL)
        unknown = set(defaults) - TASK_DEFAULTS - SETTINGS
        if unknown:
            raise TypeError(f"App() got unknown options: {sorted(unknown)}")
        self.task_defaults = {k: v for k, v in defaults.items() if k in TASK_DEFAULTS}
        self.settings = AppSettings(**{k: v for k, v in defaults.items() if k in SETTINGS})
        check_queue_settings(self.settings.queue_concurrency, self.settings.priority_aging)
        TaskOptions(name="_check_defaults", **self.task_defaults)  # fail fast on bad defaults
        self.tasks: dict[str, Task[Any, Any]] = {}
        #: The middlewares (``add_middleware``): the one hook API, see conveyor/middleware.py.
        self.middleware = Middlewares()
        #: periodic schedules by name (``@app.periodic``); run by every worker's scheduler
        self.schedules: dict[str, Schedule] = {}
        #: The store a block put in place of the URL's (:meth:`on_store`: a testing
        #: mode's memory store); ``None`` normally.
        self.substitute: Backend | None = None
        #: Base of class-based tasks registered with this app:
        #: ``class Recalculate(app.Task, queue="critical"): def execute(self, ...)``
        #: (see :mod:`conveyor.classtask`).
        self.Task: type[ClassTask] = types.new_class(
            "Task", (ClassTask,), {"app": self}, _app_task_namespace
        )
        self._backend: Backend | None = None
        self._lock = threading.Lock()
        for m in middleware:
            self.add_middleware(m)
        #: module name -> where it was named ("App(include=...)", "--include")
        self._include: dict[str, str] = {}
        self._included: set[str] = set()
        #: re-entrant: a module being included may itself reach import_includes
        self._include_lock = threading.RLock()
        if include:
            self.import_includes(include, source="App(include=...)", now=False)

    def __repr__(self) -> str:
        return f"<App {redacted(self.url)} tasks={len(self.tasks)}>"

    @property
    def url_explicit(self) -> bool:
        """True when the URL was given (``App(url)`` or ``--url``), not taken from the
        environment or the default."""
        return self.url_source in ("App(url)", "--url")

    def override_url(self, url: str, source: str = "--url") -> None:
        """Point the app at another store before first use (the CLI's ``--url``)."""
        if self._backend is not None:
            raise ConfigurationError(
                f"cannot switch to {redacted(url)}: the app already opened its store "
                f"{redacted(self.url)} (while being imported?)"
            )
        self.url, self.url_source = url, source

    @property
    def include(self) -> tuple[str, ...]:
        """The task modules this app imports before tasks are looked up by name."""
        return tuple(self._include)

    def import_includes(
        self, modules: Sequence[str] = (), *, source: str = "--include", now: bool = True
    ) -> None:
        """Add ``modules`` to :attr:`include`, then import every included module not
        imported yet (``now=False``: only add them). Each module is imported once; a
        missing one is a one-line :class:`ConfigurationError` naming it and ``source``.

        >>> import conveyor
        >>> app = conveyor.App("sqlite:///:memory:", include=["json"])
        >>> app.import_includes(["email.utils"])
        >>> app.include
        ('json', 'email.utils')
        >>> app.import_includes(["my-tasks"])
        Traceback (most recent call last):
        ...
        conveyor.errors.ConfigurationError: --include: 'my-tasks' is not a module name (dotted, as in myapp.tasks)
        """
        if modules:
            from conveyor.include import check_names

            for name in check_names(modules, source):
                self._include.setdefault(name, source)
        if not now or len(self._included) == len(self._include):
            return
        from conveyor.include import import_modules

        with self._include_lock:  # another thread waits until the modules are in
            for name, named_by in list(self._include.items()):
                if name not in self._included:
                    import_modules([name], named_by)
                    self._included.add(name)

    @overload
    def add_middleware(self, middleware: type[T]) -> T: ...

    @overload
    def add_middleware(self, middleware: T) -> T: ...

    def add_middleware(self, middleware: Any) -> Any:
        """Add a middleware (docs/hooks.md): a class with no constructor arguments whose
        optional methods ``on_enqueue``, ``on_start``, ``around_execute``, ``on_finish``,
        ``on_retry``, ``on_dead`` and ``on_rescue`` are called as jobs move. A class is
        instantiated here and again in every process or interpreter pool child (by its
        qualified name); an instance is accepted for hooks of this process only (not
        ``around_execute``). Returns the instance.

        >>> import conveyor
        >>> class Count:
        ...     n = 0
        ...     def on_enqueue(self, job):
        ...         self.n += 1
        >>> app = conveyor.App("sqlite:///:memory:")
        >>> counter = app.add_middleware(Count)
        >>> @app.task
        ... def noop() -> None: ...
        >>> _ = noop.enqueue(); counter.n
        1
        """
        return self.middleware.add(middleware)

    @property
    def max_payload_bytes(self) -> int:
        return self.settings.max_payload_bytes

    @property
    def backend_is_open(self) -> bool:
        """True once :attr:`backend` was opened (nothing is touched to find out)."""
        return self._backend is not None

    @property
    def backend(self) -> Backend:
        """The storage backend, opened on first use."""
        if self._backend is None:
            with self._lock:
                if self._backend is None:
                    self._backend = open_backend(self.url)
        return self._backend

    def close(self) -> None:
        """Close the backend (a later use opens it again). Inside :meth:`on_store` the
        store put in place stays until its block ends."""
        with self._lock:
            if self._backend is not None and self.substitute is None:
                self._backend.close()
                self._backend = None

    @contextmanager
    def on_store(self, backend: Backend) -> Iterator[Backend]:
        """While the block runs, this app uses ``backend`` as its store (every thread:
        enqueues, handles, workers), not the URL's, which is neither opened nor written;
        the previous store is back when it ends (blocks nest). Handles made meanwhile
        keep reading ``backend`` after it. The testing modes run on it.

        >>> import conveyor
        >>> from conveyor.backends.memory.backend import MemoryBackend
        >>> app = conveyor.App("sqlite:///never-opened.db")
        >>> with app.on_store(MemoryBackend("memory://")) as store:
        ...     app.backend is store
        True
        >>> app.backend_is_open
        False
        """
        with self._lock:
            saved = self._backend, self.substitute
            self._backend = self.substitute = backend
        try:
            yield backend
        finally:
            with self._lock:
                self._backend, self.substitute = saved

    # -- tasks ---------------------------------------------------------------------------

    @overload
    def task(self, fn: Callable[P, Coroutine[Any, Any, R]], /) -> AsyncTask[P, R]: ...

    @overload
    def task(self, fn: Callable[P, R], /) -> Task[P, R]: ...

    @overload
    def task(self, fn: None = None, /, *, batch: Batch, **options: Any) -> BatchTaskDecorator: ...

    @overload
    def task(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        retry: Backoff | None = None,
        retry_delay: RetryDelayHook | None = None,
        lease: float | None = None,
        unique_key: UniqueKey = None,
        unique_for: float | datetime.timedelta | None = None,
        on_conflict: str | None = None,
        concurrency: int | None = None,
        rate: str | None = None,
        limit_key: LimitKey = None,
        sequence_key: SequenceKey = None,
        on_failure: str | None = None,
        fair_key: FairKey = None,
        fair_weights: FairWeights = None,
        debounce: float | datetime.timedelta | None = None,
        max_wait: float | datetime.timedelta | None = None,
        throttle: float | datetime.timedelta | None = None,
        secret: Sequence[str] | None = None,
        store_result: bool | None = None,
        result_ttl: float | datetime.timedelta | None = None,
        expires: float | datetime.timedelta | None = None,
    ) -> TaskDecorator: ...

    def task(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """Register a function (plain or ``async def``) as a task.

        Use bare (``@app.task``) or with options (``@app.task(queue="mail")``). The
        default name is ``module.qualname``; jobs refer to tasks by name only.
        """
        unknown = set(options) - TASK_DEFAULTS - TASK_ONLY
        if unknown:
            raise TypeError(f"task() got unknown options: {sorted(unknown)}")

        def register(func: Callable[P, R]) -> Task[P, R]:
            given = {k: v for k, v in options.items() if v is not None}
            name = given.pop("name", None) or default_task_name(func)
            if "secret" in given:
                if isinstance(given["secret"], str):
                    raise ConfigurationError(
                        f"secret must be a list of parameter names, got {given['secret']!r}"
                    )
                given["secret"] = tuple(given["secret"])
            task_options = TaskOptions(name=name, **{**self.task_defaults, **given})
            existing = self.tasks.get(name)
            if existing is not None and _qualified(existing.fn) != _qualified(func):
                raise ConfigurationError(
                    f"task name {name!r} is already registered for {_qualified(existing.fn)}"
                )
            task = (AsyncTask if inspect.iscoroutinefunction(func) else Task)(
                self, func, task_options
            )
            self.tasks[name] = task
            return task

        return register(fn) if fn is not None else register

    def step(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        """A durable job's checkpointed step (``name``, ``max_attempts``, ``retry``,
        ``transaction``: :mod:`conveyor.durable_tx`), saved and served on replay."""
        from conveyor.extensions import provided  # conveyor.durable sits above the core

        return provided("step")(fn, **options)

    def periodic(
        self,
        *,
        cron: str | None = None,
        every: datetime.timedelta | float | None = None,
        tz: str = "UTC",
        catch_up: str = "latest",
        name: str | None = None,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Callable[[T], T]:
        """Run a task on a schedule: ``cron="*/5 * * * *"`` (with ``tz``) or
        ``every=timedelta(...)``. Put it above ``@app.task`` (or on a plain function,
        which is registered as a task). Every worker runs the scheduler; each slot is
        enqueued exactly once. ``catch_up``: "latest", "all" or "none" (missed slots).
        See :mod:`conveyor.periodic`."""
        from conveyor.periodic import register

        when: dict[str, Any] = {"cron": cron, "every": every, "tz": tz, "catch_up": catch_up}
        return register(self, name=name, args=args, kwargs=kwargs, **when)

    @overload
    def testing(self, mode: Literal["inline"], *, run_scheduled: bool = True) -> Inline: ...

    @overload
    def testing(self, mode: Literal["capture"]) -> Captured: ...

    def testing(self, mode: str, *, run_scheduled: bool = True) -> Inline | Captured:
        """A testing mode, as a context manager: the app runs on a memory store of the
        mode's own (:meth:`on_store`); ``"inline"`` runs every job at once in the caller
        as a worker would, ``"capture"`` records jobs and runs them at ``drain()``.
        Nothing reaches the app's own store in either. See :mod:`conveyor.testing`.

        >>> import conveyor
        >>> app = conveyor.App("sqlite:///:memory:")
        >>> @app.task
        ... def add(a: int, b: int) -> int:
        ...     return a + b
        >>> with app.testing("inline"):
        ...     add.enqueue(1, 2).result()
        3
        """
        from conveyor.extensions import provided  # the testing package, never imported here

        opened: Inline | Captured = provided("modes")(self, mode, run_scheduled=run_scheduled)
        return opened

    def job(self, job_id: str) -> Job[Any]:
        """A handle on an existing job id."""
        from conveyor.job import Job

        return Job(self, job_id)

    def search(self, query: str, *, limit: int = 50, before: str | None = None) -> Any:
        """A page of the jobs matching ``query`` (docs/search.md), newest first: a
        ``JobSearchPage`` (``jobs``, ``complete``, ``next_before`` for the next page)."""
        from conveyor.app_search import search

        return search(self, query, limit=limit, before=before)


def _app_task_namespace(namespace: dict[str, Any]) -> None:
    namespace["__module__"] = __name__
    namespace["__qualname__"] = "App.Task"


def _qualified(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"


def load_app(spec: str) -> App:
    """Import ``module:attribute`` (the current directory is importable) and return it.

    Nothing is called: the attribute must be the :class:`App` itself (a factory
    function would run arbitrary code just to resolve a name). The app's ``include``
    modules are imported next, so its tasks are registered. Every failure is a
    :class:`ConfigurationError` whose message says what to fix.

    Example:
        >>> load_app("conveyor.app:DEFAULT_URL")
        Traceback (most recent call last):
        ...
        conveyor.errors.ConfigurationError: conveyor.app:DEFAULT_URL is a str, not a conveyor.App; APP names the App object (module:attribute, e.g. tasks:app)
    """
    found = import_app(spec, App)
    found.import_includes()  # App(include=[...]): after the app's module, which they import
    return found
