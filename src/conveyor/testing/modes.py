"""The two testing modes, ``app.testing("inline")`` and ``app.testing("capture")``.

While a mode is active its app runs on a memory store of the mode's own
(:class:`~conveyor.testing.engine.ModeStore`, put in place by ``App.on_store``): every
enqueue is checked, encoded and written as for any store, and the app's own store is
never touched. The mode keeps what was enqueued in order in ``mode.jobs``; the modes
differ in when jobs run: inline drains the store with the real runner after each
enqueue, capture when ``drain()`` is called. See ``docs/testing.md``.

Example:
    >>> import conveyor
    >>> app = conveyor.App("sqlite:///:memory:")
    >>> @app.task
    ... def send(to: str) -> None: ...
    >>> with app.testing("capture") as captured:
    ...     _ = send.enqueue("a@example.com")
    >>> captured.jobs[0].args
    ('a@example.com',)
    >>> captured.assert_enqueued(send, "a@example.com").queue
    'default'
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any

from conveyor.backends.base import JobInsertParams
from conveyor.classtask import as_task
from conveyor.job import Job
from conveyor.testing.engine import Engine, ModeStore

if TYPE_CHECKING:
    from typing import TypeAlias

    from conveyor.app import App
    from conveyor.classtask import ClassTask
    from conveyor.task import Enqueuer

    #: What the assertions take: a task (or ``with_options(...)``) or a class-based task.
    TaskLike: TypeAlias = Enqueuer[Any, Any] | type[ClassTask]


@dataclasses.dataclass(frozen=True)
class CapturedJob:
    """One enqueued job as a testing mode saw it (arguments decoded as the task gets them)."""

    id: str
    task_name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    queue: str
    priority: int
    #: when it may run (epoch seconds); ``None``: at once
    run_at: float | None
    max_attempts: int
    timeout: float | None
    depends_on: tuple[str, ...] = ()

    def call(self) -> str:
        """``name(1, key='v')``: the call as text, for messages."""
        return f"{self.task_name}({_arguments(self.args, self.kwargs)})"


def _arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    return ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])


class _Mode:
    """What both modes share: the mode's store, the jobs list, the assertions, drain."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.store = ModeStore(self._inserted)
        self.engine = Engine(app, self.store)
        #: every job enqueued while the mode was active, in order
        self.jobs: list[CapturedJob] = []
        self._active = ExitStack()

    # -- the context manager -------------------------------------------------------------

    def __enter__(self) -> _Mode:
        self._active.enter_context(self.app.on_store(self.store))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._active.close()
        self.engine.close()

    # -- what the store wrote --------------------------------------------------------------

    def _inserted(self, params: list[JobInsertParams]) -> None:
        self.jobs.extend(self._captured(p) for p in params)
        self._ready()

    def _captured(self, p: JobInsertParams) -> CapturedJob:
        task = self.app.tasks.get(p.task)
        args, kwargs = task.decoder.arguments(p.payload) if task else ([], {})
        return CapturedJob(
            p.id,
            p.task,
            tuple(args),
            dict(kwargs),
            p.queue,
            p.priority,
            p.run_at,
            p.max_attempts,
            p.timeout,
            p.depends_on,
        )

    def _ready(self) -> None:
        """Jobs were enqueued (inline runs what is ready now)."""

    # -- assertions ----------------------------------------------------------------------

    def enqueued(self, task: TaskLike | str) -> list[CapturedJob]:
        """The jobs of ``task`` (a task, a class-based task or its name) enqueued so far,
        in order."""
        name = task if isinstance(task, str) else as_task(task)._task.name
        return [j for j in self.jobs if j.task_name == name]

    def assert_enqueued(self, task: TaskLike, *args: Any, **kwargs: Any) -> CapturedJob:
        """Assert a job of ``task`` was enqueued with these arguments (compared as the
        function binds them, defaults filled in: ``f(1)`` matches ``f(a=1)``); with no
        arguments given, any job of ``task`` matches. Returns the first match; raises
        ``AssertionError`` listing what was enqueued otherwise."""
        enqueuer = as_task(task)
        found = self.enqueued(enqueuer)
        if not args and not kwargs and found:
            return found[0]
        expected = _bound(enqueuer, args, kwargs)
        for job in found:
            if _bound(enqueuer, job.args, job.kwargs) == expected:
                return job
        raise AssertionError(self._report(enqueuer, args, kwargs, expected))

    def assert_not_enqueued(self, task: TaskLike) -> None:
        """Assert no job of ``task`` was enqueued."""
        enqueuer = as_task(task)
        found = self.enqueued(enqueuer)
        if found:
            listed = "\n".join(f"  {j.call()}" for j in found)
            raise AssertionError(
                f"expected no job of {enqueuer._task.name}, but {len(found)} were enqueued:\n{listed}"
            )

    def _report(
        self,
        task: Enqueuer[Any, Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        expected: Mapping[str, Any],
    ) -> str:
        name = task._task.name
        lines = [f"expected a job: {name}({_arguments(args, kwargs)})"]
        if not self.jobs:
            lines.append("enqueued: nothing")
            return "\n".join(lines)
        lines.append(f"enqueued ({len(self.jobs)}):")
        for job in self.jobs:
            line = f"  {job.call()}  queue={job.queue}"
            if job.task_name == name:
                got = _bound(task, job.args, job.kwargs)
                differs = [
                    f"{k}={got.get(k, '<missing>')!r} (expected {expected.get(k, '<missing>')!r})"
                    for k in dict.fromkeys([*expected, *got])
                    if got.get(k, _MISSING) != expected.get(k, _MISSING)
                ]
                line += "\n      differs: " + ", ".join(differs)
            lines.append(line)
        return "\n".join(lines)

    # -- running and forgetting ----------------------------------------------------------

    def drain(self) -> list[Job[Any]]:
        """Run every job not run yet (delayed or not) and what they enqueue, in order,
        to completion; the finished jobs' handles, in the order they finished."""
        return list(self._handles(self.engine.drain(everything=True)))

    def _handles(self, ids: list[str]) -> Iterator[Job[Any]]:
        for record in self.store.job_get_many(ids):
            yield Job(self.app, record.id, self.app.tasks.get(record.task), store=self.store)

    def clear(self) -> None:
        """Forget every job enqueued so far (``jobs`` empty, their handles unknown)."""
        self.jobs.clear()
        self.store.forget()


_MISSING = object()


def _bound(
    task: Enqueuer[Any, Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    bound = inspect.signature(task._task.fn).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


class Captured(_Mode):
    """``with app.testing("capture") as captured:`` -- jobs are recorded (written to the
    mode's memory store only) and not run until ``captured.drain()``."""

    def __enter__(self) -> Captured:
        super().__enter__()
        return self


class Inline(_Mode):
    """``with app.testing("inline"):`` -- every job runs at once in the caller, as a
    worker would; the handle it returns is finished. ``run_scheduled=False``: a job
    enqueued to run later is held (in ``jobs``, state ``scheduled``) until ``drain()``."""

    def __init__(self, app: App, *, run_scheduled: bool = True) -> None:
        super().__init__(app)
        self.run_scheduled = run_scheduled

    def __enter__(self) -> Inline:
        super().__enter__()
        return self

    def _ready(self) -> None:
        self.engine.drain(everything=self.run_scheduled)


def open_mode(app: App, mode: str, *, run_scheduled: bool = True) -> Inline | Captured:
    """The mode ``app.testing(mode)`` answers (``conveyor/__init__.py`` hands this to
    the core: ``App`` never imports the testing package)."""
    if mode == "inline":
        return Inline(app, run_scheduled=run_scheduled)
    if mode == "capture":
        return Captured(app)
    raise ValueError(f"unknown testing mode {mode!r}; use 'inline' or 'capture'")
